"""Out-of-order events and retraction for the exact engine and the summary (`lateness=L`).

The engines need non-decreasing time. With `lateness=L > 0` the events newer than the horizon
h = (largest timestamp seen) - L wait in a buffer kept in (timestamp, arrival) order; once the
horizon passes them (timestamp <= h) no later event can be placed before them, so they are fed
to the engine, in order, in one native call. Results, evaluations and the retained elements are
read from a copy of the engine that is also fed the buffer. Everything therefore equals
processing the same events sorted by (timestamp, arrival order), for every engine and strategy;
the price is the buffer (the events of the last L time units) and a copy per read-out. See
docs/ENGINE.md, "Out-of-order events and retraction".
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from suse.errors import InputError, LateEventError

INT64_MAX = 2**63 - 1
LATE_MODES = ("error", "count")


def late_mask(ts: np.ndarray, before: Optional[int], lateness: int) -> tuple[np.ndarray, np.ndarray]:
    """(late, running max including each event): event i is late when its timestamp is earlier
    than (largest timestamp before it) - lateness; late events do not move the maximum."""
    if not len(ts):
        return np.zeros(0, bool), ts
    top = np.maximum.accumulate(ts)
    if before is not None:
        top = np.maximum(top, before)
    prev = np.empty_like(top)
    prev[1:] = top[:-1]
    prev[0] = ts[0] if before is None else before
    # prev - ts as unsigned: exact whenever prev >= ts, with no overflow at the int64 ends
    gap = prev.astype(np.uint64) - ts.astype(np.uint64)
    return (ts < prev) & (gap > np.uint64(lateness)), top


def late_error(ts: np.ndarray, late: np.ndarray, top: np.ndarray, before: Optional[int], lateness: int) -> LateEventError:
    i = int(np.flatnonzero(late)[0])
    seen = int(top[i - 1]) if i else int(before)
    if lateness == 0:
        return LateEventError(f"timestamp {int(ts[i])} is earlier than the previous timestamp {seen}; "
                              "timestamps must not decrease", event=i)  # today's message: callers match it
    return LateEventError(f"timestamp {int(ts[i])} is earlier than the horizon {seen - lateness} (largest "
                          f"timestamp seen {seen} - lateness {lateness}); late=\"count\" counts such events instead",
                          event=i)


def check_late_mode(late: Any) -> str:
    if not isinstance(late, str) or late not in LATE_MODES:
        raise InputError(f"late must be one of {', '.join(LATE_MODES)}; got {late!r}")
    return late


class Reorder:
    """The buffer of events newer than the horizon, in (timestamp, arrival) order, in front of
    an engine with `extend(chars, ts, vals, evaluate_at)` and `copy()`."""

    def __init__(self, lateness: int):
        self.lateness = lateness
        self.max_ts: Optional[int] = None
        self.chars = np.empty(0, np.uint8)
        self.ts = np.empty(0, np.int64)
        self.vals = np.empty(0, np.int64)
        self.late = 0
        self.retracted = 0

    @property
    def horizon(self) -> Optional[int]:
        return None if self.max_ts is None else self.max_ts - self.lateness

    def __len__(self) -> int:
        return len(self.ts)

    def _see(self, ts: np.ndarray) -> None:
        """Move the largest timestamp seen (and so the horizon) to cover `ts` (not empty)."""
        top = int(ts.max())
        self.max_ts = top if self.max_ts is None else max(self.max_ts, top)

    def _add(self, chars: np.ndarray, ts: np.ndarray, vals: np.ndarray) -> None:
        if not len(ts):
            return
        self._see(ts)
        if len(self.ts) and ts.min() < self.ts[-1] or len(ts) > 1 and np.any(ts[1:] < ts[:-1]):
            self.chars, self.ts, self.vals = (np.concatenate([a, b]) for a, b in ((self.chars, chars), (self.ts, ts), (self.vals, vals)))
            order = np.argsort(self.ts, kind="stable")  # stable: arrival order among equal times
            self.chars, self.ts, self.vals = self.chars[order], self.ts[order], self.vals[order]
        else:  # in order: appending keeps the buffer sorted
            self.chars, self.ts, self.vals = (np.concatenate([a, b]) for a, b in ((self.chars, chars), (self.ts, ts), (self.vals, vals)))

    def _flush(self, engine: Any) -> None:
        """Feed the events no later arrival can precede (timestamp <= horizon)."""
        ready = int(np.searchsorted(self.ts, self.horizon, side="right")) if len(self.ts) else 0
        if ready:
            engine.extend(self.chars[:ready].tobytes(), self.ts[:ready], self.vals[:ready], None)
            self.chars, self.ts, self.vals = self.chars[ready:], self.ts[ready:], self.vals[ready:]

    def settled(self, engine: Any, evaluate_at: Optional[np.ndarray] = None, **kw: Any):
        """A copy of `engine` fed the buffer, and its evaluations at the (sorted) times."""
        copy = engine.copy()
        rows = copy.extend(self.chars.tobytes(), self.ts, self.vals, evaluate_at, **kw) if (
            len(self.ts) or evaluate_at is not None) else []
        return copy, rows

    def extend(self, engine: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], times: Optional[np.ndarray],
               late: str, evaluate: Callable[[Any, np.ndarray], list]) -> list:
        """Process a batch in arrival order. An evaluation at T is taken just before the first
        event later than T + lateness arrives (or after the batch): then every event with a
        timestamp <= T that can still come in order is in. `evaluate(copy, times)` evaluates a
        settled copy at sorted times. Returns the evaluations in sorted-time order."""
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
        # where each evaluation is taken, as a count of this batch's accepted events before it
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
            if k + 1 < len(cuts) and cuts[k + 1] == cut:
                continue
            first = k
            while first > 0 and cuts[first - 1] == cut:
                first -= 1
            rows.extend(evaluate(engine, times[first:k + 1]))
        self._add(chars[done:], ts[done:], vals[done:])
        self._flush(engine)
        return rows

    def retract(self, byte: int, t: int, v: int) -> None:
        """Take back the latest-arriving buffered event equal to (byte, t, v)."""
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
        self.retracted += 1

    # -- saved form (a summary's header) --

    def to_dict(self) -> dict:
        return {"lateness": self.lateness, "max_ts": self.max_ts, "late": self.late, "retracted": self.retracted,
                "chars": self.chars.tobytes().decode("latin-1"), "ts": self.ts.tolist(), "vals": self.vals.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> Reorder:
        if d.get("placement") == "insert":
            return Inserter.load(d)
        r = cls(int(d["lateness"]))
        r.max_ts, r.late, r.retracted = d["max_ts"], int(d["late"]), int(d.get("retracted", 0))
        r.chars = np.frombuffer(d["chars"].encode("latin-1"), np.uint8).copy()
        r.ts = np.asarray(d["ts"], np.int64)
        r.vals = np.asarray(d["vals"], np.int64)
        if not (len(r.chars) == len(r.ts) == len(r.vals)) or np.any(r.ts[1:] < r.ts[:-1]):
            raise ValueError("the pending events are inconsistent")
        r._check_counts()
        if len(r.ts) and (r.max_ts is None or int(r.ts[0]) <= r.horizon or int(r.ts[-1]) > r.max_ts
                          or int(r.vals.min()) < 0):
            raise ValueError("the pending events do not lie between the horizon and the largest timestamp seen")
        return r

    def _check_counts(self) -> None:
        """Numbers of a loaded buffer (ValueError: the caller names the state as unreadable)."""
        if self.lateness < 0 or self.late < 0 or self.retracted < 0:
            raise ValueError("negative lateness or counts of late or retracted events")
        if self.max_ts is not None and not isinstance(self.max_ts, int):
            raise ValueError(f"largest timestamp seen {self.max_ts!r} is not an integer")


PLACEMENTS = ("buffer", "insert")


class Inserter(Reorder):
    """`placement="insert"`: no buffer. Every accepted event goes into the summary at once, a
    late one at its place in time among the retained elements (the kernel's neighbourhood
    algebra corrects every counter and estimate), so memory stays within the summary's size.
    Which elements earlier selections kept may differ from a summary fed the sorted stream; the
    counters always equal a recount of the retained elements. An evaluation at T is taken when
    every event up to T has arrived (as with the buffer) and counts the retained elements up to
    T. Retraction needs the buffer: an element the summary has already evicted or merged into
    its counters cannot be taken out exactly."""

    def __init__(self, lateness: int):
        super().__init__(lateness)
        self._batch: Optional[tuple] = None

    def __len__(self) -> int:
        return 0

    def _add(self, chars: np.ndarray, ts: np.ndarray, vals: np.ndarray) -> None:
        if len(ts):
            self._see(ts)
            self._batch = (chars, ts, vals)

    def _flush(self, engine: Any) -> None:
        if self._batch is not None:
            chars, ts, vals = self._batch
            engine.insert_late(chars.tobytes(), ts, vals)
            self._batch = None

    def settled(self, engine: Any, evaluate_at: Optional[np.ndarray] = None, **kw: Any):
        rows = engine.evaluate_upto([int(t) for t in evaluate_at], bool(kw.get("with_elements"))) if (
            evaluate_at is not None) else []
        return engine, rows

    def retract(self, byte: int, t: int, v: int) -> None:
        raise InputError("retract needs placement=\"buffer\": with placement=\"insert\" late events are already "
                         "in the summary, which cannot take an element back exactly once it has evicted or merged it")

    def to_dict(self) -> dict:
        return {"placement": "insert", "lateness": self.lateness, "max_ts": self.max_ts, "late": self.late,
                "retracted": self.retracted}

    @classmethod
    def load(cls, d: dict) -> Inserter:
        r = cls(int(d["lateness"]))
        r.max_ts, r.late, r.retracted = d["max_ts"], int(d["late"]), int(d.get("retracted", 0))
        r._check_counts()
        return r
