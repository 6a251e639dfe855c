"""The two layouts that bring each partition's events to one Python worker, and the output
schema: gathered (each partition's rows as lists in one row, no sort of the whole data) and
sorted (one shuffle by key and a sort, for partitions too large to hold at once)."""
from __future__ import annotations

import logging
import re

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from suse.spark.events.rows import RANK, TIE, TS, VALUE, Events, quoted
from suse.spark.runners import gathered as by_batch
from suse.spark.runners.gathered import PACKED, WIDE
from suse.spark.runners.matches import MATCHES_DDL, add_matches
from suse.spark.runners.plan import (
    APPROX_DDL,
    EXACT_DDL,
    EXTREMA_DDL,
    RESULT_DDL,
    SUMMARY_COLUMNS,
    PartitionPlan,
)
from suse.spark.runners.sorted import run_sorted
from suse.spec import MatchesSpec


def output_schema(events: Events, plan: PartitionPlan, query_column: bool = False) -> T.StructType:
    """The partition keys, the ``query`` name (query sets) and the result columns the plan fills."""
    keys = [events.frame.schema[k] for k in events.keys]
    ddl = RESULT_DDL + (", " + EXACT_DDL if plan.exact else "") + (", " + EXTREMA_DDL if plan.extrema else "") + (
        ", " + APPROX_DDL if plan.max_missing else "")
    named = [T.StructField("query", T.StringType(), False)] if query_column else []
    results = T._parse_datatype_string(ddl).fields
    if not getattr(plan, "summarised", True):
        results = [f for f in results if f.name not in SUMMARY_COLUMNS]
    return T.StructType(keys + named + list(results))


# Events of one partition the gathered layout may hold per GiB of executor heap when the
# layout is chosen for the user: 3.5 million ran at 1 GiB and 5 million did not (docs/SPARK.md,
# "A partition too large for the heap"); this leaves room for the rest of the job.
GATHERED_EVENTS_PER_GIB = 2_500_000
_GIB = 1 << 30
_log = logging.getLogger("suse")


def run(events: Events, plan: PartitionPlan, schema: T.StructType | None = None, *, grouped: bool = True,
        large_partitions: bool | None = None, elements: bool = True, matches: MatchesSpec | None = None) -> DataFrame:
    """``plan`` over each partition's events (``schema``: the output's, when ``plan`` is not a
    single query's, e.g. a query set; ``grouped=False``: one native call per partition, for
    benchmarks).

    Two layouts. Gathered (the default for plans the grouped runner serves): Spark groups each
    partition's events into lists, one row per partition, and the runner sorts each list; no
    sort of the whole data, which is what a shuffle-and-sort costs most. Streamed
    (``large_partitions``, partitions without keys, and the other plans): one shuffle by the
    partition keys and one sort, and the runner reads each partition's events in order however
    many there are, where the gathered layout holds a partition's events in one executor's
    memory. ``large_partitions=None`` chooses: streamed when the largest partition holds more
    events than ``gathered_limit`` (one more Spark job counts them), else gathered."""
    keys = [quoted(k) for k in events.keys]
    key_names = list(events.keys)
    schema = schema or output_schema(events, plan)
    if matches is not None:  # after elements, which it is computed from
        at = schema.fieldNames().index("elements") + 1
        schema = T.StructType(schema.fields[:at] + list(T._parse_datatype_string(MATCHES_DDL).fields) + schema.fields[at:])
    drop_elements = not elements and "elements" in schema.fieldNames()  # the exact engine's rows have none
    if drop_elements:
        schema = T.StructType([f for f in schema.fields if f.name != "elements"])

    def lean(batches):  # dropped in the worker, so Spark never receives them
        if matches is not None:
            batches = add_matches(batches, plan, matches)
        return (b.drop_columns(["elements"]) for b in batches) if drop_elements else batches

    gatherable = grouped and bool(keys) and by_batch.serves(plan)
    if gatherable and large_partitions is None:
        large_partitions = _too_large_to_gather(events)
    if gatherable and not large_partitions:
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


def _too_large_to_gather(events: Events) -> bool:
    """Whether the largest partition holds more events than the gathered layout may (a count
    per key: Spark reads the input once more, with only the key columns)."""
    counts = events.frame.groupBy(*[quoted(k) for k in events.keys]).count()
    row = counts.agg(F.max("count")).first()
    largest = (row[0] if row is not None else 0) or 0
    limit = gathered_limit(events.frame.sparkSession)
    if largest > limit:
        _log.info("the largest partition holds %d events, more than the %d the gathered layout may hold in this "
                  "heap: sorting and streaming instead (large_partitions)", largest, limit)
        return True
    return False


def gathered_limit(spark: SparkSession) -> int:
    """The most events of one partition the gathered layout is trusted with: per GiB of the
    heap that runs the tasks (the driver's with a local master, else ``spark.executor.memory``)."""
    heap = None
    try:
        context = spark.sparkContext
        if (context.master or "").startswith("local") and context._jvm is not None:
            heap = int(context._jvm.java.lang.Runtime.getRuntime().maxMemory())
    except Exception:  # Spark Connect has no context (nor a JVM here) to ask: use the setting
        heap = None
    if heap is None:
        heap = _memory_setting(spark.conf.get("spark.executor.memory", "1g") or "1g")
    return max(1, heap * GATHERED_EVENTS_PER_GIB // _GIB)


def _memory_setting(text: str) -> int:
    """Bytes of a JVM memory setting such as ``4g`` or ``512m`` (a plain number is MiB, as Spark reads it)."""
    found = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)b?\s*", text.lower())
    if found is None:
        return _GIB
    number, unit = int(found.group(1)), found.group(2) or "m"
    return number << {"k": 10, "m": 20, "g": 30, "t": 40}[unit]


def gather(events: Events, bits: int) -> DataFrame:
    """One row per partition: its rows as lists in no particular order. Each usable event's
    time and rank share one long (``grouped.PACKED``, ``(time << bits) | rank``, a list Spark
    builds and ships at half the cost of two), with values and tie breakers in lists beside it. The other rows go whole
    into ``grouped.WIDE``: the rows counted, not fed (negative rank), and the rare events
    whose time is too far from 0 to share a long with the rank. Counting those rows in Spark
    instead (two more aggregates and a column) cost a fifth of the gathering."""
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
