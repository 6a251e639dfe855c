"""``aggregate_stream``: the same query over a streaming DataFrame, one summary per partition
kept in Spark state (``applyInPandasWithState``; serialised with ``Summary.to_bytes``).

Order and lateness, per partition (docs/SPARK.md, "Streaming semantics"):

* Each partition has its own watermark ``W = (largest timestamp seen) - lateness``.
  Partitions advance independently, so a slow source for one aircraft does not make
  another's events late.
* An arriving event with timestamp < W (W as it was before its micro-batch) is **late**:
  it is not fed to the summary (the engine needs non-decreasing time) but counted in the
  ``late_events`` column, which every later row of the partition reports.
* Other events wait in a buffer in state. Once W passes them they are fed to the summary,
  in (timestamp, rank, tie) order, in one ``extend`` call. Everything fed is older than W
  and everything still buffered is not, so the summary sees exactly the order a batch run
  over the same events would use.
* Each micro-batch emits, for every partition that received events, the estimate over all
  of its non-late events: a copy of the summary is extended with the buffered events. The
  buffered events (``pending_events``) can still be joined by out-of-order arrivals; the
  state itself only ever holds fed events plus the buffer.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

import suse
from suse.errors import InputError
from suse.spark.batch import prepare, spark_frame
from suse.spark.characters import CORRUPT, DROPPED, RANK, TIE, TS, VALUE, quoted
from suse.spark.runner import RESULT_DDL, Plan, as_float

STATE_DDL = (
    "summary binary, pending binary, watermark long, max_ts long, late long, fed long, dropped long, corrupt long"
)
STREAM_DDL = RESULT_DDL.replace(" events long,", " events long, late_events long, pending_events long,")
PENDING = np.dtype([("ts", "<i8"), ("rank", "<i4"), ("tie", "<i8"), ("value", "<i8")])
_ALL = "_suse_all"  # the single group key when there is no partitioning
_OUTPUT = [  # STREAM_DDL's columns after the keys, in order
    "evaluated_at", "count", "sum", "avg", "count_double", "sum_double", "detected_count", "events",
    "late_events", "pending_events", "dropped_events", "corrupt_records", "elements",
]


def aggregate_stream(
    df: DataFrame,
    query: str,
    window: str | int | dt.timedelta,
    characters: Mapping[str, str] | str,
    timestamp: str,
    partition_by: Sequence[str] | str = (),
    value: str | None = None,
    summary_size: int = 500,
    strategy: str = "suse",
    lateness: str | int | dt.timedelta = 0,
    probabilities: Mapping[str, float] | None = None,
    seed: int = 0,
    aggregate: str = "count",
    policy: str = "any",
    timestamp_format: str | None = None,
) -> DataFrame:
    """A streaming DataFrame of per-partition estimates (the batch columns, plus
    ``late_events`` and ``pending_events``), one row per partition per micro-batch in which
    it received events. Write it with an append-mode sink and a checkpoint location."""
    spark_frame(df, "aggregate_stream")
    if not df.isStreaming:
        raise InputError("aggregate_stream needs a streaming DataFrame (spark.readStream); use aggregate for batch data")
    if isinstance(probabilities, str):
        raise InputError("streaming jobs take probabilities as a mapping or None (estimated online)")
    events, plan = prepare(
        df, query, window, characters, timestamp, partition_by, value, summary_size, strategy,
        "end", False, None, probabilities, seed, aggregate, policy, timestamp_format, streaming=True,
    )
    late_units = 0 if lateness in (0, "0") else events.axis.span(lateness, "lateness")
    keys = list(events.keys)
    frame = events.frame if events.has_value else events.frame.withColumn(VALUE, F.lit(1).cast("long"))
    if not keys:
        frame = frame.withColumn(_ALL, F.lit(0))
    schema = T.StructType(
        [events.frame.schema[k] for k in keys] + list(T._parse_datatype_string(STREAM_DDL).fields)
    )

    def step(key: tuple, batches: Iterator[pd.DataFrame], state: GroupState) -> Iterator[pd.DataFrame]:
        yield advance(plan, late_units, key if keys else (), keys, batches, state)

    out = frame.groupBy(*[quoted(k) for k in keys or [_ALL]]).applyInPandasWithState(
        step, schema, STATE_DDL, "append", GroupStateTimeout.NoTimeout
    )
    if events.axis.is_datetime:
        out = out.withColumn("evaluated_at", F.timestamp_seconds("evaluated_at"))
    return out


def advance(
    plan: Plan, lateness: int, key: tuple, keys: Sequence[str], batches: Iterator[pd.DataFrame], state: Any
) -> pd.DataFrame:
    """One micro-batch of one partition: update the state, return the partition's new row."""
    pdf = pd.concat(list(batches), ignore_index=True)
    ranks = pdf[RANK].to_numpy()
    n_dropped, n_corrupt = int((ranks == DROPPED).sum()), int((ranks == CORRUPT).sum())
    pdf = pdf[ranks >= 0]  # counted above, never fed
    if pdf[VALUE].isna().any():  # Spark's own check (raise_error) normally fires first
        raise suse.InputError(f"partition {tuple(key)}: the value column is NULL for some events; fill or filter them")
    new = np.empty(len(pdf), dtype=PENDING)
    new["ts"], new["rank"], new["tie"], new["value"] = pdf[TS], pdf[RANK], pdf[TIE], pdf[VALUE]
    if state.exists:
        blob, pending, watermark, max_ts, late, fed, dropped, corrupt = state.get
        summary = suse.Summary.from_bytes(blob)
        pending = np.frombuffer(pending, dtype=PENDING)
    else:
        summary, pending, watermark, max_ts, late, fed = plan.new_summary(), np.empty(0, PENDING), None, None, 0, 0
        dropped, corrupt = 0, 0
    dropped, corrupt = dropped + n_dropped, corrupt + n_corrupt
    if watermark is not None:
        is_late = new["ts"] < watermark
        late += int(is_late.sum())
        new = new[~is_late]
    if len(new):
        top = int(new["ts"].max())
        max_ts = top if max_ts is None else max(max_ts, top)
        watermark = max_ts - lateness if watermark is None else max(watermark, max_ts - lateness)
    pending = np.concatenate([pending, new])
    pending = pending[np.lexsort((pending["tie"], pending["rank"], pending["ts"]))]
    ready = int(np.searchsorted(pending["ts"], watermark, side="left")) if watermark is not None else 0
    if ready:
        _feed(plan, summary, pending[:ready])
        fed += ready
    pending = pending[ready:]
    blob = summary.to_bytes()
    state.update((blob, pending.tobytes(), watermark, max_ts, late, fed, dropped, corrupt))

    row = {k: [v] for k, v in zip(keys, key)}
    if max_ts is None:  # only dropped or corrupt rows so far: report their counts
        row.update(evaluated_at=[None], count=["0"], sum=["0"], avg=[None], count_double=[0.0], sum_double=[0.0],
                   detected_count=["0"], elements=[[]])
    else:
        estimate = suse.Summary.from_bytes(blob)  # a copy: buffered events are provisional
        (ev,) = _feed(plan, estimate, pending, evaluate_at=max_ts)
        row.update(
            evaluated_at=[ev.timestamp], count=[str(ev.count)], sum=[str(ev.sum)],
            avg=[ev.sum / ev.count if ev.count else None], count_double=[as_float(ev.count)],
            sum_double=[as_float(ev.sum)], detected_count=[str(ev.detected_count)],
            elements=[[{"char": c, "timestamp": t, "value": v} for c, t, v in estimate.elements()]],
        )
    row.update(events=[fed + len(pending)], late_events=[late], pending_events=[len(pending)],
               dropped_events=[dropped], corrupt_records=[corrupt])
    return pd.DataFrame(row)[[*keys, *_OUTPUT]]


def _feed(plan: Plan, summary: suse.Summary, events: np.ndarray, evaluate_at: int | None = None):
    return summary.extend(  # fields of a structured array are strided: make them contiguous
        plan.chars(events["rank"]), np.ascontiguousarray(events["ts"]), np.ascontiguousarray(events["value"]),
        evaluate_at=None if evaluate_at is None else [evaluate_at],
    )


def latest(results: DataFrame, keys: Sequence[str], by: str = "events") -> DataFrame:
    """The newest row per partition of a job's output: the one with the most events (a
    streaming job's output), or with the latest ``evaluated_at`` (``by="evaluated_at"``)."""
    from pyspark.sql.window import Window

    order = [F.col(by).desc()]
    for counter in ("late_events", "dropped_events", "corrupt_records"):  # all grow per partition
        if counter in results.columns:
            order.append(F.col(counter).desc())
    order.append(F.col("evaluated_at").desc())
    w = Window.partitionBy(*[quoted(k) for k in keys] or [F.lit(0)]).orderBy(*order)
    return results.withColumn("_n", F.row_number().over(w)).where("_n = 1").drop("_n")
