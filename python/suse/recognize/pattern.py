"""Row patterns of SQL:2016 ``MATCH_RECOGNIZE``: the syntax tree and its parser.

```
pattern    := alternation
alternation:= sequence ("|" sequence)*            -- preferred in the order written
sequence   := quantified*                          -- may be empty: "()" is the empty pattern
quantified := primary [quantifier ["?"]]           -- "?" after a quantifier makes it reluctant
quantifier := "*" | "+" | "?" | "{" n "}" | "{" n "," [m] "}" | "{" "," m "}"
primary    := VARIABLE | "(" alternation ")" | "{-" alternation "-}" | "^" | "$"
            | PERMUTE "(" alternation ("," alternation)* ")"
```

Tokens come from the statement's tokenizer (objects with ``kind``, ``text`` and ``pos``), so
every error is a :class:`suse.SqlError` at its place in the statement.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from suse.errors import SqlError

MAX_REPEAT = 1000  # largest bound in {n,m}: the matcher unrolls bounded repetition


@dataclass(frozen=True)
class Var:
    name: str
    pos: int


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    body: Node
    low: int
    high: Optional[int]  # None: unbounded
    greedy: bool


@dataclass(frozen=True)
class Anchor:
    start: bool  # "^" (True) or "$" (False)


@dataclass(frozen=True)
class Exclude:
    body: Node


Node = Union[Var, Seq, Alt, Repeat, Anchor, Exclude]


def variable_name(tok) -> str:
    """A pattern variable's name: unquoted names are case-insensitive (upper-cased, as in the
    standard and Trino, so CLASSIFIER() of ``a`` is 'A'); a `quoted` name is kept as written."""
    return tok.text.upper() if tok.kind == "id" else tok.text[1:-1].replace("``", "`")


def permute(items: Sequence[Node]) -> Alt:
    """PERMUTE(a, b, c): every order, lexicographic in the order written (a b c, a c b, b a c, ...)."""
    return Alt(tuple(Seq(tuple(order)) for order in itertools.permutations(items)))


def variables(node: Node) -> list[str]:
    """The variables of the pattern, in order of first appearance."""
    if isinstance(node, Var):
        return [node.name]
    if isinstance(node, (Seq, Alt)):
        return list(dict.fromkeys(v for item in node.items for v in variables(item)))
    if isinstance(node, (Repeat, Exclude)):
        return variables(node.body)
    return []


def nullable(node: Node) -> bool:
    """Whether the node can match no row."""
    if isinstance(node, Var):
        return False
    if isinstance(node, Seq):
        return all(nullable(i) for i in node.items)
    if isinstance(node, Alt):
        return any(nullable(i) for i in node.items)
    if isinstance(node, Repeat):
        return node.low == 0 or nullable(node.body)
    if isinstance(node, Exclude):
        return nullable(node.body)
    return True


class PatternParser:
    """Parses the tokens between ``PATTERN (`` and its closing ``)`` (exclusive)."""

    def __init__(self, tokens: Sequence, text: str, end_pos: int):
        self.toks = list(tokens)
        self.text = text
        self.end_pos = end_pos
        self.i = 0

    def peek(self, k: int = 0):
        return self.toks[self.i + k] if self.i + k < len(self.toks) else None

    def fail(self, message: str, tok=None) -> SqlError:
        return SqlError(message, tok.pos if tok is not None else self.end_pos, self.text)

    def is_op(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "op" and t.text == text

    def parse(self) -> Node:
        node = self.alternation()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek().text!r} in PATTERN", self.peek())
        return node

    def alternation(self) -> Node:
        items = [self.sequence()]
        while self.is_op("|"):
            self.i += 1
            items.append(self.sequence())
        return items[0] if len(items) == 1 else Alt(tuple(items))

    def sequence(self) -> Node:
        items = []
        while True:
            t = self.peek()
            if t is None or (t.kind == "op" and t.text in ("|", ")", ",")) or (self.is_op("-") and self.is_op("}", 1)):
                break
            items.append(self.quantified())
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def quantified(self) -> Node:
        node = self.primary()
        t = self.peek()
        if t is None or t.kind != "op" or t.text not in ("*", "+", "?", "{") or (t.text == "{" and self.is_op("-", 1)):
            return node
        self.i += 1
        if t.text == "*":
            low, high = 0, None
        elif t.text == "+":
            low, high = 1, None
        elif t.text == "?":
            low, high = 0, 1
        else:
            low, high = self.bounds(t)
        greedy = True
        if self.is_op("?"):
            self.i += 1
            greedy = False
        nxt = self.peek()
        if nxt is not None and nxt.kind == "op" and nxt.text in ("*", "+", "?") or (self.is_op("{") and not self.is_op("-", 1)):
            raise self.fail("a quantifier cannot follow a quantifier: put the quantified part in parentheses", nxt)
        return Repeat(node, low, high, greedy)

    def bounds(self, brace) -> tuple[int, Optional[int]]:
        low = self.whole() if self.peek() is not None and self.peek().kind == "num" else None
        if self.is_op("}"):
            self.i += 1
            if low is None:
                raise self.fail("empty quantifier {}: write {n}, {n,}, {n,m} or {,m}", brace)
            return low, low
        if not self.is_op(","):
            raise self.fail("expected ',' or '}' in the quantifier", self.peek())
        self.i += 1
        high = self.whole() if self.peek() is not None and self.peek().kind == "num" else None
        if not self.is_op("}"):
            raise self.fail("expected '}' closing the quantifier", self.peek())
        self.i += 1
        low = 0 if low is None else low
        if high is not None and high < low:
            raise self.fail(f"quantifier {{{low},{high}}}: the upper bound is below the lower one", brace)
        if high == 0:
            raise self.fail("quantifier {,0} or {0,0}: the upper bound must be at least 1", brace)
        return low, high

    def whole(self) -> int:
        t = self.peek()
        if "." in t.text:
            raise self.fail("a quantifier bound must be a whole number", t)
        value = int(t.text)
        if value > MAX_REPEAT:
            raise self.fail(f"quantifier bound {value} is above the limit of {MAX_REPEAT}", t)
        self.i += 1
        return value

    def primary(self) -> Node:
        t = self.peek()
        if t.kind in ("id", "qid"):
            if t.kind == "id" and t.text.upper() == "PERMUTE" and self.is_op("(", 1):
                self.i += 2
                items = [self.alternation()]
                while self.is_op(","):
                    self.i += 1
                    items.append(self.alternation())
                self.close(")", t)
                if len(items) > 6:
                    raise self.fail(f"PERMUTE of {len(items)} items has {len(list(itertools.permutations(range(len(items)))))} orders; at most 6 items", t)
                return permute(items)
            self.i += 1
            return Var(variable_name(t), t.pos)
        if t.kind == "op" and t.text == "(":
            self.i += 1
            node = self.alternation()
            self.close(")", t)
            return node if not (isinstance(node, Seq) and not node.items) else Seq(())
        if t.kind == "op" and t.text == "{" and self.is_op("-", 1):
            self.i += 2
            node = self.alternation()
            if not (self.is_op("-") and self.is_op("}", 1)):
                raise self.fail("unclosed exclusion {- ... -}", t)
            self.i += 2
            return Exclude(node)
        if t.kind == "op" and t.text in ("^", "$"):
            self.i += 1
            return Anchor(t.text == "^")
        raise self.fail(f"unexpected {t.text!r} in PATTERN", t)

    def close(self, text: str, opened) -> None:
        if not self.is_op(text):
            raise self.fail(f"unclosed {opened.text!r} in PATTERN", opened)
        self.i += 1


def parse_pattern(tokens: Sequence, text: str, end_pos: int) -> Node:
    """The syntax tree of the pattern whose tokens are given (without the enclosing parentheses)."""
    return PatternParser(tokens, text, end_pos).parse()
