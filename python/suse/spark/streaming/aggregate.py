"""``aggregate_stream``: the same query over a streaming DataFrame, one summary per partition
kept in Spark state (``transformWithStateInPandas``: a value state holding the summary's saved
form (``Summary.to_bytes``, or a tagged pickle: suse.spark.streaming.engines), the buffer of
pending events and the counters; a processing-time timer drops the state of a
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

Configuration (docs/SPARK.md, "Changing the query of a running job"): a second value state
records the job's configuration (query, window, aggregate, policy, size, strategy,
probabilities, seed, characters, lateness). A partition whose state was written under another
configuration stops the job with an error naming what changed (``on_change="error"``), or is
migrated by replaying its retained elements and pending events into a summary of the new
configuration (``on_change="replay"``, logged, and flagged in the ``migrated`` column).
Never are two configurations mixed.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle
from typing_extensions import Unpack

import suse
from suse.errors import InputError, StateError
from suse.spark.events.rows import ATTRIBUTE, OP, RANK, TIE, TS, VALUE, quoted
from suse.spark.events.timing import duration_seconds
from suse.spark.events.triggers import parse_trigger
from suse.spark.prepare import prepare, prepare_multi, spark_frame
from suse.spark.runners.plan import APPROX_DDL, EXTREMA_DDL, RESULT_DDL, SUMMARY_COLUMNS, Plan, as_float
from suse.spark.streaming import engines
from suse.spark.streaming.due import advance_due, next_timer
from suse.spark.streaming.pending import PENDING, ingest
from suse.spec import JobSpec, StreamOptions, job_from_options

STATE_DDL = (
    "summary binary, pending binary, watermark long, max_ts long, late long, fed long, dropped long, corrupt long"
)
STREAM_DDL = (RESULT_DDL.replace(" events long,", " events long, late_events long, pending_events long,")
              + ", expired boolean, migrated boolean, rejected_retractions long")
_ALL = "_suse_all"  # the single group key when there is no partitioning
_OUTPUT = [  # STREAM_DDL's columns after the keys, in order
    "evaluated_at", "count", "sum", "avg", "count_double", "sum_double", "detected_count", "events",
    "late_events", "pending_events", "dropped_events", "corrupt_records", "elements", "expired", "migrated",
    "rejected_retractions",
]
#: STATE_DDL as a schema built by hand (no session is needed to parse it on an executor).
STATE_SCHEMA = T.StructType([
    T.StructField(name, T.BinaryType() if kind == "binary" else T.LongType())
    for name, kind in (part.split() for part in STATE_DDL.split(", "))
])
_PROVIDER = "spark.sql.streaming.stateStore.providerClass"
_ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def use_rocksdb(spark: Any) -> None:
    """transformWithState keeps its state only in RocksDB; the option is read when a query
    starts (and then recorded in its checkpoint), so it is set for the session beforehand."""
    conf = spark.conf
    if conf.get(_PROVIDER, None) != _ROCKSDB:
        conf.set(_PROVIDER, _ROCKSDB)
STATE_NAME = "suse_summary_v1"  # the state variable; a new layout gets a new name
CONFIG_NAME = "suse_config_v1"  # the configuration the state was written under (JSON)
CONFIG_SCHEMA = T.StructType([T.StructField("config", T.StringType())])
RETRACTIONS_NAME = "suse_retractions_v1"  # retractions that found no pending event to take back
RETRACTIONS_SCHEMA = T.StructType([T.StructField("rejected", T.LongType())])
ON_CHANGE = ("error", "replay")
log = logging.getLogger(__name__)
DUE_NAME = "suse_due_v1"  # with evaluate = {every}: the partition's next due time
DUE_SCHEMA = T.StructType([T.StructField("next_due", T.LongType())])
_EVENT_TIME = "_suse_event_time"  # the column Spark's watermark runs on (due-time mode)


def aggregate_stream(
    df: DataFrame,
    query: str | None = None,
    window: str | int | dt.timedelta | None = None,
    characters: Mapping[str, str] | str | None = None,
    timestamp: str | None = None,
    partition_by: Sequence[str] | str = (),
    value: str | None = None,
    **options: Unpack[StreamOptions],
) -> DataFrame:
    """A streaming DataFrame of per-partition estimates (the batch columns, plus
    ``late_events``, ``pending_events`` and ``expired``), one row per partition per
    micro-batch in which it received events. Write it with an append-mode sink and a
    checkpoint location.

    ``idle_timeout`` (a duration of processing time, e.g. "1 hour"): a partition that receives
    no events for that long has its buffered events fed, one last row emitted with
    ``expired = true``, and its state dropped; later events start a new summary.

    ``on_change``: what a restart from a checkpoint written under another configuration does
    with a partition's state: ``"error"`` (the default) stops with an error naming what
    changed; ``"replay"`` migrates it (retained elements and pending events replayed into a
    summary of the new configuration, logged; the row says ``migrated = true``).

    ``op``: a column with "+" (an event) or "-" (a retraction: it takes back one pending event
    of the partition with the same character, timestamp and value). A retraction that finds
    none (its event is already final, older than the watermark, or was never seen) changes
    nothing and is counted in ``rejected_retractions``.

    ``queries={name: regex or {...}}`` runs a query set in one streaming query, as
    ``aggregate`` does: each query keeps its own state per partition (summary, buffer,
    watermark), fed the events of its own letters, and the output has a ``query`` column.

    ``evaluate``: None (or "end") gives the row per micro-batch above. ``{"every": "30 days"}``
    (a duration, or an integer for integer timestamps) instead gives one row per partition
    at every multiple of the period from its first event on, once the watermark (its own or
    Spark's global one, ``lateness`` behind the newest event) has passed it, also when the
    partition received nothing: event-time timers (suse.spark.streaming.due)."""
    spark_frame(df, "aggregate_stream")
    if not df.isStreaming:
        raise InputError("aggregate_stream needs a streaming DataFrame (spark.readStream); use aggregate for batch data")
    given = {"characters": characters, "timestamp": timestamp, "partition_by": partition_by, "value": value,
             **options}
    stream_only = {k: given.pop(k) for k in ("idle_timeout", "on_change") if k in given}
    job = job_from_options("aggregate_stream", query, window, {"evaluate": None, **given}, StreamOptions)
    return aggregate_stream_job(df, job, **stream_only)


def aggregate_stream_job(df: DataFrame, job: JobSpec, idle_timeout: str | dt.timedelta | None = None,
                         on_change: str = "error") -> DataFrame:
    """A whole job over a streaming DataFrame (what `aggregate_stream`'s arguments describe)."""
    if on_change not in ON_CHANGE:
        raise InputError(f"on_change must be one of {', '.join(ON_CHANGE)}; got {on_change!r}")
    multi = job.query_set
    for q in job.queries:
        where = f"query {q.label!r}: " if multi else ""
        if isinstance(job.summary_for(q).probabilities, str):
            raise InputError(f"{where}streaming jobs take probabilities as a mapping or None (estimated online)")
        if multi and q.evaluate is not None:
            raise InputError(f"query {q.label!r}: a streaming query takes no 'evaluate'")
    evaluate = job.output.evaluate
    if multi and evaluate not in (None, "end"):
        raise InputError("evaluate = {every = ...} is for single queries; a query set reports once per micro-batch")
    # the per-micro-batch rows, or due times (below): not a batch trigger
    job = dataclasses.replace(job, output=dataclasses.replace(job.output, evaluate="end"))
    if multi:
        events, plan = prepare_multi(df, job, streaming=True)
    else:
        events, plan = prepare(df, job, streaming=True)
    lateness, characters = job.summary.lateness, job.input.characters
    late_units = 0 if lateness in (0, "0") else events.axis.span(lateness, "lateness")
    if multi:  # per query, named: a changed set is a changed configuration too
        config = [{"name": name, **fingerprint(p, late_units, characters)} for name, p, _ in plan.plans]
    else:
        config = fingerprint(plan, late_units, characters)
    idle_ms = None
    if idle_timeout is not None:
        idle_ms = duration_seconds(idle_timeout) * 1000
        if idle_ms <= 0:
            raise InputError("idle_timeout must be a positive duration such as '1 hour'")
    period = None if multi else _period(evaluate, events.axis, plan.window)
    if period and events.has_op:
        raise InputError("an op column (retractions) and evaluate = {every = ...} cannot be combined yet")
    if period and idle_ms:
        raise InputError(
            "idle_timeout and evaluate = {every = ...} cannot be combined: a Spark stateful operator "
            "runs its timers on one clock, processing time (idle) or event time (due evaluations)"
        )
    keys = list(events.keys)
    frame = events.frame if events.has_value else events.frame.withColumn(VALUE, F.lit(1).cast("long"))
    if not keys:
        frame = frame.withColumn(_ALL, F.lit(0))
    # min/max, then count_by_missing last, as in batch (a set: when any query has them)
    ddl = STREAM_DDL + (", " + EXTREMA_DDL if plan.extrema else "") + (", " + APPROX_DDL if plan.max_missing else "")
    summarised = getattr(plan, "summarised", True)  # a query set runs summaries
    results = [f for f in T._parse_datatype_string(ddl).fields if summarised or f.name not in SUMMARY_COLUMNS]
    schema = T.StructType(
        [events.frame.schema[k] for k in keys] + ([T.StructField("query", T.StringType())] if multi else []) + results
    )

    use_rocksdb(df.sparkSession)
    group = keys or [_ALL]
    columns = [*[quoted(k) for k in group], TS, RANK, TIE, VALUE, *([OP] if events.has_op else []),
               *_attribute_columns(plan)]
    scale = 1  # the order _Processor reads ^
    if period:
        # Spark's watermark drives the timers; it runs on a timestamp column, in milliseconds.
        scale = 1000 if events.axis.is_datetime else 1
        unit = "seconds" if events.axis.is_datetime else "milliseconds"  # integers count as ms
        stamp = F.timestamp_seconds(TS) if events.axis.is_datetime else F.timestamp_millis(TS)
        frame = frame.withColumn(_EVENT_TIME, stamp).withWatermark(_EVENT_TIME, f"{late_units} {unit}")
        # ...and the column is then left out: the operator would silently drop rows at or below
        # the previous batch's watermark, while suse counts late events itself (late_events).
    frame = _exact_attributes(frame.select(*columns), plan)
    out = frame.groupBy(*[quoted(k) for k in group]).transformWithStateInPandas(
        _MultiProcessor(plan, late_units, keys, idle_ms, config, on_change, events.has_op) if multi
        else _Processor(plan, late_units, keys, idle_ms, config, on_change, events.has_op, period, scale),
        schema, "Append", "EventTime" if period else "ProcessingTime" if idle_ms else "None",
    )
    if events.axis.is_datetime:
        out = out.withColumn("evaluated_at", F.timestamp_seconds("evaluated_at"))
    return out


def _attribute_columns(plan: Any) -> list[str]:
    """The attribute columns a single query's conditions read (`where`), after the others."""
    return [ATTRIBUTE.format(i) for i in range(len(getattr(plan, "attributes", ())))]


def _exact_attributes(frame: DataFrame, plan: Plan) -> DataFrame:
    """Attribute columns as pandas then carries them exactly, as the batch run reads them from
    Arrow: integers as decimals (pandas would turn an integer column with a NULL into floats,
    rounding beyond 2**53), 32-bit floats widened to doubles (Arrow's Python floats)."""
    for name in _attribute_columns(plan):
        kind = frame.schema[name].dataType
        if isinstance(kind, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            frame = frame.withColumn(name, F.col(name).cast(T.DecimalType(20, 0)))
        elif isinstance(kind, T.FloatType):
            frame = frame.withColumn(name, F.col(name).cast(T.DoubleType()))
    return frame


def _period(evaluate: Any, axis: Any, window: int) -> int | None:
    """The due-time period of ``evaluate`` in the time axis' unit, or None (per micro-batch)."""
    if evaluate is None or evaluate == "end":
        return None
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
        config: dict | None = None, on_change: str = "error", has_op: bool = False,
        period: int | None = None, scale: int = 1,
    ) -> None:
        self.plan, self.lateness, self.keys, self.idle_ms = plan, lateness, list(keys), idle_ms
        self.config, self.on_change, self.has_op = config, on_change, has_op
        self.period, self.scale = period, scale  # due-time period; engine units -> timer ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState(STATE_NAME, STATE_SCHEMA)
        self.saved_config = handle.getValueState(CONFIG_NAME, CONFIG_SCHEMA)
        self.retractions = handle.getValueState(RETRACTIONS_NAME, RETRACTIONS_SCHEMA)
        if self.period:
            self.due = handle.getValueState(DUE_NAME, DUE_SCHEMA)

    def _check(self, key) -> bool:
        """Bring the partition's state to this job's configuration; True when it was migrated."""
        return _reconciled(self.plan, self.config, self.on_change, key, self.state, self.saved_config)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        # pyspark 4.3 hands the value columns over as _1, _2, ...: name them by position
        names = [*(self.keys or [_ALL]), TS, RANK, TIE, VALUE, *([OP] if self.has_op else []),
                 *_attribute_columns(self.plan)]
        rows = (f.set_axis(names, axis=1) for f in rows)
        migrated = self._check(key)
        if self.period:
            yield from self._due(key, rows, timerValues, migrated)
            return
        row = advance(self.plan, self.lateness, key if self.keys else (), self.keys, rows, _State(self.state),
                      retractions=_State(self.retractions))
        row["migrated"] = migrated
        yield row
        if self.idle_ms:  # one timer per partition, pushed back by every batch with events
            for t in list(self.handle.listTimers()):
                self.handle.deleteTimer(t)
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + self.idle_ms)

    def _due(self, key, rows, timerValues, migrated: bool = False) -> Iterator[pd.DataFrame]:
        """Rows at the due times the watermark has passed; then a timer at the next one."""
        ms = timerValues.getCurrentWatermarkInMs()
        known = ms // self.scale if ms > 0 else None  # Spark starts at 0: no watermark yet
        state, due = _State(self.state), _State(self.due)
        out = advance_due(self.plan, self.lateness, self.period, key if self.keys else (), self.keys, rows,
                          state, due, known, output_columns(self.plan))
        if len(out):
            out["migrated"] = migrated
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
            yield from self._due(key, iter(()), timerValues, self._check(key))
            return
        state = _State(self.state)
        migrated = self._check(key)
        # Idle: nothing can come in order any more, so the buffered events are final.
        row = advance(self.plan, self.lateness, key if self.keys else (), self.keys, iter(()), state, flush=True,
                      retractions=_State(self.retractions))
        row["expired"] = True
        row["migrated"] = migrated
        self.state.clear()
        self.saved_config.clear()
        self.retractions.clear()
        yield row

    def close(self) -> None:
        pass


class _MultiProcessor(_Processor):
    """A query set: per query its own value state, fed the rows of its own characters (rows
    that are counted, not fed, go to every query); one idle timer for the partition."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        n = len(self.plan.plans)
        self.states = [handle.getValueState(f"{STATE_NAME}_{i}", STATE_SCHEMA) for i in range(n)]
        self.saved_configs = [handle.getValueState(f"{CONFIG_NAME}_{i}", CONFIG_SCHEMA) for i in range(n)]
        # per query: the retractions that found no pending event (only with an op column)
        self.retractions = [handle.getValueState(f"{RETRACTIONS_NAME}_{i}", RETRACTIONS_SCHEMA)
                            for i in range(n)] if self.has_op else [None] * n

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        names = [*(self.keys or [_ALL]), TS, RANK, TIE, VALUE, *([OP] if self.has_op else [])]
        frames = [f.set_axis(names, axis=1) for f in rows]
        k = key if self.keys else ()
        for i, ((name, plan, allowed), value) in enumerate(zip(self.plan.plans, self.states)):
            mine = [f[f[RANK].isin(allowed) | (f[RANK] < 0)] for f in frames]
            if sum(len(f) for f in mine):  # a query without rows here emits nothing, as alone
                config = None if self.config is None else self.config[i]
                migrated = _reconciled(plan, config, self.on_change, k, value, self.saved_configs[i])
                retracted = self.retractions[i]
                row = advance(plan, self.lateness, k, self.keys, iter(mine), _State(value),
                              retractions=None if retracted is None else _State(retracted))
                row["migrated"] = migrated
                yield _named(row, name, self.keys, _extra_columns(self.plan))
        if self.idle_ms:
            for t in list(self.handle.listTimers()):
                self.handle.deleteTimer(t)
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + self.idle_ms)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        k = key if self.keys else ()
        for (name, plan, _), value, saved in zip(self.plan.plans, self.states, self.saved_configs):
            if value.exists():
                row = advance(plan, self.lateness, k, self.keys, iter(()), _State(value), flush=True)
                row["expired"] = True
                value.clear()
                saved.clear()
                yield _named(row, name, self.keys, _extra_columns(self.plan))


def _reconciled(plan: Plan, config: dict | None, on_change: str, key: Any, value: Any, saved_config: Any) -> bool:
    """Compare the state a partition holds with the job's configuration (recorded beside it);
    migrate or refuse on a difference (``reconcile``). True when migrated."""
    if config is None:
        return False
    migrated = False
    if value.exists():
        saved = json.loads(saved_config.get()[0]) if saved_config.exists() else None
        migrated = reconcile(plan, config, saved, on_change, key, _State(value))
    saved_config.update((json.dumps(config),))
    return migrated


def _named(row: pd.DataFrame, name: str, keys: Sequence[str], extra: Sequence[str] = ()) -> pd.DataFrame:
    """A query's row in the set's columns: ``query`` after the keys, and the set's optional
    columns (``extra``) NULL where this query has none."""
    row.insert(len(keys), "query", name)
    for column in extra:
        if column not in row:
            row[column] = pd.Series([None] * len(row), dtype=object)
    return row[[*keys, "query", *_OUTPUT, *extra]]


def advance(
    plan: Plan, lateness: int, key: tuple, keys: Sequence[str], batches: Iterator[pd.DataFrame], state: Any,
    flush: bool = False, retractions: Any = None,
) -> pd.DataFrame:
    """One micro-batch of one partition: update the state, return the partition's new row.
    ``flush``: feed every buffered event (the partition is being dropped). ``retractions``: the
    state counting rejected retractions (rows of the ``op`` column with "-")."""
    p = ingest(plan, lateness, key, batches, state)
    engine, pending, attributes, watermark, max_ts = p.engine, p.pending, p.attributes, p.watermark, p.max_ts
    late, fed, dropped, corrupt = p.late, p.fed, p.dropped, p.corrupt
    kept, rejected = _retract(pending, p.minus)
    pending, attributes = pending[kept], attributes[kept]
    if retractions is not None and (rejected or retractions.exists):
        rejected += retractions.get[0] if retractions.exists else 0
        retractions.update((rejected,))
    ready = int(np.searchsorted(pending["ts"], watermark, side="left")) if watermark is not None else 0
    if flush:
        ready = len(pending)
    if ready:
        engines.feed(plan, engine, pending[:ready], attributes[:ready])
        fed += ready
    pending, attributes = pending[ready:], attributes[ready:]
    blob = engines.dump(plan, engine, attributes)
    state.update((blob, pending.tobytes(), watermark, max_ts, late, fed, dropped, corrupt))

    row = {k: [v] for k, v in zip(keys, key)}
    if max_ts is None:  # only dropped or corrupt rows so far: report their counts
        row.update(evaluated_at=[None], count=["0"], sum=["0"], avg=[None], count_double=[0.0], sum_double=[0.0],
                   detected_count=["0"], elements=[[]], min=[None], max=[None])
    else:
        estimate, _ = engines.load(plan, blob, len(pending))  # a copy: buffered events are provisional
        (ev,) = engines.feed(plan, estimate, pending, attributes, evaluate_at=[max_ts])
        row.update(
            evaluated_at=[ev.timestamp], count=[str(ev.count)], sum=[str(ev.sum)],
            avg=[ev.sum / ev.count if ev.count else None], count_double=[as_float(ev.count)],
            sum_double=[as_float(ev.sum)], min=[ev.min], max=[ev.max],
        )
        if plan.summarised:
            row.update(detected_count=[str(ev.detected_count)],
                       elements=[[{"char": c, "timestamp": t, "value": v} for c, t, v, *_ in estimate.elements()]])
        if plan.max_missing:
            row.update(count_by_missing=[[str(c) for c in ev.count_by_missing]])
    row.update(events=[fed + len(pending)], late_events=[late], pending_events=[len(pending)],
               dropped_events=[dropped], corrupt_records=[corrupt], expired=[False], migrated=[False],
               rejected_retractions=[rejected])
    if plan.max_missing and "count_by_missing" not in row:
        row["count_by_missing"] = [["0"] * (plan.max_missing + 1)]
    return pd.DataFrame(row)[[*keys, *output_columns(plan)]]


def output_columns(plan: Plan) -> list[str]:
    """A single query's columns after the keys: _OUTPUT without a summary's columns when the
    exact engine counts (as in batch), then the optional ones."""
    return [c for c in _OUTPUT if plan.summarised or c not in SUMMARY_COLUMNS] + _extra_columns(plan)


def _extra_columns(plan: Plan) -> list[str]:
    """The optional output columns after _OUTPUT, as in batch: min/max, then count_by_missing."""
    return (["min", "max"] if plan.extrema else []) + (["count_by_missing"] if plan.max_missing else [])


def _retract(pending: np.ndarray, minus: np.ndarray) -> tuple[np.ndarray, int]:
    """Which of `pending` stay (a mask) when each retraction takes back one event (same
    timestamp, character and value; the last in order), and how many retractions found none."""
    rejected = 0
    kept = np.ones(len(pending), dtype=bool)
    for r in minus:
        same = np.flatnonzero(kept & (pending["ts"] == r["ts"]) & (pending["rank"] == r["rank"])
                              & (pending["value"] == r["value"]))
        if len(same):
            kept[same[-1]] = False
        else:
            rejected += 1
    return kept, rejected


def fingerprint(plan: Plan, lateness: int, characters: Any) -> dict:
    """What a partition's state depends on; compared on every restart."""
    q, s = plan.spec, plan.summary
    return {
        "query": q.regex, "window": plan.window, "aggregate": q.aggregate, "policy": q.policy,
        "summary_size": s.size, "strategy": s.strategy,
        "probabilities": None if s.probabilities is None else [list(p) for p in s.probabilities],
        "seed": s.seed, "characters": characters if isinstance(characters, str) else dict(characters),
        "order": plan.order, "lateness": lateness,
        # Newer settings, compared only when the saved state records them.
        "of": plan.query().of, "max_missing": q.max_missing,
        "engine": plan.engine, "where": None if q.where is None else dict(q.where),
    }


def _summary_config(summary: suse.Summary) -> dict:
    """The part of a fingerprint a saved summary itself records (for state written before the
    configuration was; probabilities are left out: the job may have estimated them)."""
    q = summary.query
    return {"query": q.regex, "window": q.window, "aggregate": q.aggregate, "policy": q.policy,
            "summary_size": summary.size, "strategy": summary.strategy, "seed": summary.seed}


def _pickled_summary(config: dict) -> bool:
    """Whether a configuration's summary is a ``WhereSummary`` (kept pickled): with
    conditions, or with a negation at the end of the pattern."""
    if config["engine"] != "summary":
        return False
    try:
        return config["where"] is not None or suse.Query(config.get("query", ""), 1)._closing is not None
    except suse.QueryError:
        return False


def reconcile(plan: Plan, config: dict, saved: dict | None, on_change: str, key: Any, state: Any) -> bool:
    """Compare a partition's saved configuration with the job's; on a difference raise
    (``on_change="error"``) or migrate the state by replay. True when migrated."""
    blob, pending, *rest = state.get
    if saved is None:  # state of a version that kept no configuration: always a summary's
        saved = {**config, **_summary_config(suse.Summary.from_bytes(bytes(blob))), "engine": "summary"}
    saved = {"engine": "summary", "where": None, **saved}  # before these were recorded: a summary's
    changed = [k for k in config if k in saved and saved[k] != config[k]]
    if not changed:
        return False
    what = ", ".join(f"{k} {saved[k]!r} (now {config[k]!r})" for k in changed)
    if on_change != "replay":
        raise StateError(
            f"partition {tuple(key)}: the checkpoint's state was written with another configuration: {what}. "
            "Restart with on_change=\"replay\" to migrate the state to the new configuration, or use a new "
            "checkpoint location")
    unmigrated = None
    if "exact" in (saved["engine"], config["engine"]):
        unmigrated = "the exact engine needs every event of the window, which no state keeps"
    elif _pickled_summary(saved) or _pickled_summary(config):
        unmigrated = ("not yet those of a summary with where or a negation at the end of the pattern (their "
                      "attributes, their absence)")
    if unmigrated:
        raise StateError(
            f"partition {tuple(key)}: the checkpoint's state was written with another configuration: {what}. "
            f"on_change=\"replay\" replays a summary's retained elements, but {unmigrated}: use a new checkpoint "
            "location (the stream is then re-read)")
    summary = suse.Summary.from_bytes(bytes(blob))
    fresh = plan.new_summary()
    kept = [e for e in summary.elements() if e[0] in fresh.query.alphabet]
    if kept:
        fresh.extend(events=kept)
    # pending events carry ranks of the old character order: translate them, drop the unknown
    old_order, new_order = saved.get("order", plan.order), plan.order
    events = np.frombuffer(bytes(pending), dtype=PENDING).copy()
    ranks = np.array([new_order.find(old_order[r]) for r in events["rank"]], dtype=np.int32)
    events["rank"] = ranks
    keep = ranks >= 0
    events = events[keep]
    events = events[np.lexsort((events["tie"], events["rank"], events["ts"]))]
    log.warning("suse: partition %s migrated to a new configuration (%s): %d retained elements replayed, %d dropped; "
                "%d pending events kept, %d dropped", tuple(key), what, len(kept), len(summary) - len(kept),
                int(keep.sum()), int((~keep).sum()))
    state.update((fresh.to_bytes(), events.tobytes(), *rest))
    return True


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
