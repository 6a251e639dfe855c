"""The batch runner's fast path: every partition of an Arrow batch in one native call.

``run_sorted`` (runner.py) calls the engine once per partition and builds a Python row per
evaluation; with 100 events per partition that overhead outweighed the engine. Here the
partitions completed in a batch are cut out with numpy, run by ``_core.summary_groups``
(one fresh summary copy per partition) and the results come back as columns that become
Arrow arrays directly. Same rows, same order, same values as ``run_sorted``; it serves the
plans whose output is the plain RESULT_DDL (one query, no ``exact``, no MIN/MAX, no
approximate matching) and ``run_sorted`` keeps the others.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from suse import _core
from suse.spark.characters import CORRUPT, DROPPED
from suse.spark.runner import ARROW_TYPES, ELEMENT, Plan, as_float


def serves(plan: object) -> bool:
    """Whether ``plan``'s output is what the grouped call reports."""
    return (isinstance(plan, Plan) and not plan.exact and not plan.extrema and plan.max_missing == 0)


def run_grouped(
    plan: Plan, keys: Sequence[str], batches: Iterator[pa.RecordBatch], ts_col: str, rank_col: str,
    value_col: str | None,
) -> Iterator[pa.RecordBatch]:
    """``run_sorted`` for a plan that ``serves``: the body of ``mapInArrow`` over one Spark
    partition sorted by (keys, ts, rank, tie)."""
    template = plan.new_summary()._engine  # never fed: each partition runs on a copy
    pending: list[pa.RecordBatch] = []  # rows of the last partition seen, which may go on
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if pending:
            batch = batch.select(pending[0].schema.names)
            if _same_key(pending[-1], batch, keys):
                if len(_runs(batch, keys)[0]) == 1:  # the whole batch continues it
                    pending.append(batch)
                    continue
                batch = _concat([*pending, batch])
            else:
                yield from _evaluate(plan, template, keys, _concat(pending), ts_col, rank_col, value_col)
        starts, stops = _runs(batch, keys)
        pending = [batch.slice(int(starts[-1]))]
        yield from _evaluate(plan, template, keys, batch.slice(0, int(starts[-1])), ts_col, rank_col, value_col,
                             starts[:-1], stops[:-1])
    if pending:
        yield from _evaluate(plan, template, keys, _concat(pending), ts_col, rank_col, value_col)


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _same_key(before: pa.RecordBatch, after: pa.RecordBatch, keys: Sequence[str]) -> bool:
    """Whether ``after``'s first row has the key of ``before``'s last (NULLs equal, as in
    Spark's grouping)."""
    pair = _concat([before.slice(before.num_rows - 1), after.slice(0, 1)])
    return len(_runs(pair, keys)[0]) == 1


def _runs(batch: pa.RecordBatch, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    from suse.spark.runner import _runs as runs

    return runs(batch, keys)


def _evaluate(
    plan: Plan, template: object, keys: Sequence[str], batch: pa.RecordBatch, ts_col: str, rank_col: str,
    value_col: str | None, starts: np.ndarray | None = None, stops: np.ndarray | None = None,
) -> Iterator[pa.RecordBatch]:
    """The rows of the complete partitions ``starts[i]:stops[i]`` of ``batch`` (default: the
    whole batch is one partition)."""
    if starts is None:
        starts, stops = np.array([0]), np.array([batch.num_rows])
    if not len(starts) or batch.num_rows == 0:
        return
    groups = len(starts)
    ranks = batch.column(rank_col).to_numpy()
    gid = np.repeat(np.arange(groups), stops - starts)
    dropped = np.bincount(gid[ranks == DROPPED], minlength=groups)
    corrupt = np.bincount(gid[ranks == CORRUPT], minlength=groups)
    usable = ranks >= 0
    ts = batch.column(ts_col).fill_null(0).to_numpy()[usable].astype(np.int64, copy=False)
    values = None
    if value_col:
        values = batch.column(value_col).fill_null(-1).to_numpy()[usable].astype(np.int64, copy=False)
    ranks, gid = ranks[usable], gid[usable]
    sizes = np.bincount(gid, minlength=groups)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    evals, eval_offsets = _times(plan, batch, keys, starts, ts, offsets)
    cols = _core.summary_groups(template, plan.chars(ranks), np.ascontiguousarray(ts),
                                None if values is None else np.ascontiguousarray(values), offsets, evals, eval_offsets)
    group = cols["group"]
    # A partition with counted rows but no evaluation still reports them (runner.empty_row).
    counted = np.flatnonzero((np.diff(eval_offsets) == 0) & ((dropped > 0) | (corrupt > 0)))
    if not len(group) and not len(counted):
        return
    order = np.argsort(np.concatenate([group, counted]), kind="stable")
    n, m = len(group), len(counted)
    of_row = np.concatenate([group, counted])[order]

    def column(native: np.ndarray, empty: object, dtype: pa.DataType) -> pa.Array:
        filled = np.concatenate([native, np.full(m, empty, dtype=native.dtype)])[order] if m else native
        return pa.array(filled, type=dtype)

    def text(name: str) -> pa.Array:
        data, offs = cols[name]
        native = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offs), pa.py_buffer(data)])
        return _ordered(native, pa.array(["0"] * m, pa.large_string()), order).cast(pa.string())

    count_double, sum_double, avg = cols["count_double"], cols["sum_double"], cols["avg"]
    if len(cols["big"]):  # past 2^53: Python's int -> float rules, as result_columns
        count_text, sum_text = text("count").to_pylist(), text("sum").to_pylist()
        back = np.argsort(order)  # native row -> output row
        for row in cols["big"].tolist():
            c, s = int(count_text[back[row]]), int(sum_text[back[row]])
            count_double[row], sum_double[row] = as_float(c), as_float(s)
            avg[row] = s / c if c else np.nan
    arrays = [batch.column(k).take(pa.array(starts[of_row])) for k in keys]
    is_empty = np.concatenate([np.zeros(n, bool), np.ones(m, bool)])[order]
    data = {
        "evaluated_at": pa.array(np.concatenate([cols["evaluated_at"], np.zeros(m, np.int64)])[order], mask=is_empty,
                                 type=pa.int64()),
        "count": text("count"),
        "sum": text("sum"),
        "avg": pa.array(np.concatenate([avg, np.full(m, np.nan)])[order],
                        mask=np.concatenate([cols["count_double"] == 0, np.ones(m, bool)])[order] if n or m else None,
                        type=pa.float64()),
        "count_double": column(count_double, 0.0, pa.float64()),
        "sum_double": column(sum_double, 0.0, pa.float64()),
        "detected_count": text("detected_count"),
        "events": column(cols["events"], 0, pa.int64()),
        "dropped_events": pa.array(dropped[of_row], pa.int64()),
        "corrupt_records": pa.array(corrupt[of_row], pa.int64()),
        "elements": _ordered(_elements(cols, n), pa.array([[]] * m, ARROW_TYPES["elements"]), order),
    }
    yield pa.RecordBatch.from_arrays([*arrays, *data.values()], names=[*keys, *data])


def _ordered(native: pa.Array, empty: pa.Array, order: np.ndarray) -> pa.Array:
    if not len(empty):
        return native
    return pa.concat_arrays([native, empty]).take(pa.array(order))


def _elements(cols: dict, n: int) -> pa.Array:
    chars, char_offs = cols["element_chars"]
    k = len(cols["element_ts"])
    char = pa.Array.from_buffers(pa.large_string(), k, [None, pa.py_buffer(char_offs), pa.py_buffer(chars)])
    structs = pa.StructArray.from_arrays(
        [char.cast(pa.string()), pa.array(cols["element_ts"], pa.int64()), pa.array(cols["element_values"], pa.int64())],
        fields=list(ELEMENT))
    return pa.ListArray.from_arrays(pa.array(cols["element_offsets"].astype(np.int32)), structs)


def _times(plan: Plan, batch: pa.RecordBatch, keys: Sequence[str], starts: np.ndarray, ts: np.ndarray,
           offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Evaluation times of every partition, flat, and where each partition's begin."""
    sizes = np.diff(offsets)
    if plan.trigger.kind == "end":  # the last event of each partition that has one
        has = sizes > 0
        return ts[offsets[1:][has] - 1], np.concatenate([[0], np.cumsum(has)]).astype(np.int64)
    key_rows = (zip(*[batch.column(k).take(pa.array(starts)).to_pylist() for k in keys]) if keys
                else [()] * len(starts))
    times = []
    for g, key in enumerate(key_rows):
        part = ts[offsets[g]:offsets[g + 1]]
        times.append(plan.trigger.times(part, key) if len(part) else np.empty(0, np.int64))
    eval_offsets = np.concatenate([[0], np.cumsum([len(t) for t in times])]).astype(np.int64)
    flat = np.concatenate(times).astype(np.int64) if times else np.empty(0, np.int64)
    return flat, eval_offsets
