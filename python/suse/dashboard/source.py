"""A job's events, classified once with the same Spark code as ``suse run`` and collected.

The replay then runs in the server's process: at dashboard sizes (the flights job has
59,008 query events) one Spark pass plus an in-process feed is far lighter than a
Structured Streaming query under the server, and it gives exactly the events, characters,
tie order and probabilities the batch job sees, because it is the batch job's own
preparation (``load_input`` + ``prepare``).
"""
from __future__ import annotations

import subprocess
from dataclasses import replace
from typing import Optional

import numpy as np

from suse.dashboard.live import QueryEvents
from suse.spark.jobs.config import JobConfig

JVM_EXIT_SECONDS = 30


def classify(cfg: JobConfig, console=None) -> tuple[list[QueryEvents], bool]:
    """Every query's events as sorted arrays, and whether time is date-time (epoch seconds)."""
    from suse.spark.batch.aggregate import cancel_retractions
    from suse.spark.events.rows import RANK, TIE, TS, VALUE
    from suse.spark.jobs.run import load_input, spark_errors
    from suse.spark.prepare import prepare
    from suse.spark.session import get_session

    with spark_errors():
        spark = get_session(cfg.spark.master, cfg.spark.app_name, cfg.spark.options)
        df = load_input(spark, cfg)
        out, datetime_axis = [], False
        for q, spec in zip(cfg.queries, cfg.spec().queries):
            # each query as its own job, exactly as `suse run` prepares it (retractions included)
            events, plan = prepare(df, replace(cfg.spec(q.replicate), queries=(spec,), query_set=False))
            if events.has_op:
                events = cancel_retractions(events)
            datetime_axis = events.axis.is_datetime
            keys = list(events.keys)
            cols = keys + [TS, RANK, TIE] + ([VALUE] if events.has_value else [])
            pdf = events.frame.select(*[f"`{c}`" for c in cols]).toPandas()
            if events.has_value and pdf[VALUE].isna().any():
                raise _null_values()
            if keys:
                pdf["_pid"] = pdf.groupby(keys, dropna=False, sort=True).ngroup()
                first = pdf.drop_duplicates("_pid").sort_values("_pid")
                key_list = [tuple(None if _isnull(v) else v for v in row) for row in first[keys].itertuples(index=False)]
            else:
                pdf["_pid"] = 0
                key_list = [()]
            # Time order; within a partition the batch job's tie order (rank, then row hash).
            pdf = pdf.sort_values([TS, "_pid", RANK, TIE], kind="stable")
            table = np.frombuffer(plan.order.encode("ascii"), dtype=np.uint8)
            out.append(QueryEvents(
                plan.spec, key_list,
                pdf["_pid"].to_numpy(np.int32), pdf[TS].to_numpy(np.int64),
                table[pdf[RANK].to_numpy(np.int64)],
                pdf[VALUE].to_numpy(np.int64) if events.has_value else None,
                plan.summary.probability_map,
            ))
    return out, datetime_axis


def _isnull(v) -> bool:
    try:
        return v is None or bool(v != v)  # NaN from pandas for a missing key
    except (TypeError, ValueError):
        return False


def _null_values() -> Exception:
    from suse.errors import InputError

    return InputError("the value column is NULL for some events; fill or filter them")


def stop_spark() -> None:
    """The replay needs Spark only to classify: stop the session and end the JVM that
    pyspark started for it (``spark.stop()`` alone keeps the JVM and its heap, ~0.5 GB).
    The JVM's gateway exits when its standard input closes; a JVM pyspark did not start
    (spark-submit, Spark Connect) is left alone."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    spark: Optional[SparkSession] = SparkSession.getActiveSession()
    if spark is not None:
        spark.stop()
    gateway = SparkContext._gateway
    jvm = getattr(gateway, "proc", None)
    if gateway is None or jvm is None:
        return
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None  # a later session starts a new JVM
    jvm.stdin.close()
    try:
        jvm.wait(timeout=JVM_EXIT_SECONDS)
    except subprocess.TimeoutExpired:
        jvm.kill()
        jvm.wait()
