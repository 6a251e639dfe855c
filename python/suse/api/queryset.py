"""Many queries over one stream: `QuerySet`, exact aggregation and summaries.

The events are decoded, validated and ordered once for the whole set. Exact aggregation then
runs every query in one native call (`_core.MultiExactEngine`), where queries that count the
same sets (same automaton, window and policy) share one engine; queries with MIN/MAX, `of=`
or `max_missing=` report more than that engine computes and run as their own native engines
over the same decoded batch. Summaries keep one bounded summary per query (a summary tuned
for one pattern is not right for another) and share only identical ones. docs/ENGINE.md
("Query sets") has the measurements behind this choice.
"""
from __future__ import annotations

import secrets
from typing import Any, Iterator, Mapping, Optional

from suse import _core
from suse.api.checks import check_choice, check_int, check_memory_limit
from suse.api.events import coerce_events, eval_times, in_input_order
from suse.api.feeding import check_order
from suse.api.locking import Locked, locked
from suse.api.query import Query
from suse.api.results import Evaluation, ExactResult, SummaryResult, evaluation_of
from suse.api.summary import Summary
from suse.errors import InputError, QueryError


def check_name(name: Any) -> str:
    """Any text names a query (job files name queries by their regex), but not blank or multi-line."""
    if not isinstance(name, str) or not name.strip() or name != name.strip() or "\n" in name:
        raise InputError(f"query name {name!r} must be non-empty text without surrounding blanks or line breaks")
    return name


class QuerySet(Mapping[str, Query]):
    """Named queries run together over one stream: `suse.exact(query_set, events)` and
    `suse.SummarySet(query_set, size)` return one result per name, in the set's order.

    Each query keeps its own window, aggregate and policy.

    >>> qs = suse.QuerySet({"short": suse.Query("AB", 2), "long": suse.Query("AB", 10)})
    >>> {k: r.count for k, r in suse.exact(qs, [("A", 1), ("B", 5)]).items()}
    {'short': 0, 'long': 1}
    """

    def __init__(self, queries: Mapping[str, Query]):
        if isinstance(queries, QuerySet):
            queries = dict(queries.items())
        if not isinstance(queries, Mapping):
            raise InputError(f"a query set is a mapping from name to suse.Query, got {type(queries).__name__}")
        if not queries:
            raise InputError("a query set needs at least one query")
        self._queries: dict[str, Query] = {}
        for name, q in queries.items():
            check_name(name)
            if not isinstance(q, Query):
                raise InputError(f"query {name!r} must be a suse.Query, got {type(q).__name__}")
            self._queries[name] = q

    @classmethod
    def parse(cls, text: str, window: int, aggregate: str = "count", policy: str = "any", of: Any = None,
              max_missing: int = 0) -> QuerySet:
        """A set from lines `name = regex` (blank lines and `#` comments ignored), every query
        with the given window, aggregate, policy, `of` and `max_missing`. Errors name the
        1-based line."""
        queries: dict[str, Query] = {}
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            name, sep, regex = stripped.partition("=")
            name, regex = name.strip(), regex.strip()
            if not sep or not name or not regex:
                raise InputError(f"line {number}: expected `name = regex`, got {stripped!r}")
            try:
                check_name(name)
            except InputError as exc:
                raise InputError(f"line {number}: {exc}") from None
            if name in queries:
                raise InputError(f"line {number}: query {name!r} is defined twice")
            try:
                queries[name] = Query(regex, window, aggregate, policy, of=of, max_missing=max_missing)
            except QueryError as exc:
                raise QueryError(f"line {number}: {exc.message}", exc.position, exc.query) from None
        if not queries:
            raise InputError("no queries: expected lines `name = regex`")
        return cls(queries)

    def __getitem__(self, name: str) -> Query:
        return self._queries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._queries)

    def __len__(self) -> int:
        return len(self._queries)

    @property
    def alphabet(self) -> str:
        """Every letter of any query, in first-seen order."""
        return "".join(dict.fromkeys(c for q in self._queries.values() for c in q.alphabet))

    def __repr__(self) -> str:
        return f"QuerySet({self._queries!r})"

    def __reduce__(self):
        return (QuerySet, (dict(self._queries),))


def _shares(q: Query) -> bool:
    """Whether a query's result is what the shared engine computes: count, sum, partial count.
    MIN/MAX, `of=` (a masked SUM) and `max_missing=` (the count split by missing letters) need
    more, so those queries run as engines of their own inside the same pass."""
    return not (q._extrema or q.of is not None or q.max_missing)


class ExactSet(Locked):
    """Incremental exact aggregation of a query set; `suse.exact(query_set, ...)` is the
    one-shot form. A batch is decoded and checked once, then fed to every engine.

    `merge`: "auto" runs skip-till-any-match queries without negation that share a window over
    one product automaton when that is cheaper (docs/ENGINE.md, "Query sets"); "never" and
    "always" force the choice (for measurements). Queries with MIN/MAX, `of=` or `max_missing=`
    never merge: each runs its own engine (`own`) over the same batch. `memory_limit` bounds the
    shared engines together and each own engine alone."""

    def __init__(self, queries: QuerySet, memory_limit: Optional[int] = None, merge: str = "auto"):
        if not isinstance(queries, QuerySet):
            raise InputError(f"expected a suse.QuerySet, got {type(queries).__name__}")
        self.queries = queries
        self._names = list(queries)
        self.memory_limit = limit = check_memory_limit(memory_limit)
        self.merge = merge = check_choice("merge", merge, ("never", "auto", "always"))
        shared = [name for name, q in queries.items() if _shares(q)]
        self._shared = {name: i for i, name in enumerate(shared)}
        self._engine = _core.MultiExactEngine(
            [(queries[n]._dfa, queries[n].window, queries[n].policy) for n in shared], limit, merge,
        ) if shared else None
        self._own = {name: _core.ExactEngine(q._dfa, q.window, q.policy, limit, q._extrema, q._of_mask)
                     for name, q in queries.items() if not _shares(q)}
        self._last: Optional[int] = None

    @locked
    def __reduce__(self):
        """A set that has taken no events pickles as its queries and options; afterwards its
        shared engines (several queries over one automaton) have no saved form."""
        if self._last is not None:
            raise InputError("an ExactSet that has taken events cannot be pickled: its shared engines (one "
                             "automaton for several queries) have no saved form; pickle it before its first batch, "
                             "or hold one suse.Exact per query, which pickles at any time")
        return (ExactSet, (self.queries, self.memory_limit, self.merge))

    @property
    @locked
    def engines(self) -> int:
        """Distinct native engines: queries that count the same sets share one."""
        return (self._engine.engines if self._engine else 0) + len(self._own)

    @property
    @locked
    def merged(self) -> int:
        """Native engines that run a merged (product) automaton of several queries."""
        return self._engine.merged if self._engine else 0

    @property
    def own(self) -> int:
        """Queries (MIN/MAX, of=, max_missing=) that run an engine of their own in the pass."""
        return len(self._own)

    def _feed(self, raw: bytes, ts: Any, vals: Any, times: Any) -> dict[str, list]:
        """One checked batch into every engine; native rows per query name, in the set's order.
        Every engine validates the same arrays against the same last timestamp, so a batch the
        first one refuses is refused before any engine changed."""
        rows: dict[str, list] = {}
        if self._engine is not None:
            rows.update(zip(self._shared, self._engine.extend(raw, ts, vals, times)))
        for name, engine in self._own.items():
            rows[name] = engine.extend(raw, ts, vals, times)
        if len(ts):
            self._last = int(ts[-1])
        return {name: rows[name] for name in self._names}

    @locked
    def extend(self, events: Any = None, *, chars: Any = None, timestamps: Any = None, values: Any = None,
               evaluate_at: Any = None) -> dict[str, list[Evaluation]]:
        """Process a batch; per query, one `Evaluation` per entry of `evaluate_at`, in its order."""
        raw, ts, vals = coerce_events(events, chars, timestamps, values)
        check_order(ts, self._last)
        times, order = eval_times(evaluate_at, self._last)
        rows = self._feed(raw, ts, vals, times)
        return {name: in_input_order([evaluation_of(r) for r in q_rows], order) for name, q_rows in rows.items()}

    @locked
    def result(self, evaluations: Optional[Mapping[str, list[Evaluation]]] = None) -> dict[str, ExactResult]:
        out = {}
        for name in self._names:
            evals = list((evaluations or {}).get(name, []))
            own = self._own.get(name)
            if own is not None:
                t = own.totals()
                out[name] = ExactResult(t.count, t.sum, t.partial_count, own.skipped, own.events, evals,
                                        t.min, t.max, t.count_by_missing)
            else:
                i = self._shared[name]
                t = self._engine.totals(i)
                out[name] = ExactResult(t.count, t.sum, t.partial_count, self._engine.skipped(i), self._engine.events,
                                        evals)
        return out


def exact_set(queries: QuerySet, events: Any = None, *, chars: Any = None, timestamps: Any = None,
              values: Any = None, evaluate_at: Any = None, merge: str = "auto") -> dict[str, ExactResult]:
    engine = ExactSet(queries, merge=merge)
    raw, ts, vals = coerce_events(events, chars, timestamps, values)
    if len(raw) == 0:
        raise InputError("the stream is empty")
    check_order(ts, None)
    times, order = eval_times(evaluate_at)
    rows = engine._feed(raw, ts, vals, times)
    evaluations = {name: in_input_order([evaluation_of(r) for r in q_rows], order) for name, q_rows in rows.items()}
    return engine.result(evaluations)


def _per_query(setting: str, value: Any, names: list[str]) -> dict[str, Any]:
    """A setting given once for every query, or as a mapping from query name (probabilities:
    a mapping whose values are mappings)."""
    per = isinstance(value, Mapping) and (setting != "probabilities" or (
        bool(value) and all(isinstance(v, Mapping) or v is None for v in value.values())))
    if not per:
        return {k: value for k in names}
    unknown = [k for k in value if k not in names]
    if unknown:
        raise InputError(f"{setting} given for {unknown[0]!r}, which is not a query of the set ({', '.join(names)})")
    missing = [k for k in names if k not in value]
    if missing and setting in ("size", "strategy"):
        raise InputError(f"no {setting} for query {missing[0]!r}: give one for every query, or one for all")
    return {k: value.get(k) for k in names}


class SummarySet(Locked):
    """One bounded summary per query of a set, fed together: a batch is decoded and validated
    once. `size`, `strategy`, `time_to_live` and `probabilities` are one value for all queries
    or a mapping from query name (probabilities: name -> {char: p}). Queries with identical
    settings share one summary."""

    def __init__(self, queries: QuerySet, size: Any, strategy: Any = "suse", probabilities: Any = None,
                 seed: Optional[int] = None, time_to_live: Any = None, memory_limit: Optional[int] = None):
        if not isinstance(queries, QuerySet):
            raise InputError(f"expected a suse.QuerySet, got {type(queries).__name__}")
        names = list(queries)
        self.queries = queries
        self.seed = secrets.randbits(63) if seed is None else check_int("seed", seed, maximum=2**64 - 1)
        sizes = _per_query("size", size, names)
        strategies = _per_query("strategy", strategy, names)
        ttls = _per_query("time_to_live", time_to_live, names)
        probs = _per_query("probabilities", probabilities, names)
        self.summaries: dict[str, Summary] = {}
        shared: dict[str, Summary] = {}
        for name in names:
            s = Summary(queries[name], sizes[name], strategies[name], probs[name], self.seed, ttls[name], memory_limit)
            key = repr(s._header())
            self.summaries[name] = shared.setdefault(key, s)
        self._last: Optional[int] = None

    @locked
    def extend(self, events: Any = None, *, chars: Any = None, timestamps: Any = None, values: Any = None,
               evaluate_at: Any = None, elements: bool = False) -> dict[str, list[Evaluation]]:
        """Process a batch; per query, one `Evaluation` per entry of `evaluate_at`, in its order
        (as `Summary.extend`)."""
        raw, ts, vals = coerce_events(events, chars, timestamps, values)
        check_order(ts, self._last)
        times, order = eval_times(evaluate_at, self._last)
        done: dict[int, list] = {}
        out = {}
        for name, s in self.summaries.items():
            if id(s) not in done:
                with s._lock:  # a summary of the set may also be used on its own
                    rows = s._engine.extend(raw, ts, vals, times, bool(elements))
                done[id(s)] = in_input_order([evaluation_of(r) for r in rows], order)
            out[name] = done[id(s)]
        if len(ts):
            self._last = int(ts[-1])
        return out

    @locked
    def result(self) -> dict[str, SummaryResult]:
        return {name: s.result() for name, s in self.summaries.items()}

    @locked
    def __repr__(self) -> str:
        return f"SummarySet({list(self.summaries)!r})"
