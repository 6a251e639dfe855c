"""DEFINE conditions that read neighbouring rows (``price < PREV(price)``), decided over whole
columns in the matcher's worker instead of by Spark.

Spark computes ``PREV``/``NEXT`` as ``lag``/``lead`` over a window, which costs a second
sorted pass over the partition (about a fifth of a standard MATCH_RECOGNIZE on 10 M rows). The
worker already holds each partition whole and in order, so a neighbour is a shifted column.
Only what can be decided exactly as Spark decides it comes here: comparisons
(``= == <> != < <= > >=``) of row expressions of integral or DOUBLE type and integer
literals, ``IS [NOT] NULL``, ``AND``/``OR``/``NOT`` and parentheses, with Spark's rules (an
integer meets a double as a double; NaN equals NaN and is greater than every other number; a
NULL operand makes a comparison NULL; AND/OR are three-valued). Anything else (arithmetic,
decimals, FLOAT columns, strings, functions) stays with Spark:
:func:`columnar_condition` returns None and the caller keeps the ``lag`` column.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from suse.recognize.expressions import Leaf, Nav

INTEGRAL, FLOATING = "int", "float"
_COMPARISONS = {"=": np.equal, "==": np.equal, "<>": np.not_equal, "!=": np.not_equal, "<": np.less,
                "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
_INT64 = (-(2 ** 63), 2 ** 63 - 1)


@dataclass(frozen=True)
class Operand:
    """A row expression's column read ``shift`` rows away (PREV: -1), or an integer literal."""

    column: Optional[str]
    shift: int = 0
    kind: str = INTEGRAL
    literal: int = 0


@dataclass(frozen=True)
class Compare:
    op: str
    left: Operand
    right: Operand


@dataclass(frozen=True)
class IsNull:
    operand: Operand
    negated: bool


@dataclass(frozen=True)
class Junction:
    """AND (``any_=False``) or OR (``any_=True``) of its parts."""

    parts: tuple
    any_: bool


@dataclass(frozen=True)
class Not:
    part: Test


Test = Union[Compare, IsNull, Junction, Not]


@dataclass(frozen=True)
class ColumnarCondition:
    test: Test


def columnar_condition(tokens: Sequence, leaves: Sequence[Leaf], columns: dict[str, str],
                       kinds: dict[str, Optional[str]]) -> Optional[ColumnarCondition]:
    """A row-local DEFINE (its text as ``tokens`` with each leaf as ``_suse_leafK``) as a
    condition the worker decides, or None where Spark must. ``columns``: the column of each row
    expression; ``kinds``: each such column's :data:`INTEGRAL` / :data:`FLOATING` kind (None:
    neither)."""
    operands: list[Optional[Operand]] = []
    for leaf in leaves:
        if not isinstance(leaf, Nav) or leaf.expr not in columns or kinds.get(columns[leaf.expr]) is None:
            operands.append(None)
        else:
            column = columns[leaf.expr]
            operands.append(Operand(column, leaf.physical, kinds[column] or INTEGRAL))
    test = _Reader(tokens, operands).read()
    return None if test is None else ColumnarCondition(test)


class _NotColumnar(Exception):
    pass


class _Reader:
    """Recursive descent over the condition's tokens; anything outside the subset raises
    :class:`_NotColumnar` (caught in :meth:`read`)."""

    def __init__(self, tokens: Sequence, operands: list[Optional[Operand]]):
        self.toks = list(tokens)
        self.operands = operands
        self.i = 0

    def read(self) -> Optional[Test]:
        try:
            test = self.disjunction()
            if self.i != len(self.toks):
                raise _NotColumnar
            return test
        except _NotColumnar:
            return None

    def peek(self, at: int = 0):
        k = self.i + at
        return self.toks[k] if k < len(self.toks) else None

    def word(self, at: int = 0) -> str:
        t = self.peek(at)
        return t.text.upper() if t is not None and t.kind == "id" else ""

    def is_op(self, text: str) -> bool:
        t = self.peek()
        return t is not None and t.kind == "op" and t.text == text

    def disjunction(self) -> Test:
        return self.junction("OR", self.conjunction)

    def conjunction(self) -> Test:
        return self.junction("AND", self.negation)

    def junction(self, word: str, part) -> Test:
        """``part`` joined by ``word`` (OR binds looser than AND: its parts are conjunctions)."""
        parts = [part()]
        while self.word() == word:
            self.i += 1
            parts.append(part())
        return parts[0] if len(parts) == 1 else Junction(tuple(parts), word == "OR")

    def negation(self) -> Test:
        if self.word() == "NOT":
            self.i += 1
            return Not(self.negation())
        if self.is_op("(") and not self._parenthesised_operand():
            return self.parenthesised(self.disjunction)
        return self.comparison()

    def parenthesised(self, inner):
        """What ``inner`` reads between the '(' here and its ')'."""
        self.i += 1
        read = inner()
        if not self.is_op(")"):
            raise _NotColumnar
        self.i += 1
        return read

    def _parenthesised_operand(self) -> bool:
        """Whether the '(' here opens a parenthesised operand, ``(x) < 3``, not a condition."""
        depth, k = 0, self.i
        while k < len(self.toks):
            t = self.toks[k]
            if t.kind == "op" and t.text == "(":
                depth += 1
            elif t.kind == "op" and t.text == ")":
                depth -= 1
                if depth == 0:
                    after = self.toks[k + 1] if k + 1 < len(self.toks) else None
                    return after is not None and (after.kind == "op" and after.text in _COMPARISONS
                                                  or after.kind == "id" and after.text.upper() == "IS")
            k += 1
        return False

    def comparison(self) -> Test:
        left = self.operand()
        if self.word() == "IS":
            self.i += 1
            negated = self.word() == "NOT"
            self.i += negated
            if self.word() != "NULL":
                raise _NotColumnar
            self.i += 1
            return IsNull(left, negated)
        t = self.peek()
        if t is None or t.kind != "op" or t.text not in _COMPARISONS:
            raise _NotColumnar
        self.i += 1
        return Compare(t.text, left, self.operand())

    def operand(self) -> Operand:
        if self.is_op("("):
            return self.parenthesised(self.operand)
        sign = 1
        if self.is_op("-"):
            self.i += 1
            sign = -1
        t = self.peek()
        if t is None:
            raise _NotColumnar
        self.i += 1
        if t.kind == "num" and t.text.isdigit():
            value = sign * int(t.text)
            if not _INT64[0] <= value <= _INT64[1]:
                raise _NotColumnar  # a DECIMAL literal in Spark
            return Operand(None, literal=value)
        if sign == 1 and t.kind == "id" and t.text.startswith("_suse_leaf") and t.text[10:].isdigit():
            found = self.operands[int(t.text[10:])]
            if found is not None:
                return found
        raise _NotColumnar


# --- deciding it over a stretch of partitions ------------------------------------------------------

Values = tuple[np.ndarray, np.ndarray]  # (values, valid)
Truth = tuple[np.ndarray, np.ndarray]  # (true, known): true only where known


class Neighbours:
    """The rows of ``table`` whose partitions are ``table[bounds[i]:bounds[i + 1]]``, for
    deciding conditions: each column, and each shift of it, is read once for all of them."""

    def __init__(self, table: pa.Table, bounds: Sequence[int]):
        self.table = table
        self.n = table.num_rows
        starts = np.asarray(bounds[:-1], dtype=np.int64)
        lengths = np.asarray(bounds[1:], dtype=np.int64) - starts
        self.position = np.arange(self.n, dtype=np.int64) - np.repeat(starts, lengths)  # within the partition
        self.remaining = np.repeat(lengths, lengths) - self.position  # rows from this one to the partition's end
        self.cache: dict = {}

    def decide(self, cond: ColumnarCondition) -> bytes:
        """One byte per row: 1 where the condition is TRUE (a neighbour outside its row's
        partition is NULL)."""
        true, known = _truth(cond.test, self.values, self.n)
        return (true & known).astype(np.uint8).tobytes()

    def values(self, o: Operand) -> Values:
        key = (o.column, o.shift, o.kind)
        if key not in self.cache:
            if o.shift == 0:
                self.cache[key] = _column(self.table.column(o.column), o.kind)
            else:
                self.cache[key] = self.shifted(self.values(Operand(o.column, 0, o.kind)), o.shift)
        return self.cache[key]

    def shifted(self, vals: Values, shift: int) -> Values:
        """Row i holds row i + shift of its partition, NULL where that is outside it."""
        data, valid = vals
        k = min(abs(shift), self.n)
        if shift < 0:
            data = np.concatenate([data[:k], data[:self.n - k]])
            inside = self.position >= k
            valid = np.concatenate([valid[:k], valid[:self.n - k]]) & inside
        else:
            data = np.concatenate([data[k:], data[self.n - k:]])
            inside = self.remaining > k
            valid = np.concatenate([valid[k:], valid[self.n - k:]]) & inside
        return data, valid


def _column(column: pa.ChunkedArray, kind: str) -> Values:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    array = array.cast(pa.int64() if kind == INTEGRAL else pa.float64())
    if array.null_count == 0:
        return np.asarray(array.to_numpy(zero_copy_only=False)), np.ones(len(array), dtype=bool)
    valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return np.asarray(pc.fill_null(array, 0).to_numpy(zero_copy_only=False)), valid


def _truth(test: Test, values, n: int) -> Truth:
    if isinstance(test, Compare):
        return _compare(test, values, n)
    if isinstance(test, IsNull):
        valid = values(test.operand)[1] if test.operand.column is not None else np.ones(n, dtype=bool)
        return (valid if test.negated else ~valid), np.ones(n, dtype=bool)
    if isinstance(test, Not):
        true, known = _truth(test.part, values, n)
        return ~true & known, known
    parts = [_truth(p, values, n) for p in test.parts]
    true, known = parts[0]
    for t2, k2 in parts[1:]:
        if test.any_:  # OR: TRUE if either is, FALSE if both are
            true, known = true | t2, (true | t2) | (known & k2)
        else:  # AND: FALSE if either is, TRUE if both are
            false = (known & ~true) | (k2 & ~t2)
            true, known = true & t2, false | (true & t2)
    return true, known


def _compare(test: Compare, values, n: int) -> Truth:
    floating = any(o.column is not None and o.kind == FLOATING for o in (test.left, test.right))

    def side(o: Operand) -> Values:
        if o.column is not None:
            data, valid = values(o)
            return (data.astype(np.float64) if floating else data), valid  # Spark: an integer meets a double as a double
        return np.full(n, float(o.literal) if floating else o.literal), np.ones(n, dtype=bool)

    (a, va), (b, vb) = side(test.left), side(test.right)
    known = va & vb
    with np.errstate(invalid="ignore"):
        result = _spark_float_compare(test.op, a, b) if floating else _COMPARISONS[test.op](a, b)
    return result & known, known


def _spark_float_compare(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spark's order of doubles: NaN equals NaN and is greater than any other value."""
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    less = (a < b) | (~nan_a & nan_b)
    equal = (a == b) | (nan_a & nan_b)
    if op in ("=", "=="):
        return equal
    if op in ("<>", "!="):
        return ~equal
    if op == "<":
        return less
    if op == "<=":
        return less | equal
    if op == ">":
        return ~(less | equal)
    return ~less  # >=
