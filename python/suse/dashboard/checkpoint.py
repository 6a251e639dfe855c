"""Checkpoint of a live page, so that a second start resumes where the first stopped.

A checkpoint directory holds
* ``events.npz`` + ``events.json``: the classified events of every query (written once, so a
  resumed page needs no Spark) and the fingerprint of the job they came from;
* ``state.json``: stream clock, evaluations, each partition's history and counters;
* ``summaries.zip``: every summary, serialised with ``Summary.to_bytes()``.

``suse.Exact`` has no serialised form; the exact engines are rebuilt on resume by feeding
them the already-played events again (the exact engine runs millions of events a second).
Files are written to a temporary name and renamed, so a crash mid-write leaves the previous
checkpoint intact.
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Optional, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, NonNegativeInt, StrictBool, StrictInt, StrictStr, ValidationError

import suse
from suse.dashboard.live import Live, QueryEvents
from suse.errors import InputError, StateError
from suse.spec import QuerySpec

Saved = TypeVar("Saved", bound=BaseModel)
VERSION = 2  # 2: streaming states carry dropped and corrupt counts


def fingerprint(job: dict) -> str:
    return hashlib.sha256(json.dumps(job, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _replace(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def _unreadable(directory: Path, exc: Exception) -> StateError:
    return StateError(f"checkpoint {directory} cannot be read ({exc}); remove it or pass --fresh")


def invalid(path: Path, problem: str) -> StateError:
    """A checkpoint file that reads but says something impossible (edited, or damaged)."""
    return StateError(f"checkpoint {path} is not valid: {problem}; remove it or pass --fresh")


# --- what a state file may hold ------------------------------------------------------------------

_STRICT = ConfigDict(extra="forbid")
Count = StrictStr  # decimal digits: counts are exact integers, too large for JSON numbers
Element = tuple[StrictStr, StrictInt, StrictInt]  # character, timestamp, value


class Evaluation(BaseModel):
    model_config = _STRICT
    id: NonNegativeInt
    at: StrictInt
    wall: StrictStr


class SavedPartition(BaseModel):
    model_config = _STRICT
    fed: NonNegativeInt
    dirty: StrictBool
    # [evaluation id, events, {strategy: count}, exact count]
    history: list[tuple[NonNegativeInt, NonNegativeInt, dict[StrictStr, Count], Optional[Count]]]
    elements: dict[StrictStr, list[Element]]


class SavedQuery(BaseModel):
    model_config = _STRICT
    pos: NonNegativeInt
    parts: dict[NonNegativeInt, SavedPartition]


class SavedReplay(BaseModel):
    model_config = _STRICT
    version: StrictInt
    clock: float
    evaluations: list[Evaluation]
    queries: list[SavedQuery]


class StreamRow(BaseModel):
    model_config = _STRICT
    count: Count
    events: NonNegativeInt
    late: NonNegativeInt
    pending: NonNegativeInt
    max_ts: StrictInt
    elements: list[Element]


class SavedStreamPartition(SavedPartition):
    # per strategy: the counters of streaming.advance's state tuple after summary and buffer
    states: dict[StrictStr, tuple[Optional[StrictInt], Optional[StrictInt], NonNegativeInt, NonNegativeInt,
                                  NonNegativeInt, NonNegativeInt]]
    rows: dict[StrictStr, StreamRow]


class SavedStream(BaseModel):
    model_config = _STRICT
    version: StrictInt
    fingerprint: StrictStr
    clock: float
    first: Optional[StrictInt]
    evaluations: list[Evaluation]
    batches: NonNegativeInt
    last_batch: StrictInt
    pos: NonNegativeInt
    late: NonNegativeInt
    keys: list[list]
    parts: dict[NonNegativeInt, SavedStreamPartition]


def parse_state(path: Path, model: type[Saved], state: object) -> Saved:
    """``state`` checked against ``model``; the first problems in one line."""
    from suse.spark.jobs.load import format_errors

    try:
        return model.model_validate(state)
    except ValidationError as exc:
        lines = format_errors(exc, state if isinstance(state, dict) else {})
        raise invalid(path, "; ".join(lines[:3])) from None


def check_history(path: Path, where: str, part: SavedPartition, evaluations: list[Evaluation],
                  strategies: list[str], events: int) -> None:
    """A partition's history must follow the evaluations: increasing ids, none past the last
    evaluation, at most ``events`` events, a count for every strategy, counts that are integers."""
    last_id = evaluations[-1].id if evaluations else -1
    previous = -1
    for row in part.history:
        eid, fed, counts, exact = row
        if not previous < eid <= last_id:
            raise invalid(path, f"{where}: history row for evaluation {eid} is out of order or after the last evaluation")
        previous = eid
        if fed > events or sorted(counts) != sorted(strategies):
            raise invalid(path, f"{where}: history row {eid} does not match the partition's events or strategies")
        for text in [*counts.values(), *([exact] if exact is not None else [])]:
            if not (text.isascii() and text.isdigit() and len(text) <= 4000):
                raise invalid(path, f"{where}: count {text[:30]!r} is not a non-negative integer")
    if not set(part.elements) <= set(strategies) or any(len(c) != 1 for els in part.elements.values() for c, _, _ in els):
        raise invalid(path, f"{where}: retained elements name an unknown strategy or a character that is not one letter")


def check_stream(path: Path, state: SavedStream, strategies: list[str]) -> None:
    """A stream's saved state against itself: partitions named by its keys, a state and a row
    for every strategy, counters no larger than what was received."""
    import math

    if not math.isfinite(state.clock) or state.last_batch < -1:
        raise invalid(path, f"clock {state.clock} or last micro-batch {state.last_batch} is impossible")
    check_evaluations(path, state.evaluations)
    for pid, part in state.parts.items():
        where = f"parts.{pid}"
        if pid >= len(state.keys):
            raise invalid(path, f"{where}: no such partition; the state names {len(state.keys)}")
        if sorted(part.states) != sorted(strategies) or sorted(part.rows) != sorted(strategies):
            raise invalid(path, f"{where}: states for {sorted(part.states)}, the page runs {sorted(strategies)}")
        check_history(path, where, part, state.evaluations, strategies, state.pos)


def check_evaluations(path: Path, evaluations: list[Evaluation]) -> None:
    ids = [e.id for e in evaluations]
    if any(b <= a for a, b in zip(ids, ids[1:])):
        raise invalid(path, "evaluation ids must increase")


def check_job(directory: Path, meta: dict, job: dict) -> None:
    """A checkpoint of another job is an error: resuming it would mix two jobs' numbers."""
    if meta.get("version") != VERSION or meta.get("fingerprint") != fingerprint(job):
        raise InputError(
            f"checkpoint {directory} was written for a different job (or version of it); "
            f"pass --fresh to start over, or --checkpoint to use another directory"
        )


def write_state(directory: Path, zip_name: str, blobs: dict[str, bytes], json_name: str, text: str) -> None:
    """The summaries' blobs, then the JSON state: it names positions the summaries must already
    reflect, so it goes last."""
    def write_zip(tmp: Path) -> None:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
            for name, blob in blobs.items():
                z.writestr(name, blob)

    _replace(directory / zip_name, write_zip)
    _replace(directory / json_name, lambda tmp: tmp.write_text(text))


def read_state(directory: Path, json_name: str, zip_name: str) -> Optional[tuple[dict, zipfile.ZipFile]]:
    """The JSON state and the open zip of summaries that `write_state` wrote; None if there is none."""
    path = directory / json_name
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text()), zipfile.ZipFile(directory / zip_name)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise _unreadable(directory, exc) from None


def save_events(directory: Path, queries: list[QueryEvents], datetime_axis: bool, job: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {}
    meta = {"version": VERSION, "fingerprint": fingerprint(job), "datetime": datetime_axis, "queries": []}
    for i, q in enumerate(queries):
        arrays[f"pid{i}"], arrays[f"ts{i}"], arrays[f"chars{i}"] = q.pid, q.ts, q.chars
        if q.values is not None:
            arrays[f"values{i}"] = q.values
        meta["queries"].append({
            "label": q.label, "regex": q.spec.regex, "window": q.spec.window, "aggregate": q.spec.aggregate,
            "policy": q.spec.policy, "of": q.spec.of, "max_missing": q.spec.max_missing,
            "keys": [[_plain(k) for k in key] for key in q.keys],
            "probabilities": q.probabilities,
        })

    def write_npz(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    _replace(directory / "events.npz", write_npz)
    _replace(directory / "events.json", lambda tmp: tmp.write_text(json.dumps(meta)))


def _plain(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


def load_events(directory: Path, job: dict) -> Optional[tuple[list[QueryEvents], bool]]:
    """The saved events, or None if there are none. A checkpoint of another job is an error:
    resuming it would mix two jobs' numbers."""
    meta_path = directory / "events.json"
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        data = np.load(directory / "events.npz")
    except (OSError, ValueError) as exc:
        raise _unreadable(directory, exc) from None
    check_job(directory, meta, job)
    queries = []
    for i, q in enumerate(meta["queries"]):
        spec = QuerySpec(q["regex"], q["window"], q["aggregate"], q["policy"], q.get("of"), q.get("max_missing", 0),
                         name=q["label"])
        queries.append(QueryEvents(
            spec, [tuple(k) for k in q["keys"]],
            data[f"pid{i}"], data[f"ts{i}"], data[f"chars{i}"],
            data[f"values{i}"] if f"values{i}" in data else None, q["probabilities"],
        ))
    return queries, bool(meta["datetime"])


def save_state(directory: Path, live: Live) -> None:
    with live.lock:
        state = {"version": VERSION, "clock": live.clock, "evaluations": live.evaluations, "queries": []}
        blobs: dict[str, bytes] = {}
        for qi, lq in enumerate(live.queries):
            parts = {}
            for pid, part in lq.parts.items():
                parts[str(pid)] = {"fed": part.fed, "dirty": part.dirty, "history": part.history,
                                   "elements": part.elements}
                for name, summary in part.summaries.items():
                    blobs[f"{qi}/{name}/{pid}"] = summary.to_bytes()
            state["queries"].append({"pos": lq.pos, "parts": parts})
        text = json.dumps(state)
    write_state(directory, "summaries.zip", blobs, "state.json", text)


def load_state(directory: Path, live: Live) -> bool:
    """Restore a saved state into a fresh ``live``; False when there is none. Everything is
    checked against the job's events first: an edited state is a StateError, never a crash or
    a page that counts from impossible positions."""
    saved_state = read_state(directory, "state.json", "summaries.zip")
    if saved_state is None:
        return False
    raw, z = saved_state
    path = directory / "state.json"
    with z:
        state = parse_state(path, SavedReplay, raw)
        check_replay(path, state, live)
        with live.lock:
            live.clock = state.clock
            live.evaluations = [e.model_dump() for e in state.evaluations]
            for qi, (lq, saved) in enumerate(zip(live.queries, state.queries)):
                lq.pos = saved.pos
                if lq.settings.exact and lq.pos:
                    lq.feed_range(0, lq.pos, exact_only=True)
                for pid, p in saved.parts.items():
                    part = lq.parts.get(pid) or lq.new_partition()
                    lq.parts[pid] = part
                    part.fed, part.dirty = p.fed, p.dirty
                    part.history = [[eid, fed, counts, exact] for eid, fed, counts, exact in p.history]
                    part.elements = {name: [tuple(e) for e in els] for name, els in p.elements.items()}
                    for name in part.summaries:
                        part.summaries[name] = suse.Summary.from_bytes(read_blob(path, z, f"{qi}/{name}/{pid}"))
                    # Nothing fed since the last evaluation: the summaries are as they were then,
                    # so they judge the elements shown with the events between them.
                    part.matches = {} if part.dirty else {n: s.retained_matches() for n, s in part.summaries.items()}
    return True


def read_blob(path: Path, z: zipfile.ZipFile, name: str) -> bytes:
    try:
        return z.read(name)
    except (KeyError, zipfile.BadZipFile, OSError) as exc:
        raise invalid(path, f"saved summary {name!r} cannot be read ({exc})") from None


def check_replay(path: Path, state: SavedReplay, live: Live) -> None:
    """The saved state against the classified events it claims to have played."""
    if state.version != VERSION:
        raise invalid(path, f"version {state.version}, expected {VERSION}")
    if not live.first <= state.clock <= live.last:
        raise invalid(path, f"stream clock {state.clock} is outside the input's time range {live.first}..{live.last}")
    if len(state.queries) != len(live.queries):
        raise invalid(path, f"{len(state.queries)} queries, the job has {len(live.queries)}")
    check_evaluations(path, state.evaluations)
    for qi, (lq, saved) in enumerate(zip(live.queries, state.queries)):
        if saved.pos > len(lq.events):
            raise invalid(path, f"queries[{qi}].pos: {saved.pos} is past the {len(lq.events)} events of the query")
        played = np.bincount(lq.events.pid[:saved.pos], minlength=len(lq.events.keys))
        missing = sorted(set(np.flatnonzero(played).tolist()) - set(saved.parts))
        if missing:
            raise invalid(path, f"queries[{qi}]: partition {missing[0]} got events before the position but has no state")
        for pid, part in saved.parts.items():
            where = f"queries[{qi}].parts.{pid}"
            if pid >= len(lq.events.keys):
                raise invalid(path, f"{where}: no such partition; the query has {len(lq.events.keys)}")
            if part.fed != played[pid]:
                raise invalid(path, f"{where}.fed: {part.fed}, but {played[pid]} of its events come before the position")
            check_history(path, where, part, state.evaluations, lq.settings.strategies, part.fed)
