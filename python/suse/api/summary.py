"""`Summary`: a bounded summary of one stream for one query, and its saved form."""
from __future__ import annotations

import json
import secrets
from abc import ABCMeta
from typing import Any, Iterator, Mapping, Optional

import numpy as np

from suse import _core
from suse.api.checks import STRATEGIES, check_choice, check_int, check_memory_limit, check_probabilities
from suse.api.events import coerce_events
from suse.api.feeding import PLACEMENTS, Arrivals, Inserting
from suse.api.locking import Locked, locked
from suse.api.matching import RetainedMatches
from suse.api.query import Query
from suse.api.results import Evaluation, SummaryResult
from suse.api.where_summary import WhereSummary
from suse.errors import InputError, StateError


class Summary(Locked, metaclass=ABCMeta):
    """A bounded summary of one stream (one partition) for one query.

    It retains at most `size` elements, chosen by `strategy`, and keeps exact counters over the
    matches those elements form. See docs/ENGINE.md for the algorithms.

    `lateness=L` accepts events up to L time units older than the newest one. With
    `placement="buffer"` (the default) they wait in order until final, so every result equals a
    summary fed the sorted stream, at the cost of holding the last L time units of events; with
    `placement="insert"` a late event goes into the summary at once, at its place in time, and
    memory stays at `size` elements (policy "any" without negation; no `retract`).
    """

    def __new__(cls, query: Any = None, *args: Any, **kwargs: Any) -> Any:
        # a query with conditions, or with a negation at the end of the pattern, runs on an exact
        # engine over the retained elements (suse/api/where_summary.py), registered below as a
        # virtual subclass: isinstance(s, Summary) holds for both
        if cls is Summary and isinstance(query, Query) and (query.where is not None or query._closing is not None):
            return WhereSummary(query, *args, **kwargs)
        return super().__new__(cls)

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
        engine = _core.SummaryEngine(
            query._dfa, query.window, self.size, self.strategy, query._kernel_aggregate, query.policy, p, self.seed,
            self.time_to_live, self.memory_limit, query._extrema, query._of_mask,
        )
        self.lateness = check_int("lateness", lateness)
        self._set_engine(engine)
        #: Retained elements a `with_query` dropped because the new query does not use their character.
        self.dropped = 0

    def _set_engine(self, engine: Any, max_ts: Optional[int] = None, pending: Optional[tuple] = None,
                    late: int = 0, retracted: int = 0) -> None:
        """Put `engine` (fed the final events) behind the arrivals of this summary's lateness and
        placement; `max_ts` and `pending` as the kernel layer takes them."""
        if not self.lateness:
            self._direct, self._arrivals = engine, Arrivals(0, None, late, retracted)
        elif self.placement == "insert":
            self._direct, self._arrivals = engine, Inserting(self.lateness, max_ts, late, retracted)
        else:  # the kernel's out-of-order layer holds the engine
            self._direct = None
            self._arrivals = Arrivals(self.lateness, _core.OooSummaryEngine(engine, self.lateness, max_ts, pending),
                                      late, retracted)

    @property
    def _engine(self) -> Any:
        """The engine fed the final events (a copy when the kernel's out-of-order layer holds
        it: feeding that copy changes nothing)."""
        return self._direct if self._direct is not None else self._arrivals.ooo.done()

    @locked
    def insert(self, char: str, timestamp: int, value: int = 1, *, late: str = "error") -> None:
        self.extend([char], [timestamp], [value], late=late)

    @locked
    def retract(self, char: str, timestamp: int, value: int = 1) -> None:
        """Take back one earlier event equal to (char, timestamp, value), as `Exact.retract`.
        Events newer than the horizon have not reached the summary yet (they wait in order), so
        afterwards everything equals a summary fed the stream without the event."""
        self._arrivals.retract(char, timestamp, value)

    @property
    @locked
    def late(self) -> int:
        return self._arrivals.late

    @property
    @locked
    def pending(self) -> int:
        """Events newer than the horizon, waiting to be fed in order (0 with lateness=0)."""
        return self._arrivals.pending

    def _settled(self) -> Any:
        """The engine as it is after every accepted event (a copy fed the pending ones)."""
        return self._direct if self._direct is not None else self._arrivals.ooo.settled()

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
        raw, ts, vals = coerce_events(events, chars, timestamps, values)
        return self._arrivals.extend(self._direct, raw, ts, vals, evaluate_at, late, bool(elements))

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
        fed = self._engine
        kept = [e for e in fed.elements() if e[0] in query.alphabet]
        new.dropped = len(fed) - len(kept)
        engine = new._engine
        if kept:
            raw = "".join(c for c, _, _ in kept).encode("latin-1")
            engine.extend(raw, np.array([t for _, t, _ in kept], np.int64),
                          np.array([v for _, _, v in kept], np.int64), None, False)
        ours = self._arrivals
        pending = ours.ooo.pending_events() if ours.ooo is not None else None
        new._set_engine(engine, ours.max_ts if self.lateness else None, pending, ours.late, ours.retracted)
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
        arrivals = self._arrivals
        if self.lateness:
            reorder: dict[str, Any] = {"lateness": self.lateness, "max_ts": arrivals.max_ts, "late": arrivals.late,
                                       "retracted": arrivals.retracted}
            header["reorder"] = reorder
            if self.placement == "insert":
                header["reorder"] = {"placement": "insert", **reorder}
            else:
                chars, ts, vals = arrivals.ooo.pending_events()
                reorder.update(chars=bytes(chars).decode("latin-1"), ts=ts, vals=vals)
        elif arrivals.late:
            header["late"] = arrivals.late
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
            dfa = query._dfa  # a query no summary counts (conditions, a trailing negation) is not a summary's
            summary = cls.__new__(cls)
            summary.dropped = 0
            summary.query = query
            summary.size = header["size"]
            summary.strategy = header["strategy"]
            summary.probabilities = header["probabilities"]
            summary.seed = header["seed"]
            summary.time_to_live = header["time_to_live"]
            reorder = header.get("reorder")
            summary.placement = "insert" if reorder is not None and reorder.get("placement") == "insert" else "buffer"
            summary.lateness, max_ts, pending, late, retracted = _saved_arrivals(reorder, header)
        except (ValueError, KeyError, TypeError) as exc:  # QueryError and InputError are ValueErrors
            raise StateError(f"saved summary has an unreadable description: {exc}") from None
        summary.memory_limit = check_memory_limit(memory_limit)
        cfg = engine.config
        stated = (query.window, summary.size, summary.strategy, query._kernel_aggregate, query.policy, summary.time_to_live,
                  summary.seed)
        held = (cfg.window, cfg.size, cfg.strategy, cfg.aggregate, cfg.policy, cfg.time_to_live, cfg.seed)
        if stated != held or not engine.adopt_labels(dfa):
            raise StateError("saved summary does not match the query and options it describes")
        buffered = summary.lateness and summary.placement == "buffer"
        if buffered and engine.last_timestamp is not None and (
                max_ts is None or engine.last_timestamp > max_ts - summary.lateness):
            raise StateError("saved summary is inconsistent: its engine holds events past the horizon of its "
                             "pending events")
        engine._set_output(query._extrema, query._of_mask)
        summary._set_engine(engine, max_ts, pending, late, retracted)
        return summary

    def __reduce__(self):
        return (Summary.from_bytes, (self.to_bytes(),))


def _saved_arrivals(reorder: Optional[dict], header: dict) -> tuple[int, Optional[int], Optional[tuple], int, int]:
    """(lateness, largest timestamp seen, pending events, late, retracted) of a saved header;
    ValueError (the caller names the state as unreadable) when they do not fit together."""
    if reorder is None:
        return 0, None, None, int(header.get("late", 0)), 0
    lateness, max_ts = int(reorder["lateness"]), reorder["max_ts"]
    late, retracted = int(reorder["late"]), int(reorder.get("retracted", 0))
    if lateness < 0 or late < 0 or retracted < 0:
        raise ValueError("negative lateness or counts of late or retracted events")
    if max_ts is not None and not isinstance(max_ts, int):
        raise ValueError(f"largest timestamp seen {max_ts!r} is not an integer")
    if reorder.get("placement") == "insert":
        return lateness, max_ts, None, late, retracted
    chars = reorder["chars"].encode("latin-1")
    ts, vals = np.asarray(reorder["ts"], np.int64), np.asarray(reorder["vals"], np.int64)
    if not (len(chars) == len(ts) == len(vals)) or np.any(ts[1:] < ts[:-1]):
        raise ValueError("the pending events are inconsistent")
    if len(ts) and (max_ts is None or int(ts[0]) <= max_ts - lateness or int(ts[-1]) > max_ts or int(vals.min()) < 0):
        raise ValueError("the pending events do not lie between the horizon and the largest timestamp seen")
    return lateness, max_ts, (chars, ts.tolist(), vals.tolist()), late, retracted


Summary.register(WhereSummary)
