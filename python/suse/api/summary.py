"""`Summary`: a bounded summary of one stream for one query, and its saved form."""
from __future__ import annotations

import json
import secrets
from typing import Any, Iterator, Mapping, Optional

import numpy as np

from suse import _core
from suse.api.checks import STRATEGIES, check_choice, check_int, check_memory_limit, check_probabilities
from suse.api.disorder import PLACEMENTS, Inserter, Reorder, check_late_mode
from suse.api.events import coerce_events, eval_times, in_input_order
from suse.api.feeding import extend_in_order, retract
from suse.api.locking import Locked, locked
from suse.api.matching import RetainedMatches
from suse.api.query import Query
from suse.api.results import Evaluation, SummaryResult, evaluation_of
from suse.errors import InputError, StateError


class Summary(Locked):
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
        self.size = check_int("size", size, minimum=1, maximum=10_000_000)
        self.placement = check_choice("placement", placement, PLACEMENTS)
        if self.placement == "insert" and (query.policy != "any" or query.negated):
            raise InputError("placement=\"insert\" needs policy \"any\" without negation: elsewhere what lies between "
                             "two elements matters, and is not known for a late one; use placement=\"buffer\"")
        self.strategy = check_choice("strategy", strategy, STRATEGIES)
        self.time_to_live = None if time_to_live is None else check_int("time_to_live", time_to_live)
        self.probabilities = check_probabilities(probabilities, query.alphabet)
        self.seed = secrets.randbits(63) if seed is None else check_int("seed", seed, maximum=2**64 - 1)
        p = None if self.probabilities is None else [self.probabilities.get(c, 0.0) for c in query.alphabet]
        self.memory_limit = check_memory_limit(memory_limit)
        self._engine = _core.SummaryEngine(
            query._dfa, query.window, self.size, self.strategy, query._kernel_aggregate, query.policy, p, self.seed,
            self.time_to_live, self.memory_limit, query._extrema, query._of_mask,
        )
        self.lateness = check_int("lateness", lateness)
        self._reorder = (Inserter if self.placement == "insert" else Reorder)(self.lateness) if self.lateness else None
        self._late = 0  # late events counted with lateness=0
        #: Retained elements a `with_query` dropped because the new query does not use their character.
        self.dropped = 0

    @locked
    def insert(self, char: str, timestamp: int, value: int = 1, *, late: str = "error") -> None:
        self.extend([char], [timestamp], [value], late=late)

    @locked
    def retract(self, char: str, timestamp: int, value: int = 1) -> None:
        """Take back one earlier event equal to (char, timestamp, value), as `Exact.retract`.
        Events newer than the horizon have not reached the summary yet (they wait in order), so
        afterwards everything equals a summary fed the stream without the event."""
        retract(self._reorder, char, timestamp, value)

    @property
    @locked
    def late(self) -> int:
        return self._late if self._reorder is None else self._reorder.late

    @property
    @locked
    def pending(self) -> int:
        """Events newer than the horizon, waiting to be fed in order (0 with lateness=0)."""
        return 0 if self._reorder is None else len(self._reorder)

    def _settled(self) -> Any:
        """The engine as it is after every accepted event (a copy fed the pending ones)."""
        return self._engine if not self.pending else self._reorder.settled(self._engine)[0]

    @locked
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
            rows, order, n_late = extend_in_order(self._engine, raw, ts, vals, evaluate_at, late, bool(elements))
            self._late += n_late
        else:
            times, order = eval_times(evaluate_at)
            rows = self._reorder.extend(self._engine, raw, ts, vals, times, late,
                                        lambda e, t: self._reorder.settled(e, t, with_elements=bool(elements))[1])
        return in_input_order([evaluation_of(r) for r in rows], order)

    @locked
    def result(self) -> SummaryResult:
        engine = self._settled()
        r = engine.result()
        return SummaryResult(r.count, r.sum, r.partial_count, r.detected_count, r.detected_sum, engine.skipped,
                             engine.events, len(engine), r.min, r.max, r.count_by_missing,
                             late=self.late, evictions=engine.evictions)

    @locked
    def elements(self) -> list[tuple[str, int, int]]:
        return self._settled().elements()

    @locked
    def retained_matches(self) -> RetainedMatches:
        """The matches among the retained elements now (what `result()` counts), judged with
        what lay between them; see `suse.matches`."""
        engine = self._settled()
        return RetainedMatches(engine.elements(), engine.match_set())

    def matches(self, limit: Optional[int] = None) -> Iterator[list[tuple[str, int, int]]]:
        """The matches among the retained elements, each as its list of elements (char,
        timestamp, value), lazily."""
        return self.retained_matches().matches(limit)

    def sample_matches(self, k: int, seed: Optional[int] = None) -> list[list[tuple[str, int, int]]]:
        """`k` matches among the retained elements drawn uniformly with replacement."""
        return self.retained_matches().sample(k, seed)

    @locked
    def __len__(self) -> int:
        return len(self._settled())

    @locked
    def with_query(self, query: Optional[Query] = None, *, size: Optional[int] = None, strategy: Optional[str] = None,
                   window: Optional[int] = None) -> Summary:
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

    @locked
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

    @locked
    def to_bytes(self) -> bytes:
        """The saved form: versioned, checksummed, and carrying the query and options."""
        return self._engine.to_bytes(json.dumps(self._header()))

    @classmethod
    def from_bytes(cls, data: bytes, memory_limit: Optional[int] = None) -> Summary:
        """Load a saved summary; `suse.StateError` says what is wrong with bytes that do not load."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InputError(f"expected bytes, got {type(data).__name__}")
        engine, meta = _core.SummaryEngine.from_bytes(bytes(data), check_memory_limit(memory_limit))
        try:
            header = json.loads(meta)
            query = Query(**header["query"])
            summary = cls.__new__(cls)
            summary.dropped = 0
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
        summary.memory_limit = check_memory_limit(memory_limit)
        cfg = engine.config
        stated = (query.window, summary.size, summary.strategy, query._kernel_aggregate, query.policy, summary.time_to_live,
                  summary.seed)
        held = (cfg.window, cfg.size, cfg.strategy, cfg.aggregate, cfg.policy, cfg.time_to_live, cfg.seed)
        if stated != held or not engine.adopt_labels(query._dfa):
            raise StateError("saved summary does not match the query and options it describes")
        buffered = summary._reorder is not None and not isinstance(summary._reorder, Inserter)
        if buffered and engine.last_timestamp is not None and (
                summary._reorder.max_ts is None or engine.last_timestamp > summary._reorder.horizon):
            raise StateError("saved summary is inconsistent: its engine holds events past the horizon of its "
                             "pending events")
        engine._set_output(query._extrema, query._of_mask)
        summary._engine = engine
        return summary

    def __reduce__(self):
        return (Summary.from_bytes, (self.to_bytes(),))
