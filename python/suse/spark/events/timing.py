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
from fractions import Fraction

from suse.errors import InputError

_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}  # fmt: skip
_PART = re.compile(r"\s*([+-]?)\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")

DATETIME_KINDS = ("timestamp", "date", "string")


def parse_duration(text: str) -> int:
    """Seconds in a duration such as "90 minutes", "1 day 12 hours", "2h30m" or "0 days".

    Summed exactly ("1.1 hours" is 3960 s); the result must be a whole number of seconds and
    not negative. Zero is allowed here; callers that need a positive length say so."""
    if not isinstance(text, str):
        raise InputError(f"duration {text!r} must be a string such as '3 days'")
    pos, total, negative = 0, Fraction(0), False
    text = text.strip()
    while pos < len(text):
        m = _PART.match(text, pos)
        if not m or m.group(3).lower() not in _UNITS:
            raise InputError(
                f"cannot read duration {text!r}: expected a number and a unit "
                f"(seconds, minutes, hours, days, weeks), e.g. '3 days' or '90 minutes'"
            )
        negative |= m.group(1) == "-"
        total += Fraction(m.group(2)) * _UNITS[m.group(3).lower()]
        pos = m.end()
    if not text:
        raise InputError("duration is empty: give e.g. '3 days' or '90 minutes'")
    if negative:
        raise InputError(f"duration {text!r} must be positive (or zero)")
    if total.denominator != 1:
        raise InputError(f"duration {text!r} must be a whole number of seconds, it is {float(total):g} s")
    return int(total)


def is_duration(value: object) -> bool:
    return isinstance(value, dt.timedelta) or (
        isinstance(value, str) and not value.strip().lstrip("+").isdigit()
    )


def duration_seconds(value: str | dt.timedelta) -> int:
    if isinstance(value, dt.timedelta):
        seconds, rest = divmod(value, dt.timedelta(seconds=1))  # exact: timedelta is integral
        if value < dt.timedelta(0):
            raise InputError(f"duration {value} must be positive (or zero)")
        if rest:
            raise InputError(f"duration {value} must be a whole number of seconds")
        return seconds
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
            if value in (0, "0") and not isinstance(value, bool):  # zero needs no unit
                return 0
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
