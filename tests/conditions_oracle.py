"""A deliberately naive second evaluator of the condition language, independent of suse.

Nothing here imports suse. The text is rewritten token by token into Python syntax (``=`` to
``==``, ``AND`` to ``and``, ``IS NULL`` to ``is None``, ``B.p`` to ``ref('B', 'p')``, numbers
to ``num('1.5')``), parsed by Python's own ``ast`` module (whose precedence of ``or``, ``and``,
``not``, comparisons, ``+ -``, ``* /`` and unary minus is the language's), and the Python tree
is walked with SQL's three-valued logic. Only well-formed conditions are its business: it
raises ``OracleError`` on anything it does not understand and does not locate errors.

Elements are ``(letter, timestamp, attributes)``; ``truth`` returns True, False or None.
"""
from __future__ import annotations

import ast
import math
import re
from fractions import Fraction

__all__ = ["OracleError", "parse", "truth", "holds"]


class OracleError(Exception):
    """Not a condition this oracle understands, or a value it cannot compare."""


_TOKENS = re.compile(
    r"\s+|(?P<num>\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<word>[A-Za-z_]\w*)"
    r"|(?P<sym><>|!=|<=|>=|=|<|>|\+|-|\*|/|\(|\)|,|\.)"
)


def _python_source(text: str) -> str:
    pieces = [m for m in _TOKENS.finditer(text)]
    if sum(m.end() - m.start() for m in pieces) != len(text):
        raise OracleError("unreadable characters")
    tokens = [(m.lastgroup, m.group()) for m in pieces if m.lastgroup]
    out, i = [], 0
    while i < len(tokens):
        kind, word = tokens[i]
        upper = word.upper()
        if kind == "num":
            out.append(f"num({word!r})")
        elif kind == "str":
            out.append(repr(word[1:-1].replace("''", "'")))
        elif kind == "sym":
            out.append({"=": "==", "<>": "!=", ".": "@@"}.get(word, word))
        elif upper in ("AND", "OR", "NOT"):
            out.append(upper.lower())
        elif upper == "IS":
            if i + 1 < len(tokens) and tokens[i + 1][1].upper() == "NOT":
                out.append("is not")
                i += 1
            else:
                out.append("is")
            if i + 1 >= len(tokens) or tokens[i + 1][1].upper() != "NULL":
                raise OracleError("IS without NULL")
            out.append("None")
            i += 1
        elif upper in ("TRUE", "FALSE"):
            out.append(upper.title())
        elif i + 2 < len(tokens) and tokens[i + 1][1] == "." and tokens[i + 2][0] == "word" and len(word) == 1:
            out.append(f"ref({word!r}, {tokens[i + 2][1]!r})")
            i += 2
        elif upper in ("LAST", "FIRST") and i + 1 < len(tokens) and tokens[i + 1][1] == "(":
            out.append(upper.lower())
        else:
            raise OracleError(f"unexpected word {word!r}")
        i += 1
    source = " ".join(out)
    if "@@" in source:
        raise OracleError("a stray '.'")
    return source


def parse(text: str) -> ast.expr:
    try:
        tree = ast.parse(_python_source(text), mode="eval").body
    except SyntaxError as exc:
        raise OracleError(str(exc)) from None
    return tree


def _kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, str):
        return "str"
    return "num"


def _from_data(raw):
    if raw is None:
        return None
    if isinstance(raw, float):
        if math.isnan(raw):
            return None
        return Fraction(repr(raw))
    if isinstance(raw, (bool, str, int, Fraction)):
        return raw
    raise OracleError(f"value {raw!r}")


class _Walker:
    def __init__(self, owner: str, before, current):
        self.owner, self.before, self.current = owner, list(before), current

    def elements_of(self, letter: str):
        chosen = [e for e in self.before if e[0] == letter]
        return chosen + [self.current] if letter == self.owner else chosen

    def attribute(self, element, name: str):
        if name == "timestamp":
            return _from_data(element[1])
        if name not in element[2]:
            raise OracleError(f"missing attribute {name}")
        return _from_data(element[2][name])

    def reference(self, call: ast.Call, nav: str, n: int):
        letter, name = (a.value for a in call.args)
        elements = self.elements_of(letter)
        if n >= len(elements):
            return None
        return self.attribute(elements[len(elements) - 1 - n] if nav == "last" else elements[n], name)

    def value(self, node):  # noqa: C901 - one branch per Python node kind, on purpose
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, str)):
                return node.value
            raise OracleError("bare constant")
        if isinstance(node, ast.Call):
            name = node.func.id
            if name == "num":
                return Fraction(node.args[0].value)
            if name == "ref":
                return self.reference(node, "last", 0)
            if name in ("last", "first"):
                if not node.args or not isinstance(node.args[0], ast.Call) or node.args[0].func.id != "ref":
                    raise OracleError("navigation without a reference")
                n = 0
                if len(node.args) == 2:
                    arg = node.args[1]
                    if not (isinstance(arg, ast.Call) and arg.func.id == "num" and "." not in arg.args[0].value):
                        raise OracleError("offset")
                    n = int(arg.args[0].value)
                elif len(node.args) != 1:
                    raise OracleError("arity")
                return self.reference(node.args[0], name, n)
            raise OracleError(f"function {name}")
        if isinstance(node, ast.UnaryOp):
            v = self.value(node.operand)
            if isinstance(node.op, ast.Not):
                if v is not None and not isinstance(v, bool):
                    raise OracleError("NOT of a non-boolean")
                return None if v is None else not v
            if isinstance(node.op, ast.USub):
                if v is not None and _kind(v) != "num":
                    raise OracleError("minus of a non-number")
                return None if v is None else -v
            raise OracleError("unary")
        if isinstance(node, ast.BinOp):
            a, b = self.value(node.left), self.value(node.right)
            for v in (a, b):
                if v is not None and _kind(v) != "num":
                    raise OracleError("arithmetic on a non-number")
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.Div):
                return None if b == 0 else Fraction(a) / b
            raise OracleError("operator")
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise OracleError("chained comparison")
            op, right = node.ops[0], node.comparators[0]
            a = self.value(node.left)
            if isinstance(op, (ast.Is, ast.IsNot)):
                return (a is None) == isinstance(op, ast.Is)
            b = self.value(right)
            if a is None or b is None:
                return None
            if _kind(a) != _kind(b):
                raise OracleError("comparing different kinds")
            table = {ast.Eq: a == b, ast.NotEq: a != b, ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b}
            return table[type(op)]
        if isinstance(node, ast.BoolOp):
            values = [self.value(v) for v in node.values]
            for v in values:
                if v is not None and not isinstance(v, bool):
                    raise OracleError("AND/OR of a non-boolean")
            if isinstance(node.op, ast.And):
                if False in values:
                    return False
                return None if None in values else True
            if True in values:
                return True
            return None if None in values else False
        raise OracleError(f"construct {type(node).__name__}")


def truth(text: str, owner: str, before, current):
    """Three-valued truth of the condition ``text`` of letter ``owner`` at ``current``."""
    value = _Walker(owner, before, current).value(parse(text))
    if value is not None and not isinstance(value, bool):
        raise OracleError("not a boolean")
    return value


def holds(text: str, owner: str, before, current) -> bool:
    return truth(text, owner, before, current) is True
