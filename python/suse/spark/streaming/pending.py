"""A partition's buffer of pending events in streaming state: the events not yet final (newer
than its watermark), in (timestamp, rank, tie) order, and how one micro-batch joins it. The
attribute values the exact engine's conditions read travel beside the buffer, a row per
buffered event (suse.spark.streaming.engines)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Iterator

import numpy as np
import pandas as pd

import suse
from suse.spark.events.rows import ATTRIBUTE, CORRUPT, DROPPED, OP, RANK, TIE, TS, VALUE
from suse.spark.runners.plan import Plan
from suse.spark.streaming import engines

PENDING = np.dtype([("ts", "<i8"), ("rank", "<i4"), ("tie", "<i8"), ("value", "<i8")])


def ingest(plan: Plan, lateness: int, key: tuple, batches: Iterator[pd.DataFrame], state: Any,
           global_watermark: int | None = None) -> SimpleNamespace:
    """One micro-batch's rows joined to a partition's saved state: unusable rows counted, late
    events counted and left out, the rest merged into the pending buffer in (timestamp, rank,
    tie) order, the watermark moved on. ``global_watermark``: Spark's, when due times run on
    it. Returns the state's fields (``engine``: the summary or exact engine) plus ``minus`` (the batch's retractions, op "-") and
    ``attributes`` (the pending events' attribute values, a row each; no columns without
    conditions)."""
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
    # (reindex: a timer's empty batch has no attribute columns)
    new_attributes = pdf.reindex(columns=[ATTRIBUTE.format(i) for i in range(len(plan.attributes))]).to_numpy(object)
    minus = np.empty(0, PENDING)
    if OP in pdf:  # a micro-batch has no order: its events go in first, then its retractions
        is_minus = pdf[OP].to_numpy() < 0
        minus, new, new_attributes = new[is_minus], new[~is_minus], new_attributes[~is_minus]
    if state.exists:
        blob, pending, watermark, max_ts, late, fed, dropped, corrupt = state.get
        pending = np.frombuffer(bytes(pending), dtype=PENDING)
        engine, attributes = engines.load(plan, bytes(blob), len(pending))
    else:
        engine, pending, watermark, max_ts, late, fed = engines.new_engine(plan), np.empty(0, PENDING), None, None, 0, 0
        attributes = engines.no_attributes(plan, 0)
        dropped, corrupt = 0, 0
    if global_watermark is not None:  # Spark's watermark as it stood before this micro-batch
        watermark = global_watermark if watermark is None else max(watermark, global_watermark)
    if watermark is not None:
        is_late = new["ts"] < watermark
        late += int(is_late.sum())
        new, new_attributes = new[~is_late], new_attributes[~is_late]
    if len(new):
        top = int(new["ts"].max())
        max_ts = top if max_ts is None else max(max_ts, top)
        watermark = max_ts - lateness if watermark is None else max(watermark, max_ts - lateness)
    pending = np.concatenate([pending, new])
    order = np.lexsort((pending["tie"], pending["rank"], pending["ts"]))
    pending, attributes = pending[order], np.concatenate([attributes, new_attributes])[order]
    return SimpleNamespace(engine=engine, pending=pending, attributes=attributes, minus=minus, watermark=watermark,
                           max_ts=max_ts, late=late, fed=fed, dropped=dropped + n_dropped, corrupt=corrupt + n_corrupt,
                           n_dropped=n_dropped, n_corrupt=n_corrupt)
