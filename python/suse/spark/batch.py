"""``aggregate``: a query over every partition of a DataFrame, as a DataFrame of results."""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

import suse
from suse.errors import InputError
from suse.spark.characters import RANK, TIE, TS, VALUE, Events, quoted, to_events
from suse.spark.letters import check_column_letters, check_predicates, warn_letters
from suse.spark.workers import check_workers
from suse.spark.runner import EXACT_DDL, RESULT_DDL, Plan, run_sorted
from suse.spark.triggers import parse_trigger


def aggregate(
    df: DataFrame,
    query: str | None = None,
    window: str | int | dt.timedelta | None = None,
    characters: Mapping[str, str] | str | None = None,
    timestamp: str | None = None,
    partition_by: Sequence[str] | str = (),
    value: str | None = None,
    summary_size: int = 500,
    strategy: str = "suse",
    evaluate: Any = "end",
    exact: bool = False,
    replicate: Sequence[str] | None = None,
    probabilities: Mapping[str, float] | str | None = None,
    seed: int = 0,
    aggregate: str = "count",
    policy: str = "any",
    timestamp_format: str | None = None,
    queries: Mapping[str, Any] | None = None,
) -> DataFrame:
    """Aggregate the subsequence matches of ``query`` within ``window`` per partition.

    ``queries={name: regex or {"query": regex, "window": ..., ...}}`` runs a query set in one
    job instead (classified, shuffled and sorted once); the output then has a ``query``
    column after the partition columns. Settings not given per query are the arguments here.

    Returns one row per partition and evaluation time: the partition columns,
    ``evaluated_at``, ``count``/``sum`` (exact decimal strings), ``avg``, ``count_double``,
    ``sum_double``, ``detected_count``, ``events`` and the retained ``elements``; plus
    ``exact_count``/``exact_sum`` when ``exact``. See docs/SPARK.md.

    ``probabilities``: None (estimated online by each summary), a mapping char -> p, or
    "estimate" (character frequencies over the whole input, one extra Spark job).
    """
    spark_frame(df, "aggregate")
    if df.isStreaming:
        raise InputError(
            "aggregate needs a batch DataFrame, but this one is streaming (spark.readStream): "
            "use suse.spark.aggregate_stream for streams"
        )
    if characters is None or timestamp is None:
        raise InputError("aggregate needs characters= and timestamp=")
    if queries is not None:
        from suse.spark.multi import prepare_multi, run_multi

        if query is not None:
            raise InputError("give either query= or queries=, not both")
        defaults = {"window": window, "aggregate": aggregate, "policy": policy, "summary_size": summary_size,
                    "strategy": strategy, "probabilities": probabilities, "seed": seed, "evaluate": evaluate}
        events, multi_plan = prepare_multi(df, queries, defaults, characters, timestamp, partition_by, value, exact,
                                           replicate, timestamp_format)
        return run_multi(events, multi_plan)
    if query is None or window is None:
        raise InputError("aggregate needs query= and window= (or queries=)")
    events, plan = prepare(
        df, query, window, characters, timestamp, partition_by, value, summary_size, strategy,
        evaluate, exact, replicate, probabilities, seed, aggregate, policy, timestamp_format,
    )
    return run(events, plan)


def spark_frame(df: object, caller: str) -> None:
    """A clear error for anything but a Spark DataFrame (pandas, a list, a path)."""
    if not isinstance(df, DataFrame):
        kind = f"{type(df).__module__}.{type(df).__name__}"
        hint = " (convert it with spark.createDataFrame(df))" if kind.startswith("pandas.") else ""
        raise InputError(f"{caller} needs a Spark DataFrame, got a {kind}{hint}")


def prepare(
    df: DataFrame, query: str, window: Any, characters: Mapping[str, str] | str, timestamp: str,
    partition_by: Sequence[str] | str = (), value: str | None = None, summary_size: int = 500,
    strategy: str = "suse", evaluate: Any = "end", exact: bool = False,
    replicate: Sequence[str] | None = None, probabilities: Any = None, seed: int = 0,
    aggregate: str = "count", policy: str = "any", timestamp_format: str | None = None,
    streaming: bool = False,
) -> tuple[Events, Plan]:
    """Validate everything on the driver and build the event frame and executor plan."""
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    parsed = suse.Query(query, 0, policy=policy)  # QueryError with a position if malformed
    # Negated characters are events the engine needs (they kill the sets they fall between);
    # under contiguity every row is (any row between two elements breaks the match).
    alphabet = parsed.alphabet + "".join(c for c in parsed.negated if c not in parsed.alphabet)
    events = to_events(
        df, characters, alphabet, timestamp, partition_by, value, timestamp_format,
        list(replicate or ()), streaming, keep_all=policy == "contiguous",
    )
    if not isinstance(characters, str):
        check_predicates(parsed, characters)
    window_units = events.axis.span(window, "window")
    trigger = parse_trigger(evaluate, events.axis, window_units)
    estimate = probabilities == "estimate"
    if isinstance(probabilities, str) and not estimate:
        raise InputError(f"probabilities must be a mapping, 'estimate' or None, got {probabilities!r}")
    plan = Plan(
        query, window_units, aggregate, policy, summary_size, strategy,
        None if probabilities is None or estimate else tuple(sorted(probabilities.items())),
        seed, trigger, bool(exact), events.order,
    )
    plan.new_summary()  # fail now on a bad size, strategy, probabilities or seed
    # Everything above is checked on the driver; the first Spark jobs start here.
    check_workers(df.sparkSession)  # workers that cannot run suse fail now, not mid-job
    if isinstance(characters, str) and not streaming:
        check_column_letters(parsed, df, characters)
    if estimate:
        plan = dataclasses.replace(plan, probabilities=tuple(sorted(estimate_probabilities(events, parsed).items())))
        plan.new_summary()
    return events, plan


def estimate_probabilities(events: Events, query: suse.Query) -> dict[str, float]:
    counts = {r[0]: r[1] for r in events.usable.groupBy(RANK).count().collect()}
    total = sum(counts.values())
    if total == 0:
        raise InputError("probabilities = 'estimate' needs events, but no row got a character of the query")
    found = {events.order[rank]: n / total for rank, n in counts.items()}
    never = [c for c in query.alphabet if c not in found and c in events.order]
    if never:
        warn_letters(query, never, "no row satisfies the predicate of")
    return {c: found.get(c, 0.0) for c in query.alphabet}  # every query character, 0 if absent


def output_schema(events: Events, exact: bool) -> T.StructType:
    keys = [events.frame.schema[k] for k in events.keys]
    results = T._parse_datatype_string(RESULT_DDL + (", " + EXACT_DDL if exact else ""))
    return T.StructType(keys + list(results.fields))


def run(events: Events, plan: Plan) -> DataFrame:
    keys = [quoted(k) for k in events.keys]
    # An explicit count: adaptive execution would merge the (small) shuffle output into one
    # partition and leave all the Python work to a single worker.
    n = int(events.frame.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    frame = events.frame.repartition(n, *keys) if keys else events.frame.repartition(1)
    # Spark sorts; Python then sees each partition's events contiguous and in order.
    frame = frame.sortWithinPartitions(*keys, TS, RANK, TIE)
    value_col = VALUE if events.has_value else None
    key_names = list(events.keys)

    def body(batches):
        return run_sorted(plan, key_names, batches, TS, RANK, value_col)

    out = frame.mapInArrow(body, output_schema(events, plan.exact))
    if events.axis.is_datetime:
        out = out.withColumn("evaluated_at", F.timestamp_seconds("evaluated_at"))
    return out
