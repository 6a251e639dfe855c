"""Conditions between a match's events: ``where={"B": "B.p > LAST(B.p, 1)"}``.

A condition belongs to one letter X of the query; a match counts only if every element with
letter X satisfies it, judged against the match *so far* (the elements before it in time
order, and the element itself). This module parses the condition language into a typed,
frozen syntax tree, checks it against the query, evaluates it with SQL's three-valued logic,
and analyses what each condition refers to so that a counting engine can decide how to
serve it. It does not count anything.

Grammar (keywords and function names are case-insensitive; letters and attributes are not)::

    condition  := or
    or         := and ("OR" and)*
    and        := not ("AND" not)*
    not        := "NOT" not | predicate
    predicate  := sum [ ("=" | "<>" | "!=" | "<" | "<=" | ">" | ">=") sum
                      | "IS" ["NOT"] "NULL" ]
    sum        := product (("+" | "-") product)*
    product    := unary (("*" | "/") unary)*
    unary      := "-" unary | primary
    primary    := NUMBER | STRING | "TRUE" | "FALSE" | reference | "(" or ")"
    reference  := LETTER "." ATTRIBUTE
                | ("LAST" | "FIRST") "(" LETTER "." ATTRIBUTE ["," INTEGER] ")"

NUMBER is ``123`` or ``1.25`` (read exactly, as a fraction); STRING is single-quoted with
``''`` for a quote; LETTER is one ASCII letter of the query; ATTRIBUTE an identifier
(``timestamp`` is the element's timestamp). Comparisons do not chain (``a < b < c`` is an
error: write ``a < b AND b < c``).

Navigation (the SQL MATCH_RECOGNIZE convention): in the condition of X, the elements "of Z"
are the match's elements with letter Z up to the current one (the current one included only
when Z = X). ``LAST(Z.col, n)`` is the n-th of them counted back from the last (n = 0: the
last), ``FIRST(Z.col, n)`` the n-th counted from the first (n = 0: the first), and ``Z.col``
is ``LAST(Z.col, 0)``. So at X, ``X.col`` is the current element, ``LAST(X.col, 1)`` the
previous X of the match, and ``Y.col`` the last Y before the current element. An element that
does not exist is NULL.

Values are numbers (exact: Python ints and Fractions, so no rounding ever changes a
comparison), strings and booleans. Data floats are read as the decimal they print as
(``0.1`` equals the literal ``0.1``); NaN, None and pandas' NA are NULL. Division by zero is
NULL (as in SQLite and MySQL): the condition then fails instead of the count.
"""
from __future__ import annotations

import functools
import math
import numbers
import re
import warnings
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Mapping, Optional, Sequence, Union

from suse.errors import ConditionError, InputError, QueryError, SuseWarning
from suse.query.automaton import compile_regex
from suse.query.parser import Alternation, Concat, Negation, Repeat, alphabet_of, format_query, parse

MAX_OFFSET = 1000  # largest n in LAST(X.col, n) / FIRST(X.col, n)
MAX_CONDITION_LENGTH = 10_000  # characters
MAX_NESTING = 50  # parentheses, NOT and unary minus inside each other (the parser recurses)
MAX_DEPTH = 200  # depth of the tree, e.g. 1 + 1 + ... (evaluation and formatting recurse)

#: Functions refused by name, with the reason.
_AGGREGATE_REASON = (
    "an aggregate over the earlier elements of a match cannot be counted exactly without "
    "enumerating the matches (every partial match would carry its own running value); "
    "compare with LAST(X.col, n) or FIRST(X.col, n) instead"
)
_REFUSED_FUNCTIONS = {
    **{name: _AGGREGATE_REASON for name in ("AVG", "SUM", "COUNT", "MIN", "MAX", "MEDIAN", "STDDEV", "VARIANCE")},
    "PREV": "PREV navigates the rows of the stream, not the elements of the match; "
    "use LAST(X.col, 1) for the match's previous X",
    "NEXT": "NEXT looks at rows after the current one, which a condition cannot see",
    "CLASSIFIER": "CLASSIFIER is not supported",
    "MATCH_NUMBER": "MATCH_NUMBER is not supported: matches are counted, never numbered",
}
_KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE"}
_NAVIGATIONS = {"LAST", "FIRST"}
COMPARISONS = ("=", "<>", "<", "<=", ">", ">=")
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


# --- syntax tree ------------------------------------------------------------------------
# ``position`` (0-based, into the condition text) is excluded from equality so trees compare
# structurally: parse(format(tree)) == tree.


@dataclass(frozen=True)
class Number:
    value: Fraction
    position: int = field(default=0, compare=False)


@dataclass(frozen=True)
class String:
    value: str
    position: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Boolean:
    value: bool
    position: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Reference:
    """``LAST(letter.attribute, offset)`` (``X.col`` is offset 0) or ``FIRST(...)``."""

    letter: str
    attribute: str
    navigation: str  # "last" or "first"
    offset: int
    position: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Negate:
    operand: Expression
    position: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Arithmetic:
    op: str  # + - * /
    left: Expression
    right: Expression
    position: int = field(default=0, compare=False)  # of the operator


@dataclass(frozen=True)
class Comparison:
    op: str  # one of COMPARISONS ("!=" is read as "<>")
    left: Expression
    right: Expression
    position: int = field(default=0, compare=False)  # of the operator


@dataclass(frozen=True)
class IsNull:
    operand: Expression
    negated: bool  # IS NOT NULL
    position: int = field(default=0, compare=False)  # of IS


@dataclass(frozen=True)
class Not:
    operand: Expression
    position: int = field(default=0, compare=False)


@dataclass(frozen=True)
class And:
    operands: tuple[Expression, ...]
    position: int = field(default=0, compare=False)  # of the first AND


@dataclass(frozen=True)
class Or:
    operands: tuple[Expression, ...]
    position: int = field(default=0, compare=False)  # of the first OR


Expression = Union[Number, String, Boolean, Reference, Negate, Arithmetic, Comparison, IsNull, Not, And, Or]
_BOOLEAN_NODES = (Comparison, IsNull, Not, And, Or, Boolean)


@dataclass(frozen=True)
class Condition:
    """The parsed condition of ``letter``; ``text`` is what the user wrote."""

    letter: str
    root: Expression
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return format_condition(self.root)


# --- tokeniser --------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<number>[0-9]+(?:\.[0-9]+)?)
      | (?P<string>'(?:[^']|'')*')
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op><>|!=|<=|>=|[=<>+\-*/(),.])""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Token:
    kind: str  # number, string, name, op, end
    text: str
    position: int


def _tokenize(text: str, error) -> list[_Token]:
    tokens, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if m is None:
            if text[i] == "'":
                raise error("unclosed string literal: expected a closing '", i)
            if text[i] == "%":
                raise error("'%' is not an operator: write 80% as 0.8 *", i)
            raise error(f"unexpected symbol {text[i]!r}", i)
        kind = m.lastgroup or ""
        if kind == "number" and m.end() < len(text) and (text[m.end()] == "." or text[m.end()].isalpha()):
            raise error(f"malformed number {text[i:m.end() + 1]!r}", i)
        if kind != "space":
            tokens.append(_Token(kind, m.group(), i))
        i = m.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


# --- parser -----------------------------------------------------------------------------


def parse_condition(text: str, letter: str, *, unqualified: bool = False) -> Condition:
    """Parse the condition of ``letter``; raise ``ConditionError`` (a ``QueryError``) with the
    position of any syntax error, refused function or literal type error. Checks against
    the query (its letters, what navigation can hold) are ``parse_where``'s.

    ``unqualified=True`` reads a bare attribute name (``price``) as the current element's
    (``B.price`` in the condition of B), as SQL's DEFINE does; by default it is an error."""
    if not isinstance(text, str):
        raise ConditionError(f"a condition must be a string, not {type(text).__name__}", 0, str(text), str(letter))
    if len(text) > MAX_CONDITION_LENGTH:
        raise ConditionError(f"condition longer than {MAX_CONDITION_LENGTH} characters", 0, text, letter)
    parser = _Parser(text, letter, unqualified)
    root = parser.condition()
    if _depth(root) > MAX_DEPTH:
        raise parser.error(f"condition nests deeper than {MAX_DEPTH} levels", 0)
    _check_types(root, parser.error)
    _require_boolean(root, parser.error)
    return Condition(letter, root, text)


class _Parser:
    def __init__(self, text: str, letter: str, unqualified: bool):
        self.text, self.letter, self.unqualified = text, letter, unqualified
        self.tokens = _tokenize(text, self.error)
        self.index = 0
        self.depth = 0

    def error(self, message: str, position: int) -> ConditionError:
        return ConditionError(message, position, self.text, self.letter)

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def keyword(self, word: str, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind == "name" and token.text.upper() == word

    def expect(self, text: str, what: str) -> _Token:
        token = self.peek()
        if token.kind != "op" or token.text != text:
            raise self.error(f"expected {what}, found {_describe(token)}", token.position)
        return self.advance()

    def condition(self) -> Expression:
        if self.peek().kind == "end":
            raise self.error("empty condition", 0)
        root = self.disjunction()
        token = self.peek()
        if token.kind != "end":
            if token.kind == "op" and token.text in COMPARISONS + ("!=",):
                raise self.error("comparisons do not chain: write a < b AND b < c", token.position)
            if token.kind == "op" and token.text == ")":
                raise self.error("unmatched ')'", token.position)
            raise self.error(f"unexpected {_describe(token)}", token.position)
        return root

    def nested(self, position: int):
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"condition nests deeper than {MAX_NESTING} levels", position)

    def disjunction(self) -> Expression:
        return self.connected("OR", self.conjunction, Or)

    def conjunction(self) -> Expression:
        return self.connected("AND", self.negation, And)

    def connected(self, word: str, operand, node_type) -> Expression:
        """``operand (word operand)*``, one n-ary node placed at the first ``word``."""
        operands, keywords = [operand()], []
        while self.keyword(word):
            keywords.append(self.advance().position)
            operands.append(operand())
        return operands[0] if len(operands) == 1 else node_type(tuple(operands), keywords[0])

    def negation(self) -> Expression:
        if self.keyword("NOT"):
            token = self.advance()
            self.nested(token.position)
            operand = self.negation()
            self.depth -= 1
            return Not(operand, token.position)
        return self.predicate()

    def predicate(self) -> Expression:
        left = self.sum()
        token = self.peek()
        if token.kind == "op" and token.text in COMPARISONS + ("!=",):
            self.advance()
            right = self.sum()
            op = "<>" if token.text == "!=" else token.text
            return Comparison(op, left, right, token.position)
        if self.keyword("IS"):
            self.advance()
            negated = self.keyword("NOT")
            if negated:
                self.advance()
            if not self.keyword("NULL"):
                raise self.error(f"expected NULL after IS{' NOT' if negated else ''}, found {_describe(self.peek())}", self.peek().position)
            self.advance()
            return IsNull(left, negated, token.position)
        return left

    def sum(self) -> Expression:
        return self.arithmetic("+-", self.product)

    def product(self) -> Expression:
        return self.arithmetic("*/", self.unary)

    def arithmetic(self, ops: str, operand) -> Expression:
        """``operand (op operand)*`` for ``op`` in ``ops``, left-associative."""
        node = operand()
        while self.peek().kind == "op" and self.peek().text in ops:
            token = self.advance()
            node = Arithmetic(token.text, node, operand(), token.position)
        return node

    def unary(self) -> Expression:
        token = self.peek()
        if token.kind == "op" and token.text == "-":
            self.advance()
            self.nested(token.position)
            operand = self.unary()
            self.depth -= 1
            return Negate(operand, token.position)
        return self.primary()

    def primary(self) -> Expression:
        token = self.peek()
        if token.kind == "number":
            self.advance()
            return Number(Fraction(token.text), token.position)
        if token.kind == "string":
            self.advance()
            return String(token.text[1:-1].replace("''", "'"), token.position)
        if token.kind == "op" and token.text == "(":
            self.advance()
            self.nested(token.position)
            inner = self.disjunction()
            self.depth -= 1
            if self.peek().kind != "op" or self.peek().text != ")":
                raise self.error(f"unclosed '(': expected ')', found {_describe(self.peek())}", token.position)
            self.advance()
            return inner
        if token.kind == "name":
            return self.name()
        if token.kind == "end":
            raise self.error("the condition ends where a value was expected", token.position)
        raise self.error(f"expected a value, found {_describe(token)}", token.position)

    def name(self) -> Expression:
        token = self.advance()
        upper = token.text.upper()
        following = self.peek()
        calls = following.kind == "op" and following.text == "("
        if upper in ("TRUE", "FALSE") and not calls:
            return Boolean(upper == "TRUE", token.position)
        if upper == "NULL":
            raise self.error("NULL is not a value here: '= NULL' is never true; write IS NULL", token.position)
        if upper in _KEYWORDS:
            raise self.error(f"expected a value, found the keyword {token.text}", token.position)
        if calls:
            if upper in _NAVIGATIONS:
                return self.navigation(token, upper.lower())
            if upper in _REFUSED_FUNCTIONS:
                raise self.error(f"{upper}() is not supported: {_REFUSED_FUNCTIONS[upper]}", token.position)
            raise self.error(f"unknown function {token.text}(): the functions are LAST and FIRST", token.position)
        following_dot = following.kind == "op" and following.text == "."
        if self.unqualified and not following_dot:
            return Reference(self.letter, token.text, "last", 0, token.position)
        return self.reference(token, "last", 0, token.position)

    def navigation(self, function: _Token, kind: str) -> Reference:
        self.advance()  # "("
        letter = self.peek()
        if letter.kind != "name":
            raise self.error(f"{kind.upper()}() takes a reference such as B.price, found {_describe(letter)}", letter.position)
        self.advance()
        offset = 0
        reference = self.reference(letter, kind, offset, function.position)
        if self.peek().kind == "op" and self.peek().text == ",":
            self.advance()
            count = self.peek()
            if count.kind != "number" or "." in count.text:
                raise self.error(f"the offset of {kind.upper()}() must be a non-negative integer, found {_describe(count)}", count.position)
            self.advance()
            offset = int(count.text)
            if offset > MAX_OFFSET:
                raise self.error(f"offset {offset} exceeds the limit of {MAX_OFFSET}", count.position)
        self.expect(")", f"')' to close {kind.upper()}(")
        return Reference(reference.letter, reference.attribute, kind, offset, function.position)

    def reference(self, letter: _Token, kind: str, offset: int, position: int) -> Reference:
        dot = self.peek()
        if dot.kind != "op" or dot.text != ".":
            raise self.error(
                f"{letter.text!r} is not a value: refer to an attribute as LETTER.attribute, such as B.price",
                letter.position,
            )
        if len(letter.text) != 1:
            raise self.error(f"{letter.text!r} is not a letter of a query: a reference is one letter, a dot and an attribute", letter.position)
        self.advance()
        attribute = self.peek()
        if attribute.kind != "name":
            raise self.error(f"expected an attribute name after '{letter.text}.', found {_describe(attribute)}", attribute.position)
        self.advance()
        return Reference(letter.text, attribute.text, kind, offset, position)


def _describe(token: _Token) -> str:
    return "the end of the condition" if token.kind == "end" else repr(token.text)


# --- static types ----------------------------------------------------------------------


def _static_type(node: Expression) -> Optional[str]:
    """"number", "string", "boolean", or None when it depends on the data (an attribute)."""
    if isinstance(node, (Number, Negate, Arithmetic)):
        return "number"
    if isinstance(node, String):
        return "string"
    if isinstance(node, _BOOLEAN_NODES):
        return "boolean"
    return None


def _children(node: Expression) -> tuple[Expression, ...]:
    if isinstance(node, (Negate, Not, IsNull)):
        return (node.operand,)
    if isinstance(node, (Arithmetic, Comparison)):
        return (node.left, node.right)
    if isinstance(node, (And, Or)):
        return node.operands
    return ()


def walk(node: Expression):
    """Every node of the tree, parents before children, left to right."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(_children(current)))


def _depth(root: Expression) -> int:
    deepest, stack = 0, [(root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in _children(node))
    return deepest


def _check_types(root: Expression, error) -> None:
    for node in walk(root):
        if isinstance(node, (Negate, Arithmetic)):
            for operand in _children(node):
                kind = _static_type(operand)
                if kind not in (None, "number"):
                    raise error(f"arithmetic needs numbers, but {format_condition(operand)} is a {kind}", operand.position)
            if isinstance(node, Arithmetic) and node.op == "/" and _constant(node.right) == 0:
                raise error("division by zero: the value would always be NULL", node.position)
        elif isinstance(node, Comparison):
            left, right = _static_type(node.left), _static_type(node.right)
            if left and right and left != right:
                raise error(f"{node.op} compares a {left} with a {right}", node.position)
        elif isinstance(node, (And, Or, Not)):
            for operand in _children(node):
                _require_boolean(operand, error)


def _require_boolean(node: Expression, error) -> None:
    kind = _static_type(node)
    if kind not in (None, "boolean"):
        raise error(f"a condition must be true or false, but {format_condition(node)} is a {kind}", node.position)


def _constant(node: Expression) -> Optional[Fraction]:
    """The value of a numeric expression without references, else None."""
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Negate):
        value = _constant(node.operand)
        return None if value is None else -value
    if isinstance(node, Arithmetic):
        left, right = _constant(node.left), _constant(node.right)
        if left is None or right is None:
            return None
        return _arithmetic(node.op, left, right)
    return None


# --- formatting -------------------------------------------------------------------------

_PRECEDENCE = {Or: 1, And: 2, Not: 3, Comparison: 4, IsNull: 4, Arithmetic: 5, Negate: 7}


def _level(node: Expression) -> int:
    if isinstance(node, Arithmetic):
        return 5 if node.op in "+-" else 6
    return _PRECEDENCE.get(type(node), 8)


def format_condition(node: Expression) -> str:
    """Canonical text of a tree, with only the parentheses needed to read it back the same."""
    if isinstance(node, Number):
        return _format_number(node.value)
    if isinstance(node, String):
        return "'" + node.value.replace("'", "''") + "'"
    if isinstance(node, Boolean):
        return "TRUE" if node.value else "FALSE"
    if isinstance(node, Reference):
        inner = f"{node.letter}.{node.attribute}"
        if node.navigation == "last" and node.offset == 0:
            return inner
        suffix = f", {node.offset}" if node.offset else ""
        return f"{node.navigation.upper()}({inner}{suffix})"
    if isinstance(node, Negate):
        return "-" + _wrap(node.operand, 7, always=isinstance(node.operand, Negate))
    if isinstance(node, Arithmetic):
        level = _level(node)
        return f"{_wrap(node.left, level)} {node.op} {_wrap(node.right, level + 1)}"
    if isinstance(node, Comparison):
        return f"{_wrap(node.left, 5)} {node.op} {_wrap(node.right, 5)}"
    if isinstance(node, IsNull):
        return f"{_wrap(node.operand, 5)} IS {'NOT ' if node.negated else ''}NULL"
    if isinstance(node, Not):
        return "NOT " + _wrap(node.operand, 3)
    word, level = (" AND ", 2) if isinstance(node, And) else (" OR ", 1)
    return word.join(_wrap(operand, level + 1) for operand in node.operands)


def _wrap(node: Expression, minimum: int, always: bool = False) -> str:
    text = format_condition(node)
    return f"({text})" if always or _level(node) < minimum else text


def _format_number(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    denominator, twos, fives = value.denominator, 0, 0
    while denominator % 2 == 0:
        denominator, twos = denominator // 2, twos + 1
    while denominator % 5 == 0:
        denominator, fives = denominator // 5, fives + 1
    if denominator != 1 or value < 0:  # not a decimal literal (only made by analysis)
        return f"({value.numerator} / {value.denominator})"
    digits = max(twos, fives)
    scaled = value.numerator * 10**digits // value.denominator
    whole, fraction = divmod(scaled, 10**digits)
    return f"{whole}.{fraction:0{digits}d}"


# --- evaluation -------------------------------------------------------------------------

#: A match element: (letter, timestamp, attributes).
Element = tuple[str, Any, Mapping[str, Any]]
Value = Union[int, Fraction, str, bool, None]


def truth(condition: Condition, match_so_far: Sequence[Element], current: Element) -> Optional[bool]:
    """The three-valued truth (True, False or None for NULL) of ``condition`` at ``current``,
    whose earlier elements in the match are ``match_so_far`` (in time order). Every operand
    is evaluated (no short cut), so a missing attribute is always reported."""
    if current[0] != condition.letter:
        raise ValueError(f"the condition of {condition.letter} evaluated at a {current[0]!r} element")
    value = _evaluate(condition.root, _Context(condition, match_so_far, current))
    if value is not None and not isinstance(value, bool):
        raise InputError(f"condition of {condition.letter}: {format_condition(condition.root)} is {value!r}, not true or false")
    return value


def evaluate(condition: Condition, match_so_far: Sequence[Element], current: Element) -> bool:
    """True iff the condition holds at ``current``: a NULL condition is not satisfied."""
    return truth(condition, match_so_far, current) is True


def evaluate_expression(
    expression: Expression, condition: Condition, match_so_far: Sequence[Element], current: Element
) -> Value:
    """The value of a sub-expression of ``condition`` (for example a ``Compared.current``)."""
    return _evaluate(expression, _Context(condition, match_so_far, current))


class _Context:
    def __init__(self, condition: Condition, match_so_far: Sequence[Element], current: Element):
        self.condition, self.match, self.current = condition, match_so_far, current

    def resolve(self, reference: Reference) -> Value:
        elements = [e for e in self.match if e[0] == reference.letter]
        if reference.letter == self.current[0]:
            elements.append(self.current)
        n = reference.offset
        if n >= len(elements):
            return None
        element = elements[-1 - n] if reference.navigation == "last" else elements[n]
        return self.read(element, reference)

    def read(self, element: Element, reference: Reference) -> Value:
        if reference.attribute == "timestamp":
            raw = element[1]
        else:
            attributes = element[2]
            if reference.attribute not in attributes:
                raise InputError(f"{self.where(reference)}: the {element[0]} element has no attribute {reference.attribute!r}")
            raw = attributes[reference.attribute]
        kind = type(raw)
        if kind is int or kind is str or kind is bool or raw is None:  # the common cases, fast
            return raw
        return data_value(raw, self.where(reference))

    def where(self, reference: Reference) -> str:
        return f"condition of {self.condition.letter}: {format_condition(reference)}"


def data_value(raw: Any, where: str) -> Value:
    """An attribute value of the data as a condition value: numbers exact (a float as the
    decimal it prints as), NULL for None, NaN and pandas' NA; an InputError for the rest."""
    if raw is None or type(raw).__name__ in ("NAType", "NaTType"):
        return None
    if isinstance(raw, (bool, str)):
        return raw
    if getattr(getattr(raw, "dtype", None), "kind", "") == "b":  # numpy's boolean
        return bool(raw)
    if isinstance(raw, numbers.Integral):
        return int(raw)
    if isinstance(raw, numbers.Rational):
        return Fraction(raw)
    if isinstance(raw, (numbers.Real, Decimal)):
        if math.isnan(raw):
            return None
        if math.isinf(raw):
            raise InputError(f"{where}: an infinite value cannot be compared exactly")
        if isinstance(raw, Decimal):
            return Fraction(raw)
        return _float_value(raw)  # type: ignore[arg-type]  # numpy scalars hash; float() would widen a float32
    raise InputError(f"{where}: a value of type {type(raw).__name__} is not a number, string or boolean")


@functools.lru_cache(maxsize=4096, typed=True)  # typed: a float32 and a float64 can be equal yet print differently
def _float_value(raw) -> Union[int, Fraction]:
    """A finite float as the shortest decimal that reads back as it (an int when whole)."""
    if float(raw).is_integer():
        return int(raw)
    try:
        return Fraction(str(raw))
    except ValueError:  # a float type whose str is not a plain decimal
        return Fraction(float(raw))


def _kind(value: Value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    return "number"


def _evaluate(node: Expression, context: _Context) -> Value:
    if isinstance(node, (Number, String, Boolean)):
        return node.value
    if isinstance(node, Reference):
        return context.resolve(node)
    if isinstance(node, Negate):
        value = _number(_evaluate(node.operand, context), node.operand, context)
        return None if value is None else -value  # type: ignore[operator]  # _number checked it is a number
    if isinstance(node, Arithmetic):
        left = _number(_evaluate(node.left, context), node.left, context)
        right = _number(_evaluate(node.right, context), node.right, context)
        if left is None or right is None:
            return None
        return _arithmetic(node.op, left, right)
    if isinstance(node, Comparison):
        left, right = _evaluate(node.left, context), _evaluate(node.right, context)
        if left is None or right is None:
            return None
        if _kind(left) != _kind(right):
            raise InputError(
                f"condition of {context.condition.letter}: {format_condition(node)} compares "
                f"{format_condition(node.left)} = {left!r} with {format_condition(node.right)} = {right!r}"
            )
        return compare(node.op, left, right)
    if isinstance(node, IsNull):
        return (_evaluate(node.operand, context) is None) != node.negated
    values = [_boolean(_evaluate(operand, context), operand, context) for operand in _children(node)]
    if isinstance(node, Not):
        return None if values[0] is None else not values[0]
    decisive = isinstance(node, Or)  # OR is decided by a TRUE, AND by a FALSE
    if decisive in values:
        return decisive
    return None if None in values else not decisive


def _number(value: Value, node: Expression, context: _Context) -> Value:
    if value is not None and _kind(value) != "number":
        raise InputError(f"condition of {context.condition.letter}: arithmetic on {format_condition(node)} = {value!r}, not a number")
    return value


def _boolean(value: Value, node: Expression, context: _Context) -> Value:
    if value is not None and not isinstance(value, bool):
        raise InputError(f"condition of {context.condition.letter}: {format_condition(node)} = {value!r} is not true or false")
    return value


def _arithmetic(op: str, left, right):
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return None
    return Fraction(left) / right


def compare(op: str, left, right) -> bool:
    """``left op right`` for two non-NULL values of the same kind."""
    if op == "=":
        return left == right
    if op == "<>":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


# --- checks against the query and analysis ---------------------------------------------


@dataclass(frozen=True)
class Use:
    """A reference as seen from the condition it appears in, resolved against the match.

    ``kind`` is "current" (the element being judged), "last" (the n-th element with letter
    ``letter`` strictly before the current one, n >= 1: n = 1 is the nearest) or "first"
    (the element at index n >= 0 among the match's ``letter`` elements up to and including
    the current one: n = 0 is the first). ``may_be_current``: a "first" reference to the
    condition's own letter, which is the current element when that is the match's n-th of its
    letter. ``always_previous``: whenever the referenced element exists, it is the match's
    element immediately before the current one (the pattern forces it), so an engine can
    serve the reference from the state the previous element left."""

    letter: str
    attribute: str
    kind: str
    n: int
    always_previous: bool
    may_be_current: bool = field(default=False)
    reference: Optional[Reference] = field(default=None, compare=False)


@dataclass(frozen=True)
class Compared:
    """A comparison ``current op reference`` between a value of the current element and an
    attribute of one earlier element, which a hash map (``=``, ``<>``) or an order-statistics
    tree (``<``, ``<=``, ``>``, ``>=``) keyed by the earlier value can serve.

    It holds iff (the reference is NULL and ``null_reference``) or (neither the reference
    nor ``current`` is NULL and ``current op reference``). ``current`` is an expression over
    the current element and constants only; evaluate it with ``evaluate_expression``."""

    current: Expression
    op: str
    reference: Use
    null_reference: bool = False


@dataclass(frozen=True)
class Conjunct:
    """One operand of the condition's top-level AND (the whole condition if it has none)."""

    expression: Expression
    self_only: bool
    compared: Optional[Compared]


@dataclass(frozen=True)
class Analysis:
    """What the condition of ``letter`` needs, for an engine to decide how to count it.

    ``uses`` are the distinct references in order of appearance; ``self_only`` means they all
    read the current element (the condition refines the letter); ``adjacent`` that every other
    reference is ``always_previous``; ``previous_letters`` are the letters that can stand
    immediately before a ``letter`` element in a match and ``can_be_first`` whether one can
    start a match. ``compared`` is set when the whole condition is one comparison in compared
    form (or ``reference IS NULL OR`` one)."""

    letter: str
    uses: tuple[Use, ...]
    self_only: bool
    adjacent: bool
    previous_letters: frozenset[str]
    can_be_first: bool
    conjuncts: tuple[Conjunct, ...]
    compared: Optional[Compared]


@dataclass(frozen=True)
class Where:
    """The checked conditions of a query, by letter, with their analyses."""

    query: str
    conditions: Mapping[str, Condition]
    analyses: Mapping[str, Analysis]

    def attributes(self) -> dict[str, tuple[str, ...]]:
        """Per letter, the attributes some condition reads from its elements (sorted;
        ``timestamp`` left out): the columns an engine must find before it counts."""
        read: dict[str, set[str]] = {}
        for analysis in self.analyses.values():
            for use in analysis.uses:
                if use.attribute != "timestamp":
                    read.setdefault(use.letter, set()).add(use.attribute)
        return {letter: tuple(sorted(names)) for letter, names in sorted(read.items())}

    def attribute_names(self) -> tuple[str, ...]:
        """Every attribute some condition reads from the data (sorted, ``timestamp`` left out)."""
        return tuple(sorted({name for names in self.attributes().values() for name in names}))


class _Shape:
    """What the words of a query allow, from its automaton with negations left out (a
    negation filters matches by the events between their elements, never by their word)."""

    def __init__(self, query: str):
        tree = parse(query)
        self.alphabet = alphabet_of(tree)
        try:
            automaton = compile_regex(format_query(_without_negations(tree)))
        except QueryError as err:  # a limit: its position would be in the rewritten query
            raise QueryError(err.message, 0, query) from None
        self.start = automaton.start
        self.edges = [(s, c, t) for (s, c), t in automaton.transitions.items()]
        self.sources = {c: {s for s, d, _ in self.edges if d == c} for c in self.alphabet}
        self.into = {s: {c for _, c, t in self.edges if t == s} for s in automaton.states}
        self.components, self.order = _components(automaton.n_states, self.edges)
        # the moves (letter, target) out of each state and out of each component
        self.out_of_state: dict[int, list[tuple[str, int]]] = {}
        self.out_of_component: dict[int, list[tuple[str, int]]] = {c: [] for c in self.order}
        for s, c, t in self.edges:
            self.out_of_state.setdefault(s, []).append((c, t))
            self.out_of_component[self.components[s]].append((c, t))
        self._most: dict[str, list[float]] = {}  # per counted letter, per state

    def previous_letters(self, letter: str) -> frozenset[str]:
        return frozenset(c for s in self.sources[letter] for c in self.into[s])

    def can_be_first(self, letter: str) -> bool:
        return self.start in self.sources[letter]

    def nearest_is_previous(self, letter: str, counted: str) -> bool:
        """Whether, in every match, the nearest ``counted`` element before a ``letter``
        element (when there is one) is the element immediately before it."""
        # Search the automaton with a flag: 0 no counted element yet, 1 the last element was
        # one, 2 one was seen but something else came after it.
        seen = {(self.start, 0)}
        stack = [(self.start, 0)]
        while stack:
            state, flag = stack.pop()
            if flag == 2 and state in self.sources[letter]:
                return False
            for c, target in self.out_of_state.get(state, ()):
                step = (target, 1 if c == counted else (2 if flag else 0))
                if step not in seen:
                    seen.add(step)
                    stack.append(step)
        return True

    def most_before(self, letter: str, counted: str) -> float:
        """The most ``counted`` elements a match can hold before a ``letter`` element
        (math.inf when unbounded)."""
        most = self._most.get(counted)
        if most is None:
            most = self._most[counted] = self._count_paths(counted)
        return max(most[s] for s in self.sources[letter])

    def _count_paths(self, counted: str) -> list[float]:
        # Longest path from the start in counted-edges, over the components in topological
        # order; a component with a counted edge inside makes everything after it unbounded.
        best = {self.components[self.start]: 0.0}
        for component in self.order:
            if component not in best:
                continue
            leaving = self.out_of_component[component]
            if any(c == counted and self.components[t] == component for c, t in leaving):
                best[component] = math.inf
            for c, t in leaving:
                target = self.components[t]
                if target != component:
                    value = best[component] + (1 if c == counted else 0)
                    best[target] = max(best.get(target, -1.0), value)
        return [best.get(self.components[s], -math.inf) for s in range(len(self.components))]


def _without_negations(node):
    """The tree with every negation removed (an emptied alternative becomes optional)."""
    if isinstance(node, Negation):
        return None
    if isinstance(node, Concat):
        parts = [p for p in (_without_negations(part) for part in node.parts) if p is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Concat(tuple(parts), node.pos)
    if isinstance(node, Alternation):
        options = [_without_negations(option) for option in node.options]
        kept = [o for o in options if o is not None]
        if not kept:
            return None
        inner = kept[0] if len(kept) == 1 else Alternation(tuple(kept), node.pos)
        return Repeat(inner, 0, 1, node.pos) if len(kept) < len(options) else inner
    if isinstance(node, Repeat):
        inner = _without_negations(node.node)
        return None if inner is None else Repeat(inner, node.min, node.max, node.pos)
    return node


def _components(n_states: int, edges) -> tuple[list[int], list[int]]:
    """Strongly connected components (Kosaraju, iterative): the component of each state and
    the components in topological order."""
    forward: list[list[int]] = [[] for _ in range(n_states)]
    backward: list[list[int]] = [[] for _ in range(n_states)]
    for s, _, t in edges:
        forward[s].append(t)
        backward[t].append(s)
    finished, seen = [], [False] * n_states
    for root in range(n_states):
        if seen[root]:
            continue
        seen[root] = True
        stack = [(root, iter(forward[root]))]
        while stack:
            state, successors = stack[-1]
            for t in successors:
                if not seen[t]:
                    seen[t] = True
                    stack.append((t, iter(forward[t])))
                    break
            else:
                finished.append(state)
                stack.pop()
    component = [-1] * n_states
    order: list[int] = []
    for root in reversed(finished):  # decreasing finish time: topological order of components
        if component[root] != -1:
            continue
        label = len(order)
        order.append(label)
        component[root] = label
        reached = [root]
        while reached:
            for s in backward[reached.pop()]:
                if component[s] == -1:
                    component[s] = label
                    reached.append(s)
    return component, order


def parse_where(query: str, where: Mapping[str, str], *, unqualified: bool = False) -> Where:
    """Parse and check the conditions of ``query``: ``where`` maps letters to conditions.

    Beyond ``parse_condition``'s checks, a ``ConditionError`` is raised (with the position in
    the condition) for a letter outside the query's alphabet, and for a reference that no
    match can ever fill: ``LAST(B.p, 3)`` where a match holds at most 3 B's up to the current
    one, ``C.p`` in the condition of B when no C can come before a B. ``unqualified`` as in
    ``parse_condition``."""
    if not isinstance(where, Mapping):
        raise QueryError(f"where must map letters to conditions, not {type(where).__name__}", 0, query)
    shape = _Shape(query)
    conditions: dict[str, Condition] = {}
    analyses: dict[str, Analysis] = {}
    for letter, text in where.items():
        if not isinstance(letter, str) or len(letter) != 1 or letter not in shape.alphabet:
            raise ConditionError(
                f"{letter!r} is not a letter of the query {query!r}, whose elements have the letters {shape.alphabet}",
                0,
                text if isinstance(text, str) else str(text),
                str(letter),
            )
        condition = parse_condition(text, letter, unqualified=unqualified)
        uses = tuple(_check_use(reference, condition, shape) for reference in _references(condition.root))
        conditions[letter] = condition
        analyses[letter] = _analyse(condition, uses, shape)
        _warn_if_first_fails(condition, uses)
    return Where(query, conditions, analyses)


def _warn_if_first_fails(condition: Condition, uses: tuple[Use, ...]) -> None:
    """Warn when the condition of X can never hold at a match's first X: it reads earlier X's
    (NULL there) in a way no NULL can satisfy, as ``B.p > LAST(B.p, 1)`` does."""
    absent = {
        use.reference
        for use in uses
        if use.reference is not None and use.letter == condition.letter
        and (use.kind == "last" or (use.kind == "first" and use.n > 0))
    }
    if absent and _rejects_null(condition.root, absent):
        shown = format_condition(next(iter(absent)))
        warnings.warn(
            f"condition of {condition.letter}: never satisfied at a match's first {condition.letter}, "
            f"where {shown} is NULL, so no match with a {condition.letter} counts; to let the first "
            f"one pass write {shown} IS NULL OR (...)",
            SuseWarning,
            stacklevel=3,
        )


def _null_when(node: Expression, absent: set[Reference]) -> bool:
    """``node`` is NULL whenever the references ``absent`` are."""
    if isinstance(node, Reference):
        return node in absent
    if isinstance(node, (Negate, Arithmetic, Comparison, Not)):
        return any(_null_when(child, absent) for child in _children(node))
    if isinstance(node, (And, Or)):
        return all(_null_when(child, absent) for child in node.operands)
    return False


def _rejects_null(node: Expression, absent: set[Reference]) -> bool:
    """``node`` is never TRUE while the references ``absent`` are NULL."""
    if _null_when(node, absent):
        return True
    if isinstance(node, And):
        return any(_rejects_null(child, absent) for child in node.operands)
    if isinstance(node, Or):
        return all(_rejects_null(child, absent) for child in node.operands)
    return False


def _references(root: Expression) -> list[Reference]:
    return [node for node in walk(root) if isinstance(node, Reference)]


def _check_use(reference: Reference, condition: Condition, shape: _Shape) -> Use:
    owner, letter = condition.letter, reference.letter

    def error(message: str) -> ConditionError:
        return ConditionError(message, reference.position, condition.text, owner)

    if letter not in shape.alphabet:
        raise error(f"{letter} is not a letter of the query (its letters are {shape.alphabet})")
    held = shape.most_before(owner, letter) + (1 if letter == owner else 0)
    needed = reference.offset + 1
    if held < needed:
        shown = format_condition(reference)
        if held == 0:
            raise error(f"{shown} can never hold an element: no {letter} comes before a {owner} in any match")
        raise error(
            f"{shown} can never hold an element: it needs {needed} {letter} elements up to the "
            f"current {owner}, and a match holds at most {int(held)}"
        )
    if reference.navigation == "first":
        kind, n = "first", reference.offset
    elif letter == owner and reference.offset == 0:
        kind, n = "current", 0
    else:
        kind, n = "last", reference.offset + (0 if letter == owner else 1)
    always_previous = kind == "last" and n == 1 and shape.nearest_is_previous(owner, letter)
    may_be_current = kind == "first" and letter == owner
    return Use(letter, reference.attribute, kind, n, always_previous, may_be_current, reference)


def _analyse(condition: Condition, uses: tuple[Use, ...], shape: _Shape) -> Analysis:
    by_reference = {id(use.reference): use for use in uses}
    distinct = tuple(dict.fromkeys(uses))
    others = [use for use in distinct if use.kind != "current"]
    root = condition.root
    operands = root.operands if isinstance(root, And) else (root,)
    conjuncts = tuple(
        Conjunct(operand, _self_only(operand, by_reference), _compared(operand, by_reference)) for operand in operands
    )
    return Analysis(
        condition.letter,
        distinct,
        not others,
        bool(others) and all(use.always_previous for use in others),
        shape.previous_letters(condition.letter),
        shape.can_be_first(condition.letter),
        conjuncts,
        conjuncts[0].compared if len(conjuncts) == 1 else None,
    )


def _self_only(node: Expression, uses: Mapping[int, Use]) -> bool:
    return all(uses[id(r)].kind == "current" for r in _references(node))


def _compared(node: Expression, uses: Mapping[int, Use]) -> Optional[Compared]:
    """The compared form of ``node``, or None when it has none."""
    if isinstance(node, Or) and len(node.operands) == 2:
        for is_null, comparison in (node.operands, reversed(node.operands)):
            if isinstance(is_null, IsNull) and not is_null.negated and isinstance(is_null.operand, Reference):
                form = _compared(comparison, uses)
                if form is not None and form.reference == uses[id(is_null.operand)] and not form.null_reference:
                    return Compared(form.current, form.op, form.reference, True)
        return None
    if not isinstance(node, Comparison):
        return None
    others = {uses[id(r)] for r in _references(node) if uses[id(r)].kind != "current"}
    if len(others) != 1:
        return None
    (use,) = others
    if use.may_be_current:  # not always an earlier element
        return None
    left, right = _linear(node.left, use, uses), _linear(node.right, use, uses)
    if left is None or right is None:
        return None
    (rest_left, left_coefficient), (rest_right, right_coefficient) = left, right
    coefficient = right_coefficient - left_coefficient  # rest_left - rest_right op coefficient * ref
    if coefficient == 0:
        return None
    if rest_right is None:
        current = rest_left if rest_left is not None else Number(Fraction(0), node.position)
    elif rest_left is None:
        current = _negated(rest_right)
    else:
        current = Arithmetic("-", rest_left, rest_right, node.position)
    op = node.op
    if coefficient < 0:
        current, coefficient, op = _negated(current), -coefficient, _FLIPPED[op]
    if coefficient != 1:
        current = Arithmetic("/", current, Number(Fraction(coefficient), node.position), node.position)
    return Compared(current, op, use)


def _negated(node: Expression) -> Expression:
    return node.operand if isinstance(node, Negate) else Negate(node, node.position)


def _linear(node: Expression, use: Use, uses: Mapping[int, Use]):
    """``node`` as (rest, coefficient) with node = rest + coefficient * reference, where rest
    reads only the current element and constants (None for zero); None if not linear."""
    references = [uses[id(r)] for r in _references(node)]
    if all(u.kind == "current" for u in references):
        return node, Fraction(0)
    if isinstance(node, Reference):
        return None, Fraction(1)
    if isinstance(node, Negate):
        inner = _linear(node.operand, use, uses)
        if inner is None:
            return None
        rest, coefficient = inner
        return (None if rest is None else _negated(rest)), -coefficient
    if not isinstance(node, Arithmetic):
        return None
    if node.op in "+-":
        left, right = _linear(node.left, use, uses), _linear(node.right, use, uses)
        if left is None or right is None:
            return None
        sign = 1 if node.op == "+" else -1
        if right[0] is None:
            rest = left[0]
        elif left[0] is None:
            rest = right[0] if sign == 1 else _negated(right[0])
        else:
            rest = Arithmetic(node.op, left[0], right[0], node.position)
        return rest, left[1] + sign * right[1]
    # a product with a constant factor on either side, or a quotient by a constant
    constant_left = node.op == "*" and _constant(node.left) is not None
    factor_side, other = (node.left, node.right) if constant_left else (node.right, node.left)
    factor = _constant(factor_side)
    if factor is None or factor == 0:
        return None
    inner = _linear(other, use, uses)
    if inner is None:
        return None
    rest, coefficient = inner
    if rest is not None:
        left, right = (factor_side, rest) if constant_left else (rest, factor_side)
        rest = Arithmetic(node.op, left, right, node.position)
    return rest, coefficient * (factor if node.op == "*" else 1 / factor)
