"""One specification of a suse job, carried whole from every front end to the engines.

The library's keyword arguments, the CLI's flags, a TOML job, ``suse.spark.aggregate`` and
``aggregate_stream``, the SQL statement, the table function and the live page all build a
`JobSpec` and pass it on as one object; an option added here (a field) reaches every engine
without editing the calls in between. The spec is plain data: frozen, hashable where Spark
ships it to executors, and checked when an engine is built from it (`QuerySpec.compile`,
`SummarySpec.new_summary`), so that every front end reports a mistake the same way.
"""
from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping, Optional, Sequence, TypedDict, Union

from suse.api import Query, Summary, check_name
from suse.errors import InputError

#: A window or a lateness: an integer in the timestamps' unit, or a duration ("2 hours", a
#: timedelta) that the Spark pipeline converts into the time axis' unit.
Span = Union[int, str, dt.timedelta]
#: ``{char: predicate}`` in order (the first true predicate wins), or the name of a column
#: that holds the characters.
Characters = Union[Mapping[str, str], str]


def _pairs(mapping: Any) -> Any:
    """A mapping as a tuple of pairs (hashable, order kept); anything else unchanged."""
    return tuple(mapping.items()) if isinstance(mapping, Mapping) else mapping


@dataclass(frozen=True)
class SummarySpec:
    """How each partition's bounded summary is built (see `suse.Summary`)."""

    size: int = 500
    strategy: str = "suse"
    #: None (estimated online), char -> probability, or "estimate" (Spark batch: character
    #: frequencies over the whole input, one extra job). Kept as pairs so the spec hashes.
    probabilities: Any = None
    seed: Optional[int] = 0
    time_to_live: Optional[int] = None
    memory_limit: Optional[int] = None
    lateness: Span = 0
    placement: str = "buffer"

    def __post_init__(self) -> None:
        p = self.probabilities
        object.__setattr__(self, "probabilities", tuple(sorted(p.items())) if isinstance(p, Mapping) else p)

    @property
    def estimate(self) -> bool:
        return self.probabilities == "estimate"

    @property
    def probability_map(self) -> Optional[dict[str, float]]:
        """The given probabilities as a mapping (None when estimated, online or from the data)."""
        p = self.probabilities
        if p is None or isinstance(p, str):
            return None
        return dict(p)

    def new_summary(self, query: Query, lateness: int = 0) -> Summary:
        """An empty summary for `query`; `lateness` in the timestamps' unit (the Spark pipeline
        resolves durations first and keeps its own buffer, so it passes 0)."""
        if isinstance(self.probabilities, str):
            raise InputError(f"probabilities must be a mapping, 'estimate' or None, got {self.probabilities!r}")
        return Summary(query, self.size, self.strategy, self.probability_map, seed=self.seed,
                       time_to_live=self.time_to_live, memory_limit=self.memory_limit, lateness=lateness,
                       placement=self.placement)


@dataclass(frozen=True)
class QuerySpec:
    """A pattern with its window and output options; `name` labels it in a query set.

    `summary` and `evaluate` override the job's for this query alone (query sets)."""

    regex: str
    window: Span
    aggregate: str = "count"
    policy: str = "any"
    of: Optional[str] = None
    max_missing: int = 0
    name: Optional[str] = None
    summary: Optional[SummarySpec] = None
    evaluate: Any = None
    #: Conditions between a match's events, ``{letter: condition}``, kept as pairs so the spec
    #: hashes (on Spark the exact engine counts them, and in batch the summaries of every
    #: strategy; see docs/SPARK.md).
    where: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "where", _pairs(self.where) or None)
        of = self.of
        if isinstance(of, (list, tuple, set, frozenset)) and all(isinstance(c, str) for c in of):
            object.__setattr__(self, "of", tuple(sorted(of)))  # hashable; Query checks the letters

    @property
    def label(self) -> str:
        return self.name or self.regex

    def compile(self, window: Optional[int] = None) -> Query:
        """The validated, compiled query (`QueryError` with a position when malformed).
        `window`: the window in the timestamps' unit when `self.window` is a duration; without
        it a duration compiles with window 0, enough to check the pattern and its options."""
        if window is None:
            window = self.window if isinstance(self.window, int) and not isinstance(self.window, bool) else 0
        return _compiled(self.regex, window, self.aggregate, self.policy, self.of, self.max_missing, self.where)


@functools.lru_cache(maxsize=64)
def _compiled(regex: str, window: int, aggregate: str, policy: str, of: Any, max_missing: int, where: Any) -> Query:
    """Executors rebuild the same queries for every partition: compile each once per process."""
    letters = list(of) if isinstance(of, tuple) else of
    return Query(regex, window, aggregate=aggregate, policy=policy, of=letters, max_missing=max_missing, where=where)


@dataclass(frozen=True)
class InputSpec:
    """How rows become events: the time column, the characters and the partition keys."""

    timestamp: str
    characters: Characters
    partition_by: tuple[str, ...] = ()
    value: Optional[str] = None
    #: a column of "+" (an event) or "-" (a retraction of an equal earlier event)
    op: Optional[str] = None
    timestamp_format: Optional[str] = None
    #: characters whose events every partition also receives (see docs/SPARK.md)
    replicate: tuple[str, ...] = ()
    #: stream sorted events through the engine instead of gathering each partition in memory;
    #: None: chosen per batch job from the largest partition's size (spark/batch/layout.py)
    large_partitions: Optional[bool] = None

    def __post_init__(self) -> None:
        if isinstance(self.partition_by, str):
            object.__setattr__(self, "partition_by", (self.partition_by,))
        object.__setattr__(self, "partition_by", tuple(self.partition_by))
        object.__setattr__(self, "replicate", tuple(self.replicate or ()))
        object.__setattr__(self, "characters", _pairs(self.characters))

    @property
    def predicates(self) -> Any:
        """``{char: predicate}``, or None when the characters come from a column (anything else
        given is passed on as it is, for the reader to refuse by name)."""
        if isinstance(self.characters, str):
            return None
        return dict(self.characters) if isinstance(self.characters, tuple) else self.characters

    @property
    def character_column(self) -> Optional[str]:
        return self.characters if isinstance(self.characters, str) else None


@dataclass(frozen=True)
class MatchesSpec:
    """Matches listed in each output row, among the retained elements the row reports: the
    first ``n`` in the kernel's order, or ``n`` drawn uniformly with replacement (``sample``)."""

    n: int
    sample: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or not 1 <= self.n <= MAX_ROW_MATCHES:
            raise InputError(f"{'sample_matches' if self.sample else 'matches'} must be a whole number from 1 "
                             f"to {MAX_ROW_MATCHES:,} (matches listed per output row), got {self.n!r}")


MAX_ROW_MATCHES = 10_000


@dataclass(frozen=True)
class OutputSpec:
    """When results are reported and what each row carries."""

    #: "end", "every N events", timestamps, {"every": duration} or {"poisson": ...}
    evaluate: Any = "end"
    #: also the exact aggregate (the ground truth) beside each estimate
    exact: bool = False
    #: each row's retained elements (False: lean rows)
    elements: bool = True
    #: each row's matches among its retained elements (None: no matches column)
    matches: Optional[MatchesSpec] = None
    #: what computes each row: "summary" (a bounded summary; with `exact`, the exact engine's
    #: counts beside) or "exact" (the exact engine alone, over the partition's whole stream:
    #: no summary columns; the engine that counts conditions between events, `where`)
    engine: str = "summary"

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise InputError(f"engine must be one of {', '.join(map(repr, ENGINES))}, got {self.engine!r}")
        if self.engine == "exact" and self.exact:
            raise InputError("exact=True adds the exact engine's counts beside a summary's; with engine='exact' the "
                             "count columns are already the exact engine's: leave exact out")
        if self.engine == "exact" and self.matches is not None:
            raise InputError("matches are listed among a summary's retained elements; engine='exact' keeps none")


#: The engines a job's rows can come from (OutputSpec.engine).
ENGINES = ("summary", "exact")


@dataclass(frozen=True)
class JobSpec:
    """A whole job: its queries, input mapping, summary settings and output.

    `query_set` runs the queries together (classified, shuffled and sorted once; rows carry a
    `query` column); a job with one query and `query_set=False` has the single-query output."""

    queries: tuple[QuerySpec, ...]
    input: InputSpec
    summary: SummarySpec = field(default_factory=SummarySpec)
    output: OutputSpec = field(default_factory=OutputSpec)
    query_set: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "queries", tuple(self.queries))
        if not self.queries:
            raise InputError("a job needs at least one query")
        if not self.query_set and len(self.queries) > 1:
            raise InputError("several queries run as a query set: pass query_set=True")
        labels = [q.label for q in self.queries]
        if len(set(labels)) != len(labels):
            raise InputError("two queries have the same name; give each a distinct name")

    @property
    def query(self) -> QuerySpec:
        """The single query of a job that is not a query set."""
        if self.query_set:
            raise InputError("this job is a query set; read .queries")
        return self.queries[0]

    def summary_for(self, query: QuerySpec) -> SummarySpec:
        return query.summary or self.summary

    def evaluate_for(self, query: QuerySpec) -> Any:
        return self.output.evaluate if query.evaluate is None else query.evaluate


class BatchOptions(TypedDict, total=False):
    """The keyword arguments of `suse.spark.aggregate` after the first seven (docs/SPARK.md)."""

    op: Optional[str]
    timestamp_format: Optional[str]
    replicate: Optional[Sequence[str]]
    large_partitions: Optional[bool]
    summary_size: int
    strategy: str
    probabilities: Any
    seed: int
    aggregate: str
    policy: str
    of: Any
    max_missing: int
    evaluate: Any
    exact: bool
    elements: bool
    matches: Optional[int]
    sample_matches: Optional[int]
    queries: Optional[Mapping[str, Any]]
    where: Optional[Mapping[str, str]]
    engine: str


class StreamOptions(TypedDict, total=False):
    """The keyword arguments of `suse.spark.aggregate_stream` after the first seven."""

    op: Optional[str]
    timestamp_format: Optional[str]
    summary_size: int
    strategy: str
    probabilities: Any
    seed: int
    lateness: Span
    aggregate: str
    policy: str
    of: Any
    max_missing: int
    evaluate: Any
    queries: Optional[Mapping[str, Any]]
    where: Optional[Mapping[str, str]]
    engine: str
    idle_timeout: Any
    on_change: str


#: Settings a query of a set may give for itself; the others are the job's.
PER_QUERY = ("window", "aggregate", "policy", "summary_size", "strategy", "probabilities", "seed", "evaluate", "of",
             "max_missing", "where")
#: The query settings given beside a pattern (keyword and QuerySpec field alike).
QUERY_SETTINGS = ("aggregate", "policy", "of", "max_missing", "where")
_QUERY_KEYS = {k: k for k in QUERY_SETTINGS}
_SUMMARY_KEYS = {"summary_size": "size", "strategy": "strategy", "probabilities": "probabilities", "seed": "seed",
                 "lateness": "lateness"}
_INPUT_KEYS = {f.name for f in fields(InputSpec)}
_OUTPUT_KEYS = {f.name for f in fields(OutputSpec)}


def matches_spec(first: Optional[int], sample: Optional[int]) -> Optional[MatchesSpec]:
    """The matches option of ``matches=n`` (the first n) or ``sample_matches=n``; not both."""
    if first is not None and sample is not None:
        raise InputError("give either matches= (the first n matches of each row) or sample_matches= (n drawn "
                         "uniformly), not both")
    if first is not None:
        return MatchesSpec(first)
    return None if sample is None else MatchesSpec(sample, True)


def job_from_options(caller: str, query: Optional[str], window: Optional[Span], options: Mapping[str, Any],
                     accepted: type) -> JobSpec:
    """The job that `caller`'s keyword arguments describe (`accepted`: the TypedDict naming
    the keywords it takes besides the input's first columns); others are refused by name.
    Options that are not the job's (a stream's idle timeout) are the caller's to read."""
    known = set(accepted.__annotations__) | {"characters", "timestamp", "partition_by", "value"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InputError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}; "
                         f"it takes df, query, window and {', '.join(sorted(known))}")
    if options.get("characters") is None or options.get("timestamp") is None:
        raise InputError(f"{caller} needs characters= and timestamp=")
    for name in ("large_partitions", "elements", "exact"):
        allowed = (bool, type(None)) if name == "large_partitions" else bool  # None: chosen per job
        if name in options and not isinstance(options[name], allowed):  # "false" would read as true
            raise InputError(f"{name} must be True or False, got {options[name]!r}")
    inp = InputSpec(**{k: v for k, v in options.items() if k in _INPUT_KEYS and v is not None})
    summary = SummarySpec(**{_SUMMARY_KEYS[k]: v for k, v in options.items() if k in _SUMMARY_KEYS})
    output = OutputSpec(**{k: v for k, v in options.items() if k in _OUTPUT_KEYS and k != "matches"},
                        matches=matches_spec(options.get("matches"), options.get("sample_matches")))
    shared = {_QUERY_KEYS[k]: v for k, v in options.items() if k in _QUERY_KEYS}
    queries = options.get("queries")
    if queries is None:
        if query is None or window is None:
            raise InputError(f"{caller} needs query= and window= (or queries=)")
        return JobSpec((QuerySpec(query, window, **shared),), inp, summary, output)
    if query is not None:
        raise InputError("give either query= or queries=, not both")
    return JobSpec(tuple(query_set_entries(queries, window, shared, summary)), inp, summary, output, query_set=True)


def query_set_entries(queries: Any, window: Optional[Span], shared: Mapping[str, Any],
                      summary: SummarySpec) -> list[QuerySpec]:
    """``{name: regex or {"query": regex, setting: value}}`` -> one QuerySpec per name; a
    setting not given by a query is the job's."""
    if not isinstance(queries, Mapping) or not queries:
        raise InputError("queries must be a non-empty mapping from name to a query string or a dict of settings")
    out = []
    for name, entry in queries.items():
        check_name(name)
        if isinstance(entry, str):
            entry = {"query": entry}
        if not isinstance(entry, Mapping) or not isinstance(entry.get("query"), str):
            raise InputError(f"query {name!r}: expected a query string or a dict with a 'query' string, got {entry!r}")
        unknown = sorted(set(entry) - {"query", *PER_QUERY})
        if unknown:
            raise InputError(f"query {name!r}: unknown setting {unknown[0]!r}; a query may set {', '.join(PER_QUERY)}")
        own_window = entry.get("window", window)
        if own_window is None:
            raise InputError(f"query {name!r} has no window: give window= for all queries or one per query")
        settings = {**shared, **{_QUERY_KEYS[k]: v for k, v in entry.items() if k in _QUERY_KEYS}}
        own_summary = {_SUMMARY_KEYS[k]: v for k, v in entry.items() if k in _SUMMARY_KEYS}
        out.append(QuerySpec(entry["query"], own_window, name=name, evaluate=entry.get("evaluate"),
                             summary=replace(summary, **own_summary) if own_summary else None, **settings))
    return out


__all__ = ["BatchOptions", "StreamOptions", "InputSpec", "JobSpec", "OutputSpec", "QuerySpec", "SummarySpec", "job_from_options",
           "query_set_entries"]
