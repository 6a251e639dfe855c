"""Values that depend on the match: leaves (navigation, aggregates, CLASSIFIER, MATCH_NUMBER)
over a partition's rows, and the small three-valued evaluator for DEFINE conditions that look
at other rows of the match.

The evaluator understands what such a condition joins its leaves with: ``OR AND NOT``,
comparisons, ``IS [NOT] NULL``, ``+ - * / %``, unary minus, parentheses and literals (numbers,
strings, TRUE, FALSE, NULL). Anything else next to a leaf is refused by name when the statement
is read: compute it in a column of the source, or write it where it does not touch a leaf.
Arithmetic follows Spark: integer division gives a double, a double mixed with a decimal gives
a double, and division by zero is an error (Spark's ANSI mode).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Optional, Sequence

from suse.errors import SqlError
from suse.recognize.expressions import Agg, Classifier, Leaf, MatchNumber, Nav
from suse.recognize.matcher import RecognizeError, Undecided


@dataclass
class Rows:
    """One partition: ``columns[expr]`` the values of each row expression, in row order;
    ``variables`` the pattern variables by index; ``members[name]`` the variable indices a
    variable or subset name stands for; ``open``: more rows follow (streaming), so a value
    read after the last row is not NULL but not known yet (:class:`Undecided`)."""

    n: int
    columns: dict[str, list]
    variables: Sequence[str]
    members: dict[str, frozenset]
    open: bool = False


def _rows_of(rows: Rows, qual: Optional[str], start: int, labels: Sequence[int], upto: int):
    wanted = None if qual is None else rows.members[qual]
    return [start + i for i in range(upto) if wanted is None or labels[i] in wanted]


def _nth_row(rows: Rows, leaf: Nav, start: int, labels: Sequence[int], upto: int) -> Optional[int]:
    """The row ``FIRST``/``LAST(qual, index)`` selects among the first ``upto`` rows of the match."""
    wanted = None if leaf.qual is None else rows.members[leaf.qual]
    seen = 0
    steps = range(upto) if leaf.logical == "FIRST" else range(upto - 1, -1, -1)
    for i in steps:
        if wanted is None or labels[i] in wanted:
            if seen == leaf.index:
                return start + i
            seen += 1
    return None


def leaf_value(leaf: Leaf, rows: Rows, start: int, labels: Sequence[int], upto: int, number: int) -> Any:
    """The leaf's value for the match so far: rows ``start .. start + upto - 1`` labelled ``labels``."""
    if isinstance(leaf, MatchNumber):
        return number
    if isinstance(leaf, Classifier):
        chosen = _rows_of(rows, leaf.qual, start, labels, upto)
        return rows.variables[labels[chosen[-1] - start]] if chosen else None
    if isinstance(leaf, Nav):
        row = _nth_row(rows, leaf, start, labels, upto)
        if row is None:
            return None
        row += leaf.physical
        if row >= rows.n and rows.open:
            raise Undecided(row)
        return rows.columns[leaf.expr][row] if 0 <= row < rows.n else None
    assert isinstance(leaf, Agg)
    chosen = _rows_of(rows, leaf.qual, start, labels, upto)
    if leaf.expr is None:
        return len(chosen)
    values = [rows.columns[leaf.expr][r] for r in chosen]
    values = [v for v in values if v is not None]
    if leaf.func == "count":
        return len(values)
    if leaf.func in ("array_agg", "collect_list"):
        return values
    if not values:
        return None
    if leaf.func == "min":
        return min(values)
    if leaf.func == "max":
        return max(values)
    total = _sum(values)
    if leaf.func == "sum":
        return total
    return float(total) / len(values)  # avg


def _sum(values: list) -> Any:
    if any(isinstance(v, float) for v in values):
        return sum(float(v) for v in values)
    return sum(values)


# --- the DEFINE evaluator -------------------------------------------------------------------------

Eval = Callable[[Sequence[Any]], Any]
_COMPARE = {"=": operator.eq, "==": operator.eq, "<>": operator.ne, "!=": operator.ne, "<": operator.lt,
            "<=": operator.le, ">": operator.gt, ">=": operator.ge}


class ConditionParser:
    """Parses the text of a condition in which each leaf is the identifier ``_suse_leafK``."""

    def __init__(self, tokens: Sequence, text: str, clause: str):
        self.toks = list(tokens)
        self.text = text
        self.clause = clause
        self.i = 0

    def fail(self, tok) -> SqlError:
        shown = "the end" if tok is None else repr(tok.text)
        return SqlError(f"{self.clause}: {shown} is not supported in a condition that refers to other rows of the match "
                        "(supported there: comparisons, AND, OR, NOT, IS [NOT] NULL, + - * / %, literals); "
                        "compute it as a column of the source first", tok.pos if tok is not None else len(self.text), self.text)

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def word(self) -> str:
        t = self.peek()
        return t.text.upper() if t is not None and t.kind == "id" else ""

    def op(self, *texts: str) -> Optional[str]:
        t = self.peek()
        if t is not None and t.kind == "op" and t.text in texts:
            self.i += 1
            return t.text
        return None

    def parse(self) -> Eval:
        ev = self.disjunction()
        if self.peek() is not None:
            raise self.fail(self.peek())
        return ev

    def disjunction(self) -> Eval:
        parts = [self.conjunction()]
        while self.word() == "OR":
            self.i += 1
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else _junction(parts, True)

    def conjunction(self) -> Eval:
        parts = [self.negation()]
        while self.word() == "AND":
            self.i += 1
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else _junction(parts, False)

    def negation(self) -> Eval:
        if self.word() == "NOT":
            self.i += 1
            inner = self.negation()
            return lambda v: None if (x := inner(v)) is None else not x
        return self.comparison()

    def comparison(self) -> Eval:
        left = self.additive()
        if self.word() == "IS":
            self.i += 1
            negate = self.word() == "NOT"
            if negate:
                self.i += 1
            if self.word() != "NULL":
                raise self.fail(self.peek())
            self.i += 1
            return (lambda v: left(v) is not None) if negate else (lambda v: left(v) is None)
        t = self.peek()
        if t is not None and t.kind == "op" and t.text in _COMPARE:
            self.i += 1
            cmp = _COMPARE[t.text]
            right = self.additive()
            return lambda v: _apply(cmp, left(v), right(v))
        return left

    def additive(self) -> Eval:
        ev = self.multiplicative()
        while (o := self.op("+", "-")) is not None:
            right = self.multiplicative()
            ev = _arith(o, ev, right)
        return ev

    def multiplicative(self) -> Eval:
        ev = self.unary()
        while (o := self.op("*", "/", "%")) is not None:
            right = self.unary()
            ev = _arith(o, ev, right)
        return ev

    def unary(self) -> Eval:
        if self.op("-"):
            inner = self.unary()
            return lambda v: None if (x := inner(v)) is None else -x
        if self.op("+"):
            return self.unary()
        return self.primary()

    def primary(self) -> Eval:
        t = self.peek()
        if t is None:
            raise self.fail(None)
        self.i += 1
        if t.kind == "op" and t.text == "(":
            ev = self.disjunction()
            if not self.op(")"):
                raise self.fail(self.peek())
            return ev
        if t.kind == "num":
            value = Decimal(t.text) if "." in t.text else int(t.text)
            return lambda v: value
        if t.kind == "str":
            s = t.text[1:-1].replace("''", "'")
            return lambda v: s
        w = t.text.upper() if t.kind == "id" else ""
        if w in ("TRUE", "FALSE"):
            b = w == "TRUE"
            return lambda v: b
        if w == "NULL":
            return lambda v: None
        if t.kind == "id" and t.text.startswith("_suse_leaf") and not (self.peek() is not None and self.peek().text == "("):
            k = int(t.text[len("_suse_leaf"):])
            return lambda v: v[k]
        raise self.fail(t)


def _junction(parts: list[Eval], decisive: bool) -> Eval:
    """OR (decisive True) or AND (decisive False) in three-valued logic: one decisive part
    settles it, else any unknown part makes it unknown."""
    def ev(v):
        unknown = False
        for p in parts:
            x = p(v)
            if x is decisive:
                return decisive
            unknown |= x is None
        return None if unknown else not decisive
    return ev


def _coerce(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, float) and isinstance(b, Decimal):
        return a, float(b)
    if isinstance(b, float) and isinstance(a, Decimal):
        return float(a), b
    return a, b


def _apply(fn, a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    a, b = _coerce(a, b)
    try:
        return fn(a, b)
    except TypeError:
        raise RecognizeError(f"cannot compare or combine {a!r} and {b!r} in a DEFINE condition") from None


def _divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise RecognizeError("division by zero in a DEFINE condition")
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        return a / b  # Spark: integer / integer is a double
    return a / b


def _modulo(a: Any, b: Any) -> Any:
    if b == 0:
        raise RecognizeError("division by zero (%) in a DEFINE condition")
    return a - b * int(a / b) if isinstance(a, float) or isinstance(b, float) else (abs(a) % abs(b)) * (1 if a >= 0 else -1)


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _divide, "%": _modulo}


def _arith(o: str, left: Eval, right: Eval) -> Eval:
    fn = _ARITH[o]
    return lambda v: _apply(fn, left(v), right(v))
