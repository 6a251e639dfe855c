"""Event coercion: everything a user passes becomes (bytes, int64 timestamps, int64 values or None),
and evaluation times become a sorted array with the order that restores the caller's."""
from __future__ import annotations

import datetime as dt
import math
import numbers
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from suse.api.checks import INT64_MAX, show
from suse.errors import InputError

# Event coercion: everything becomes (bytes, int64 timestamps, int64 values or None).
#
# Date-times (numpy datetime64 of any unit, pandas datetime Series, datetime objects) become
# whole seconds since the Unix epoch, rounded down, as in the Spark pipeline; naive ones are
# read as UTC.

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_SECOND = dt.timedelta(seconds=1)
INT64_MIN = -(2**63)

# Seconds per tick of each linear datetime64 unit, as a fraction (numerator, denominator).
_UNIT_SECONDS = {"W": (604800, 1), "D": (86400, 1), "h": (3600, 1), "m": (60, 1), "s": (1, 1), "ms": (1, 10**3),
                 "us": (1, 10**6), "ns": (1, 10**9), "ps": (1, 10**12), "fs": (1, 10**15), "as": (1, 10**18)}
# Calendar units (Y, M) are no fixed number of seconds: numpy turns them into days, which is
# exact within these many units (days stay far inside int64); beyond them the seconds cannot
# fit in int64 anyway (2**63 s is about 2.9e11 years).
_CALENDAR_LIMIT = {"Y": 300_000_000_000, "M": 12 * 300_000_000_000}


def datetime_seconds(v: Any) -> Optional[int]:
    """Epoch seconds of a date-time scalar, or None when `v` is not one."""
    if isinstance(v, np.datetime64):
        if np.isnat(v):
            raise ValueError("NaT")
        return int(datetime64_seconds(np.array([v]), "timestamp")[0])
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        seconds = (v - _EPOCH) // _SECOND
        if not isinstance(seconds, numbers.Integral):  # pandas NaT
            raise ValueError("NaT")
        return int(seconds)
    if isinstance(v, dt.date):
        return (v - _EPOCH.date()).days * 86400
    return None


def datetime64_seconds(arr: np.ndarray, one: str) -> np.ndarray:
    """Whole seconds since the epoch (rounded down, as numpy and Spark do) of a datetime64 array
    without NaT, for every unit; `InputError` naming the event whose seconds leave int64 (numpy's
    own cast would wrap silently or raise a bare OverflowError)."""
    unit, count = np.datetime_data(arr.dtype)
    ticks = arr.view(np.int64)

    def outside(i: int) -> InputError:
        return InputError(f"{one} {arr[i]} ({arr.dtype}) is outside the 64-bit range of seconds since 1970", event=i)

    if unit in _CALENDAR_LIMIT:
        beyond = np.flatnonzero(np.abs(ticks) > _CALENDAR_LIMIT[unit] // count)
        if len(beyond):
            raise outside(int(beyond[0]))
        unit, count, ticks = "D", 1, arr.astype("datetime64[D]").view(np.int64)
    num, den = _UNIT_SECONDS[unit]
    num *= count
    shared = math.gcd(num, den)
    num, den = num // shared, den // shared
    if num == 1:
        return ticks // den  # floor division: rounds down, and cannot leave the range
    if den == 1:  # whole seconds per tick: the product must stay in int64
        beyond = np.flatnonzero((ticks > INT64_MAX // num) | (ticks < -(-INT64_MIN // num)))
        if len(beyond):
            raise outside(int(beyond[0]))
        return ticks * num
    seconds = [t * num // den for t in ticks.tolist()]  # a multi-tick unit such as [3ms]: exact
    beyond = [i for i, x in enumerate(seconds) if not INT64_MIN <= x <= INT64_MAX]
    if beyond:
        raise outside(beyond[0])
    return np.array(seconds, np.int64)


def as_array(data: Any) -> np.ndarray:
    # A tz-aware pandas Series would become an object array of Timestamps; UTC datetime64 is faster.
    tz = getattr(getattr(data, "dt", None), "tz", None) if hasattr(data, "dtype") else None
    if tz is not None:
        data = data.dt.tz_convert("UTC").dt.tz_localize(None)
    return np.asarray(data)


def to_int64(name: str, data: Any, n: int, datetimes: bool = False) -> np.ndarray:
    """`name` is plural ("timestamps"); `datetimes` allows date-times (converted to seconds)."""
    one = name[:-1]
    if isinstance(data, np.ndarray) and data.dtype == np.int64 and data.ndim == 1 and len(data) == n:
        return np.ascontiguousarray(data)  # the fast path: one check, no copy when contiguous
    if isinstance(data, (list, tuple)):
        for i, v in enumerate(data):
            if isinstance(v, bool):  # numpy would silently read True as 1
                raise InputError(f"{one} {v!r} is not an integer", event=i)
            if isinstance(v, numbers.Integral) and not INT64_MIN <= v <= INT64_MAX:  # numpy would make floats
                raise InputError(f"{one} {v} is outside the 64-bit integer range", event=i)
    arr = as_array(data)
    if arr.ndim != 1:
        raise InputError(f"{name} must be a one-dimensional sequence")
    if len(arr) != n:
        raise InputError(f"{n} characters but {len(arr)} {name}")
    if arr.dtype == np.int64:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and len(arr) and arr.max() > INT64_MAX:
            i = int(np.argmax(arr > INT64_MAX))
            raise InputError(f"{one} {arr[i].item()} is outside the 64-bit integer range", event=i)
        return arr.astype(np.int64)
    if arr.dtype.kind == "b":
        raise InputError(f"{name} must be integers, got booleans")
    if arr.dtype.kind == "M":
        if not datetimes:
            raise InputError(f"{name} must be integers, got date-times")
        nat = np.flatnonzero(np.isnat(arr))
        if len(nat):
            raise InputError(f"{one} is missing (NaT)", event=int(nat[0]))
        return datetime64_seconds(arr, one)
    if arr.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(arr) | (arr != np.floor(arr)))
        if len(bad):
            i = int(bad[0])
            raise InputError(f"{one} {arr[i].item()!r} is not an integer", event=i)
        if len(arr) and np.abs(arr).max() > 2**53:
            raise InputError(f"{name} given as floats lose precision above 2**53; pass integers")
        return arr.astype(np.int64)
    out = np.empty(n, dtype=np.int64)
    for i, v in enumerate(arr.tolist()):
        if datetimes:
            try:
                seconds = datetime_seconds(v)
            except ValueError:
                raise InputError(f"{one} is missing (NaT)", event=i) from None
            if seconds is not None:
                v = seconds
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            if isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) <= 2**53:
                v = int(v)
            else:
                raise InputError(f"{one} {show(v)} is not an integer", event=i)
        if not -(2**63) <= int(v) <= INT64_MAX:
            raise InputError(f"{one} {v} is outside the 64-bit integer range", event=i)
        out[i] = int(v)
    return out


def chars_to_bytes(chars: Any) -> bytes:
    if isinstance(chars, str):
        # One byte per character; anything outside Latin-1 becomes '?', an unknown symbol.
        return chars.encode("latin-1", errors="replace")
    if isinstance(chars, (bytes, bytearray)):
        return bytes(chars)
    out = []
    for i, c in enumerate(as_array(chars).tolist() if hasattr(chars, "dtype") else chars):
        if not isinstance(c, str) or len(c) != 1:
            raise InputError(f"character {show(c)} is not a single character", event=i)
        out.append(c)
    return "".join(out).encode("latin-1", errors="replace")


def frame_columns(frame: Any) -> tuple[Any, Any, Any]:
    """chars, timestamps, values (or None) of a table with `char`, `timestamp` and optionally
    `value` columns (names compared like CSV headers: case and blanks ignored)."""
    names = {str(c).strip().lower(): c for c in frame.columns}
    missing = [c for c in ("char", "timestamp") if c not in names]
    if missing:
        have = ", ".join(map(str, frame.columns)) or "none"
        raise InputError(f"the table has no column {missing[0]!r} (it has {have}); "
                         "expected char, timestamp and optionally value")
    value = frame[names["value"]] if "value" in names else None
    return frame[names["char"]], frame[names["timestamp"]], value


def coerce_events(
    events: Any = None,
    chars: Any = None,
    timestamps: Any = None,
    values: Any = None,
) -> tuple[bytes, np.ndarray, Optional[np.ndarray]]:
    """Accept `events` (pairs/triples, a table with char/timestamp[/value] columns, or an
    object with chars/timestamps/values) or the three arrays."""
    if events is not None:
        if chars is not None or timestamps is not None:
            raise InputError("pass either events or chars/timestamps, not both")
        if isinstance(events, (str, bytes, bytearray)):
            raise InputError("got characters but no timestamps: pass timestamps= as well, "
                             "or events=[(char, timestamp[, value]), ...]")
        if hasattr(events, "chars") and hasattr(events, "timestamps"):
            retract = getattr(events, "retract", None)
            if retract is not None and np.any(retract):
                i = int(np.flatnonzero(retract)[0])
                raise InputError("a retraction (op '-') where only events are taken: retractions need an engine "
                                 "with lateness= and its retract()", event=i)
            chars, timestamps, values = events.chars, events.timestamps, getattr(events, "values", None)
        elif hasattr(events, "columns") and hasattr(events, "__getitem__"):
            chars, timestamps, values = frame_columns(events)
        else:
            chars, timestamps, vals, any_value = [], [], [], False
            try:
                items = iter(events)
            except TypeError:
                raise InputError(f"events must be a sequence of (char, timestamp[, value]), "
                                 f"got {type(events).__name__}") from None
            for i, ev in enumerate(items):
                if isinstance(ev, (tuple, list)) and len(ev) in (3, 4) and isinstance(ev[-1], Mapping):
                    ev = ev[:-1]  # attributes: read by conditions (where=), not by the counters
                if not isinstance(ev, (tuple, list)) or len(ev) not in (2, 3):
                    raise InputError(f"expected (char, timestamp) or (char, timestamp, value), got {show(ev)}", event=i)
                chars.append(ev[0])
                timestamps.append(ev[1])
                vals.append(ev[2] if len(ev) == 3 else 1)
                any_value |= len(ev) == 3
            values = vals if any_value else None
    if chars is not None and timestamps is None:
        raise InputError("got characters but no timestamps: pass timestamps= as well, "
                         "or events=[(char, timestamp[, value]), ...]")
    if chars is None or timestamps is None:
        raise InputError("no events given: pass events=[(char, timestamp[, value]), ...] or chars= and timestamps=")
    raw = chars_to_bytes(chars)
    ts = to_int64("timestamps", timestamps, len(raw), datetimes=True)
    vals = None
    if values is not None:
        vals = to_int64("values", values, len(raw))
        negative = np.flatnonzero(vals < 0)
        if len(negative):
            i = int(negative[0])
            raise InputError(f"value {vals[i]} is negative; values must be non-negative integers", event=i)
    return raw, ts, vals


def eval_times(evaluate_at: Any, last: Optional[int] = None) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """The evaluation times for the engine (sorted) and the order that puts its answers back
    into the caller's order (None when that is already the sorted order)."""
    if evaluate_at is None:
        return None, None
    if isinstance(evaluate_at, (numbers.Integral, np.generic, dt.date)) or (
        isinstance(evaluate_at, np.ndarray) and evaluate_at.ndim == 0
    ):  # one time (any numpy scalar too: it has a dtype but no length)
        evaluate_at = [evaluate_at]
    if isinstance(evaluate_at, (str, bytes)):
        raise InputError(f"evaluate_at must be timestamps, got the string {evaluate_at!r}")
    if not hasattr(evaluate_at, "dtype"):
        try:
            evaluate_at = list(evaluate_at)  # once: a generator cannot be read twice
        except TypeError:
            raise InputError(f"evaluate_at must be a timestamp or a sequence of them, got {show(evaluate_at)}") from None
    times = to_int64("evaluation timestamps", evaluate_at, len(evaluate_at), datetimes=True)
    if last is not None and len(times) and times.min() < last:
        early = int(times.min())
        raise InputError(
            f"evaluation time {early} is earlier than timestamp {last}, the latest already processed: "
            "the events after it cannot be taken back; evaluate it in the call that processes "
            "the events up to it"
        )
    if len(times) < 2 or bool(np.all(times[1:] >= times[:-1])):
        return times, None
    order = np.argsort(times, kind="stable")
    return times[order], order


def in_input_order(rows: list, order: Optional[np.ndarray]) -> list:
    if order is None:
        return rows
    out: list = [None] * len(rows)
    for k, i in enumerate(order.tolist()):
        out[i] = rows[k]
    return out
