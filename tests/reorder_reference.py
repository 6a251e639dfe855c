"""The previous Python reorder buffer (suse/api/disorder.py until the summary moved onto the
kernel's out-of-order layer), kept as a reference: an independent implementation of the same
rules (buffer in (timestamp, arrival) order, feed what the horizon passed, an evaluation at T
taken before the first event later than T + lateness), so that the kernel layer can be compared
with it for `Exact` and `Summary` alike, evaluations, errors and counts included."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from suse import _core
from suse.api.events import coerce_events, eval_times, in_input_order
from suse.api.feeding import check_late_mode, late_error, late_mask
from suse.api.results import evaluation_of
from suse.errors import InputError, LateEventError

INT64_MAX = 2**63 - 1


class Reorder:
    """The buffer of events newer than the horizon in front of an in-order native engine."""

    def __init__(self, lateness: int):
        self.lateness = lateness
        self.max_ts: Optional[int] = None
        self.chars = np.empty(0, np.uint8)
        self.ts = np.empty(0, np.int64)
        self.vals = np.empty(0, np.int64)
        self.late = 0

    @property
    def horizon(self) -> Optional[int]:
        return None if self.max_ts is None else self.max_ts - self.lateness

    def _add(self, chars: np.ndarray, ts: np.ndarray, vals: np.ndarray) -> None:
        if not len(ts):
            return
        top = int(ts.max())
        self.max_ts = top if self.max_ts is None else max(self.max_ts, top)
        self.chars, self.ts, self.vals = (np.concatenate([a, b]) for a, b in
                                          ((self.chars, chars), (self.ts, ts), (self.vals, vals)))
        order = np.argsort(self.ts, kind="stable")  # stable: arrival order among equal times
        self.chars, self.ts, self.vals = self.chars[order], self.ts[order], self.vals[order]

    def _flush(self, engine: Any) -> None:
        ready = int(np.searchsorted(self.ts, self.horizon, side="right")) if len(self.ts) else 0
        if ready:
            engine.extend(self.chars[:ready].tobytes(), self.ts[:ready], self.vals[:ready], None)
            self.chars, self.ts, self.vals = self.chars[ready:], self.ts[ready:], self.vals[ready:]

    def settled(self, engine: Any, evaluate_at: Optional[np.ndarray] = None, *extra: Any):
        copy = engine.copy()
        rows = copy.extend(self.chars.tobytes(), self.ts, self.vals, evaluate_at, *extra) if (
            len(self.ts) or evaluate_at is not None) else []
        return copy, rows

    def extend(self, engine: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray],
               times: Optional[np.ndarray], late: str, *extra: Any) -> list:
        if times is not None and len(times) and self.horizon is not None and int(times[0]) < self.horizon:
            raise InputError(f"evaluation time {int(times[0])} is earlier than the horizon {self.horizon} (largest "
                             f"timestamp seen {self.max_ts} - lateness {self.lateness}): the events before it are "
                             "final and the result at that time is no longer kept")
        is_late, top = late_mask(ts, self.max_ts, self.lateness)
        if is_late.any():
            if late != "count":
                raise late_error(ts, is_late, top, self.max_ts, self.lateness)
            self.late += int(is_late.sum())
        chars = np.frombuffer(raw, np.uint8)
        vals = np.ones(len(ts), np.int64) if vals is None else vals
        keep = ~is_late
        kept_before = np.concatenate([[0], np.cumsum(keep)])
        cuts: list[int] = []
        if times is not None and len(times):
            limit = np.minimum(times.astype(object) + self.lateness, INT64_MAX).astype(np.int64)
            cuts = kept_before[np.searchsorted(top, limit, side="right")].tolist()
        chars, ts, vals = chars[keep], ts[keep], vals[keep]
        rows: list = []
        done = 0
        for k, cut in enumerate(cuts):
            if cut > done:
                self._add(chars[done:cut], ts[done:cut], vals[done:cut])
                self._flush(engine)
                done = cut
            rows.extend(self.settled(engine, times[k:k + 1], *extra)[1])
        self._add(chars[done:], ts[done:], vals[done:])
        self._flush(engine)
        return rows

    def retract(self, byte: int, t: int, v: int) -> None:
        h = self.horizon
        if h is None or t <= h:
            where = "no event has been seen yet" if h is None else (
                f"the horizon is {h} (largest timestamp seen {self.max_ts} - lateness {self.lateness}) and events at "
                "or before it are final")
            raise LateEventError(f"cannot retract the event at timestamp {t}: {where}")
        lo, hi = np.searchsorted(self.ts, t, side="left"), np.searchsorted(self.ts, t, side="right")
        same = np.flatnonzero((self.chars[lo:hi] == byte) & (self.vals[lo:hi] == v))
        if not len(same):
            raise InputError(f"cannot retract ({chr(byte)!r}, {t}, {v}): no such event was seen")
        i = lo + int(same[-1])
        self.chars, self.ts, self.vals = (np.delete(a, i) for a in (self.chars, self.ts, self.vals))


class Buffered:
    """An `Exact` or `Summary` look-alike over `engine` (a fresh in-order native engine) with
    the reference buffer: `extend`, `retract`, `result()` totals, `elements()`, `pending`."""

    def __init__(self, engine: Any, lateness: int, *extra: Any):
        self.engine, self.reorder, self.extra = engine, Reorder(lateness), extra

    def extend(self, events: Any = None, *, evaluate_at: Any = None, late: str = "error", elements: bool = False):
        raw, ts, vals = coerce_events(events, None, None, None)
        times, order = eval_times(evaluate_at)
        extra = (bool(elements),) if self.extra else ()
        rows = self.reorder.extend(self.engine, raw, ts, vals, times, check_late_mode(late), *extra)
        return in_input_order([evaluation_of(r) for r in rows], order)

    def retract(self, char: str, timestamp: int, value: int = 1) -> None:
        self.reorder.retract(ord(char), timestamp, value)

    def settled(self) -> Any:
        return self.reorder.settled(self.engine)[0]

    @property
    def pending(self) -> int:
        return len(self.reorder.ts)

    @property
    def late(self) -> int:
        return self.reorder.late


def buffered_exact(query: Any, lateness: int) -> Buffered:
    return Buffered(_core.ExactEngine(query._dfa, query.window, query.policy, None, query._extrema, query._of_mask),
                    lateness)


def buffered_summary(summary: Any, lateness: int) -> Buffered:
    """The reference buffer in front of a fresh in-order engine configured as `summary`."""
    return Buffered(summary._engine.copy(), lateness, True)
