"""The driver's step before any job: a `JobSpec` checked and turned into the event frame and the
plan the executors run. Batch, streaming, the live page and the benchmarks all start here, so
every option of the spec reaches every path the same way."""
from __future__ import annotations

import dataclasses

from pyspark.sql import DataFrame

import suse
from suse.errors import InputError
from suse.spark.events.letters import check_column_letters, check_predicates, warn_letters
from suse.spark.events.rows import RANK, Events, to_events
from suse.spark.events.triggers import parse_trigger
from suse.spark.runners.multi import MultiPlan
from suse.spark.runners.plan import Plan
from suse.spark.workers import check_workers
from suse.spec import JobSpec, QuerySpec


def spark_frame(df: object, caller: str) -> None:
    """A clear error for anything but a Spark DataFrame (pandas, a list, a path)."""
    if not isinstance(df, DataFrame):
        kind = f"{type(df).__module__}.{type(df).__name__}"
        hint = " (convert it with spark.createDataFrame(df))" if kind.startswith("pandas.") else ""
        raise InputError(f"{caller} needs a Spark DataFrame, got a {kind}{hint}")


def _compiled(query: QuerySpec, job: JobSpec) -> suse.Query:
    """The query checked (QueryError with a position), named in the message within a set."""
    try:
        compiled = query.compile()
        if compiled.where is not None or compiled._closing is not None:  # query sets do not count them yet
            _refuse_in_a_query_set(compiled, query, job)
        return compiled
    except suse.QueryError as exc:
        if not job.query_set:
            raise
        raise suse.QueryError(f"query {query.label!r}: {exc.message}", exc.position, exc.query) from None


def _refuse_in_a_query_set(compiled: suse.Query, query: QuerySpec, job: JobSpec) -> None:
    """Conditions between events (`where`) and a negation at the end of the pattern run on a
    single query, batch and streaming, on the exact engine and on summaries of every strategy
    (suse.api.where_summary); a query set refuses them by name (it would ignore them)."""
    if not job.query_set:
        return
    if compiled.where is not None:
        what, position, alone = "where", 0, "the query with conditions"
    else:
        what, position, alone = "a negation at the end of the pattern", compiled.regex.find("!"), "that query"
    raise suse.QueryError(f"{what} is not supported in a query set yet: run {alone} as a job of its own", position,
                          compiled.regex)


def _attributes(queries: list[suse.Query]) -> dict[str, tuple[str, ...]]:
    """The columns the queries' conditions read, each with the letters that read it."""
    readers: dict[str, list[str]] = {}
    for q in queries:
        for letter, names in (q.where.attributes() if q.where is not None else {}).items():
            for name in names:
                readers.setdefault(name, []).append(letter)
    return {name: tuple(letters) for name, letters in sorted(readers.items())}


def _fed(query: suse.Query) -> str:
    """The characters a query's engine is fed: its letters and its negated characters (events
    that kill the sets they fall between)."""
    return query.alphabet + "".join(c for c in query.negated if c not in query.alphabet)


def _events(df: DataFrame, job: JobSpec, parsed: list[suse.Query], streaming: bool) -> Events:
    """The rows classified once over every query's characters; under contiguity every row is an
    event (any row between two elements breaks a match)."""
    alphabet = "".join(dict.fromkeys(c for q in parsed for c in _fed(q)))
    contiguous = any(q.policy == "contiguous" for q in job.queries)
    events = to_events(df, job.input, alphabet, streaming=streaming, keep_all=contiguous,
                       attributes=_attributes(parsed))
    predicates = job.input.predicates
    if isinstance(predicates, dict):
        for q in parsed:
            check_predicates(q, predicates)
    return events


def _plan(job: JobSpec, query: QuerySpec, events: Events) -> Plan:
    window = events.axis.span(query.window, "window")
    summary = job.summary_for(query)
    if isinstance(summary.probabilities, str) and not summary.estimate:
        raise InputError(f"probabilities must be a mapping, 'estimate' or None, got {summary.probabilities!r}")
    plan = Plan(dataclasses.replace(query, window=window, summary=None, evaluate=None),
                dataclasses.replace(summary, probabilities=None) if summary.estimate else summary,
                parse_trigger(job.evaluate_for(query), events.axis, window), job.output.exact, events.order,
                job.output.engine, events.attributes)
    if plan.engine == "summary":
        plan.new_summary()  # fail now on a bad size, strategy, probabilities or seed
    return plan


def _check_data(df: DataFrame, job: JobSpec, parsed: list[suse.Query], streaming: bool) -> None:
    """The first Spark jobs: workers that cannot run suse fail now, not mid-job; a character
    column is checked for letters no row has."""
    check_workers(df.sparkSession)
    column = job.input.character_column
    if column is not None and not streaming:
        for q in parsed:
            check_column_letters(q, df, column)


def prepare(df: DataFrame, job: JobSpec, streaming: bool = False) -> tuple[Events, Plan]:
    """A single query's job: validated on the driver, its event frame and executor plan."""
    query = job.query
    parsed = _compiled(query, job)
    events = _events(df, job, [parsed], streaming)
    plan = _plan(job, query, events)
    _check_data(df, job, [parsed], streaming)
    if job.summary_for(query).estimate and plan.engine == "summary":
        counts = _character_counts(events)
        plan = _with_estimate(plan, parsed, events, counts, range(len(events.order)))
    return events, plan


def prepare_multi(df: DataFrame, job: JobSpec, streaming: bool = False) -> tuple[Events, MultiPlan]:
    """A query set: every query validated on the driver, the rows classified once over all
    their letters. A retraction column is read once for every query (a "-" row reaches the
    queries whose letters include its character, as its event does)."""
    if job.output.engine != "summary":
        raise InputError(f"engine={job.output.engine!r} runs a single query; a query set runs summaries")
    parsed = [_compiled(q, job) for q in job.queries]
    events = _events(df, job, parsed, streaming)
    plans = []
    for query, q in zip(job.queries, parsed):
        allowed = tuple(i for i, c in enumerate(events.order) if c in _fed(q) or query.policy == "contiguous")
        # exact counts come from one pass over the set (MultiPlan), not from each query's plan
        plans.append((query.label, dataclasses.replace(_plan(job, query, events), exact=False), allowed))
    _check_data(df, job, parsed, streaming)
    if any(job.summary_for(q).estimate for q in job.queries):
        counts = _character_counts(events)
        plans = [(name, _with_estimate(plan, q, events, counts, allowed, name) if job.summary_for(spec).estimate
                  else plan, allowed)
                 for (name, plan, allowed), q, spec in zip(plans, parsed, job.queries)]
    return events, MultiPlan(tuple(plans), events.order, job.output.exact)


def _character_counts(events: Events) -> dict[int, int]:
    """probabilities = "estimate": one count of every character over the whole input."""
    return {r[0]: r[1] for r in events.usable.groupBy(RANK).count().collect()}


def _with_estimate(plan: Plan, query: suse.Query, events: Events, counts: dict[int, int], allowed: range | tuple,
                   name: str | None = None) -> Plan:
    """The plan with the character frequencies among the rows its query is fed (what its own
    job would count)."""
    where = "" if name is None else f"query {name!r}: "
    total = sum(n for rank, n in counts.items() if rank in allowed)
    if total == 0:
        raise InputError(f"{where}probabilities = 'estimate' needs events, but no row got a character of the query")
    found = {events.order[rank]: n / total for rank, n in counts.items() if rank in allowed}
    never = [c for c in query.alphabet if c not in found and c in events.order]
    if never:
        warn_letters(query, never, "no row satisfies the predicate of")
    probabilities = {c: found.get(c, 0.0) for c in query.alphabet}  # every query character, 0 if absent
    plan = dataclasses.replace(plan, summary=dataclasses.replace(plan.summary, probabilities=probabilities))
    plan.new_summary()
    return plan
