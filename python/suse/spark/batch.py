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
from suse.spark.characters import OP, RANK, TIE, TS, VALUE, Events, quoted, to_events
from suse.spark.letters import check_column_letters, check_predicates, warn_letters
from suse.spark.runner import APPROX_DDL, EXACT_DDL, EXTREMA_DDL, RESULT_DDL, Plan, run_sorted
from suse.spark.triggers import parse_trigger
from suse.spark.workers import check_workers


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
    of: str | None = None,
    max_missing: int = 0,
    op: str | None = None,
    queries: Mapping[str, Any] | None = None,
    large_partitions: bool = False,
    elements: bool = True,
) -> DataFrame:
    """Aggregate the subsequence matches of ``query`` within ``window`` per partition.

    ``queries={name: regex or {"query": regex, "window": ..., ...}}`` runs a query set in one
    job instead (classified, shuffled and sorted once); the output then has a ``query``
    column after the partition columns. Settings not given per query are the arguments here.

    Returns one row per partition and evaluation time: the partition columns,
    ``evaluated_at``, ``count``/``sum`` (exact decimal strings), ``avg``, ``count_double``,
    ``sum_double``, ``detected_count``, ``events`` and the retained ``elements``; plus
    ``exact_count``/``exact_sum`` when ``exact``; ``min``/``max`` when ``aggregate`` is
    "min" or "max"; ``count_by_missing`` (decimal strings, index j: matches missing j letters)
    when ``max_missing`` > 0. ``of`` (letters of the query) restricts SUM/AVG/MIN/MAX to those
    letters' values. See docs/SPARK.md.

    ``probabilities``: None (estimated online by each summary), a mapping char -> p, or
    "estimate" (character frequencies over the whole input, one extra Spark job).

    ``op``: a column with "+" (an event) or "-" (a retraction: it cancels one event of the
    partition with the same character, timestamp and value; a retraction with nothing to cancel
    stops the job with an error naming it).

    ``large_partitions``: by default Spark gathers each partition's events into one row (lists)
    before the engine runs, which avoids sorting the whole input; set it for partitions of
    tens of millions of events, which an executor could not hold at once: then the events are
    sorted and streamed through the engine. The results are the same.

    ``elements=False`` leaves the ``elements`` column out: lean rows for dashboards, and less
    for Spark to take back from the Python workers (each row carries up to ``summary_size``
    retained elements otherwise).
    """
    spark_frame(df, "aggregate")
    for name, flag in (("large_partitions", large_partitions), ("elements", elements)):
        if not isinstance(flag, bool):  # "false" would read as true
            raise InputError(f"{name} must be True or False, got {flag!r}")
    if df.isStreaming:
        raise InputError(
            "aggregate needs a batch DataFrame, but this one is streaming (spark.readStream): "
            "use suse.spark.aggregate_stream for streams"
        )
    if characters is None or timestamp is None:
        raise InputError("aggregate needs characters= and timestamp=")
    if queries is not None:
        from suse.spark.multi import prepare_multi, run_multi, set_defaults

        defaults = set_defaults(query, of, max_missing, None, window=window, aggregate=aggregate, policy=policy,
                                summary_size=summary_size, strategy=strategy, probabilities=probabilities, seed=seed,
                                evaluate=evaluate)
        events, multi_plan = prepare_multi(df, queries, defaults, characters, timestamp, partition_by, value, exact,
                                           replicate, timestamp_format, op=op)
        return run_multi(cancel_retractions(events) if events.has_op else events, multi_plan, large_partitions,
                         elements)
    if query is None or window is None:
        raise InputError("aggregate needs query= and window= (or queries=)")
    events, plan = prepare(
        df, query, window, characters, timestamp, partition_by, value, summary_size, strategy,
        evaluate, exact, replicate, probabilities, seed, aggregate, policy, timestamp_format, of=of,
        max_missing=max_missing, op=op,
    )
    if events.has_op:
        events = cancel_retractions(events)
    return run(events, plan, large_partitions=large_partitions, elements=elements)


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
    streaming: bool = False, of: str | None = None, max_missing: int = 0, op: str | None = None,
) -> tuple[Events, Plan]:
    """Validate everything on the driver and build the event frame and executor plan."""
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    # QueryError with a position if malformed (or approximate with negation).
    parsed = suse.Query(query, 0, policy=policy, of=of, max_missing=max_missing)
    of = parsed.of  # normalised (a set of letters becomes a string)
    # Negated characters are events the engine needs (they kill the sets they fall between);
    # under contiguity every row is (any row between two elements breaks the match).
    alphabet = parsed.alphabet + "".join(c for c in parsed.negated if c not in parsed.alphabet)
    events = to_events(
        df, characters, alphabet, timestamp, partition_by, value, timestamp_format,
        list(replicate or ()), streaming, keep_all=policy == "contiguous", op=op,
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
        seed, trigger, bool(exact), events.order, of, parsed.max_missing,
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


def cancel_retractions(events: Events) -> Events:
    """The events without the retracted ones: each "-" row cancels one "+" row of its partition
    with the same character, timestamp and value (the one with the largest tie, as the
    streaming state does); a "-" row with nothing left to cancel is an error."""
    from pyspark.sql.window import Window

    same = [quoted(k) for k in events.keys] + [F.col(TS), F.col(RANK)] + ([F.col(VALUE)] if events.has_value else [])
    plus = F.col(OP) > 0
    minus = F.sum(F.when(plus, 0).otherwise(1)).over(Window.partitionBy(*same))
    adds = F.sum(F.when(plus, 1).otherwise(0)).over(Window.partitionBy(*same))
    nth = F.row_number().over(Window.partitionBy(*same, plus).orderBy(F.col(TIE).desc()))
    counted = F.col(RANK) < 0  # dropped and corrupt rows stay, to be counted
    where = F.concat_ws(", ", *[F.concat(F.lit(f"{k}="), quoted(k).cast("string")) for k in events.keys],
                        F.concat(F.lit("timestamp="), F.col(TS).cast("string")))
    # one CASE, so that the error is raised whatever order Spark evaluates a filter's terms in
    keep = (F.when(~counted & (F.col("_suse_minus") > F.col("_suse_adds")),
                   F.raise_error(F.concat(F.lit("suse: a retraction (op '-') has no event to cancel: "), where)))
            .otherwise(counted | (plus & (F.col("_suse_nth") > F.col("_suse_minus")))))
    frame = (events.frame.withColumn("_suse_minus", minus).withColumn("_suse_adds", adds).withColumn("_suse_nth", nth)
             .withColumn("_suse_keep", keep).where("_suse_keep")
             .drop("_suse_minus", "_suse_adds", "_suse_nth", "_suse_keep", OP))
    return dataclasses.replace(events, frame=frame, has_op=False)


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


def output_schema(events: Events, exact: bool, extrema: bool = False, approx: bool = False) -> T.StructType:
    keys = [events.frame.schema[k] for k in events.keys]
    ddl = RESULT_DDL + (", " + EXACT_DDL if exact else "") + (", " + EXTREMA_DDL if extrema else "") + (
        ", " + APPROX_DDL if approx else "")
    results = T._parse_datatype_string(ddl)
    return T.StructType(keys + list(results.fields))


def run(events: Events, plan: Plan, schema: T.StructType | None = None, *, grouped: bool = True,
        large_partitions: bool = False, elements: bool = True) -> DataFrame:
    """``plan`` over each partition's events (``schema``: the output's, when ``plan`` is not a
    single query's, e.g. a query set; ``grouped=False``: one native call per partition, for
    benchmarks).

    Two layouts. Gathered (the default for plans the grouped runner serves): Spark groups each
    partition's events into lists, one row per partition, and the runner sorts each list; no
    sort of the whole data, which is what a shuffle-and-sort costs most. Streamed
    (``large_partitions``, partitions without keys, and the other plans): one shuffle by the
    partition keys and one sort, and the runner reads each partition's events in order however
    many there are, where the gathered layout holds a partition's events in one executor's
    memory."""
    from suse.spark import grouped as by_batch

    keys = [quoted(k) for k in events.keys]
    key_names = list(events.keys)
    schema = schema or output_schema(events, plan.exact, plan.extrema, plan.max_missing > 0)
    if not elements:
        schema = T.StructType([f for f in schema.fields if f.name != "elements"])

    def lean(batches):  # dropped in the worker, so Spark never receives them
        return batches if elements else (b.drop_columns(["elements"]) for b in batches)

    if grouped and keys and not large_partitions and by_batch.serves(plan):
        bits = by_batch.rank_bits(events.order)

        def gathered_body(batches):
            return lean(by_batch.run_gathered(plan, key_names, batches, bits))

        out = gather(events, bits).mapInArrow(gathered_body, schema)
    else:
        # Spark sorts; Python then sees each partition's events contiguous and in order.
        frame = by_key(events.frame, keys).sortWithinPartitions(*keys, TS, RANK, TIE)
        value_col = VALUE if events.has_value else None

        def body(batches):
            return lean(run_sorted(plan, key_names, batches, TS, RANK, value_col, grouped))

        # The tie breaker only orders the sort: not shipped to the Python workers.
        out = frame.drop(TIE).mapInArrow(body, schema)
    if events.axis.is_datetime:
        out = out.withColumn("evaluated_at", F.timestamp_seconds("evaluated_at"))
    return out


def gather(events: Events, bits: int) -> DataFrame:
    """One row per partition: its rows as lists in no particular order. Each usable event's
    time and rank share one long (``grouped.PACKED``, ``(time << bits) | rank``, a list Spark
    builds and ships at half the cost of two), with values and tie breakers in lists beside it. The other rows go whole
    into ``grouped.WIDE``: the rows counted, not fed (negative rank), and the rare events
    whose time is too far from 0 to share a long with the rank. Counting those rows in Spark
    instead (two more aggregates and a column) cost a fifth of the gathering."""
    from suse.spark.grouped import PACKED, WIDE

    fits = F.col(TS).between(-(1 << (63 - bits)), (1 << (63 - bits)) - 1)
    packable = (F.col(RANK) >= 0) & fits  # false, not NULL, when the rank is negative
    extra = [VALUE, TIE] if events.has_value else []
    keys = [quoted(k) for k in events.keys]
    # Each list's input is computed here, in generated code before the shuffle: collect_list
    # would evaluate an expression row by row, interpreted.
    lists = events.frame.select(
        *keys, F.when(packable, F.shiftleft(F.col(TS), bits).bitwiseOR(F.col(RANK))).alias(PACKED),
        *[F.when(packable, F.col(c)).alias(c) for c in extra],
        F.when(~packable, F.struct(*[F.col(c) for c in [TS, RANK, *extra]])).alias(WIDE))
    # collect_list appends every row to all lists at once (skipping NULLs, and the packed
    # lists are NULL on the same rows), so position i is one event in each.
    gathered = [F.collect_list(c).alias(c) for c in [PACKED, *extra, WIDE]]
    # Already shuffled by key, the grouping needs no other shuffle.
    return by_key(lists, keys).groupBy(*keys).agg(*gathered)


def by_key(frame: DataFrame, keys: list) -> DataFrame:
    """``frame`` shuffled by the partition ``keys`` (one partition without keys) into an
    explicit count of partitions: adaptive execution would merge a small shuffle output into
    one partition and leave all the Python work to a single worker."""
    if not keys:
        return frame.repartition(1)
    return frame.repartition(int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions")), *keys)
