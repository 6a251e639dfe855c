"""The body of ``mapInArrow`` for standard MATCH_RECOGNIZE: a Spark partition sorted by
(partition keys, ORDER BY) arrives in Arrow batches; each run of equal keys is one row pattern
partition, matched by :mod:`suse.recognize.matcher`, and its output rows are built here.

Values reach the matcher through ``to_pylist`` (exact: ints, Decimals, datetimes, None for
NULL); ALL ROWS PER MATCH copies the input rows with ``take``, never through Python objects.
A matching failure (backtracking cap, impossible skip) becomes one row whose ``_suse_error``
holds the message; the caller turns it into Spark's ``raise_error``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

import pyarrow as pa

from suse.errors import SuseError
from suse.recognize.evaluate import ConditionParser, Rows, leaf_value
from suse.recognize.expressions import Leaf
from suse.recognize.matcher import Match, Program, Skip, Unmatched, matches

KIND_MATCH, KIND_EMPTY, KIND_UNMATCHED = 0, 1, 2
KIND, ERROR = "_suse_kind", "_suse_error"


@dataclass(frozen=True)
class Condition:
    """How a variable's DEFINE is decided: a boolean column (``column``), always true (both
    None), or a condition over leaves (``tokens`` of ``text``, parsed on the worker)."""

    column: Optional[str] = None
    leaves: tuple = ()
    tokens: tuple = ()
    text: str = ""


@dataclass(frozen=True)
class Plan:
    keys: tuple[str, ...]
    program: Program
    members: dict
    conditions: tuple[Condition, ...]  # by variable index
    skip: Skip
    all_rows: bool
    empty: str  # "show" | "omit" | "unmatched"
    leaves: tuple[Leaf, ...]  # of MEASURES
    expr_columns: dict  # row expression text -> input column
    passthrough: tuple[str, ...]  # input columns copied by ALL ROWS PER MATCH
    schema: pa.Schema
    within: Optional[tuple[str, int]] = None  # (time column, bound): last - first < bound
    max_steps: int = 5_000_000


def run(plan: Plan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    pending: Optional[pa.Table] = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch]) if pending is None else pa.concat_tables([pending, pa.Table.from_batches([batch])])
        keys = _key_rows(table, plan.keys)
        starts = _group_starts(keys)
        for a, b in zip(starts, starts[1:]):
            yield from _partition(plan, table.slice(a, b - a))
        pending = table.slice(starts[-1])
    if pending is not None and pending.num_rows:
        yield from _partition(plan, pending)


def _key_rows(table: pa.Table, keys: Sequence[str]) -> list[tuple]:
    if not keys:
        return [()] * table.num_rows
    return list(zip(*(table.column(k).to_pylist() for k in keys)))


def _group_starts(keys: list[tuple]) -> list[int]:
    return [0] + [i for i in range(1, len(keys)) if keys[i] != keys[i - 1]]


def _partition(plan: Plan, table: pa.Table) -> Iterator[pa.RecordBatch]:
    try:
        yield from _match_partition(plan, table)
    except SuseError as exc:
        where = ", ".join(f"{k}={v!r}" for k, v in zip(plan.keys, _key_rows(table.slice(0, 1), plan.keys)[0]))
        message = f"MATCH_RECOGNIZE: {exc}" + (f" (partition {where})" if where else "")
        arrays = [pa.nulls(1, f.type) if f.name != ERROR else pa.array([message], pa.string()) for f in plan.schema]
        yield pa.RecordBatch.from_arrays(arrays, schema=plan.schema)


def _match_partition(plan: Plan, table: pa.Table) -> Iterator[pa.RecordBatch]:
    n = table.num_rows
    rows = Rows(n, {expr: table.column(col).to_pylist() for expr, col in plan.expr_columns.items()},
                plan.program.variables, plan.members)
    accept, scope = _acceptor(plan, table, rows)
    out_rows: list[int] = []  # input row per output row (ALL ROWS), or -1
    kinds: list[int] = []
    values: list[list] = [[] for _ in plan.leaves]

    def emit(row: int, kind: int, start: int, labels: Sequence[int], upto: int, number: int) -> None:
        out_rows.append(row)
        kinds.append(kind)
        for k, leaf in enumerate(plan.leaves):
            if kind == KIND_UNMATCHED:
                values[k].append(None)
            else:
                final = getattr(leaf, "final", False) or not plan.all_rows
                values[k].append(leaf_value(leaf, rows, start, labels, len(labels) if final else upto, number))

    for m in matches(plan.program, n, accept, plan.skip, scope, plan.max_steps):
        if isinstance(m, Unmatched):
            if plan.all_rows and plan.empty == "unmatched":
                emit(m.row, KIND_UNMATCHED, m.row, (), 0, 0)
            continue
        if not m.labels:
            if not plan.all_rows or plan.empty != "omit":
                emit(m.start, KIND_EMPTY, m.start, (), 0, m.number)
            continue
        if not plan.all_rows:
            emit(m.start, KIND_MATCH, m.start, m.labels, len(m.labels), m.number)
            continue
        for i, excluded in enumerate(m.excluded):
            if not excluded:
                emit(m.start + i, KIND_MATCH, m.start, m.labels, i + 1, m.number)
    if not kinds:
        return
    arrays = []
    leaf_fields = {f"_suse_l{k}": k for k in range(len(plan.leaves))}
    for f in plan.schema:
        if f.name == KIND:
            arrays.append(pa.array(kinds, f.type))
        elif f.name == ERROR:
            arrays.append(pa.nulls(len(kinds), f.type))
        elif f.name in leaf_fields:
            arrays.append(pa.array(values[leaf_fields[f.name]], f.type))
        else:  # an input column: the partition key (ONE ROW) or the row itself (ALL ROWS)
            arrays.append(table.column(f.name).take(pa.array(out_rows if plan.all_rows else [0] * len(kinds))).combine_chunks())
    yield pa.RecordBatch.from_arrays(arrays, schema=plan.schema)


def _acceptor(plan: Plan, table: pa.Table, rows: Rows):
    """accept(variable, row, start, labels) and the memo scope it allows."""
    checks: list[Any] = []
    local = True
    for cond in plan.conditions:
        if cond.column is not None:
            flags = table.column(cond.column).to_pylist()
            checks.append(("column", flags))
        elif cond.tokens:
            local = False
            ev = ConditionParser(cond.tokens, cond.text, "DEFINE").parse()
            checks.append(("glue", (cond.leaves, ev)))
        else:
            checks.append(("true", None))
    times = table.column(plan.within[0]).to_pylist() if plan.within else None
    bound = plan.within[1] if plan.within else 0

    def accept(v: int, row: int, start: int, labels: list) -> bool:
        if times is not None:
            if times[row] is None or times[start] is None or times[row] - times[start] >= bound:
                return False
        kind, data = checks[v]
        if kind == "column":
            return data[row] is True
        if kind == "true":
            return True
        leaves, ev = data
        vals = [leaf_value(leaf, rows, start, labels, len(labels), 0) for leaf in leaves]
        return ev(vals) is True

    scope = ("start" if times is not None else "partition") if local else None
    return accept, scope
