"""``aggregate_stream``: the same query over a streaming DataFrame, one summary per partition
kept in Spark state (``transformWithStateInPandas``: a value state holding ``Summary.to_bytes``,
the buffer of pending events and the counters; a processing-time timer drops the state of a
partition idle for longer than ``idle_timeout``).

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
import json
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

import suse
from suse.errors import InputError, StateError
from suse.spark.batch import prepare, spark_frame
from suse.spark.characters import CORRUPT, DROPPED, RANK, TIE, TS, VALUE, quoted
from suse.spark.runner import RESULT_DDL, Plan, as_float

STATE_DDL = (
    "summary binary, pending binary, watermark long, max_ts long, late long, fed long, dropped long, corrupt long"
)
STREAM_DDL = RESULT_DDL.replace(" events long,", " events long, late_events long, pending_events long,") + ", expired boolean"
PENDING = np.dtype([("ts", "<i8"), ("rank", "<i4"), ("tie", "<i8"), ("value", "<i8")])
_ALL = "_suse_all"  # the single group key when there is no partitioning
_OUTPUT = [  # STREAM_DDL's columns after the keys, in order
    "evaluated_at", "count", "sum", "avg", "count_double", "sum_double", "detected_count", "events",
    "late_events", "pending_events", "dropped_events", "corrupt_records", "elements", "expired",
]
#: STATE_DDL as a schema built by hand (no session is needed to parse it on an executor).
STATE_SCHEMA = T.StructType([
    T.StructField(name, T.BinaryType() if kind == "binary" else T.LongType())
    for name, kind in (part.split() for part in STATE_DDL.split(", "))
])
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STATE_NAME = "suse_summary_v1"  # the state variable; a new layout gets a new name
DUE_NAME = "suse_due_v1"  # with evaluate = {every}: the partition's next due time
DUE_SCHEMA = T.StructType([T.StructField("next_due", T.LongType())])
_EVENT_TIME = "_suse_event_time"  # the column Spark's watermark runs on (due-time mode)


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
    idle_timeout: str | dt.timedelta | None = None,
    evaluate: Any = None,
) -> DataFrame:
    """A streaming DataFrame of per-partition estimates (the batch columns, plus
    ``late_events``, ``pending_events`` and ``expired``), one row per partition per
    micro-batch in which it received events. Write it with an append-mode sink and a
    checkpoint location.

    ``idle_timeout`` (a duration of processing time, e.g. "1 hour"): a partition that receives
    no events for that long has its buffered events fed, one last row emitted with
    ``expired = true``, and its state dropped; later events start a new summary.

    ``evaluate``: None (or "end") gives the row per micro-batch above. ``{"every": "30 days"}``
    (a duration, or an integer for integer timestamps) instead gives one row per partition
    at every multiple of the period from its first event on, once the watermark (its own or
    Spark's global one, ``lateness`` behind the newest event) has passed it, also when the
    partition received nothing: event-time timers (suse.spark.due)."""
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
    idle_ms = None
    if idle_timeout is not None:
        from suse.spark.timing import duration_seconds

        idle_ms = duration_seconds(idle_timeout) * 1000
        if idle_ms <= 0:
            raise InputError("idle_timeout must be a positive duration such as '1 hour'")
    period = _period(evaluate, events.axis, plan.window)
    if period and idle_ms:
        raise InputError(
            "idle_timeout and evaluate = {every = ...} cannot be combined: a Spark stateful operator "
            "runs its timers on one clock, processing time (idle) or event time (due evaluations)"
        )
    keys = list(events.keys)
    frame = events.frame if events.has_value else events.frame.withColumn(VALUE, F.lit(1).cast("long"))
    if not keys:
        frame = frame.withColumn(_ALL, F.lit(0))
    schema = T.StructType(
        [events.frame.schema[k] for k in keys] + list(T._parse_datatype_string(STREAM_DDL).fields)
    )

    # transformWithState keeps its state only in RocksDB; the option is read when a query
    # starts (and then recorded in its checkpoint), so set it for this session now.
    conf = df.sparkSession.conf
    if conf.get(_PROVIDER, None) != _ROCKSDB:
        conf.set(_PROVIDER, _ROCKSDB)
    group = keys or [_ALL]
    columns = [*[quoted(k) for k in group], TS, RANK, TIE, VALUE]  # the order _Processor reads
    scale = 1
    if period:
        # Spark's watermark drives the timers; it runs on a timestamp column, in milliseconds.
        scale = 1000 if events.axis.is_datetime else 1
        unit = "seconds" if events.axis.is_datetime else "milliseconds"  # integers count as ms
        stamp = F.timestamp_seconds(TS) if events.axis.is_datetime else F.timestamp_millis(TS)
        frame = frame.withColumn(_EVENT_TIME, stamp).withWatermark(_EVENT_TIME, f"{late_units} {unit}")
        # ...and the column is then left out: the operator would silently drop rows at or below
        # the previous batch's watermark, while suse counts late events itself (late_events).
    frame = frame.select(*columns)
    out = frame.groupBy(*[quoted(k) for k in group]).transformWithStateInPandas(
        _Processor(plan, late_units, keys, idle_ms, period, scale), schema, "Append",
        "EventTime" if period else "ProcessingTime" if idle_ms else "None",
    )
    if events.axis.is_datetime:
        out = out.withColumn("evaluated_at", F.timestamp_seconds("evaluated_at"))
    return out


def _period(evaluate: Any, axis: Any, window: int) -> int | None:
    """The due-time period of ``evaluate`` in the time axis' unit, or None (per micro-batch)."""
    if evaluate is None or evaluate == "end":
        return None
    from suse.spark.triggers import parse_trigger

    if not (isinstance(evaluate, dict) and "every" in evaluate):
        raise InputError(
            f"aggregate_stream: evaluate must be None (a row per micro-batch) or {{'every': DURATION}} "
            f"(rows at due times), got {evaluate!r}"
        )
    return parse_trigger(evaluate, axis, window).period


class _State:
    """A value state seen through the three members ``advance`` uses."""

    def __init__(self, value) -> None:
        self.value = value

    @property
    def exists(self) -> bool:
        return self.value.exists()

    @property
    def get(self) -> tuple:
        return tuple(self.value.get())

    def update(self, row: tuple) -> None:
        self.value.update(row)


class _Processor(StatefulProcessor):
    """One partition's summary, buffer and counters in a value state; an optional timer for
    idle partitions."""

    def __init__(
        self, plan: Plan, lateness: int, keys: Sequence[str], idle_ms: int | None,
        period: int | None = None, scale: int = 1,
    ) -> None:
        self.plan, self.lateness, self.keys, self.idle_ms = plan, lateness, list(keys), idle_ms
        self.period, self.scale = period, scale  # due-time period; engine units -> timer ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState(STATE_NAME, STATE_SCHEMA)
        if self.period:
            self.due = handle.getValueState(DUE_NAME, DUE_SCHEMA)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        # pyspark 4.3 hands the value columns over as _1, _2, ...: name them by position
        names = [*(self.keys or [_ALL]), TS, RANK, TIE, VALUE]
        rows = (f.set_axis(names, axis=1) for f in rows)
        if self.period:
            yield from self._due(key, rows, timerValues)
            return
        yield advance(self.plan, self.lateness, key if self.keys else (), self.keys, rows, _State(self.state))
        if self.idle_ms:  # one timer per partition, pushed back by every batch with events
            for t in list(self.handle.listTimers()):
                self.handle.deleteTimer(t)
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + self.idle_ms)

    def _due(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        """Rows at the due times the watermark has passed; then a timer at the next one."""
        from suse.spark.due import advance_due, next_timer

        ms = timerValues.getCurrentWatermarkInMs()
        known = ms // self.scale if ms > 0 else None  # Spark starts at 0: no watermark yet
        state, due = _State(self.state), _State(self.due)
        out = advance_due(self.plan, self.lateness, self.period, key if self.keys else (), self.keys, rows,
                          state, due, known, _OUTPUT)
        if len(out):
            yield out
        for t in list(self.handle.listTimers()):
            self.handle.deleteTimer(t)
        d = next_timer(state, due, self.period)
        if d is not None:  # fires once the watermark is >= d + 1: every event <= d is in
            self.handle.registerTimer(max((d + 1) * self.scale, ms + 1))

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        if not self.state.exists():
            return
        if self.period:
            yield from self._due(key, iter(()), timerValues)
            return
        state = _State(self.state)
        # Idle: nothing can come in order any more, so the buffered events are final.
        row = advance(self.plan, self.lateness, key if self.keys else (), self.keys, iter(()), state, flush=True)
        row["expired"] = True
        self.state.clear()
        yield row

    def close(self) -> None:
        pass


def advance(
    plan: Plan, lateness: int, key: tuple, keys: Sequence[str], batches: Iterator[pd.DataFrame], state: Any,
    flush: bool = False,
) -> pd.DataFrame:
    """One micro-batch of one partition: update the state, return the partition's new row.
    ``flush``: feed every buffered event (the partition is being dropped)."""
    frames = list(batches)
    pdf = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        {RANK: np.empty(0, "i4"), TS: np.empty(0, "i8"), TIE: np.empty(0, "i8"), VALUE: np.empty(0, "i8")})
    ranks = pdf[RANK].to_numpy()
    n_dropped, n_corrupt = int((ranks == DROPPED).sum()), int((ranks == CORRUPT).sum())
    pdf = pdf[ranks >= 0]  # counted above, never fed
    if pdf[VALUE].isna().any():  # Spark's own check (raise_error) normally fires first
        raise suse.InputError(f"partition {tuple(key)}: the value column is NULL for some events; fill or filter them")
    new = np.empty(len(pdf), dtype=PENDING)
    new["ts"], new["rank"], new["tie"], new["value"] = pdf[TS], pdf[RANK], pdf[TIE], pdf[VALUE]
    if state.exists:
        blob, pending, watermark, max_ts, late, fed, dropped, corrupt = state.get
        summary = suse.Summary.from_bytes(bytes(blob))
        pending = np.frombuffer(bytes(pending), dtype=PENDING)
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
    if flush:
        ready = len(pending)
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
               dropped_events=[dropped], corrupt_records=[corrupt], expired=[False])
    return pd.DataFrame(row)[[*keys, *_OUTPUT]]


def _feed(plan: Plan, summary: suse.Summary, events: np.ndarray, evaluate_at: int | None = None):
    return summary.extend(  # fields of a structured array are strided: make them contiguous
        plan.chars(events["rank"]), np.ascontiguousarray(events["ts"]), np.ascontiguousarray(events["value"]),
        evaluate_at=None if evaluate_at is None else [evaluate_at],
    )


def check_checkpoint(path: str | Path) -> None:
    """Refuse a checkpoint written by suse's earlier streaming implementation
    (``applyInPandasWithState``): Spark would start the new operator on it without a word and
    ignore the saved summaries. Local paths only; other file systems are not inspected."""
    text = str(path)
    if text.startswith("file:"):
        text = text[len("file:"):]
    elif "://" in text:
        return
    for meta in sorted(Path(text).glob("state/*/_metadata/metadata")):
        try:
            info = json.loads(meta.read_text().splitlines()[1])
        except (OSError, IndexError, ValueError):
            continue
        if info.get("operatorInfo", {}).get("operatorName") == "applyInPandasWithState":
            raise StateError(
                f"checkpoint {path} was written by an earlier suse, whose streaming state "
                f"(applyInPandasWithState) this version cannot resume: it keeps state with "
                f"transformWithStateInPandas. Start again with a new checkpoint (and output) "
                f"location; the stream is then re-read from the start of its input"
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
