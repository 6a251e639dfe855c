"""A streaming job (``mode = "streaming"``) under the live page: Spark Structured Streaming
watches the job's directory, and every micro-batch of classified events is handed to the
page's process through ``foreachBatch``.

Each partition advances exactly as in ``suse run``'s streaming job: the same
``suse.spark.streaming.aggregate.advance`` runs on the same state tuple (summary, buffer of
out-of-order events, watermark, late count), here kept in the page's memory instead of
Spark's state store. So lateness, late-event counting and the estimate over buffered
events are the streaming job's own. The page's checkpoint is written after every
micro-batch, before Spark commits it; a micro-batch that Spark replays after a restart is
recognised by its id and skipped, so each event is counted once.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

import pandas as pd

from suse.dashboard.checkpoint import (
    VERSION,
    SavedStream,
    check_job,
    check_stream,
    fingerprint,
    invalid,
    parse_state,
    read_blob,
    read_state,
    write_state,
)
from suse.dashboard.live import MAX_EVALUATIONS, Live, LiveQuery, Partition, Settings, _jsonable
from suse.errors import InputError
from suse.spark.jobs.config import JobConfig


def check_streaming_job(cfg: JobConfig) -> None:
    # The same refusals, in the same words, as `suse run` (suse.spark.jobs.run._stream).
    q = cfg.queries[0]
    if cfg.evaluate.at != "end" or cfg.evaluate.exact:
        raise InputError("evaluate: a streaming job reports every changed partition once per micro-batch; "
                         "leave evaluate.at = 'end' and evaluate.exact = false")
    if q.replicate:
        raise InputError("query.replicate is only supported by batch jobs")
    if cfg.summary.probabilities == "estimate":
        raise InputError("summary.probabilities = 'estimate' needs the whole input: use a batch job, "
                         "or give the probabilities, or 'online'")


class _State:
    """The little of pyspark's GroupState that ``advance`` uses."""

    def __init__(self, value: Optional[tuple] = None):
        self.value = value

    @property
    def exists(self) -> bool:
        return self.value is not None

    @property
    def get(self) -> tuple:
        return self.value

    def update(self, value: tuple) -> None:
        self.value = value


class StreamQuery(LiveQuery):
    def __init__(self, label: str, plans: dict[str, Any], lateness: int, settings: Settings, keys: list[str]):
        plan = next(iter(plans.values()))
        self.plans = plans
        self.lateness = lateness
        self.key_names = keys
        self.settings = settings
        self.query = plan.query()
        self.events = SimpleNamespace(label=label, spec=plan.spec, keys=[])
        self.index: dict[tuple, int] = {}
        self.parts = {}
        self.pos = 0  # events received (late ones included)
        self.late = 0

    def new_partition(self) -> Partition:
        part = Partition({}, None)
        part.states = {name: _State() for name in self.plans}  # type: ignore[attr-defined]
        part.rows = {}  # type: ignore[attr-defined]
        return part

    def ingest(self, pdf: pd.DataFrame) -> int:
        """One micro-batch of classified events; returns the largest timestamp seen."""
        from suse.spark.streaming.aggregate import advance

        keys = self.key_names
        groups = pdf.groupby(keys, dropna=False, sort=False) if keys else [((), pdf)]
        for key, group in groups:
            key = tuple(None if _isnull(k) else _jsonable(k) for k in (key if isinstance(key, tuple) else (key,)))
            key = key if keys else ()
            pid = self.index.get(key)
            if pid is None:
                pid = self.index[key] = len(self.events.keys)
                self.events.keys.append(key)
                self.parts[pid] = self.new_partition()
            part = self.parts[pid]
            for name, plan in self.plans.items():
                row = advance(plan, self.lateness, key, keys, iter([group]), part.states[name]).iloc[0]
                part.rows[name] = {
                    "count": row["count"], "events": int(row["events"]), "late": int(row["late_events"]),
                    "pending": int(row["pending_events"]), "max_ts": int(row["evaluated_at"]),
                    "elements": [(e["char"], int(e["timestamp"]), int(e["value"])) for e in row["elements"]],
                }
            part.dirty = True
        self.pos += len(pdf)
        self.late = sum(next(iter(p.rows.values()))["late"] for p in self.parts.values())
        return max((next(iter(p.rows.values()))["max_ts"] for p in self.parts.values()), default=0)

    def numbers(self, part: Partition):
        rows = part.rows  # type: ignore[attr-defined]
        first = next(iter(rows.values()))
        return first["events"], {n: r["count"] for n, r in rows.items()}, None, {n: r["elements"] for n, r in rows.items()}


def _isnull(v) -> bool:
    try:
        return v is None or bool(v != v)
    except (TypeError, ValueError):
        return False


class StreamLive(Live):
    """The page over a watched directory: the clock is the largest timestamp seen."""

    def __init__(self, query: StreamQuery, settings: Settings, datetime_axis: bool, name: str):
        import threading

        self.name = name
        self.settings = settings
        self.queries = [query]
        self.datetime_axis = datetime_axis
        self.speed = 0.0
        self.first = self.last = None
        self.clock: float = 0.0
        self.evaluations: list[dict] = []
        self.keep = MAX_EVALUATIONS
        self.lock = threading.RLock()
        self.batches = 0
        self.last_batch = -1  # the id of the last micro-batch taken in

    @property
    def finished(self) -> bool:
        return False

    def advance(self, seconds: float) -> None:  # the stream moves by itself
        pass

    def take(self, batch_id: int, pdf: pd.DataFrame) -> bool:
        """A micro-batch from Spark; False if it was taken before (a replay after restart)."""
        with self.lock:
            if batch_id <= self.last_batch:
                return False
            if len(pdf):
                from suse.spark.events.rows import TS

                top = self.queries[0].ingest(pdf)
                self.clock = max(self.clock, float(top))
                low = int(pdf[TS].min())
                self.first = low if self.first is None else min(self.first, low)
                self.last = int(self.clock)
                self.batches += 1
            self.last_batch = batch_id
            return True

    def status(self) -> dict:
        with self.lock:
            sq = self.queries[0]
            return {
                "clock": int(self.clock) if sq.pos else None, "first": self.first, "last": self.last,
                "finished": False, "streaming": True, "speed": None, "fed": sq.pos, "total": None,
                "late": sq.late, "batches": self.batches, "evaluations": self.evaluation_count,
                "last_evaluation": self.evaluations[-1] if self.evaluations else None,
            }

    def meta(self) -> dict:
        return {**super().meta(), "streaming": True}


# --- checkpoint -------------------------------------------------------------------------------


def save(directory: Path, live: StreamLive, job: dict) -> None:
    with live.lock:
        sq = live.queries[0]
        blobs: dict[str, bytes] = {}
        parts = {}
        for pid, part in sq.parts.items():
            states = {}
            for name, st in part.states.items():
                summary, pending, *counters = st.value  # the state tuple of streaming.advance
                blobs[f"{name}/{pid}/summary"], blobs[f"{name}/{pid}/pending"] = summary, pending
                states[name] = counters
            parts[str(pid)] = {"states": states, "rows": part.rows, "fed": part.fed, "dirty": part.dirty,
                               "history": part.history, "elements": part.elements}
        state = {
            "version": VERSION, "fingerprint": fingerprint(job), "clock": live.clock, "first": live.first,
            "evaluations": live.evaluations, "batches": live.batches, "last_batch": live.last_batch,
            "pos": sq.pos, "late": sq.late, "keys": [list(k) for k in sq.events.keys], "parts": parts,
        }
        text = json.dumps(state)
    directory.mkdir(parents=True, exist_ok=True)
    write_state(directory, "stream-summaries.zip", blobs, "stream.json", text)


def load(directory: Path, live: StreamLive, job: dict) -> bool:
    """Restore a saved stream state; an edited or damaged one is a StateError naming the field."""
    import suse

    saved_state = read_state(directory, "stream.json", "stream-summaries.zip")
    if saved_state is None:
        return False
    raw, z = saved_state
    path = directory / "stream.json"
    with z:
        if not isinstance(raw, dict):
            raise invalid(path, "not a JSON object")
        check_job(directory, raw, job)
        state = parse_state(path, SavedStream, raw)
        check_stream(path, state, live.settings.strategies)
        with live.lock:
            sq = live.queries[0]
            live.clock, live.first = state.clock, state.first
            live.evaluations = [e.model_dump() for e in state.evaluations]
            live.last = int(live.clock)
            live.batches, live.last_batch = state.batches, state.last_batch
            sq.pos, sq.late = state.pos, state.late
            sq.events.keys = [tuple(k) for k in state.keys]
            sq.index = {k: i for i, k in enumerate(sq.events.keys)}
            for pid, p in state.parts.items():
                part = sq.parts[pid] = sq.new_partition()
                for name, counters in p.states.items():
                    blob = read_blob(path, z, f"{name}/{pid}/summary")
                    suse.Summary.from_bytes(blob)  # a damaged summary fails here, not in a micro-batch
                    part.states[name].value = (blob, read_blob(path, z, f"{name}/{pid}/pending"), *counters)
                part.rows = {n: {**r.model_dump(), "elements": [tuple(e) for e in r.elements]} for n, r in p.rows.items()}
                part.fed, part.dirty = p.fed, p.dirty
                part.history = [[eid, fed, counts, exact] for eid, fed, counts, exact in p.history]
                part.elements = {n: [tuple(e) for e in els] for n, els in p.elements.items()}
    return True


# --- running ----------------------------------------------------------------------------------


def start(cfg: JobConfig, settings: Settings, directory: Path, job: dict, fresh: bool, log, on_failure):
    """Start the Structured Streaming query feeding a new StreamLive; returns (live, query)."""
    from suse.spark.events.rows import RANK, TIE, TS, VALUE
    from suse.spark.jobs.run import load_input, spark_errors
    from suse.spark.prepare import prepare
    from suse.spark.session import get_session

    check_streaming_job(cfg)
    st, (q,) = cfg.streaming, cfg.queries
    assert st is not None  # the config validator guarantees it
    with spark_errors():
        spark = get_session(cfg.spark.master, cfg.spark.app_name, cfg.spark.options)
        src = load_input(spark, cfg, streaming=True)
        events, plan = prepare(src, cfg.spec(), streaming=True)
        lateness = 0 if st.lateness in (0, "0") else events.axis.span(st.lateness, "lateness")
    plans = {name: replace(plan, summary=replace(plan.summary, strategy=name)) for name in settings.strategies}
    for p in plans.values():
        p.new_summary()
    keys = list(events.keys)
    live = StreamLive(StreamQuery(q.label, plans, lateness, settings, keys), settings, events.axis.is_datetime, cfg.name)
    if not fresh:
        load(directory, live, job)
    else:
        import shutil

        shutil.rmtree(directory / "spark", ignore_errors=True)
        for name in ("stream.json", "stream-summaries.zip"):
            (directory / name).unlink(missing_ok=True)
    frame = events.frame if events.has_value else events.frame.withColumn(VALUE, _one())
    frame = frame.select(*[f"`{k}`" for k in keys], TS, RANK, TIE, VALUE)

    def handle(batch_df, batch_id: int) -> None:
        try:
            if batch_id <= live.last_batch:  # taken before the restart: skip, do not count twice
                return
            live.take(batch_id, batch_df.toPandas())
            save(directory, live, job)  # before Spark commits the micro-batch
        except BaseException as exc:
            on_failure(exc)
            raise

    trigger = "2 seconds" if st.trigger == "available_now" else st.trigger
    with spark_errors():
        query = (frame.writeStream.foreachBatch(handle)
                 .option("checkpointLocation", str((directory / "spark").resolve()))
                 .trigger(processingTime=trigger).start())
    log(f"{cfg.name}: watching {cfg.input.path} (micro-batches every {trigger})")
    return live, query


def _one():
    from pyspark.sql import functions as F

    return F.lit(1).cast("long")

