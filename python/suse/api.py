"""The Python surface of suse: Query, exact aggregation and the bounded Summary.

Everything a user touches is validated here and turned into `suse.InputError` with a message
that says what is wrong; the native core (`suse._core`) then runs one call per batch.
"""
from __future__ import annotations

import datetime as dt
import functools
import json
import math
import numbers
import secrets
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Optional, Sequence

import numpy as np

from suse import _core
from suse.disorder import PLACEMENTS, Inserter, Reorder, check_late_mode, late_error, late_mask
from suse.errors import InputError, LateEventError, QueryError, StateError
from suse.query import Automaton, compile_regex
from suse.query.approximate import MAX_MISSING

# The kernel owns these names; the Python layer only validates against them. MIN and MAX run
# beside the counters (their summaries rank elements by match counts, as COUNT does).
EXTREMA = ("min", "max")
AGGREGATES = tuple(_core.AGGREGATES) + EXTREMA
POLICIES = tuple(_core.POLICIES)
STRATEGIES = tuple(_core.STRATEGIES)
#: Default memory budget of one engine (bytes); see `memory_limit=` and docs/ENGINE.md.
DEFAULT_MEMORY_LIMIT = _core.DEFAULT_MEMORY_LIMIT
INT64_MAX = 2**63 - 1


def _show(value: Any) -> str:
    """A value as the user would write it: numpy scalars print as plain Python numbers."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _check_int(name: str, value: Any, minimum: int = 0, maximum: int = INT64_MAX) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer, got {_show(value)}")
    value = int(value)
    if value < minimum:
        raise InputError(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise InputError(f"{name} is too large: {value} (the largest allowed is {maximum})")
    return value


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name} must be one of {', '.join(choices)}; got {_show(value)}")
    return value


@functools.lru_cache(maxsize=256)
def _compiled(regex: str, max_missing: int = 0) -> tuple[Automaton, Any]:
    """The automaton of `regex` and its native form. Cached: saved summaries and Spark state
    rebuild their Query on every load, and compiling is the expensive part."""
    automaton = compile_regex(regex, max_missing) if max_missing else compile_regex(regex)
    labels = {"final_cost": automaton.final_cost(), "max_missing": max_missing} if max_missing else {}
    dfa = _core.Dfa(
        automaton.n_states,
        automaton.alphabet,
        getattr(automaton, "negated", ""),
        automaton.start,
        [s in automaton.finals for s in automaton.states],
        automaton.table(),
        **labels,
    )
    return automaton, dfa


class Query:
    """A regular-expression query: pattern, time window (inclusive), aggregate and policy.

    `policy="any"` is skip-till-any-match (every subsequence counts); `policy="next"` is
    skip-till-next-match (each initiator starts one run that takes every later event it can);
    `policy="contiguous"` counts only matches whose elements are consecutive events of the
    stream (any event between, also of a character outside the query, breaks them).

    `aggregate="min"`/`"max"` report the smallest/largest value among the elements that belong
    to at least one match. `of` (a letter or letters of the query, e.g. `"C"` or `"CD"`)
    restricts SUM, AVG, MIN and MAX to the values of those letters' elements; COUNT ignores it.

    `max_missing=k` (approximate matching, ACEP) also counts the index sets whose word
    becomes a word of the pattern once at most k letters are inserted; results then carry
    `count_by_missing` (k + 1 counts by the least number of missing letters).
    """

    def __init__(self, regex: str, window: int, aggregate: str = "count", policy: str = "any",
                 of: Optional[Any] = None, max_missing: int = 0):
        if not isinstance(regex, str):
            raise InputError(f"the query must be a string, got {type(regex).__name__}")
        self.regex = regex
        self.window = _check_int("window", window)
        self.aggregate = _check_choice("aggregate", aggregate, AGGREGATES)
        self.policy = _check_choice("policy", policy, POLICIES)
        self.max_missing = _check_int("max_missing", max_missing, maximum=MAX_MISSING)
        self.automaton, self._dfa = _compiled(regex, self.max_missing)
        self.of = _check_of(of, regex, self.automaton.alphabet)

    @property
    def _kernel_aggregate(self) -> str:
        """What the kernel's summary ranks by: MIN/MAX keep ranking by match counts."""
        return "count" if self.aggregate in EXTREMA else self.aggregate

    @property
    def _extrema(self) -> bool:
        return self.aggregate in EXTREMA

    @property
    def _of_mask(self) -> Optional[list[bool]]:
        return None if self.of is None else [c in self.of for c in self.automaton.alphabet]

    @property
    def alphabet(self) -> str:
        """The letters that can be elements of a match."""
        return self.automaton.alphabet

    @property
    def negated(self) -> str:
        """The negated characters (`!X` in the query): events that can be no element."""
        return getattr(self.automaton, "negated", "")

    def to_dict(self) -> dict:
        d = {"regex": self.regex, "window": self.window, "aggregate": self.aggregate, "policy": self.policy}
        if self.of is not None:  # absent when unset, so descriptions saved before `of` still match
            d["of"] = self.of
        if self.max_missing:  # the same for exact queries
            d["max_missing"] = self.max_missing
        return d

    def __repr__(self) -> str:
        of = "" if self.of is None else f", of={self.of!r}"
        missing = f", max_missing={self.max_missing}" if self.max_missing else ""
        return (f"Query({self.regex!r}, window={self.window}, aggregate={self.aggregate!r}, "
                f"policy={self.policy!r}{of}{missing})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.to_dict().items()))


def _check_of(of: Any, regex: str, alphabet: str) -> Optional[str]:
    """`of` as the letters it names, in alphabet order; `QueryError` for anything else."""
    if of is None:
        return None
    if isinstance(of, str):
        letters = list(of)
    elif isinstance(of, (list, tuple, set, frozenset)) and all(isinstance(c, str) and len(c) == 1 for c in of):
        letters = list(of)
    else:
        raise QueryError(f"of must be a letter or letters of the query, got {_show(of)}", 0, regex)
    if not letters:
        raise QueryError("of names no letter; give at least one letter of the query", 0, regex)
    for c in letters:
        if c not in alphabet:
            at = regex.find(c)
            raise QueryError(f"of names {c!r}, which is not a letter of the query (its letters are {alphabet})",
                             max(at, 0), regex)
    return "".join(c for c in alphabet if c in letters)


class _Average:
    """`avg`: SUM / COUNT, None without a match (every result type's)."""

    @property
    def avg(self) -> Optional[float]:
        count: int = self.count  # type: ignore[attr-defined]
        return None if count == 0 else self.sum / count  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Evaluation(_Average):
    """The aggregate at an evaluation time: over all events with timestamp <= `timestamp`."""

    timestamp: int
    count: int
    sum: int
    partial_count: int
    detected_count: Optional[int] = None
    detected_sum: Optional[int] = None
    #: The retained elements at `timestamp` (summaries, when asked for with `elements=True`).
    elements: Optional[list[tuple[str, int, int]]] = None
    #: Smallest / largest value among the elements in at least one match (queries with
    #: aggregate "min" or "max"; None otherwise, and when there is no match).
    min: Optional[int] = None
    max: Optional[int] = None
    #: Approximate queries (`max_missing=k`): the count by least number of missing letters,
    #: k + 1 entries summing to `count`; None for exact queries.
    count_by_missing: Optional[list[int]] = None


@dataclass(frozen=True)
class ExactResult(_Average):
    count: int
    sum: int
    partial_count: int
    skipped: int
    events: int
    evaluations: list[Evaluation] = field(default_factory=list)
    min: Optional[int] = None
    max: Optional[int] = None
    count_by_missing: Optional[list[int]] = None
    #: Events older than the horizon, counted and never fed (`late="count"`).
    late: int = 0


@dataclass(frozen=True)
class SummaryResult(_Average):
    count: int
    sum: int
    partial_count: int
    detected_count: int
    detected_sum: int
    skipped: int
    events: int
    size: int
    min: Optional[int] = None
    max: Optional[int] = None
    count_by_missing: Optional[list[int]] = None
    #: Events older than the horizon, counted and never fed (`late="count"`).
    late: int = 0


def _evaluation(row: Any) -> Evaluation:
    """An evaluation from the kernel's named fields."""
    return Evaluation(
        timestamp=row.timestamp,
        count=row.count,
        sum=row.sum,
        partial_count=row.partial_count,
        detected_count=row.detected_count,
        detected_sum=row.detected_sum,
        elements=row.elements,
        min=row.min,
        max=row.max,
        count_by_missing=row.count_by_missing,
    )


def _check_memory_limit(memory_limit: Optional[int]) -> Optional[int]:
    if memory_limit is None:
        return None
    return _check_int("memory_limit", memory_limit, minimum=1, maximum=2**64 - 1)


# ---------------------------------------------------------------------------------------------
# Event coercion: everything becomes (bytes, int64 timestamps, int64 values or None).
#
# Date-times (numpy datetime64 of any unit, pandas datetime Series, datetime objects) become
# whole seconds since the Unix epoch, rounded down, as in the Spark pipeline; naive ones are
# read as UTC.

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_SECOND = dt.timedelta(seconds=1)


def _datetime_seconds(v: Any) -> Optional[int]:
    """Epoch seconds of a date-time scalar, or None when `v` is not one."""
    if isinstance(v, np.datetime64):
        if np.isnat(v):
            raise ValueError("NaT")
        return int(v.astype("datetime64[s]").astype(np.int64))
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


def _as_array(data: Any) -> np.ndarray:
    # A tz-aware pandas Series would become an object array of Timestamps; UTC datetime64 is faster.
    tz = getattr(getattr(data, "dt", None), "tz", None) if hasattr(data, "dtype") else None
    if tz is not None:
        data = data.dt.tz_convert("UTC").dt.tz_localize(None)
    return np.asarray(data)


def _to_int64(name: str, data: Any, n: int, datetimes: bool = False) -> np.ndarray:
    """`name` is plural ("timestamps"); `datetimes` allows date-times (converted to seconds)."""
    one = name[:-1]
    if isinstance(data, np.ndarray) and data.dtype == np.int64 and data.ndim == 1 and len(data) == n:
        return np.ascontiguousarray(data)  # the fast path: one check, no copy when contiguous
    if isinstance(data, (list, tuple)):
        for i, v in enumerate(data):
            if isinstance(v, bool):  # numpy would silently read True as 1
                raise InputError(f"{one} {v!r} is not an integer", event=i)
    arr = _as_array(data)
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
        return arr.astype("datetime64[s]").astype(np.int64)  # numpy rounds down, like Spark
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
                seconds = _datetime_seconds(v)
            except ValueError:
                raise InputError(f"{one} is missing (NaT)", event=i) from None
            if seconds is not None:
                v = seconds
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            if isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) <= 2**53:
                v = int(v)
            else:
                raise InputError(f"{one} {_show(v)} is not an integer", event=i)
        if not -(2**63) <= int(v) <= INT64_MAX:
            raise InputError(f"{one} {v} is outside the 64-bit integer range", event=i)
        out[i] = int(v)
    return out


def _chars_to_bytes(chars: Any) -> bytes:
    if isinstance(chars, str):
        # One byte per character; anything outside Latin-1 becomes '?', an unknown symbol.
        return chars.encode("latin-1", errors="replace")
    if isinstance(chars, (bytes, bytearray)):
        return bytes(chars)
    out = []
    for i, c in enumerate(_as_array(chars).tolist() if hasattr(chars, "dtype") else chars):
        if not isinstance(c, str) or len(c) != 1:
            raise InputError(f"character {_show(c)} is not a single character", event=i)
        out.append(c)
    return "".join(out).encode("latin-1", errors="replace")


def _frame_columns(frame: Any) -> tuple[Any, Any, Any]:
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
            chars, timestamps, values = _frame_columns(events)
        else:
            chars, timestamps, vals, any_value = [], [], [], False
            try:
                items = iter(events)
            except TypeError:
                raise InputError(f"events must be a sequence of (char, timestamp[, value]), "
                                 f"got {type(events).__name__}") from None
            for i, ev in enumerate(items):
                if not isinstance(ev, (tuple, list)) or len(ev) not in (2, 3):
                    raise InputError(f"expected (char, timestamp) or (char, timestamp, value), got {_show(ev)}", event=i)
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
    raw = _chars_to_bytes(chars)
    ts = _to_int64("timestamps", timestamps, len(raw), datetimes=True)
    vals = None
    if values is not None:
        vals = _to_int64("values", values, len(raw))
        negative = np.flatnonzero(vals < 0)
        if len(negative):
            i = int(negative[0])
            raise InputError(f"value {vals[i]} is negative; values must be non-negative integers", event=i)
    return raw, ts, vals


def _eval_times(evaluate_at: Any, last: Optional[int] = None) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
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
            raise InputError(f"evaluate_at must be a timestamp or a sequence of them, got {_show(evaluate_at)}") from None
    times = _to_int64("evaluation timestamps", evaluate_at, len(evaluate_at), datetimes=True)
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


def _in_input_order(rows: list, order: Optional[np.ndarray]) -> list:
    if order is None:
        return rows
    out: list = [None] * len(rows)
    for k, i in enumerate(order.tolist()):
        out[i] = rows[k]
    return out


# ---------------------------------------------------------------------------------------------


class Exact:
    """Incremental exact aggregation (the ground truth); `exact()` is the one-shot form."""

    def __init__(self, query: Query, memory_limit: Optional[int] = None, lateness: int = 0, *,
                 _disorder: str = "native"):
        if not isinstance(query, Query):
            raise InputError(f"expected a suse.Query, got {type(query).__name__}")
        self.query = query
        self.lateness = _check_int("lateness", lateness)
        limit = _check_memory_limit(memory_limit)
        self._engine = _core.ExactEngine(query._dfa, query.window, query.policy, limit, query._extrema, query._of_mask)
        # lateness > 0: the kernel's out-of-order layer (`_disorder="buffer"`: the Python
        # buffer of disorder.py, kept as the benchmark's baseline)
        self._ooo = _core.OooExactEngine(query._dfa, query.window, query.policy, self.lateness, limit,
                                         query._extrema, query._of_mask) if self.lateness and _disorder == "native" else None
        self._reorder = Reorder(self.lateness) if self.lateness and self._ooo is None else None
        self._late = 0  # late events counted with lateness=0 or by the native layer

    def extend(self, events: Any = None, *, chars: Any = None, timestamps: Any = None, values: Any = None,
               evaluate_at: Any = None, late: str = "error") -> list[Evaluation]:
        """Process a batch; returns one `Evaluation` per entry of `evaluate_at`, in its order.

        With `lateness=L`, events may arrive in any order as long as they are not older than
        the horizon (largest timestamp seen - L); results equal processing the events sorted by
        (timestamp, arrival). An older event raises `suse.LateEventError`, or with
        `late="count"` is counted in `result().late` and never fed. An evaluation at T is taken
        just before the first event later than T + L (or after the batch); a time earlier than
        the horizon is an error."""
        late = check_late_mode(late)
        raw, ts, vals = coerce_events(events, chars, timestamps, values)
        if self._ooo is not None:
            times, order = _eval_times(evaluate_at)
            rows = _ooo_extend(self._ooo, raw, ts, vals, times, late)
            self._late += rows.pop()
        elif self._reorder is None:
            rows, order, n_late = _extend_in_order(self._engine, raw, ts, vals, evaluate_at, late)
            self._late += n_late
        else:
            times, order = _eval_times(evaluate_at)
            rows = self._reorder.extend(self._engine, raw, ts, vals, times, late,
                                        lambda e, t: self._reorder.settled(e, t)[1])
        return _in_input_order([_evaluation(r) for r in rows], order)

    def retract(self, char: str, timestamp: int, value: int = 1) -> None:
        """Take back one earlier event equal to (char, timestamp, value), the latest to arrive
        if several are: afterwards every result equals processing the stream without it. Only
        events newer than the horizon (largest timestamp seen - lateness) can be retracted; an
        older one, or one never seen, is an error that changes nothing."""
        if self._ooo is not None:
            return _ooo_retract(self._ooo, char, timestamp, value)
        _retract(self._reorder, char, timestamp, value)

    def _settled(self) -> Any:
        return self._engine if self._reorder is None else self._reorder.settled(self._engine)[0]

    @property
    def late(self) -> int:
        return self._late if self._reorder is None else self._reorder.late

    @property
    def pending(self) -> int:
        """Events newer than the horizon, not final yet (0 with lateness=0)."""
        if self._ooo is not None:
            return self._ooo.pending
        return 0 if self._reorder is None else len(self._reorder)

    def result(self, evaluations: Optional[list[Evaluation]] = None) -> ExactResult:
        if self._ooo is not None:
            t = self._ooo.totals()
            events, skipped = self._ooo.counts()
        else:
            engine = self._settled()
            t, events, skipped = engine.totals(), engine.events, engine.skipped
        return ExactResult(t.count, t.sum, t.partial_count, skipped, events, evaluations or [],
                           t.min, t.max, t.count_by_missing, late=self.late)


def _extend_in_order(engine: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], evaluate_at: Any,
                     late: str, *extra: Any) -> tuple[list, Optional[np.ndarray], int]:
    """One batch straight into a native engine (lateness 0): events older than its last one
    reported or dropped, evaluation times checked against it. Returns the evaluation rows, their
    input order (as `_eval_times`) and the number of late events dropped."""
    last = engine.last_timestamp
    raw, ts, vals, n_late = _drop_late(raw, ts, vals, last, late)
    times, order = _eval_times(evaluate_at, last)
    return engine.extend(raw, ts, vals, times, *extra), order, n_late


def _ooo_extend(ooo: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], times: Optional[np.ndarray],
                late: str) -> list:
    """One batch into the kernel's out-of-order layer (`_core.OooExactEngine`): the late events
    are reported or dropped here, with the messages of disorder.py. Returns the evaluation rows
    followed by the number of late events dropped."""
    top_before, horizon = ooo.max_timestamp, ooo.horizon
    if times is not None and len(times) and horizon is not None and int(times[0]) < horizon:
        raise InputError(f"evaluation time {int(times[0])} is earlier than the horizon {horizon} (largest "
                         f"timestamp seen {top_before} - lateness {ooo.lateness}): the events "
                         "before it are final and the result at that time is no longer kept")
    lateness = ooo.lateness
    is_late, top = late_mask(ts, top_before, lateness)
    n_late = 0
    if is_late.any():
        if late != "count":
            raise late_error(ts, is_late, top, top_before, lateness)
        keep = ~is_late
        n_late = int(is_late.sum())
        raw = np.frombuffer(raw, np.uint8)[keep].tobytes()
        ts, vals = ts[keep], None if vals is None else vals[keep]
    rows = ooo.extend(raw, ts, vals, times)
    rows.append(n_late)
    return rows


def _ooo_retract(ooo: Any, char: Any, timestamp: Any, value: Any) -> None:
    if not isinstance(char, str) or len(char) != 1:
        raise InputError(f"character {_show(char)} is not a single character")
    t = _check_int("timestamp", timestamp, minimum=-(2**63))
    v = _check_int("value", value)
    byte = _chars_to_bytes(char)[0]
    done = ooo.retract(byte, t, v)
    if done == "final":
        h = ooo.horizon
        where = "no event has been seen yet" if h is None else (
            f"the horizon is {h} (largest timestamp seen {ooo.max_timestamp} - lateness {ooo.lateness}) and events at "
            "or before it are final")
        raise LateEventError(f"cannot retract the event at timestamp {t}: {where}")
    if done == "missing":
        raise InputError(f"cannot retract ({chr(byte)!r}, {t}, {v}): no such event was seen")


def _check_order(ts: np.ndarray, last: Optional[int]) -> None:
    """Timestamps must not decrease, also across batches (`last`: the latest already processed);
    the error carries the event index (query sets, which take events in order)."""
    is_late, top = late_mask(ts, last, 0)
    if is_late.any():
        raise late_error(ts, is_late, top, last, 0)


def _drop_late(raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], last: Optional[int], late: str):
    """In-order processing (lateness 0): the batch without its late events, and their number."""
    is_late, top = late_mask(ts, last, 0)
    if not is_late.any():
        return raw, ts, vals, 0
    if late != "count":
        raise late_error(ts, is_late, top, last, 0)
    keep = ~is_late
    raw = np.frombuffer(raw, np.uint8)[keep].tobytes()
    return raw, ts[keep], None if vals is None else vals[keep], int(is_late.sum())


def _retract(reorder: Optional[Reorder], char: Any, timestamp: Any, value: Any) -> None:
    if not isinstance(char, str) or len(char) != 1:
        raise InputError(f"character {_show(char)} is not a single character")
    t = _check_int("timestamp", timestamp, minimum=-(2**63))
    v = _check_int("value", value)
    if reorder is None:
        raise LateEventError(f"cannot retract the event at timestamp {t}: with lateness=0 every event is final; "
                             "create the engine with lateness= to take events back")
    reorder.retract(_chars_to_bytes(char)[0], t, v)


def exact(query: Query, events: Any = None, *, chars: Any = None, timestamps: Any = None, values: Any = None,
          evaluate_at: Any = None, lateness: int = 0, late: str = "error") -> ExactResult:
    """Aggregate every match of `query` over a whole stream, exactly.

    `evaluate_at` lists timestamps T at which the aggregate over all events with timestamp <= T
    is also reported (in `result.evaluations`, in the order given), computed while processing.
    `lateness` and `late` as for `Exact.extend`.

    With a `suse.QuerySet` it runs every query in one pass and returns a dict name -> result.
    """
    if not isinstance(query, Query):
        from suse.queryset import QuerySet, exact_set  # the set builds on this module

        if isinstance(query, QuerySet):
            if lateness or late != "error":
                raise InputError("query sets take events in order: lateness= and late= are for single queries")
            return exact_set(query, events, chars=chars, timestamps=timestamps, values=values, evaluate_at=evaluate_at)
    engine = Exact(query, lateness=lateness)
    raw, ts, vals = coerce_events(events, chars, timestamps, values)
    if len(raw) == 0:
        raise InputError("the stream is empty")
    rows = engine.extend(chars=raw, timestamps=ts, values=vals, evaluate_at=evaluate_at, late=late)
    return engine.result(rows)




class Summary:
    """A bounded summary of one stream (one partition) for one query.

    It retains at most `size` elements, chosen by `strategy`, and keeps exact counters over the
    matches those elements form. See docs/ENGINE.md for the algorithms.

    `lateness=L` accepts events up to L time units older than the newest one. With
    `placement="buffer"` (the default) they wait in order until final, so every result equals a
    summary fed the sorted stream, at the cost of holding the last L time units of events; with
    `placement="insert"` a late event goes into the summary at once, at its place in time, and
    memory stays at `size` elements (policy "any" without negation; no `retract`).
    """

    def __init__(
        self,
        query: Query,
        size: int,
        strategy: str = "suse",
        probabilities: Optional[Mapping[str, float]] = None,
        seed: Optional[int] = None,
        time_to_live: Optional[int] = None,
        memory_limit: Optional[int] = None,
        lateness: int = 0,
        placement: str = "buffer",
    ):
        if not isinstance(query, Query):
            raise InputError(f"expected a suse.Query, got {type(query).__name__}")
        self.query = query
        self.size = _check_int("size", size, minimum=1, maximum=10_000_000)
        self.placement = _check_choice("placement", placement, PLACEMENTS)
        if self.placement == "insert" and (query.policy != "any" or query.negated):
            raise InputError("placement=\"insert\" needs policy \"any\" without negation: elsewhere what lies between "
                             "two elements matters, and is not known for a late one; use placement=\"buffer\"")
        self.strategy = _check_choice("strategy", strategy, STRATEGIES)
        self.time_to_live = None if time_to_live is None else _check_int("time_to_live", time_to_live)
        self.probabilities = check_probabilities(probabilities, query.alphabet)
        self.seed = secrets.randbits(63) if seed is None else _check_int("seed", seed, maximum=2**64 - 1)
        p = None if self.probabilities is None else [self.probabilities.get(c, 0.0) for c in query.alphabet]
        self.memory_limit = _check_memory_limit(memory_limit)
        self._engine = _core.SummaryEngine(
            query._dfa, query.window, self.size, self.strategy, query._kernel_aggregate, query.policy, p, self.seed,
            self.time_to_live, self.memory_limit, query._extrema, query._of_mask,
        )
        self.lateness = _check_int("lateness", lateness)
        self._reorder = (Inserter if self.placement == "insert" else Reorder)(self.lateness) if self.lateness else None
        self._late = 0  # late events counted with lateness=0

    def insert(self, char: str, timestamp: int, value: int = 1, *, late: str = "error") -> None:
        self.extend([char], [timestamp], [value], late=late)

    def retract(self, char: str, timestamp: int, value: int = 1) -> None:
        """Take back one earlier event equal to (char, timestamp, value), as `Exact.retract`.
        Events newer than the horizon have not reached the summary yet (they wait in order), so
        afterwards everything equals a summary fed the stream without the event."""
        _retract(self._reorder, char, timestamp, value)

    @property
    def late(self) -> int:
        return self._late if self._reorder is None else self._reorder.late

    @property
    def pending(self) -> int:
        """Events newer than the horizon, waiting to be fed in order (0 with lateness=0)."""
        return 0 if self._reorder is None else len(self._reorder)

    def _settled(self) -> Any:
        """The engine as it is after every accepted event (a copy fed the pending ones)."""
        return self._engine if not self.pending else self._reorder.settled(self._engine)[0]

    def extend(self, chars: Any = None, timestamps: Any = None, values: Any = None, evaluate_at: Any = None,
               *, events: Any = None, elements: bool = False, late: str = "error") -> list[Evaluation]:
        """Process a batch in one native call.

        The batch is `chars`, `timestamps` (and `values`), or `events` like `exact()` takes them,
        also positionally: `s.extend([("A", 1), ("B", 2)])`.
        Returns one `Evaluation` per timestamp T in `evaluate_at`, in the order given, taken
        before the first event later than T (times after the batch reflect its end). A time
        earlier than an event of an earlier batch is an error. With `elements=True` each
        evaluation also carries the retained elements at that moment. `lateness` (of the
        summary) and `late` work as for `Exact.extend`: late events are put in order.
        """
        if events is None and timestamps is None and chars is not None and not isinstance(chars, (str, bytes)):
            events, chars = chars, None  # extend(events) like exact(query, events)
        late = check_late_mode(late)
        raw, ts, vals = coerce_events(events, chars, timestamps, values)
        if self._reorder is None:
            rows, order, n_late = _extend_in_order(self._engine, raw, ts, vals, evaluate_at, late, bool(elements))
            self._late += n_late
        else:
            times, order = _eval_times(evaluate_at)
            rows = self._reorder.extend(self._engine, raw, ts, vals, times, late,
                                        lambda e, t: self._reorder.settled(e, t, with_elements=bool(elements))[1])
        return _in_input_order([_evaluation(r) for r in rows], order)

    def result(self) -> SummaryResult:
        engine = self._settled()
        r = engine.result()
        return SummaryResult(r.count, r.sum, r.partial_count, r.detected_count, r.detected_sum, engine.skipped,
                             engine.events, len(engine), r.min, r.max, r.count_by_missing,
                             late=self.late)

    def elements(self) -> list[tuple[str, int, int]]:
        return self._settled().elements()

    def matches(self, limit: Optional[int] = None) -> Iterator[list[tuple[str, int, int]]]:
        """The matches among the retained elements (what `result()` counts), each as its list
        of elements (char, timestamp, value), lazily; see `suse.matches`."""
        from suse.matches import RetainedMatches  # built on this module

        return RetainedMatches.of_summary(self).matches(limit)

    def sample_matches(self, k: int, seed: Optional[int] = None) -> list[list[tuple[str, int, int]]]:
        """`k` matches among the retained elements drawn uniformly with replacement; see
        `suse.sample_matches`."""
        from suse.matches import RetainedMatches  # built on this module

        return RetainedMatches.of_summary(self).sample(k, seed)

    def __len__(self) -> int:
        return len(self._settled())

    def with_query(self, query: Optional[Query] = None, *, size: Optional[int] = None, strategy: Optional[str] = None,
                   window: Optional[int] = None) -> "Summary":
        """A summary for a new query (or window, size, strategy) that keeps what this one knows:
        the retained elements whose characters the new query uses are replayed into a fresh
        summary, in order; the others are dropped and counted in `.dropped` of the new summary.
        Events still pending (lateness) carry over as they are. The new summary's `detected`
        counters start from the replay; the old ones are not carried over."""
        if query is None:
            query = self.query
        if not isinstance(query, Query):
            raise InputError(f"expected a suse.Query, got {type(query).__name__}")
        if window is not None:
            query = Query(query.regex, window, query.aggregate, query.policy, of=query.of, max_missing=query.max_missing)
        probabilities = self.probabilities if query.alphabet == self.query.alphabet else None
        new = Summary(query, self.size if size is None else size, self.strategy if strategy is None else strategy,
                      probabilities, self.seed, self.time_to_live, self.memory_limit, self.lateness, self.placement)
        kept = [e for e in self._engine.elements() if e[0] in query.alphabet]
        new.dropped = len(self._engine) - len(kept)
        if kept:
            raw = "".join(c for c, _, _ in kept).encode("latin-1")
            new._engine.extend(raw, np.array([t for _, t, _ in kept], np.int64),
                               np.array([v for _, _, v in kept], np.int64), None, False)
        if self._reorder is not None:
            new._reorder = Reorder.from_dict(self._reorder.to_dict())
        new._late = self._late
        return new

    def __repr__(self) -> str:
        return f"Summary({self.query!r}, size={self.size}, strategy={self.strategy!r}, retained={len(self)})"

    # -- serialisation (Spark state, pickling) --

    def _header(self) -> dict:
        header = {
            "query": self.query.to_dict(),
            "size": self.size,
            "strategy": self.strategy,
            "probabilities": self.probabilities,
            "seed": self.seed,
            "time_to_live": self.time_to_live,
        }
        # only when used, so that the saved form of an in-order summary stays what it was
        if self._reorder is not None:
            header["reorder"] = self._reorder.to_dict()
        if self._late:
            header["late"] = self._late
        return header

    def to_bytes(self) -> bytes:
        """The saved form: versioned, checksummed, and carrying the query and options."""
        return self._engine.to_bytes(json.dumps(self._header()))

    @classmethod
    def from_bytes(cls, data: bytes, memory_limit: Optional[int] = None) -> "Summary":
        """Load a saved summary; `suse.StateError` says what is wrong with bytes that do not load."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InputError(f"expected bytes, got {type(data).__name__}")
        engine, meta = _core.SummaryEngine.from_bytes(bytes(data), _check_memory_limit(memory_limit))
        try:
            header = json.loads(meta)
            query = Query(**header["query"])
            summary = cls.__new__(cls)
            summary.query = query
            summary.size = header["size"]
            summary.strategy = header["strategy"]
            summary.probabilities = header["probabilities"]
            summary.seed = header["seed"]
            summary.time_to_live = header["time_to_live"]
            summary._reorder = Reorder.from_dict(header["reorder"]) if "reorder" in header else None
            summary.lateness = 0 if summary._reorder is None else summary._reorder.lateness
            summary.placement = "insert" if isinstance(summary._reorder, Inserter) else "buffer"
            summary._late = int(header.get("late", 0))
        except (ValueError, KeyError, TypeError) as exc:  # QueryError and InputError are ValueErrors
            raise StateError(f"saved summary has an unreadable description: {exc}") from None
        summary.memory_limit = _check_memory_limit(memory_limit)
        cfg = engine.config
        stated = (query.window, summary.size, summary.strategy, query._kernel_aggregate, query.policy, summary.time_to_live,
                  summary.seed)
        held = (cfg.window, cfg.size, cfg.strategy, cfg.aggregate, cfg.policy, cfg.time_to_live, cfg.seed)
        if stated != held or not engine.adopt_labels(query._dfa):
            raise StateError("saved summary does not match the query and options it describes")
        engine._set_output(query._extrema, query._of_mask)
        summary._engine = engine
        return summary

    def __reduce__(self):
        return (Summary.from_bytes, (self.to_bytes(),))


def check_probabilities(probabilities: Optional[Mapping[str, Any]], alphabet: Optional[str]) -> Optional[dict]:
    """Validate alphabet probabilities: the one check behind `Summary`, `suse eval
    --probabilities` and the Spark jobs.

    Every key is one character of the query (`alphabet`; None checks only the numbers), every
    character of the query has a probability, each is a finite number >= 0, and they sum to 1
    within 1e-6. Returns them in alphabet order, rescaled to sum exactly to 1."""
    if probabilities is None:
        return None
    if not isinstance(probabilities, Mapping):
        raise InputError("probabilities must be a mapping from character to probability, "
                         f"got {type(probabilities).__name__}")
    where = "" if alphabet is None else f" ({alphabet})"
    clean: dict[str, float] = {}
    for c, p in probabilities.items():
        if not isinstance(c, str) or len(c) != 1 or (alphabet is not None and c not in alphabet):
            raise InputError(f"probability given for {_show(c)}, which is not a character of the query{where}")
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not math.isfinite(p) or p < 0:
            raise InputError(f"probability of {c!r} must be a finite non-negative number, got {_show(p)}")
        clean[c] = float(p)
    if alphabet is not None:
        missing = [c for c in alphabet if c not in clean]
        if missing:
            raise InputError(f"no probability for {', '.join(map(repr, missing))}: give one for every "
                             f"character of the query ({alphabet}), 0 for a character that never occurs")
        clean = {c: clean[c] for c in alphabet}
    total = math.fsum(clean.values())
    if not math.isclose(total, 1.0, rel_tol=0, abs_tol=1e-6):
        raise InputError(f"probabilities must sum to 1 (within 1e-6), they sum to {total:.9g}")
    return {c: p / total for c, p in clean.items()}
