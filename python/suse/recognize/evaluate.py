"""Values that depend on the match: leaves (navigation, aggregates, CLASSIFIER, MATCH_NUMBER)
over a partition's rows, and the small three-valued evaluator for DEFINE conditions that look
at other rows of the match.

The evaluator understands what such a condition joins its leaves with: ``OR AND NOT``,
comparisons, ``IS [NOT] NULL``, ``[NOT] BETWEEN``, ``[NOT] IN (...)``, ``CASE``, ``+ - * / %``,
unary minus, parentheses, literals (numbers, strings, TRUE, FALSE, NULL) and the functions in
:data:`FUNCTIONS` (``abs coalesce nvl ifnull nullif greatest least if iff``), each with Spark's
NULL rules. These values meet only here, in the matcher's call back into Python, where Spark's own functions do
not run; any other function is refused by name when the statement is read (a function of one
row's columns is computed by Spark before matching: see :mod:`suse.recognize.expressions`).
Arithmetic follows Spark: integer division gives a double, a double mixed with a decimal gives
a double, and division by zero is an error (Spark's ANSI mode).
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, Optional, Sequence

from suse import _core
from suse.errors import SqlError
from suse.recognize.expressions import CLASSIFIER_VALUE, Agg, Classifier, Leaf, MatchNumber, Nav
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


def nav_row(leaf: Nav, rows: Rows, start: int, labels: Sequence[int], upto: int) -> Optional[int]:
    """The partition row a navigation leaf reads: among the first ``upto`` rows of the match,
    the one ``FIRST``/``LAST(qual, index)`` selects, then ``physical`` rows further; None where
    that is no row of the partition (the value is NULL)."""
    at = _core.recognize_nav_position(labels, upto, None if leaf.qual is None else rows.members[leaf.qual],
                                      leaf.logical == "FIRST", leaf.index)
    if at is None:
        return None
    row = start + at + leaf.physical
    if row >= rows.n and rows.open:
        raise Undecided(row)
    return row if 0 <= row < rows.n else None


def nav_spec(leaf: Nav, members: dict[str, frozenset]) -> tuple:
    """``leaf`` as the kernel reads it at the end of each match (``navs`` of
    :func:`suse.recognize.matcher.matches`): the same row :func:`nav_row` gives over the whole match."""
    return None if leaf.qual is None else sorted(members[leaf.qual]), leaf.logical == "FIRST", leaf.index, leaf.physical


# reader(rows, start, labels, upto, number): a leaf's value for the match so far
Reader = Callable[[Rows, int, Sequence[int], int, int], Any]


@functools.lru_cache(maxsize=512)
def leaf_reader(leaf: Leaf) -> Reader:
    """How ``leaf`` is read, decided once per leaf rather than once per value."""
    if isinstance(leaf, MatchNumber):
        return lambda rows, start, labels, upto, number: number
    if isinstance(leaf, Classifier):
        def classifier(rows: Rows, start: int, labels: Sequence[int], upto: int, number: int) -> Any:
            chosen = _rows_of(rows, leaf.qual, start, labels, upto)
            return rows.variables[labels[chosen[-1] - start]] if chosen else None
        return classifier
    if isinstance(leaf, Nav):
        def navigation(rows: Rows, start: int, labels: Sequence[int], upto: int, number: int) -> Any:
            row = nav_row(leaf, rows, start, labels, upto)
            return None if row is None else rows.columns[leaf.expr][row]
        return navigation
    assert isinstance(leaf, Agg)
    if leaf.expr is None and leaf.qual is None:  # count(*): every row of the match so far
        return lambda rows, start, labels, upto, number: upto
    return lambda rows, start, labels, upto, number: _aggregate(leaf, rows, start, labels, upto)


def leaf_value(leaf: Leaf, rows: Rows, start: int, labels: Sequence[int], upto: int, number: int) -> Any:
    """The leaf's value for the match so far: rows ``start .. start + upto - 1`` labelled ``labels``."""
    return leaf_reader(leaf)(rows, start, labels, upto, number)


def _aggregate(leaf: Agg, rows: Rows, start: int, labels: Sequence[int], upto: int) -> Any:
    chosen = _rows_of(rows, leaf.qual, start, labels, upto)
    if leaf.expr is None:
        return len(chosen)
    if leaf.key is not None:
        return _by(leaf, rows, chosen, start, labels)
    values = _values_at(rows, leaf.expr, chosen, start, labels)
    if leaf.func == "array_agg" and not leaf.distinct:
        return values  # Trino's array_agg keeps NULL elements; Spark's collect_list drops them
    values = [v for v in values if v is not None]
    if leaf.distinct:
        values = _distinct(values)
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


def _values_at(rows: Rows, expr: str, chosen: list[int], start: int, labels: Sequence[int]) -> list:
    """The values of row expression ``expr`` at the rows ``chosen`` of the match (``CLASSIFIER()``:
    each row's variable)."""
    if expr == CLASSIFIER_VALUE:
        return [rows.variables[labels[r - start]] for r in chosen]
    column = rows.columns[expr]
    return [column[r] for r in chosen]


def _by(leaf: Agg, rows: Rows, chosen: list[int], start: int, labels: Sequence[int]) -> Any:
    """max_by / min_by: the value at the row whose key is greatest / least; rows with a NULL key
    are skipped (the value may be NULL); of equal keys, the first row in match order wins
    (Trino does not document ties; its accumulator replaces its row only on a strictly
    greater / smaller key, so it keeps the first too)."""
    assert leaf.key is not None and leaf.expr is not None  # the parser gives max_by / min_by both
    keys, values = _values_at(rows, leaf.key, chosen, start, labels), _values_at(rows, leaf.expr, chosen, start, labels)
    better = operator.gt if leaf.func == "max_by" else operator.lt
    best = None
    for i, key in enumerate(keys):
        if key is not None and (best is None or _apply(better, key, keys[best])):
            best = i
    return None if best is None else values[best]


def _distinct(values: list) -> list:
    """The distinct values in order of first occurrence; NaN equals NaN, as in Spark's grouping."""
    seen: set = set()
    unhashable: list = []  # arrays and maps
    out = []
    for v in values:
        key = ("NaN",) if isinstance(v, float) and v != v else v
        try:
            if key in seen:
                continue
            seen.add(key)
        except TypeError:
            if key in unhashable:
                continue
            unhashable.append(key)
        out.append(v)
    return out


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
                        "(supported there: comparisons, AND, OR, NOT, IS [NOT] NULL, [NOT] BETWEEN, [NOT] IN, CASE, "
                        f"+ - * / %, literals and the functions {', '.join(sorted(f.lower() for f in FUNCTIONS))}); "
                        "apply other functions to the columns of one row (f(B.x), LAST(f(A.x))), which Spark computes, "
                        "or compute it as a column of the source first", tok.pos if tok is not None else len(self.text), self.text)

    def keyword(self, word: str) -> None:
        """Step over the keyword ``word``, which must come next."""
        if self.word() != word:
            raise self.fail(self.peek())
        self.i += 1

    def word_at(self, offset: int) -> str:
        k = self.i + offset
        return self.toks[k].text.upper() if k < len(self.toks) and self.toks[k].kind == "id" else ""

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
            return _not(self.negation())
        return self.comparison()

    def comparison(self) -> Eval:
        left = self.additive()
        negated = self.word() == "NOT" and self.word_at(1) in ("BETWEEN", "IN")
        if negated:
            self.i += 1
        if self.word() == "BETWEEN":  # Spark: low <= x AND x <= high, in three-valued logic
            self.i += 1
            low = self.additive()
            self.keyword("AND")
            high = self.additive()
            inside = _junction([lambda v: _apply(operator.le, low(v), left(v)), lambda v: _apply(operator.le, left(v), high(v))],
                               False)
            return _not(inside) if negated else inside
        if self.word() == "IN":
            self.i += 1
            items = self.call_arguments()
            member = _member(left, items)
            return _not(member) if negated else member
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
        if w == "CASE":
            return self.case()
        if w in FUNCTIONS and self.peek() is not None and self.peek().kind == "op" and self.peek().text == "(":
            arity, make = FUNCTIONS[w]
            args = self.call_arguments()
            if not arity[0] <= len(args) <= arity[1]:
                raise SqlError(f"{self.clause}: {t.text}() takes {_arity_text(arity)} arguments, found {len(args)}",
                               t.pos, self.text)
            return make(args)
        raise self.fail(t)

    def call_arguments(self) -> list[Eval]:
        """``( expr, ... )``: the arguments of a function or the list of IN."""
        if not self.op("("):
            raise self.fail(self.peek())
        args = [self.disjunction()]
        while self.op(","):
            args.append(self.disjunction())
        if not self.op(")"):
            raise self.fail(self.peek())
        return args

    def case(self) -> Eval:
        """``CASE [operand] WHEN .. THEN .. [ELSE ..] END``: the first WHEN that is TRUE (or, with
        an operand, equal to it) gives the value; none: the ELSE, or NULL."""
        operand = None if self.word() == "WHEN" else self.disjunction()
        branches = []
        while self.word() == "WHEN":
            self.i += 1
            when = self.disjunction()
            self.keyword("THEN")
            branches.append((when if operand is None else _compare_to(operand, when), self.disjunction()))
        if not branches:
            raise self.fail(self.peek())
        otherwise: Eval = lambda v: None  # noqa: E731
        if self.word() == "ELSE":
            self.i += 1
            otherwise = self.disjunction()
        self.keyword("END")

        def ev(v):
            for when, then in branches:
                if when(v) is True:
                    return then(v)
            return otherwise(v)
        return ev


def _not(inner: Eval) -> Eval:
    return lambda v: None if (x := inner(v)) is None else not x


def _compare_to(operand: Eval, value: Eval) -> Eval:
    return lambda v: _apply(operator.eq, operand(v), value(v))


def _member(left: Eval, items: list[Eval]) -> Eval:
    """``x IN (a, b, ..)`` as Spark: TRUE if one equals x, else NULL if x or one of them is NULL."""
    def ev(v):
        x = left(v)
        if x is None:
            return None
        unknown = False
        for item in items:
            y = item(v)
            if y is None:
                unknown = True
            elif _apply(operator.eq, x, y):
                return True
        return None if unknown else False
    return ev


def _coalesce(args: list[Eval]) -> Eval:
    def ev(v):  # lazily, as Spark: a later argument is not computed (and cannot fail) once one is not NULL
        for a in args:
            if (x := a(v)) is not None:
                return x
        return None
    return ev


def _extreme(pick) -> Callable[[list[Eval]], Eval]:
    """greatest / least: NULL arguments are skipped; NULL only when all are."""
    def make(args: list[Eval]) -> Eval:
        def ev(v):
            best = None
            for a in args:
                x = a(v)
                if x is not None and (best is None or _apply(pick, x, best)):
                    best = x
            return best
        return ev
    return make


def _if(args: list[Eval]) -> Eval:
    cond, then, otherwise = args
    return lambda v: then(v) if cond(v) is True else otherwise(v)


def _nullif(args: list[Eval]) -> Eval:
    a, b = args

    def ev(v):
        x = a(v)
        return None if x is not None and _apply(operator.eq, x, b(v)) else x
    return ev


def _abs(args: list[Eval]) -> Eval:
    (a,) = args
    return lambda v: None if (x := a(v)) is None else abs(x)


#: name -> ((least, most arguments), builder): what the evaluator runs with Spark's semantics
FUNCTIONS: dict[str, tuple[tuple[int, float], Callable[[list[Eval]], Eval]]] = {
    "ABS": ((1, 1), _abs),
    "COALESCE": ((1, float("inf")), _coalesce),
    "NVL": ((2, 2), _coalesce),
    "IFNULL": ((2, 2), _coalesce),
    "NULLIF": ((2, 2), _nullif),
    "GREATEST": ((2, float("inf")), _extreme(operator.gt)),
    "LEAST": ((2, float("inf")), _extreme(operator.lt)),
    "IF": ((3, 3), _if),
    "IFF": ((3, 3), _if),
}


def _arity_text(arity: tuple[int, float]) -> str:
    low, high = arity
    return str(low) if low == high else f"at least {low}"


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
