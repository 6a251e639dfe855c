"""``aggregate(df, queries={...})``: many queries in one Spark job.

Rows are classified over the union of the queries' letters, shuffled and sorted once; each
partition is then evaluated for every query in the same Python pass. A query sees exactly
the events it would see alone (its letters and negated characters; every row under
contiguity), so each query's rows equal a run of that query alone. With ``exact=True`` one
`suse.ExactSet` pass over the partition answers every query's evaluation times (events of
other queries' letters change no count: skip-till-any/next-match skip them, and contiguity
is broken by them alone too, since it then sees every row).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import types as T

import suse
from suse.errors import InputError
from suse.queryset import check_name
from suse.spark.characters import OTHER, RANK, Events, to_events
from suse.spark.letters import check_column_letters, check_predicates, warn_letters
from suse.spark.runner import APPROX_DDL, EXACT_DDL, EXTREMA_DDL, RESULT_DDL, Plan, Row, empty_row, evaluate_partition
from suse.spark.triggers import parse_trigger
from suse.spark.workers import check_workers

#: Settings a query of a set may give for itself; the others are the job's.
PER_QUERY = ("window", "aggregate", "policy", "summary_size", "strategy", "probabilities", "seed", "evaluate", "of",
             "max_missing")


@dataclasses.dataclass(frozen=True)
class MultiPlan:
    """Per query: its name, plan and the ranks (characters) of the events it is fed."""

    plans: tuple[tuple[str, Plan, tuple[int, ...]], ...]
    order: str
    exact: bool

    multi = True  # run_sorted adds the `query` column

    @property
    def extrema(self) -> bool:
        """min/max columns when any query has aggregate min/max (NULL for the others)."""
        return any(plan.extrema for _, plan, _ in self.plans)

    @property
    def max_missing(self) -> int:
        """count_by_missing column when any query is approximate (NULL for the others)."""
        return max(plan.max_missing for _, plan, _ in self.plans)

    def empty_rows(self, dropped: int, corrupt: int) -> list[Row]:
        """Per query, the row of a partition with counted rows but no usable event."""
        return [empty_row(dataclasses.replace(plan, exact=self.exact), dropped, corrupt)._replace(query=name)
                for name, plan, _ in self.plans]

    def chars(self, ranks: np.ndarray) -> bytes:
        return np.frombuffer(self.order.encode("ascii"), dtype=np.uint8)[ranks].tobytes()

    def evaluate(self, key: Sequence[Any], ranks: np.ndarray, ts: np.ndarray, values: np.ndarray | None) -> list[Row]:
        """Rows of every query for one partition's sorted events."""
        fed = []
        for name, plan, allowed in self.plans:
            mask = np.isin(ranks, allowed)
            sub_ts = ts[mask]
            fed.append((name, plan, mask, plan.trigger.times(sub_ts, key) if len(sub_ts) else np.array([], np.int64)))
        exact = None
        if self.exact:
            times = np.unique(np.concatenate([f[3] for f in fed])).astype(np.int64)
            if len(times):
                qs = suse.QuerySet({name: plan.query() for name, plan, _, _ in fed})
                ev = suse.exact(qs, chars=self.chars(ranks), timestamps=ts, values=values, evaluate_at=times)
                exact = {name: dict(zip(times.tolist(), r.evaluations)) for name, r in ev.items()}
        rows = []
        for name, plan, mask, times in fed:
            if not len(times):
                continue
            sub = evaluate_partition(plan, key, self.chars(ranks[mask]), ts[mask], None if values is None else values[mask])
            for row in sub:
                if exact is not None:
                    e = exact[name][row.evaluated_at]
                    row = row._replace(exact_count=e.count, exact_sum=e.sum)
                rows.append(row._replace(query=name))
        return rows


def query_specs(queries: Any, defaults: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{name: regex or {"query": regex, setting: value}}`` -> full settings per query."""
    if not isinstance(queries, Mapping) or not queries:
        raise InputError("queries must be a non-empty mapping from name to a query string or a dict of settings")
    out = {}
    for name, spec in queries.items():
        check_name(name)
        if isinstance(spec, str):
            spec = {"query": spec}
        if not isinstance(spec, Mapping) or not isinstance(spec.get("query"), str):
            raise InputError(f"query {name!r}: expected a query string or a dict with a 'query' string, got {spec!r}")
        unknown = sorted(set(spec) - {"query", *PER_QUERY})
        if unknown:
            raise InputError(f"query {name!r}: unknown setting {unknown[0]!r}; a query may set {', '.join(PER_QUERY)}")
        out[name] = {**defaults, **spec}
    return out


def prepare_multi(
    df: DataFrame, queries: Any, defaults: dict[str, Any], characters: Mapping[str, str] | str, timestamp: str,
    partition_by: Sequence[str] | str, value: str | None, exact: bool, replicate: Sequence[str] | None,
    timestamp_format: str | None, streaming: bool = False, op: str | None = None,
) -> tuple[Events, MultiPlan]:
    """Validate every query on the driver and classify the rows once, over all their letters.
    ``op``: the retraction column, read once for every query (a "-" row reaches the queries
    whose letters include its character, as its event does)."""
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    specs = query_specs(queries, defaults)
    parsed = {}
    for name, s in specs.items():
        if s["window"] is None:
            raise InputError(f"query {name!r} has no window: give window= for all queries or one per query")
        try:
            parsed[name] = suse.Query(s["query"], 0, policy=s["policy"], of=s["of"], max_missing=s["max_missing"])
        except suse.QueryError as exc:
            raise suse.QueryError(f"query {name!r}: {exc.message}", exc.position, exc.query) from None
    contiguous = any(s["policy"] == "contiguous" for s in specs.values())
    alphabet = "".join(dict.fromkeys(c for q in parsed.values() for c in q.alphabet + q.negated))
    events = to_events(df, characters, alphabet, timestamp, partition_by, value, timestamp_format,
                       list(replicate or ()), streaming, keep_all=contiguous, op=op)
    if not isinstance(characters, str):
        for q in parsed.values():
            check_predicates(q, characters)
    plans = []
    for name, s in specs.items():
        q = parsed[name]
        window_units = events.axis.span(s["window"], "window")
        probs = s["probabilities"]
        estimate = probs == "estimate"
        if estimate:
            probs = None  # filled in below, from one count over all queries' rows
        if probs is not None and not isinstance(probs, Mapping):
            raise InputError(f"query {name!r}: probabilities must be a mapping or None, got {probs!r}")
        plan = Plan(
            s["query"], window_units, s["aggregate"], s["policy"], s["summary_size"], s["strategy"],
            None if probs is None else tuple(sorted(probs.items())), s["seed"],
            parse_trigger(s["evaluate"], events.axis, window_units), False, events.order, q.of, q.max_missing,
        )
        plan.new_summary()  # fail now on a bad size, strategy, probabilities or seed
        letters = q.alphabet + q.negated
        allowed = tuple(i for i, c in enumerate(events.order) if c in letters or s["policy"] == "contiguous")
        plans.append((name, plan, allowed, estimate))
    check_workers(df.sparkSession)
    if isinstance(characters, str) and not streaming:
        for q in parsed.values():
            check_column_letters(q, df, characters)
    if any(p[3] for p in plans):
        plans = _estimated(events, parsed, plans)
    plans = [p[:3] for p in plans]
    return events, MultiPlan(tuple(plans), events.order, bool(exact))


def _estimated(events: Events, parsed: dict[str, suse.Query], plans: list) -> list:
    """probabilities = "estimate": one count of every character over the input, then per query
    the frequencies among the rows that query is fed (what its own job would count)."""
    counts = {r[0]: r[1] for r in events.usable.groupBy(RANK).count().collect()}
    out = []
    for name, plan, allowed, estimate in plans:
        if estimate:
            query = parsed[name]
            total = sum(n for rank, n in counts.items() if rank in allowed)
            if total == 0:
                raise InputError(f"query {name!r}: probabilities = 'estimate' needs events, "
                                 "but no row got a character of the query")
            found = {events.order[rank]: n / total for rank, n in counts.items() if rank in allowed}
            never = [c for c in query.alphabet if c not in found and c in events.order]
            if never:
                warn_letters(query, never, "no row satisfies the predicate of")
            probs = {c: found.get(c, 0.0) for c in query.alphabet}
            plan = dataclasses.replace(plan, probabilities=tuple(sorted(probs.items())))
            plan.new_summary()
        out.append((name, plan, allowed, estimate))
    return out


def output_schema(events: Events, exact: bool, extrema: bool = False, approx: bool = False) -> T.StructType:
    keys = [events.frame.schema[k] for k in events.keys]
    results = T._parse_datatype_string(RESULT_DDL + (", " + EXACT_DDL if exact else "") + (
        ", " + EXTREMA_DDL if extrema else "") + (", " + APPROX_DDL if approx else ""))
    return T.StructType(keys + [T.StructField("query", T.StringType(), False)] + list(results.fields))


def run_multi(events: Events, plan: MultiPlan, large_partitions: bool = False, elements: bool = True) -> DataFrame:
    """One shuffle for every query (``batch.run`` with the set's output schema)."""
    from suse.spark.batch import run  # batch imports this module when a set is given

    schema = output_schema(events, plan.exact, plan.extrema, plan.max_missing > 0)
    return run(events, plan, schema, large_partitions=large_partitions, elements=elements)


def set_defaults(query: Any, of: Any, max_missing: int, op: Any, **defaults: Any) -> dict:
    """The settings every query of a set inherits (`of` and `max_missing` too, unless a query
    sets its own), after refusing what only a single query takes."""
    if query is not None:
        raise InputError("give either query= or queries=, not both")
    if op is not None:
        raise InputError("op= (retractions) applies to one query; it is not supported with queries=")
    return {**defaults, "of": of, "max_missing": max_missing}


__all__ = ["MultiPlan", "prepare_multi", "run_multi", "set_defaults", "OTHER"]
