"""Standard MATCH_RECOGNIZE over a streaming DataFrame (append mode): each partition's rows wait
in Spark state (``transformWithStateInPandas``, as ``aggregate_stream`` keeps its summaries)
until the watermark has passed them, and a match is emitted once it is decided: once no row
still to come could change it or make another one preferred (docs/SPARK.md, "Streaming").

Per partition the state holds the buffered rows (Arrow IPC), the partition row number of the
first of them, and the matcher's cursor (next start row, rows covered so far, matches so far).
A micro-batch adds the partition's new rows and sorts the buffer by ORDER BY; the rows older
than Spark's watermark are final, and :func:`suse.recognize.runner.advance` matches over them
up to the first start row whose match is not decided yet. The rows before that start (less
the rows PREV looks back to) are dropped. A row that arrives behind the watermark is dropped
too (its place in the order is already decided): their number reaches the user as the observed
metric ``late_rows`` of :data:`METRICS` in the query's progress (``df.observe``), through one
extra row per micro-batch and partition that :func:`observe_late_rows` counts and removes. An event-time timer wakes a partition that receives
nothing when the watermark passes its next buffered row (or, with WITHIN, the end of the time
its pending match may still take), so its matches come out without new rows.
"""
from __future__ import annotations

import logging
from typing import Any, Iterator, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from suse.errors import StateError
from suse.recognize.matcher import Cursor
from suse.recognize.runner import Plan, Resume, advance, error_batch, late_batch

TIME = "_suse_t"  # the event time in microseconds, computed by Spark
ALL = "_suse_all"  # the single group key when there is no PARTITION BY
STATE_NAME = "suse_recognize_v1"
log = logging.getLogger(__name__)


METRICS = "suse_match_recognize"  # the name of the observed metrics in StreamingQueryProgress.observedMetrics


def observe_late_rows(out: Any):
    """``out`` (the processor's rows) without its late-row counts, which become the observed
    metric ``late_rows`` (0 when none came late) of the query's progress."""
    from pyspark.sql import functions as F

    from suse.recognize.runner import KIND, KIND_LATE, LATE

    counted = out.observe(METRICS, F.coalesce(F.sum(F.col(LATE)), F.lit(0)).cast("long").alias("late_rows"))
    return counted.where(F.col(KIND) != KIND_LATE)


def _state_schema():
    from pyspark.sql import types as T

    return T.StructType([
        T.StructField("rows", T.BinaryType()), T.StructField("base", T.LongType()), T.StructField("pos", T.LongType()),
        T.StructField("covered", T.LongType()), T.StructField("number", T.LongType()),
        T.StructField("statement", T.StringType()),
    ])


def recognize_stream(prepared: Any, plan: Plan, out_schema: Any, order: Sequence[tuple[str, bool, bool]], text: str):
    """The output rows of ``plan`` over the streaming DataFrame ``prepared`` (the source columns,
    the helper columns and ``_suse_t``), in ``out_schema``."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    from suse.spark.streaming.aggregate import use_rocksdb

    use_rocksdb(prepared.sparkSession)
    timezone = prepared.sparkSession.conf.get("spark.sql.session.timeZone", "UTC")
    frame = prepared if plan.keys else prepared.withColumn(ALL, F.lit(0))
    keys = list(plan.keys) or [ALL]
    processor = _Recognizer(plan, frame.columns, to_arrow_schema(frame.schema, timezone=timezone), order, text, timezone)
    return frame.groupBy(*[F.col(f"`{k}`") for k in keys]).transformWithStateInPandas(
        processor, out_schema, "Append", "EventTime")


class _Recognizer(StatefulProcessor):
    def __init__(self, plan: Plan, columns: Sequence[str], schema: pa.Schema, order: Sequence[tuple[str, bool, bool]],
                 text: str, timezone: str) -> None:
        self.plan, self.columns, self.schema, self.order, self.text = plan, list(columns), schema, list(order), text
        self.timezone = timezone

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState(STATE_NAME, _state_schema())

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        # pyspark 4.3 hands the columns over as _1, _2, ...: name them by position
        yield from self.step(key, [f.set_axis(self.columns, axis=1) for f in rows], timerValues.getCurrentWatermarkInMs())

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        yield from self.step(key, [], timerValues.getCurrentWatermarkInMs())

    def step(self, key: Any, frames: list[pd.DataFrame], watermark_ms: int) -> Iterator[pd.DataFrame]:
        watermark = watermark_ms * 1000 if watermark_ms > 0 else None  # Spark starts at 0: none yet
        new = self.arrow(frames)
        try:
            table, base, cursor = self.load()
        except StateError as exc:
            yield self.failed(new, exc)
            return
        if new.num_rows:
            times = new.column(TIME)
            if times.null_count:
                yield self.failed(new, StateError(f"the ORDER BY column {self.order[0][0]} is NULL in a streaming row: "
                                                  "such a row has no place in event-time order; filter it out"))
                return
            if watermark is not None:  # late: behind the watermark, where the order is already final
                on_time = pc.greater_equal(times, pa.scalar(watermark, pa.int64()))
                late = new.num_rows - int(pc.sum(on_time).as_py() or 0)
                if late:  # counted into the query's observed metric (see recognize_stream)
                    log.warning("suse MATCH_RECOGNIZE: %d rows behind the watermark dropped (partition %s)", late, key)
                    yield late_batch(self.plan, late).to_pandas()
                new = new.filter(on_time)
            table = _sorted(new if table is None else pa.concat_tables([table, new]), self.order)
        if table is None or not table.num_rows:
            return
        final = 0 if watermark is None else int(pc.sum(pc.less(table.column(TIME), watermark)).as_py() or 0)
        local = Cursor(cursor.pos - base, cursor.covered - base, cursor.number)
        resume = Resume(local, base)
        batches, drop = advance(self.plan, table, final, resume, watermark)
        for b in batches:
            yield b.to_pandas()
        cursor = Cursor(base + local.pos, base + local.covered, local.number)
        table, base = table.slice(drop), base + drop
        self.save(table, base, cursor)
        self.arm(table, final - drop, local.pos - drop, watermark_ms)

    def arm(self, table: pa.Table, final: int, start: int, watermark_ms: int) -> None:
        """One timer: when the watermark passes the first buffered row not final yet, or with
        WITHIN, when it passes the time bound of the match pending at ``start``."""
        for t in list(self.handle.listTimers()):
            self.handle.deleteTimer(t)
        times = table.column(TIME)
        due = []
        if final < table.num_rows:
            due.append(times[final].as_py() // 1000 + 1)  # the row is final once watermark_ms * 1000 > its time
        if self.plan.within and start < final:
            due.append(-(-(times[start].as_py() + self.plan.within[1]) // 1000))
        if due:
            self.handle.registerTimer(max(min(due), watermark_ms + 1))

    def load(self) -> tuple[pa.Table | None, int, Cursor]:
        if not self.state.exists():
            return None, 0, Cursor()
        blob, base, pos, covered, number, statement = tuple(self.state.get())
        if statement != self.text:
            raise StateError("the checkpoint's state was written by another MATCH_RECOGNIZE statement; "
                             "start the changed statement with a new checkpoint location")
        return pa.ipc.open_stream(bytes(blob)).read_all(), base, Cursor(pos, covered, number)

    def save(self, table: pa.Table, base: int, cursor: Cursor) -> None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        self.state.update((sink.getvalue().to_pybytes(), base, cursor.pos, cursor.covered, cursor.number, self.text))

    def arrow(self, frames: list[pd.DataFrame]) -> pa.Table:
        """The micro-batch's rows in the buffer's Arrow schema (Spark hands timestamps over as
        naive local times of the session: localized here, so they go back unchanged)."""
        if not frames:
            return self.schema.empty_table()
        pdf = pd.concat(frames, ignore_index=True)
        for name in pdf.columns:
            if pd.api.types.is_datetime64_dtype(pdf[name]) and getattr(pdf[name].dt, "tz", None) is None:
                pdf[name] = pdf[name].dt.tz_localize(self.timezone)
        return pa.Table.from_pandas(pdf, schema=self.schema, preserve_index=False)

    def failed(self, table: pa.Table, exc: Exception) -> pd.DataFrame:
        return error_batch(self.plan, table, exc).to_pandas()

    def close(self) -> None:
        pass


def _sorted(table: pa.Table, order: Sequence[tuple[str, bool, bool]]) -> pa.Table:
    """``table`` in ORDER BY order, NULLS FIRST or LAST per column."""
    keys, extra = [], {}
    for i, (name, ascending, nulls_first) in enumerate(order):
        column = next(c for c in table.column_names if c.lower() == name.lower())
        flag = f"_suse_null{i}"
        extra[flag] = pc.is_null(table.column(column))
        keys += [(flag, "descending" if nulls_first else "ascending"), (column, "ascending" if ascending else "descending")]
    keyed = table
    for flag, values in extra.items():
        keyed = keyed.append_column(flag, values)
    return table.take(pc.sort_indices(keyed, sort_keys=keys))
