"""Exact aggregation, the ground truth: the incremental `Exact` and the one-shot `exact()`."""
from __future__ import annotations

from typing import Any, Optional, overload

from suse import _core
from suse.api.checks import check_int, check_memory_limit
from suse.api.events import coerce_events
from suse.api.feeding import Arrivals, check_late_mode
from suse.api.locking import Locked, locked
from suse.api.query import Query, closing_refusal
from suse.api.queryset import QuerySet, exact_set
from suse.api.results import Evaluation, ExactResult
from suse.api.where import WhereArrivals, WhereCounter
from suse.errors import InputError


class Exact(Locked):
    """Incremental exact aggregation (the ground truth); `exact()` is the one-shot form.

    A query with conditions (`Query(..., where=...)`) runs on the conditions engine
    (suse/api/where.py): events then carry attributes (a mapping as the last tuple item, or
    a table's extra columns); lateness and retraction work as for other queries. It pickles
    as the window's elements, the pending events and its totals; loading rebuilds the counts
    from the elements."""

    def __init__(self, query: Query, memory_limit: Optional[int] = None, lateness: int = 0):
        if not isinstance(query, Query):
            raise InputError(f"expected a suse.Query, got {type(query).__name__}")
        self.query = query
        self.lateness = check_int("lateness", lateness)
        self.memory_limit = limit = check_memory_limit(memory_limit)
        # conditions between events: the kernel's conditions engine, in order only
        self._where = None
        if query.where is not None:
            self._where = WhereCounter(query, limit, self.lateness)
            self._engine = None
            self._arrivals = WhereArrivals(self._where)
            return
        if query._closing is not None and self.lateness:
            raise closing_refusal(query.regex, "lateness")
        # lateness > 0: the kernel's out-of-order layer holds the engine
        self._engine = None if self.lateness else _core.ExactEngine(
            query._exact_dfa, query.window, query.policy, limit, query._extrema, query._of_mask, query._closing)
        self._arrivals = Arrivals(self.lateness, _core.OooExactEngine(
            query._dfa, query.window, query.policy, self.lateness, limit, query._extrema,
            query._of_mask) if self.lateness else None)

    @locked
    def extend(self, events: Any = None, *, chars: Any = None, timestamps: Any = None, values: Any = None,
               evaluate_at: Any = None, late: str = "error") -> list[Evaluation]:
        """Process a batch; returns one `Evaluation` per entry of `evaluate_at`, in its order.

        With `lateness=L`, events may arrive in any order as long as they are not older than
        the horizon (largest timestamp seen - L); results equal processing the events sorted by
        (timestamp, arrival). An older event raises `suse.LateEventError`, or with
        `late="count"` is counted in `result().late` and never fed. An evaluation at T is taken
        just before the first event later than T + L (or after the batch); a time earlier than
        the horizon is an error."""
        if self._where is not None:
            return self._where.extend(events, chars, timestamps, values, evaluate_at, check_late_mode(late))
        raw, ts, vals = coerce_events(events, chars, timestamps, values)
        return self._arrivals.extend(self._engine, raw, ts, vals, evaluate_at, late)

    @locked
    def retract(self, char: str, timestamp: int, value: int = 1) -> None:
        """Take back one earlier event equal to (char, timestamp, value), the latest to arrive
        if several are: afterwards every result equals processing the stream without it. Only
        events newer than the horizon (largest timestamp seen - lateness) can be retracted; an
        older one, or one never seen, is an error that changes nothing."""
        self._arrivals.retract(char, timestamp, value)

    @property
    @locked
    def late(self) -> int:
        return self._where.late if self._where is not None else self._arrivals.late

    @property
    @locked
    def pending(self) -> int:
        """Events newer than the horizon, not final yet (0 with lateness=0)."""
        return self._arrivals.pending

    @locked
    def result(self, evaluations: Optional[list[Evaluation]] = None) -> ExactResult:
        if self._where is not None:
            count, total, partial, skipped, events, low, high = self._where.result_parts()
            return ExactResult(count, total, partial, skipped, events, evaluations or [], low, high, late=self.late)
        ooo = self._arrivals.ooo
        if ooo is not None:
            t = ooo.totals()
            events, skipped = ooo.counts()
        else:
            t, events, skipped = self._engine.totals(), self._engine.events, self._engine.skipped
        return ExactResult(t.count, t.sum, t.partial_count, skipped, events, evaluations or [],
                           t.min, t.max, t.count_by_missing, late=self.late)

    @locked
    def __reduce__(self):
        """Pickled as its query and options with the engine's state: the events still in its
        window, its totals and, with lateness, the events not yet final."""
        if self._where is not None:
            state = {**self._where.saved(), "retracted": self._arrivals.retracted}
            return (_unpickle_exact, (self.query, self.memory_limit, self.lateness, state))
        engine = self._arrivals.ooo or self._engine
        state = {"engine": engine._snapshot(), "late": self._arrivals.late, "retracted": self._arrivals.retracted}
        return (_unpickle_exact, (self.query, self.memory_limit, self.lateness, state))


def _unpickle_exact(query: Query, memory_limit: Optional[int], lateness: int, *rest: Any) -> Exact:
    state = rest[-1]  # pickles of earlier versions carry "native" before the state
    engine, q = Exact(query, memory_limit, lateness), query
    if engine._where is not None:  # the counts are rebuilt from the elements the window holds
        engine._where.load(state)
        engine._arrivals.retracted = state.get("retracted", 0)
        return engine
    if lateness:
        engine._arrivals.ooo = _core.OooExactEngine._restore(q._dfa, q.window, q.policy, lateness, memory_limit,
                                                             q._extrema, q._of_mask, state["engine"])
    else:
        engine._engine = _core.ExactEngine._restore(q._exact_dfa, q.window, q.policy, memory_limit, q._extrema,
                                                    q._of_mask, state["engine"], q._closing)
    engine._arrivals.late, engine._arrivals.retracted = state["late"], state.get("retracted", 0)
    return engine


@overload
def exact(query: Query, events: Any = None, *, chars: Any = None, timestamps: Any = None, values: Any = None,
          evaluate_at: Any = None, lateness: int = 0, late: str = "error") -> ExactResult: ...


@overload
def exact(query: QuerySet, events: Any = None, *, chars: Any = None, timestamps: Any = None, values: Any = None,
          evaluate_at: Any = None, lateness: int = 0, late: str = "error") -> dict[str, ExactResult]: ...


def exact(query: Query | QuerySet, events: Any = None, *, chars: Any = None, timestamps: Any = None,
          values: Any = None, evaluate_at: Any = None, lateness: int = 0,
          late: str = "error") -> ExactResult | dict[str, ExactResult]:
    """Aggregate every match of `query` over a whole stream, exactly.

    `evaluate_at` lists timestamps T at which the aggregate over all events with timestamp <= T
    is also reported (in `result.evaluations`, in the order given), computed while processing.
    `lateness` and `late` as for `Exact.extend`.

    With a `suse.QuerySet` it runs every query in one pass and returns a dict name -> result.
    """
    if isinstance(query, QuerySet):
        if lateness or late != "error":
            raise InputError("query sets take events in order: lateness= and late= are for single queries")
        return exact_set(query, events, chars=chars, timestamps=timestamps, values=values, evaluate_at=evaluate_at)
    engine = Exact(query, lateness=lateness)
    if query.where is not None:
        rows = engine.extend(events, chars=chars, timestamps=timestamps, values=values, evaluate_at=evaluate_at,
                             late=late)
        if engine.result().events + engine.late == 0:
            raise InputError("the stream is empty")
        return engine.result(rows)
    raw, ts, vals = coerce_events(events, chars, timestamps, values)
    if len(raw) == 0:
        raise InputError("the stream is empty")
    rows = engine.extend(chars=raw, timestamps=ts, values=vals, evaluate_at=evaluate_at, late=late)
    return engine.result(rows)
