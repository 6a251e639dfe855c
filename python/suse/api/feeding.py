"""How batches reach a native engine, for `Exact` and `Summary` alike (`Arrivals`): straight in
(lateness 0), through the kernel's out-of-order layer (core/kernel/src/exact/ooo.rs, lateness
L > 0: events newer than the horizon wait in (timestamp, arrival) order, so every result equals
the sorted stream's), or, for a summary with `placement="insert"`, into the summary at once at
their place in time (`Inserting`). Late events are reported or counted here, before the kernel
sees the batch; retraction is checked here too. See docs/ENGINE.md, "Out-of-order events and
retraction".
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from suse.api.checks import check_int, show
from suse.api.events import chars_to_bytes, eval_times, in_input_order
from suse.api.results import Evaluation, evaluation_of
from suse.errors import InputError, LateEventError

LATE_MODES = ("error", "count")
PLACEMENTS = ("buffer", "insert")


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


def none_late(ts: np.ndarray, before: Optional[int], lateness: int) -> bool:
    """Whether no event is late, for the usual batch (in order, not behind the horizon): one
    comparison pass instead of `late_mask`'s seven (2 ms per 100,000 events, 15 % of the exact
    engine's time at a window of 100). In order, event i's largest earlier timestamp is at most
    max(before, ts[i]), so only the first event can be late."""
    return bool(np.all(ts[1:] >= ts[:-1])) and (before is None or not len(ts) or int(ts[0]) >= before - lateness)


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


def check_order(ts: np.ndarray, last: Optional[int]) -> None:
    """Timestamps must not decrease, also across batches (`last`: the latest already processed);
    the error carries the event index (query sets, which take events in order)."""
    if none_late(ts, last, 0):
        return
    is_late, top = late_mask(ts, last, 0)
    if is_late.any():
        raise late_error(ts, is_late, top, last, 0)


def check_evaluation_horizon(times: Optional[np.ndarray], max_ts: Optional[int], lateness: int,
                             horizon: Optional[int] = None) -> None:
    """With lateness, an evaluation time must not be older than the horizon (largest timestamp
    seen - lateness; ``horizon`` when the layer keeps its own, clamped)."""
    if horizon is None and max_ts is not None:
        horizon = max_ts - lateness
    if times is not None and len(times) and horizon is not None and int(times[0]) < horizon:
        raise InputError(f"evaluation time {int(times[0])} is earlier than the horizon {horizon} (largest "
                         f"timestamp seen {max_ts} - lateness {lateness}): the events "
                         "before it are final and the result at that time is no longer kept")


def drop_late(raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], before: Optional[int], lateness: int,
              late: str) -> tuple[bytes, np.ndarray, Optional[np.ndarray], int]:
    """The batch without its late events (older than the horizon), and their number; with
    late="error" the first one is reported instead."""
    if none_late(ts, before, lateness):
        return raw, ts, vals, 0
    is_late, top = late_mask(ts, before, lateness)
    if not is_late.any():
        return raw, ts, vals, 0
    if late != "count":
        raise late_error(ts, is_late, top, before, lateness)
    keep = ~is_late
    raw = np.frombuffer(raw, np.uint8)[keep].tobytes()
    return raw, ts[keep], None if vals is None else vals[keep], int(is_late.sum())


class Arrivals:
    """The arrival side of one engine: lateness 0 (`ooo` None: events go straight into the
    engine passed to `extend`) or the kernel's out-of-order layer `ooo` (`_core.OooExactEngine`
    or `_core.OooSummaryEngine`), with the numbers of late events counted and of retractions."""

    def __init__(self, lateness: int, ooo: Any = None, late: int = 0, retracted: int = 0):
        self.lateness = lateness
        self.ooo = ooo
        self.late = late
        self.retracted = retracted

    @property
    def max_ts(self) -> Optional[int]:
        return self.ooo.max_timestamp

    @property
    def horizon(self) -> Optional[int]:
        if self.ooo is not None:
            return self.ooo.horizon  # the kernel's, clamped at the smallest timestamp
        return None if self.max_ts is None else self.max_ts - self.lateness

    @property
    def pending(self) -> int:
        """Events newer than the horizon, not final yet."""
        return 0 if self.ooo is None else self.ooo.pending

    def extend(self, engine: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], evaluate_at: Any,
               late: str, *extra: Any) -> list[Evaluation]:
        """Process a batch in arrival order; one `Evaluation` per entry of `evaluate_at`, in its
        order. `extra`: further arguments of the native `extend` (a summary's `with_elements`)."""
        late = check_late_mode(late)
        if not self.lateness:
            last = engine.last_timestamp
            raw, ts, vals, n_late = drop_late(raw, ts, vals, last, 0, late)
            times, order = eval_times(evaluate_at, last)
            rows = engine.extend(raw, ts, vals, times, *extra)
        else:
            times, order = eval_times(evaluate_at)
            check_evaluation_horizon(times, self.max_ts, self.lateness, self.horizon)
            raw, ts, vals, n_late = drop_late(raw, ts, vals, self.max_ts, self.lateness, late)
            rows = self._feed(engine, raw, ts, vals, times, *extra)
        self.late += n_late
        return in_input_order([evaluation_of(r) for r in rows], order)

    def _feed(self, engine: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray],
              times: Optional[np.ndarray], *extra: Any) -> list:
        """The accepted events (none late) into the kernel layer."""
        return self.ooo.extend(raw, ts, vals, times, *extra)

    def retract(self, char: Any, timestamp: Any, value: Any) -> None:
        """Take back the latest-arriving pending event equal to (char, timestamp, value)."""
        if not isinstance(char, str) or len(char) != 1:
            raise InputError(f"character {show(char)} is not a single character")
        t = check_int("timestamp", timestamp, minimum=-(2**63))
        v = check_int("value", value)
        if not self.lateness:
            raise LateEventError(f"cannot retract the event at timestamp {t}: with lateness=0 every event is final; "
                                 "create the engine with lateness= to take events back")
        byte = chars_to_bytes(char)[0]
        done = self._retract(byte, t, v)
        if done == "final":
            h = self.horizon
            where = "no event has been seen yet" if h is None else (
                f"the horizon is {h} (largest timestamp seen {self.max_ts} - lateness {self.lateness}) and events at "
                "or before it are final")
            raise LateEventError(f"cannot retract the event at timestamp {t}: {where}")
        if done == "missing":
            raise InputError(f"cannot retract ({chr(byte)!r}, {t}, {v}): no such event was seen")
        self.retracted += 1

    def _retract(self, byte: int, t: int, v: int) -> str:
        return self.ooo.retract(byte, t, v)


class Inserting(Arrivals):
    """`placement="insert"` for a summary: no buffer. Every accepted event goes into the summary
    at once, a late one at its place in time among the retained elements (the kernel's
    neighbourhood algebra corrects every counter and estimate), so memory stays within the
    summary's size. This is not the buffered layer's concept (events wait until final, results
    equal the sorted stream's) but its alternative: which elements earlier selections kept may
    differ from a summary fed the sorted stream, and the counters always equal a recount of the
    retained elements. An evaluation at T is taken where the buffer takes it (the kernel's
    `evaluation_cuts`) and counts the retained elements up to T. Retraction needs the buffer:
    an element the summary has already evicted or merged into its counters cannot be taken out
    exactly."""

    def __init__(self, lateness: int, max_ts: Optional[int] = None, late: int = 0, retracted: int = 0):
        super().__init__(lateness, None, late, retracted)
        self._max_ts = max_ts

    @property
    def max_ts(self) -> Optional[int]:
        return self._max_ts

    @property
    def pending(self) -> int:
        return 0

    def _feed(self, engine: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray],
              times: Optional[np.ndarray], *extra: Any) -> list:
        rows = engine.insert_late(raw, ts, vals, times, self._max_ts, self.lateness, *extra)
        if len(ts):
            top = int(ts.max())
            self._max_ts = top if self._max_ts is None else max(self._max_ts, top)
        return rows

    def _retract(self, byte: int, t: int, v: int) -> str:
        raise InputError("retract needs placement=\"buffer\": with placement=\"insert\" late events are already "
                         "in the summary, which cannot take an element back exactly once it has evicted or merged it")
