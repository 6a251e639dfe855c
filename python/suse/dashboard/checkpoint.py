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
from typing import Optional

import numpy as np

import suse
from suse.dashboard.live import Live, QueryEvents
from suse.spec import QuerySpec
from suse.errors import InputError

VERSION = 2  # 2: streaming states carry dropped and corrupt counts


def fingerprint(job: dict) -> str:
    return hashlib.sha256(json.dumps(job, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _replace(path: Path, write) -> None:
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def _unreadable(directory: Path, exc: Exception) -> InputError:
    return InputError(f"checkpoint {directory} cannot be read ({exc}); remove it or pass --fresh")


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
    """Restore a saved state into a fresh ``live``; False when there is none."""
    saved_state = read_state(directory, "state.json", "summaries.zip")
    if saved_state is None:
        return False
    state, z = saved_state
    with z, live.lock:
        live.clock = float(state["clock"])
        live.evaluations = state["evaluations"]
        for qi, (lq, saved) in enumerate(zip(live.queries, state["queries"])):
            lq.pos = saved["pos"]
            if lq.settings.exact and lq.pos:
                lq.feed_range(0, lq.pos, exact_only=True)
            for pid_text, p in saved["parts"].items():
                pid = int(pid_text)
                part = lq.parts.get(pid) or lq.new_partition()
                lq.parts[pid] = part
                part.fed, part.dirty, part.history = p["fed"], p["dirty"], p["history"]
                part.elements = {name: [tuple(e) for e in els] for name, els in p["elements"].items()}
                for name in part.summaries:
                    part.summaries[name] = suse.Summary.from_bytes(z.read(f"{qi}/{name}/{pid}"))
    return True

