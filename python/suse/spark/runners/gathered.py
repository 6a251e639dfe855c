"""The batch runner's fast path: every partition of an Arrow batch in one native call.

``run_sorted`` (runner.py) calls the engine once per partition and builds a Python row per
evaluation; with 100 events per partition that overhead outweighed the engine. Here the
partitions completed in a batch are cut out with numpy, run by ``_core.summary_groups``
(one fresh summary copy per partition) and the results come back as columns that become
Arrow arrays directly. Same rows, same order, same values as ``run_sorted``; it serves the
plans whose output is the plain RESULT_DDL (a query or a query set, no ``exact``, no
MIN/MAX, no approximate matching, no conditions between events) and ``run_sorted`` keeps the
others.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from suse import _core
from suse.spark.events.rows import CORRUPT, DROPPED, RANK, TIE, TS, VALUE
from suse.spark.runners.plan import ARROW_TYPES, ELEMENT, RESULT_DDL, Plan, as_float


def serves(plan: object) -> bool:
    """Whether ``plan``'s output is what the grouped call reports (a query set's too)."""
    if getattr(plan, "multi", False):
        return not plan.exact and all(serves(p) for _, p, _ in plan.plans)
    return (isinstance(plan, Plan) and plan.summarised and not plan.exact and not plan.extrema
            and plan.max_missing == 0 and not plan.counts_with_where_summary)  # the runner of sorted rows


def run_grouped(
    plan: Plan, keys: Sequence[str], batches: Iterator[pa.RecordBatch], ts_col: str, rank_col: str,
    value_col: str | None,
) -> Iterator[pa.RecordBatch]:
    """``run_sorted`` for a plan that ``serves``: the body of ``mapInArrow`` over one Spark
    partition sorted by (keys, ts, rank, tie)."""
    templates = _templates(plan)
    pending: list[pa.RecordBatch] = []  # rows of the last partition seen, which may go on
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if pending:
            batch = batch.select(pending[0].schema.names)
            if _same_key(pending[-1], batch, keys):
                if len(key_runs(batch, keys)[0]) == 1:  # the whole batch continues it
                    pending.append(batch)
                    continue
                batch = _concat([*pending, batch])
            else:
                yield from _evaluate(plan, templates, keys, _concat(pending), ts_col, rank_col, value_col)
        starts, stops = key_runs(batch, keys)
        pending = [batch.slice(int(starts[-1]))]
        yield from _evaluate(plan, templates, keys, batch.slice(0, int(starts[-1])), ts_col, rank_col, value_col,
                             starts[:-1], stops[:-1])
    if pending:
        yield from _evaluate(plan, templates, keys, _concat(pending), ts_col, rank_col, value_col)


def _templates(plan: object) -> list[tuple[object, np.ndarray | None]]:
    """Per query: a fresh summary, never fed (each partition runs on a copy), and whether the
    query is fed each rank (None: every rank)."""
    if getattr(plan, "multi", False):
        ranks = np.arange(len(plan.order))
        return [(p.new_summary()._engine, np.isin(ranks, allowed)) for _, p, allowed in plan.plans]
    return [(plan.new_summary()._engine, None)]


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _same_key(before: pa.RecordBatch, after: pa.RecordBatch, keys: Sequence[str]) -> bool:
    """Whether ``after``'s first row has the key of ``before``'s last (NULLs equal, as in
    Spark's grouping)."""
    pair = _concat([before.slice(before.num_rows - 1), after.slice(0, 1)])
    return len(key_runs(pair, keys)[0]) == 1


def _evaluate(
    plan: Plan, templates: list, keys: Sequence[str], batch: pa.RecordBatch, ts_col: str, rank_col: str,
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
    usable, dropped, corrupt = _counted(gid, ranks, groups)
    ts = batch.column(ts_col).fill_null(0).to_numpy()[usable]
    values = None
    if value_col:
        values = batch.column(value_col).fill_null(-1).to_numpy()[usable]
    key_columns = [batch.column(k).take(pa.array(starts)) for k in keys]
    yield from evaluate_groups(plan, templates, keys, key_columns, ts, ranks[usable], values,
                               _offsets(gid[usable], groups), dropped, corrupt)


def run_gathered(plan: Plan, keys: Sequence[str], batches: Iterator[pa.RecordBatch], bits: int,
                 ) -> Iterator[pa.RecordBatch]:
    """The body of ``mapInArrow`` over the gathered layout (``batch.gather``): a row per
    partition holding its rows as lists, unordered; ``bits``: how many low bits of a packed
    event hold its rank."""
    templates = _templates(plan)
    for batch in batches:
        if batch.num_rows == 0:
            continue
        lengths = _lengths(batch.column(PACKED))
        packed = pc.list_flatten(batch.column(PACKED)).to_numpy().astype(np.int64, copy=False)
        wide, wide_lengths, dropped, corrupt = _wide_rows(batch)
        if VALUE not in batch.schema.names and not wide_lengths.any():
            # Equal (time, rank) events are alike without values: sort the packed events.
            offsets = _starts(lengths)
            packed = _core.sort_packed_groups(offsets, packed)
            (ts, ranks), values, order = _split(packed, bits), None, slice(None)
        else:
            ts, ranks, values, offsets, order = _unpacked(batch, packed, bits, lengths, wide, wide_lengths)
        yield from evaluate_groups(
            plan, templates, keys, [batch.column(k) for k in keys], ts[order], ranks[order],
            None if values is None else values[order], offsets, dropped, corrupt)


def _wide_rows(batch: pa.RecordBatch) -> tuple[pa.StructArray, np.ndarray, np.ndarray, np.ndarray]:
    """The whole rows of a gathered batch: its wide events, how many each partition has, and
    each partition's dropped and corrupt rows."""
    wide = pc.list_flatten(batch.column(WIDE))
    groups = batch.num_rows
    if len(wide) == 0:
        none = np.zeros(groups, np.int64)
        return wide, none, none, none
    gid = np.repeat(np.arange(groups), _lengths(batch.column(WIDE)))
    usable, dropped, corrupt = _counted(gid, pc.struct_field(wide, RANK).to_numpy(), groups)
    return wide.filter(pa.array(usable)), np.bincount(gid[usable], minlength=groups), dropped, corrupt


def _counted(gid: np.ndarray, ranks: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which rows (of partitions ``gid``) are usable events, and each partition's dropped and
    corrupt rows."""
    dropped, corrupt = (np.bincount(gid[ranks == r], minlength=groups) for r in (DROPPED, CORRUPT))
    return ranks >= 0, dropped, corrupt


def _unpacked(batch: pa.RecordBatch, packed: np.ndarray, bits: int, lengths: np.ndarray, wide: pa.StructArray,
              wide_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """A gathered batch's events as (ts, ranks, values, offsets) by partition, and the order
    that sorts each partition by (time, rank, tie)."""
    ts, ranks = _split(packed, bits)
    values = ties = None
    if VALUE in batch.schema.names:  # equal (time, rank) events differ by value: the tie decides
        values = pc.list_flatten(batch.column(VALUE)).to_numpy()
        ties = pc.list_flatten(batch.column(TIE)).to_numpy().astype(np.int64, copy=False)
    if wide_lengths.any():  # each partition's wide events go after its packed ones
        groups = np.arange(batch.num_rows)
        merge = np.argsort(np.concatenate([np.repeat(groups, lengths), np.repeat(groups, wide_lengths)]),
                           kind="stable")

        def joined(packed_part, field, dtype):
            return np.concatenate([packed_part, pc.struct_field(wide, field).to_numpy().astype(dtype, copy=False)])[merge]

        ts, ranks = joined(ts, TS, np.int64), joined(ranks, RANK, np.int32)
        if values is not None:
            values, ties = joined(values, VALUE, values.dtype), joined(ties, TIE, np.int64)
        lengths = lengths + wide_lengths
    offsets = _starts(lengths)
    return ts, ranks, values, offsets, _core.sort_groups(offsets, ts, ranks, ties)


def _split(packed: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Times and ranks of events packed as ``(time << bits) | rank``."""
    return packed >> bits, (packed & ((1 << bits) - 1)).astype(np.int32)


def _starts(lengths: np.ndarray) -> np.ndarray:
    """Where each partition's events begin (and the last ends), given how many each has."""
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def rank_bits(order: str) -> int:
    """Low bits of a packed event that hold its rank (``order[rank]`` is its character)."""
    return max(1, (len(order) - 1).bit_length())


def _lengths(lists: pa.Array) -> np.ndarray:
    return pc.list_value_length(lists).fill_null(0).to_numpy().astype(np.int64)


def evaluate_groups(
    plan: Plan, templates: list, keys: Sequence[str], key_columns: list[pa.Array], ts: np.ndarray, ranks: np.ndarray,
    values: np.ndarray | None, offsets: np.ndarray, dropped: np.ndarray, corrupt: np.ndarray,
) -> Iterator[pa.RecordBatch]:
    """The rows of partitions ``g`` whose usable events (sorted) are ``offsets[g]:offsets[g+1]``
    of ``ts``/``ranks``/``values``, with keys ``key_columns[*][g]`` and counted rows
    ``dropped[g]``/``corrupt[g]``."""
    groups = len(offsets) - 1
    ts = np.ascontiguousarray(ts, dtype=np.int64)
    gid = np.repeat(np.arange(groups), np.diff(offsets))
    queries = _queries(plan, templates)
    times = []  # per query: its evaluation times, flat, and where each partition's begin
    for query_plan, allowed, _ in queries:
        mask = slice(None) if allowed is None else allowed[ranks]
        times.append(_times(query_plan, key_columns, ts[mask], _offsets(gid[mask], groups)))
    vals = None if values is None else np.ascontiguousarray(values, dtype=np.int64)
    if len(queries) > 1:  # each query takes its own events from the set's
        answers = _core.summary_set_groups([t for _, _, t in queries], plan.chars(ranks), ts, vals, offsets,
                                           *map(list, zip(*times)))
    else:
        answers = [_core.summary_groups(queries[0][2], plan.chars(ranks), ts, vals, offsets, *times[0])]
    any_rows = np.zeros(groups, bool)
    for cols in answers:
        any_rows[cols["group"]] = True
    # A partition with counted rows but no evaluation still reports them (runner.empty_row).
    counted = np.flatnonzero(~any_rows & ((dropped > 0) | (corrupt > 0)))
    names = [name for name, _, _ in plan.plans] if getattr(plan, "multi", False) else None
    # A batch per query, so that no column is copied to interleave them (the rows of a
    # partition and query stay in time order; DataFrames promise no order beyond that).
    for q, cols in enumerate(answers):
        if len(cols["group"]):
            yield _batch(keys, key_columns, cols["group"], _native_columns(cols), dropped, corrupt, names and names[q])
        if len(counted):
            yield _batch(keys, key_columns, counted, _empty_columns(len(counted)), dropped, corrupt, names and names[q])


def _batch(keys: Sequence[str], key_columns: list[pa.Array], of_row: np.ndarray, table: pa.Table,
           dropped: np.ndarray, corrupt: np.ndarray, query: str | None) -> pa.RecordBatch:
    """Result rows of partitions ``of_row`` (and of ``query`` in a set) as one batch."""
    data = {name: table.column(name).chunk(0) for name in table.column_names}  # one chunk each
    data["dropped_events"] = pa.array(dropped[of_row], pa.int64())
    data["corrupt_records"] = pa.array(corrupt[of_row], pa.int64())
    data = {name: data[name] for name in RESULT_COLUMNS}
    if query is not None:
        data = {"query": pa.array([query] * len(of_row), pa.string()), **data}
    rows = pa.array(of_row)
    arrays = [column.take(rows) for column in key_columns]
    return pa.RecordBatch.from_arrays([*arrays, *data.values()], names=[*keys, *data])


RESULT_COLUMNS = [c.split()[0] for c in RESULT_DDL.split(", ")]
# The gathered layout's lists beside VALUE and TIE: events packed as (time << bits) | rank,
# and whole rows (TS, RANK[, VALUE, TIE]): counted rows and events whose time does not fit.
PACKED, WIDE = "_suse_packed", "_suse_wide"


def _offsets(gid: np.ndarray, groups: int) -> np.ndarray:
    """Where each partition's events begin in arrays ordered by partition (``gid``)."""
    return _starts(np.bincount(gid, minlength=groups))


def _queries(plan: object, templates: list) -> list[tuple[Plan, np.ndarray | None, object]]:
    """(plan, whether it is fed each rank or None for all, its fresh summary) per query."""
    plans = [p for _, p, _ in plan.plans] if getattr(plan, "multi", False) else [plan]
    return [(p, fed, engine) for p, (engine, fed) in zip(plans, templates)]


def _text(pair: tuple, n: int) -> pa.Array:
    data, offs = pair
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs), pa.py_buffer(data)])


def _native_columns(cols: dict) -> pa.Table:
    """One summary_groups answer as result columns (without dropped/corrupt counts)."""
    n = len(cols["group"])
    count, total = _text(cols["count"], n), _text(cols["sum"], n)
    count_double, sum_double, avg = cols["count_double"], cols["sum_double"], cols["avg"]
    zero = count_double == 0
    for row in cols["big"].tolist():  # past 2^53: Python's int -> float rules, as result_columns
        c, s = int(count[row].as_py()), int(total[row].as_py())
        count_double[row], sum_double[row] = as_float(c), as_float(s)
        avg[row] = s / c if c else np.nan
        zero[row] = c == 0
    return pa.table({
        "evaluated_at": pa.array(cols["evaluated_at"], pa.int64()),
        "count": count,
        "sum": total,
        "avg": pa.array(avg, mask=zero, type=pa.float64()),
        "count_double": pa.array(count_double, pa.float64()),
        "sum_double": pa.array(sum_double, pa.float64()),
        "detected_count": _text(cols["detected_count"], n),
        "events": pa.array(cols["events"], pa.int64()),
        "elements": _elements(cols, n),
    })


def _empty_columns(m: int) -> pa.Table:
    """The rows of partitions with counted rows only (runner.empty_row)."""
    return pa.table({
        "evaluated_at": pa.nulls(m, pa.int64()),
        "count": pa.array(["0"] * m, pa.string()),
        "sum": pa.array(["0"] * m, pa.string()),
        "avg": pa.nulls(m, pa.float64()),
        "count_double": pa.array(np.zeros(m), pa.float64()),
        "sum_double": pa.array(np.zeros(m), pa.float64()),
        "detected_count": pa.array(["0"] * m, pa.string()),
        "events": pa.array(np.zeros(m, np.int64), pa.int64()),
        "elements": pa.array([[]] * m, ARROW_TYPES["elements"]),
    })


def _elements(cols: dict, n: int) -> pa.Array:
    chars, char_offs = cols["element_chars"]
    k = len(cols["element_ts"])
    char = pa.Array.from_buffers(pa.string(), k, [None, pa.py_buffer(char_offs), pa.py_buffer(chars)])
    structs = pa.StructArray.from_arrays(
        [char, pa.array(cols["element_ts"], pa.int64()), pa.array(cols["element_values"], pa.int64())],
        fields=list(ELEMENT))
    return pa.ListArray.from_arrays(pa.array(cols["element_offsets"]), structs)


def _times(plan: Plan, key_columns: list[pa.Array], ts: np.ndarray,
           offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Evaluation times of every partition, flat, and where each partition's begin."""
    sizes = np.diff(offsets)
    if plan.trigger.kind == "end":  # the last event of each partition that has one
        has = sizes > 0
        return ts[offsets[1:][has] - 1], np.concatenate([[0], np.cumsum(has)]).astype(np.int64)
    key_rows = zip(*[c.to_pylist() for c in key_columns]) if key_columns else [()] * (len(offsets) - 1)
    times = []
    for g, key in enumerate(key_rows):
        part = ts[offsets[g]:offsets[g + 1]]
        times.append(plan.trigger.times(part, key) if len(part) else np.empty(0, np.int64))
    eval_offsets = np.concatenate([[0], np.cumsum([len(t) for t in times])]).astype(np.int64)
    flat = np.concatenate(times).astype(np.int64) if times else np.empty(0, np.int64)
    return flat, eval_offsets


def key_runs(batch: pa.RecordBatch, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Start and stop of each stretch of equal keys in a batch sorted by the keys."""
    n = batch.num_rows
    if not keys:
        return np.array([0]), np.array([n])
    if n > 1 and not any(pa.types.is_floating(batch.schema.field(k).type) for k in keys):
        # Vectorised: a row starts a run where any key differs from the row before (a NULL
        # equals a NULL, as in Spark's grouping). Floats (NaN) take the pandas path below.
        changed = np.zeros(n - 1, dtype=bool)
        for k in keys:
            col = batch.column(k)
            a, b = col.slice(1), col.slice(0, n - 1)
            differ = pc.fill_null(pc.not_equal(a, b), False)
            differ = pc.or_(differ, pc.xor(pc.is_null(a), pc.is_null(b)))
            changed |= differ.to_numpy(zero_copy_only=False)
        edges = np.concatenate([[0], np.flatnonzero(changed) + 1, [n]])
        return edges[:-1], edges[1:]
    frame = batch.select(list(keys)).to_pandas()
    ids = frame.groupby(list(keys), sort=False, dropna=False).ngroup().to_numpy()
    edges = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1, [n]])
    return edges[:-1], edges[1:]
