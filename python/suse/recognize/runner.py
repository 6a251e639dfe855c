"""The body of ``mapInArrow`` for standard MATCH_RECOGNIZE: a Spark partition sorted by
(partition keys, ORDER BY) arrives in Arrow batches; each run of equal keys is one row pattern
partition, matched by :mod:`suse.recognize.matcher`, and its output rows are built here.

Values a condition or an aggregate reads reach Python through ``to_pylist`` (exact: ints,
Decimals, datetimes, None for NULL), and only those columns; a navigation measure
(``A.price``, ``LAST(B.price, 1)``) records the row it reads and its values are gathered with
``take`` once per output batch, as ALL ROWS PER MATCH copies the input rows: never through
Python objects.
A matching failure (backtracking cap, impossible skip) becomes one row whose ``_suse_error``
holds the message; the caller turns it into Spark's ``raise_error``.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from suse import _core
from suse.errors import SuseError
from suse.recognize.columnar import ColumnarCondition, Neighbours
from suse.recognize.evaluate import ConditionParser, Rows, leaf_reader, leaf_value, nav_row, nav_spec
from suse.recognize.expressions import Agg, Classifier, Leaf, MatchNumber, Nav
from suse.recognize.matcher import Beyond, Cursor, Match, Program, Skip, Unmatched, matches

KIND_MATCH, KIND_EMPTY, KIND_UNMATCHED, KIND_LATE = 0, 1, 2, 3
KIND, ERROR = "_suse_kind", "_suse_error"
LATE = "_suse_late"  # streaming: a KIND_LATE row carries the number of rows dropped behind the watermark


@dataclass(frozen=True)
class Condition:
    """How a variable's DEFINE is decided: a boolean column Spark computed (``column``), a
    condition over neighbouring rows decided here over whole columns (``columnar``), a condition
    over leaves (``tokens`` of ``text``, parsed on the worker, evaluated per match), or always
    true (none of these)."""

    column: Optional[str] = None
    columnar: Optional[ColumnarCondition] = None
    leaves: tuple = ()
    tokens: tuple = ()
    text: str = ""
    row_local: bool = False  # the leaves read the current row or a fixed distance from it only


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
        bounds = _group_bounds(table, plan.keys)
        last = bounds[-2]  # the last group may continue in the next batch
        if last > 0:
            yield from _match_groups(plan, table.slice(0, last), bounds[:-1])
        pending = table.slice(last)
    if pending is not None and pending.num_rows:
        yield from _match_groups(plan, pending, [0, pending.num_rows])


def _key_rows(table: pa.Table, keys: Sequence[str]) -> list[tuple]:
    if not keys:
        return [()] * table.num_rows
    return list(zip(*(table.column(k).to_pylist() for k in keys)))


def _group_bounds(table: pa.Table, keys: Sequence[str]) -> list[int]:
    """Where each run of equal keys starts, and the end (NULL equals NULL; NaN does not equal NaN,
    as Python's tuples of the values compare)."""
    n = table.num_rows
    if n == 0:
        return []
    changes = np.zeros(n - 1, dtype=bool)
    for k in keys:
        column = table.column(k)
        after, before = column.slice(1), column.slice(0, n - 1)
        try:
            differ = pc.not_equal(after, before)
        except pa.ArrowNotImplementedError:  # nested types: compare the Python values
            rows = _key_rows(table, keys)
            return [0] + [i for i in range(1, n) if rows[i] != rows[i - 1]] + [n]
        null_after, null_before = pc.is_null(after), pc.is_null(before)
        differ = pc.if_else(pc.or_(null_after, null_before), pc.xor(null_after, null_before), differ)
        changes |= differ.to_numpy(zero_copy_only=False).astype(bool)
    return [0] + (np.flatnonzero(changes) + 1).tolist() + [n]


def _match_groups(plan: Plan, table: pa.Table, bounds: Sequence[int]) -> Iterator[pa.RecordBatch]:
    """Match the partitions ``table[bounds[i]:bounds[i + 1]]``: one output batch for all of them."""
    bounds = [x for x in bounds if x <= table.num_rows]
    measures = _kernel_measures(plan)
    if measures is not None:
        yield from _match_stretch(plan, table, bounds, measures)
        return
    data = {expr: table.column(col).to_pylist() for expr, col in _python_columns(plan).items()}
    flags = _flags(plan, table, bounds)
    times = table.column(plan.within[0]).to_pylist() if plan.within else None
    out = _Output(plan)
    for a, b in zip(bounds, bounds[1:]):
        if a == b:
            continue
        rows = Rows(b - a, {e: v[a:b] for e, v in data.items()}, plan.program.variables, plan.members)
        accept, scope = _acceptor(plan, [None if f is None else f[a:b] for f in flags], times[a:b] if times else None, rows)
        try:
            _match_partition(plan, rows, accept, scope, out, a)
        except SuseError as exc:
            yield error_batch(plan, table.slice(a), exc)
            return
    if out.kinds:
        yield out.batch(table)


def _kernel_measures(plan: Plan) -> Optional[list[Optional[tuple]]]:
    """The MEASURES leaves as :func:`suse._core.recognize_stretch` reads them (None for
    MATCH_NUMBER, which comes with every output row), when the kernel can give the whole output:
    every DEFINE condition a column of flags (or none) and no WITHIN; otherwise None (the
    per-match path, which reads Python's values)."""
    if plan.within is not None or any(c.tokens for c in plan.conditions):
        return None
    measures: list[Optional[tuple]] = []
    for leaf in plan.leaves:
        whole = getattr(leaf, "final", False) or not plan.all_rows
        qual = getattr(leaf, "qual", None)
        members = None if qual is None else sorted(plan.members[qual])
        if isinstance(leaf, MatchNumber):
            measures.append(None)
        elif isinstance(leaf, Nav) and leaf.expr in plan.expr_columns:
            measures.append(("row", members, whole, leaf.logical == "FIRST", leaf.index, leaf.physical))
        elif isinstance(leaf, Agg) and leaf.func == "count" and leaf.expr is None:
            measures.append(("count", members, whole, False, 0, 0))
        elif isinstance(leaf, Classifier):
            measures.append(("classifier", members, whole, False, 0, 0))
        else:
            return None
    return measures


def _match_stretch(plan: Plan, table: pa.Table, bounds: Sequence[int], measures: list[Optional[tuple]]) -> Iterator[pa.RecordBatch]:
    """:func:`_match_groups` in one call of the kernel, whose flat columns become the batch."""
    flags = _flags(plan, table, bounds)
    n = table.num_rows
    program = plan.program
    rows, kinds, numbers, columns, failed = _core.recognize_stretch(
        (program.code, program.registers, len(program.variables)),
        [b"\x01" * n if f is None else f for f in flags], list(bounds),
        ("partition", plan.max_steps, 0, plan.skip.mode, sorted(plan.skip.targets), plan.skip.name),
        (plan.all_rows, plan.empty), [m for m in measures if m is not None])
    if failed is not None:
        at, exc = failed
        assert isinstance(exc, SuseError)  # a RecognizeError: an AFTER MATCH SKIP that cannot be followed
        yield error_batch(plan, table.slice(at), exc)
        return
    if not len(kinds):
        return
    by_leaf = iter(columns)
    values = [numbers if m is None else next(by_leaf) for m in measures]

    def leaf_array(k: int, type_: pa.DataType) -> pa.Array:
        present = pa.array(values[k], pa.int64(), mask=values[k] < 0)  # -1: NULL
        leaf = plan.leaves[k]
        if isinstance(leaf, Nav):  # the rows it reads
            return _as_type(table.column(plan.expr_columns[leaf.expr]).take(present).combine_chunks(), type_)
        if isinstance(leaf, Classifier):  # the variables' indices
            return _as_type(pa.array(program.variables, pa.string()).take(present), type_)
        return _as_type(present, type_)  # MATCH_NUMBER, a count

    yield _assemble(plan, table, pa.array(rows, pa.int64()), pa.array(kinds.astype(np.int32)), leaf_array)


def _assemble(plan: Plan, table: pa.Table, take: pa.Array, kinds: pa.Array, leaf_array) -> pa.RecordBatch:
    """The output batch: ``take`` the input row each output row stands for (the partition key
    for ONE ROW PER MATCH, the row itself for ALL ROWS), ``kinds`` its kind, and
    ``leaf_array(k, type)`` the column of MEASURES leaf ``k``."""
    arrays = []
    leaf_fields = {f"_suse_l{k}": k for k in range(len(plan.leaves))}
    for f in plan.schema:
        if f.name == KIND:
            arrays.append(_as_type(kinds, f.type))
        elif f.name in (ERROR, LATE):
            arrays.append(pa.nulls(len(kinds), f.type))
        elif f.name in leaf_fields:
            arrays.append(leaf_array(leaf_fields[f.name], f.type))
        else:  # an input column: the partition key (ONE ROW) or the row itself (ALL ROWS)
            arrays.append(table.column(f.name).take(take).combine_chunks())
    return pa.RecordBatch.from_arrays(arrays, schema=plan.schema)


class _Output:
    """The output rows of a stretch of partitions, built column by column: a navigation leaf
    keeps the row it reads (gathered with ``take`` in :meth:`batch`), any other leaf its value."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.rows: list[int] = []  # the input row (ALL ROWS) or the partition's first row (ONE ROW)
        self.kinds: list[int] = []
        self.values: list[list] = [[] for _ in plan.leaves]
        finals = [getattr(leaf, "final", False) or not plan.all_rows for leaf in plan.leaves]
        read_at_end = [(k, leaf) for k, leaf in enumerate(plan.leaves) if isinstance(leaf, Nav) and finals[k]]
        gathered = [k for k, _ in read_at_end]
        self.navs = [nav_spec(leaf, plan.members) for _, leaf in read_at_end]  # their rows come with each match
        # per leaf, decided once: (its list, reads the whole match?, navigation leaf or None, reader,
        # where in a match's ``reads`` its row is or -1)
        self.leaves = [(self.values[k], finals[k], leaf if isinstance(leaf, Nav) else None, leaf_reader(leaf),
                        gathered.index(k) if k in gathered else -1) for k, leaf in enumerate(plan.leaves)]

    def emit(self, rows: Rows, offset: int, row: int, kind: int, start: int, labels: Sequence[int], upto: int,
             number: int, reads: Sequence[Optional[int]] = ()) -> None:
        """One output row for partition row ``row``, the partition being rows ``offset ..`` of the
        stretch; ``reads``: the match's rows of :attr:`navs`."""
        self.rows.append(offset + row)
        self.kinds.append(kind)
        if kind == KIND_UNMATCHED:
            for values, *_ in self.leaves:
                values.append(None)
            return
        whole = len(labels)
        for values, final, nav, reader, j in self.leaves:
            if j >= 0 and reads:
                at = reads[j]
                values.append(None if at is None else offset + at)
            elif nav is not None:
                at = nav_row(nav, rows, start, labels, whole if final else upto)
                values.append(None if at is None else offset + at)
            else:
                values.append(reader(rows, start, labels, whole if final else upto, number))

    def batch(self, table: pa.Table) -> pa.RecordBatch:
        def leaf_array(k: int, type_: pa.DataType) -> pa.Array:
            leaf = self.plan.leaves[k]
            if isinstance(leaf, Nav):  # the rows it reads (None: NULL)
                column = table.column(self.plan.expr_columns[leaf.expr]).take(pa.array(self.values[k], pa.int64()))
                return _as_type(column.combine_chunks(), type_)
            return pa.array(self.values[k], type_)

        return _assemble(self.plan, table, pa.array(self.rows, pa.int64()), pa.array(self.kinds, pa.int32()), leaf_array)


def _as_type(array: pa.Array, type_: pa.DataType) -> pa.Array:
    return array if array.type == type_ else array.cast(type_)


def _python_columns(plan: Plan) -> dict:
    """The row expressions read as Python values (expression -> input column): those of the
    conditions decided here and of the measures other than navigation (which are gathered)."""
    leaves = [leaf for c in plan.conditions for leaf in c.leaves] + [leaf for leaf in plan.leaves if not isinstance(leaf, Nav)]
    read = {e for leaf in leaves for e in (getattr(leaf, "expr", None), getattr(leaf, "key", None)) if e is not None}
    return {e: c for e, c in plan.expr_columns.items() if e in read}


def _match_partition(plan: Plan, rows: Rows, accept, scope, out: _Output, offset: int,
                     resume: Optional[Resume] = None) -> None:
    """Match one partition (rows ``offset ..`` of the stretch) and add its output rows to ``out``;
    streaming: from ``resume`` on, up to the first match not decided yet."""
    all_rows = plan.all_rows
    r = resume or Resume()
    reach = max([leaf.physical for leaf in plan.leaves if isinstance(leaf, Nav)] + [0])  # NEXT in MEASURES
    for m in matches(plan.program, rows.n, accept, plan.skip, scope, plan.max_steps, r.cursor, r.base, r.beyond, out.navs):
        if rows.open and isinstance(m, Match) and m.labels and m.end - 1 + reach >= rows.n:
            return  # the match is final, a value its MEASURES read is not yet: emit it later
        if isinstance(m, Unmatched):
            if all_rows and plan.empty == "unmatched":
                out.emit(rows, offset, m.row, KIND_UNMATCHED, m.row, (), 0, 0)
            continue
        if not m.labels:
            if not all_rows or plan.empty != "omit":
                out.emit(rows, offset, m.start if all_rows else 0, KIND_EMPTY, m.start, (), 0, m.number)
            continue
        if not all_rows:
            out.emit(rows, offset, 0, KIND_MATCH, m.start, m.labels, len(m.labels), m.number, m.reads)
            continue
        for i, excluded in enumerate(m.excluded):
            if not excluded:
                out.emit(rows, offset, m.start + i, KIND_MATCH, m.start, m.labels, i + 1, m.number, m.reads)


@dataclass
class Resume:
    """Streaming: matching resumes at ``cursor`` (rows counted in the buffer); the buffer's
    row 0 is partition row ``base``; ``beyond`` as in :func:`suse.recognize.matcher.matches`."""

    cursor: Cursor = dataclasses.field(default_factory=Cursor)
    base: int = 0
    beyond: Beyond = None


def lookback(plan: Plan) -> int:
    """How many rows before a match its DEFINE and MEASURES read (PREV): what a streaming
    buffer keeps before the next start row."""
    leaves = list(plan.leaves) + [leaf for c in plan.conditions for leaf in c.leaves]
    return max([-leaf.physical for leaf in leaves if isinstance(leaf, Nav)] + [0])


def advance(plan: Plan, table: pa.Table, final: int, resume: Resume, frontier: Optional[int]) -> tuple[list[pa.RecordBatch], int]:
    """One streaming step of one partition. ``table``: its buffered rows in order, of which the
    first ``final`` can no longer change place (older than the watermark); ``frontier``: the
    least ``within`` time a row still to come can have (None: unknown). Emits every match now
    decided (the batch run over the whole partition emits the same rows), moves
    ``resume.cursor`` past them, and returns the output and how many leading rows of ``table``
    no later step needs."""
    part = table.slice(0, final)
    data = {expr: part.column(col).to_pylist() for expr, col in _python_columns(plan).items()}
    flags = _flags(plan, part, [0, final])
    times = part.column(plan.within[0]).to_pylist() if plan.within else None
    rows = Rows(final, data, plan.program.variables, plan.members, open=True)
    accept, scope = _acceptor(plan, flags, times, rows)
    if plan.within and times is not None and frontier is not None:
        bound = plan.within[1]  # a row still to come is at least ``frontier``: past the bound, it fails
        resume.beyond = lambda start: times[start] is not None and frontier - times[start] < bound
    else:
        resume.beyond = lambda start: True
    out = _Output(plan)
    try:
        _match_partition(plan, rows, accept, scope, out, 0, resume)
    except SuseError as exc:
        return [error_batch(plan, table, exc)], 0
    batches = [out.batch(table)] if out.kinds else []
    return batches, max(0, min(resume.cursor.pos, final) - lookback(plan))


def late_batch(plan: Plan, dropped: int) -> pa.RecordBatch:
    """One row that says ``dropped`` rows came behind the watermark (not a row of the output:
    the caller counts it into an observed metric and filters it out)."""
    arrays = [pa.array([KIND_LATE], f.type) if f.name == KIND else pa.array([dropped], f.type) if f.name == LATE
              else pa.nulls(1, f.type) for f in plan.schema]
    return pa.RecordBatch.from_arrays(arrays, schema=plan.schema)


def error_batch(plan: Plan, table: pa.Table, exc: SuseError) -> pa.RecordBatch:
    """One row whose ``_suse_error`` says what failed in the partition of ``table``'s first row."""
    where = ", ".join(f"{k}={v!r}" for k, v in zip(plan.keys, _key_rows(table.slice(0, 1), plan.keys)[0]))
    message = f"MATCH_RECOGNIZE: {exc}" + (f" (partition {where})" if where else "")
    arrays = [pa.nulls(1, f.type) if f.name != ERROR else pa.array([message], pa.string()) for f in plan.schema]
    return pa.RecordBatch.from_arrays(arrays, schema=plan.schema)


@functools.lru_cache(maxsize=64)
def _evaluator(cond: Condition):
    """The parsed DEFINE condition: once per worker, not once per partition."""
    return ConditionParser(cond.tokens, cond.text, "DEFINE").parse()


def _flags(plan: Plan, table: pa.Table, bounds: Sequence[int]) -> list[Optional[bytes]]:
    """Per variable, its DEFINE decided for every row of ``table`` (partitions
    ``table[bounds[i]:bounds[i + 1]]``), one byte per row: 1 where TRUE (NULL and FALSE: 0);
    None where it is decided per match or there is none."""
    neighbours = Neighbours(table, bounds) if any(c.columnar for c in plan.conditions) else None

    def flags(c: Condition) -> Optional[bytes]:
        if c.column is not None:
            return pc.fill_null(table.column(c.column), False).to_numpy(zero_copy_only=False).astype(np.uint8).tobytes()
        if c.columnar is not None and neighbours is not None:
            return neighbours.decide(c.columnar)
        return None

    return [flags(c) for c in plan.conditions]


def _acceptor(plan: Plan, flags: list[Optional[bytes]], times: Optional[list], rows: Rows):
    """accept(variable, row, start, labels) and the memo scope it allows; ``flags`` as
    :func:`_flags` gives them."""
    checks: list[Any] = []
    local = True  # every condition depends on its row alone
    for cond, flag in zip(plan.conditions, flags):
        if flag is not None:
            checks.append(("column", flag))
        elif cond.tokens:
            local = local and cond.row_local
            checks.append(("glue", (cond.leaves, _evaluator(cond))))
        else:
            checks.append(("true", None))
    bound = plan.within[1] if plan.within else 0
    if times is None and all(kind != "glue" for kind, _ in checks):  # the common case, kept to one list lookup per row
        table = [data if kind == "column" else b"\x01" * rows.n for kind, data in checks]

        def by_row(v: int, row: int, start: int, labels: list) -> bool:
            return table[v][row] == 1

        by_row.table = table  # type: ignore[attr-defined]
        return by_row, "partition"

    def accept(v: int, row: int, start: int, labels: list) -> bool:
        if times is not None:
            if times[row] is None or times[start] is None or times[row] - times[start] >= bound:
                return False
        kind, data = checks[v]
        if kind == "column":
            return data[row] == 1
        if kind == "true":
            return True
        leaves, ev = data
        vals = [leaf_value(leaf, rows, start, labels, len(labels), 0) for leaf in leaves]
        return ev(vals) is True

    scope = ("start" if times is not None else "partition") if local else None
    return accept, scope
