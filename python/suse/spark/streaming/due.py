"""Streaming evaluations on a time grid: ``aggregate_stream(..., evaluate={"every": "30 days"})``.

Each partition reports its estimate at every multiple ``d`` of the period (counted from time 0,
as the batch trigger ``{every = ...}`` does) from its first event on, once no event with a
timestamp <= ``d`` can still arrive: when the watermark has passed ``d``. The watermark of a
partition is the larger of its own (largest timestamp seen - lateness) and Spark's global
event-time watermark, so a partition that receives nothing still gets its rows as the other
partitions move time on: an event-time timer at the next due time wakes it. Each due time
gives exactly one row per partition; the rows equal a batch run evaluated at the same times.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from suse.spark.runners.plan import Plan, as_float
from suse.spark.streaming import engines
from suse.spark.streaming.pending import PENDING, ingest


def first_due(ts: int, period: int) -> int:
    """The first multiple of ``period`` at or after ``ts`` (the batch trigger's rule)."""
    return -(-ts // period) * period


def next_timer(state: Any, due: Any, period: int) -> int | None:
    """The due time the partition's timer should wait for, or None (nothing to wait for): the
    stored next due time, or before the first event is fed, the first due time of the
    earliest buffered event (an earlier arrival re-arms the timer)."""
    if due.exists:
        return int(due.get[0])
    if not state.exists:
        return None
    pending = np.frombuffer(bytes(state.get[1]), dtype=PENDING)
    return first_due(int(pending["ts"].min()), period) if len(pending) else None


def advance_due(
    plan: Plan, lateness: int, period: int, key: tuple, keys: Sequence[str], batches: Iterator[pd.DataFrame],
    state: Any, due: Any, global_watermark: int | None, output: Sequence[str],
) -> pd.DataFrame:
    """Update one partition's state with new rows (possibly none: a timer fired) and return
    one row per due time the watermark has now passed. ``state`` holds streaming's tuple
    (summary, buffer, watermark, max_ts, late, fed, dropped, corrupt), ``due`` the next due
    time once the partition has fed an event."""
    p = ingest(plan, lateness, key, batches, state, global_watermark)
    engine, pending, attributes, watermark, max_ts = p.engine, p.pending, p.attributes, p.watermark, p.max_ts
    late, fed, dropped, corrupt, n_dropped, n_corrupt = p.late, p.fed, p.dropped, p.corrupt, p.n_dropped, p.n_corrupt
    ready = int(np.searchsorted(pending["ts"], watermark, side="left")) if watermark is not None else 0
    feed, pending = pending[:ready], pending[ready:]
    feed_attributes, attributes = attributes[:ready], attributes[ready:]

    nxt = int(due.get[0]) if due.exists else (first_due(int(feed["ts"][0]), period) if ready else None)
    times = np.empty(0, np.int64) if nxt is None else np.arange(nxt, watermark, period, dtype=np.int64)
    evaluations = []
    if ready or len(times):
        evaluations = engines.feed(plan, engine, feed, feed_attributes, evaluate_at=times.tolist(), elements=True)
    cuts = (fed + np.searchsorted(feed["ts"], times, side="right")).tolist()
    fed += ready
    state.update((engines.dump(plan, engine, attributes), pending.tobytes(), watermark, max_ts, late, fed, dropped,
                  corrupt))
    if nxt is not None:
        due.update((int(times[-1]) + period if len(times) else nxt,))

    n = len(evaluations)
    if not n and max_ts is None and (n_dropped or n_corrupt):
        # Only unusable rows so far: no due time will ever come for them, so report their
        # counts now, as the per-micro-batch mode does (evaluated_at NULL).
        return pd.DataFrame({
            **{k: [v] for k, v in zip(keys, key)}, "evaluated_at": [None], "count": ["0"], "sum": ["0"], "avg": [None],
            "count_double": [0.0], "sum_double": [0.0], "detected_count": ["0"], "events": [0], "late_events": [late],
            "pending_events": [0], "dropped_events": [dropped], "corrupt_records": [corrupt], "elements": [[]],
            "expired": [False], "migrated": [False], "rejected_retractions": [0], "min": [None], "max": [None],
            "count_by_missing": [["0"] * (plan.max_missing + 1)],
        })[[*keys, *output]]
    row: dict[str, list] = {k: [v] * n for k, v in zip(keys, key)}
    row.update(
        evaluated_at=[ev.timestamp for ev in evaluations], count=[str(ev.count) for ev in evaluations],
        sum=[str(ev.sum) for ev in evaluations], avg=[ev.sum / ev.count if ev.count else None for ev in evaluations],
        count_double=[as_float(ev.count) for ev in evaluations], sum_double=[as_float(ev.sum) for ev in evaluations],
        events=cuts, late_events=[late] * n,
        pending_events=[len(pending)] * n, dropped_events=[dropped] * n, corrupt_records=[corrupt] * n,
        expired=[False] * n, migrated=[False] * n, rejected_retractions=[0] * n,
        min=[ev.min for ev in evaluations], max=[ev.max for ev in evaluations],
        count_by_missing=[[str(c) for c in ev.count_by_missing or ()] for ev in evaluations],
    )
    if plan.summarised:
        row.update(detected_count=[str(ev.detected_count) for ev in evaluations],
                   elements=[[{"char": c, "timestamp": t, "value": v} for c, t, v, *_ in ev.elements] for ev in evaluations])
    return pd.DataFrame(row)[[*keys, *output]]
