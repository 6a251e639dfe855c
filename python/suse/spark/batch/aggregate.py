"""``aggregate``: a query (or a query set) over every partition of a DataFrame, as a DataFrame
of results."""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from typing_extensions import Unpack

from suse.errors import InputError
from suse.spark.batch.layout import output_schema, run
from suse.spark.events.rows import OP, RANK, TIE, TS, VALUE, Events, quoted
from suse.spark.prepare import prepare, prepare_multi, spark_frame
from suse.spark.runners.matches import check_matches
from suse.spark.runners.plan import PartitionPlan
from suse.spec import BatchOptions, JobSpec, job_from_options


def aggregate(
    df: DataFrame,
    query: str | None = None,
    window: str | int | dt.timedelta | None = None,
    characters: Mapping[str, str] | str | None = None,
    timestamp: str | None = None,
    partition_by: Sequence[str] | str = (),
    value: str | None = None,
    **options: Unpack[BatchOptions],
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

    ``where={letter: condition}``: conditions between a match's events over ``df``'s columns
    (docs/QUERY.md), counted by ``engine="exact"`` or by summaries whose ``strategy`` is "fifo",
    "random" or "present" (the rows' ``elements`` then leave the attributes out).

    ``op``: a column with "+" (an event) or "-" (a retraction: it cancels one event of the
    partition with the same character, timestamp and value; a retraction with nothing to cancel
    stops the job with an error naming it).

    ``large_partitions``: False: Spark gathers each partition's events into one row (lists)
    before the engine runs, which avoids sorting the whole input; True: for partitions of
    tens of millions of events, which an executor could not hold at once, the events are
    sorted and streamed through the engine. None (the default): one more Spark job counts
    the largest partition and chooses (docs/SPARK.md, "How it runs"). The results are the same.

    ``elements=False`` leaves the ``elements`` column out: lean rows for dashboards, and less
    for Spark to take back from the Python workers (each row carries up to ``summary_size``
    retained elements otherwise).

    ``matches=n`` adds a ``matches`` column: the first n matches among each row's retained
    elements that the row's count counts, each as its elements; ``sample_matches=n`` draws n
    of them uniformly with replacement instead (seeded, the same on every run). Not with
    negation, contiguity or ``max_missing`` (the rows do not carry what lay between the
    elements); see docs/SPARK.md.
    """
    spark_frame(df, "aggregate")
    if df.isStreaming:
        raise InputError(
            "aggregate needs a batch DataFrame, but this one is streaming (spark.readStream): "
            "use suse.spark.aggregate_stream for streams"
        )
    given = {"characters": characters, "timestamp": timestamp, "partition_by": partition_by, "value": value,
             **options}
    return aggregate_job(df, job_from_options("aggregate", query, window, given, BatchOptions))


def aggregate_job(df: DataFrame, job: JobSpec) -> DataFrame:
    """A whole job over a batch DataFrame (what `aggregate`'s arguments describe)."""
    check_matches(job)
    plan: PartitionPlan
    schema = None
    if job.query_set:
        events, plan = prepare_multi(df, job)
        schema = output_schema(events, plan, query_column=True)
    else:
        events, plan = prepare(df, job)
    if events.has_op:
        events = cancel_retractions(events)
    return run(events, plan, schema, large_partitions=job.input.large_partitions, elements=job.output.elements,
               matches=job.output.matches)


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
