"""Time in the Spark pipeline: durations, timestamp columns and their integer unit.

The engine takes integer timestamps in any unit. Timestamp, date and date-time string
columns become **epoch seconds** (UTC); integer columns are used as they are. A window is
then either a duration ("3 days", "1 day 12 hours", a ``timedelta``) converted to
seconds, or a plain integer in the column's own unit. Mixing the two is an error.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from suse.errors import InputError

_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")

DATETIME_KINDS = ("timestamp", "date", "string")


def parse_duration(text: str) -> int:
    """Seconds in a duration such as "90 minutes", "1 day 12 hours" or "2h30m"."""
    pos, total = 0, 0.0
    text = text.strip()
    while pos < len(text):
        m = _PART.match(text, pos)
        if not m or m.group(2).lower() not in _UNITS:
            raise InputError(
                f"cannot read duration {text!r}: expected a number and a unit "
                f"(seconds, minutes, hours, days, weeks), e.g. '3 days' or '90 minutes'"
            )
        total += float(m.group(1)) * _UNITS[m.group(2).lower()]
        pos = m.end()
    if not text or total <= 0 or total != int(total):
        raise InputError(f"duration {text!r} must be a positive whole number of seconds")
    return int(total)


def is_duration(value: object) -> bool:
    return isinstance(value, dt.timedelta) or (
        isinstance(value, str) and not value.strip().lstrip("+").isdigit()
    )


def duration_seconds(value: str | dt.timedelta) -> int:
    if isinstance(value, dt.timedelta):
        secs = value.total_seconds()
        if secs <= 0 or secs != int(secs):
            raise InputError(f"duration {value} must be a positive whole number of seconds")
        return int(secs)
    return parse_duration(value)


@dataclass(frozen=True)
class TimeAxis:
    """How a timestamp column maps to engine integers: ``kind`` is "integer" or one of
    DATETIME_KINDS (then the unit is epoch seconds)."""

    column: str
    kind: str
    format: str | None = None

    @property
    def is_datetime(self) -> bool:
        return self.kind != "integer"

    def span(self, value: object, what: str) -> int:
        """A window-like length (window, Poisson period) in this axis' unit."""
        if self.is_datetime:
            if not is_duration(value):
                raise InputError(
                    f"{what} {value!r} is a plain number but timestamp column "
                    f"'{self.column}' holds date-times: give a duration such as '3 days'"
                )
            return duration_seconds(value)  # type: ignore[arg-type]
        if is_duration(value) or isinstance(value, bool):
            raise InputError(
                f"{what} {value!r} is a duration but timestamp column '{self.column}' holds "
                f"integers: give an integer in the column's own unit"
            )
        if isinstance(value, str):  # digits only, as is_duration said no
            value = int(value)
        if not isinstance(value, int) or value < 0:
            raise InputError(f"{what} must be a non-negative integer, got {value!r}")
        return value

    def instant(self, value: object) -> int:
        """An evaluation timestamp given by the user, in this axis' unit."""
        if not self.is_datetime:
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(
                    f"evaluation timestamp {value!r} must be an integer like column "
                    f"'{self.column}'"
                )
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise InputError(
                f"evaluation timestamp {value!r} must be a date-time like column "
                f"'{self.column}', e.g. '2013-06-01 12:00'"
            )
        import pandas as pd

        try:
            ts = pd.Timestamp(value)
        except (TypeError, ValueError):
            raise InputError(f"cannot read evaluation timestamp {value!r} as a date-time") from None
        if ts.tzinfo is None:
            ts = ts.tz_localize("UTC")  # like the session: naive date-times are UTC
        return int(ts.timestamp())
