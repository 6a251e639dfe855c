"""Tokeniser and recursive-descent parser for suse queries.

Grammar (postfix binds tightest, then concatenation, then ``|``)::

    alternation := concat ("|" concat)*
    concat      := (postfix | negation)+
    postfix     := atom ("*" | "+" | "?" | "{m}" | "{m,}" | "{m,n}")*
    atom        := CHAR | "." | "(" alternation ")"
    negation    := "!" CHAR | "!" "(" CHAR ("|" CHAR)* ")"

Whitespace is removed before tokenising, so ``A B`` is ``AB`` and ``{1 0}`` is ``{10}``;
every position in an error still refers to the original query string.
Stacked postfix operators apply in turn to the previous result: ``a*{2}`` is ``(a*){2}``,
and ``a+?`` is ``(a+)?`` (there are no lazy or possessive quantifiers).

A negation ``!X`` or ``!(X|Y)`` is zero-width: it consumes no event but forbids events of
its characters between the match elements on either side of it. The parser checks its
form (single letters, not repeated); where it may stand in the pattern (not first, not
last, not before a letter it forbids) is checked on the automaton, see
``construction.check_negations``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn, Optional, Union

from suse.errors import QueryError

MAX_REPEAT = 1000  # largest allowed bound in {m,n}
MAX_EXPANDED_SIZE = 2000  # symbols after expanding all repetitions; keeps compilation fast
MAX_DEPTH = 100  # nesting of groups and stacked operators; keeps recursion bounded

_WHITESPACE = " \t\n\r\f\v"
_POSTFIX = {"*": (0, None), "+": (1, None), "?": (0, 1)}


def is_symbol(ch: str) -> bool:
    """True for the characters a query may match: ASCII letters and digits."""
    return ch.isascii() and ch.isalnum()


# --- syntax tree -------------------------------------------------------------------------
# ``pos`` (0-based, into the original query) is excluded from equality so trees can be
# compared structurally, e.g. ``parse("a b") == parse("ab")``.


@dataclass(frozen=True)
class Char:
    char: str
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class AnyChar:
    """``.``: any character of the query's alphabet."""

    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Concat:
    parts: tuple[Node, ...]
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Alternation:
    options: tuple[Node, ...]
    pos: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Repeat:
    """``node{min,max}``; ``max is None`` means unbounded. ``*``, ``+``, ``?`` are sugar."""

    node: Node
    min: int
    max: Optional[int]
    pos: int = field(default=0, compare=False)  # position of the operator


@dataclass(frozen=True)
class Negation:
    """``!X`` / ``!(X|Y|...)``: no event of ``chars`` (sorted, distinct) lies between the
    match elements before and after this point."""

    chars: str
    pos: int = field(default=0, compare=False)  # position of the '!'


Node = Union[Char, AnyChar, Concat, Alternation, Repeat, Negation]


def alphabet_of(node: Node) -> str:
    """The sorted distinct explicit characters of a tree (``.`` contributes none); these are
    the characters a match element can have, so negated characters are not included."""
    return _collect(node, lambda leaf: leaf.char if isinstance(leaf, Char) else "")


def negated_of(node: Node) -> str:
    """The sorted distinct characters that some negation in the tree forbids."""
    return _collect(node, lambda leaf: leaf.chars if isinstance(leaf, Negation) else "")


def has_letter(node: Node) -> bool:
    """True if the node can consume an event (it holds a character or ``.``)."""
    return _contains(node, (Char, AnyChar))


def has_negation(node: Node) -> bool:
    return _contains(node, (Negation,))


def _contains(node: Node, kinds: tuple[type, ...]) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, kinds):
            return True
        stack.extend(_children(current))
    return False


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Concat):
        return node.parts
    if isinstance(node, Alternation):
        return node.options
    if isinstance(node, Repeat):
        return (node.node,)
    return ()


def _collect(node: Node, chars_of) -> str:
    chars: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        chars.update(chars_of(current))
        stack.extend(_children(current))
    return "".join(sorted(chars))


def expanded_size(node: Node) -> int:
    """Number of symbols once every repetition is written out (``a{3}`` counts 3)."""
    if isinstance(node, (Char, AnyChar, Negation)):
        return 1
    if isinstance(node, Concat):
        return sum(expanded_size(p) for p in node.parts)
    if isinstance(node, Alternation):
        return sum(expanded_size(o) for o in node.options)
    copies = node.max if node.max is not None else max(node.min, 1)
    return copies * expanded_size(node.node)


def format_query(node: Node) -> str:
    """Render a tree back to query syntax with only the parentheses precedence needs."""
    if isinstance(node, Char):
        return node.char
    if isinstance(node, AnyChar):
        return "."
    if isinstance(node, Negation):
        return "!" + node.chars if len(node.chars) == 1 else "!(" + "|".join(node.chars) + ")"
    if isinstance(node, Alternation):
        return "|".join(format_query(o) for o in node.options)
    if isinstance(node, Concat):
        return "".join(_wrap(p, (Alternation,)) for p in node.parts)
    inner = _wrap(node.node, (Alternation, Concat))
    return inner + _format_bounds(node.min, node.max)


def _wrap(node: Node, needs_parens: tuple[type, ...]) -> str:
    text = format_query(node)
    return f"({text})" if isinstance(node, needs_parens) else text


def _format_bounds(low: int, high: Optional[int]) -> str:
    for op, bounds in _POSTFIX.items():
        if bounds == (low, high):
            return op
    if high is None:
        return f"{{{low},}}"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


# --- tokeniser ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: str  # "char", ".", "(", ")", "|", "!", "repeat", "end"
    pos: int
    text: str = ""
    bounds: tuple[int, Optional[int]] = (0, None)  # for "repeat" tokens


def tokenize(query: str) -> list[Token]:
    """Split a query into tokens, ending with an ``end`` token at ``len(query)``."""
    chars = [(ch, i) for i, ch in enumerate(query) if ch not in _WHITESPACE]
    tokens: list[Token] = []
    i = 0
    while i < len(chars):
        ch, pos = chars[i]
        if is_symbol(ch):
            tokens.append(Token("char", pos, ch))
        elif ch in ".()|!":
            tokens.append(Token(ch, pos, ch))
        elif ch in _POSTFIX:
            tokens.append(Token("repeat", pos, ch, _POSTFIX[ch]))
        elif ch == "{":
            token, i = _read_bounds(query, chars, i)
            tokens.append(token)
            continue
        elif ch == "}":
            raise QueryError("unmatched '}' (no '{' opens it)", pos, query)
        else:
            raise QueryError(
                f"unexpected symbol {ch!r}: only ASCII letters, digits and the operators "
                "| * + ? . ( ) {m,n} ! are allowed",
                pos,
                query,
            )
        i += 1
    tokens.append(Token("end", len(query)))
    return tokens


def _read_bounds(query: str, chars: list[tuple[str, int]], i: int) -> tuple[Token, int]:
    """Read ``{m}``, ``{m,}`` or ``{m,n}`` starting at ``chars[i] == '{'``."""
    brace = chars[i][1]

    def peek(j: int) -> tuple[str, int]:
        if j >= len(chars):
            raise QueryError("unclosed '{': expected '}' to end the repetition", brace, query)
        return chars[j]

    def number(j: int) -> tuple[int, int]:
        ch, pos = peek(j)
        if not ch.isascii() or not ch.isdigit():
            raise QueryError(f"expected a number in the repetition, found {ch!r}", pos, query)
        digits = ""
        while j < len(chars) and chars[j][0].isascii() and chars[j][0].isdigit():
            digits += chars[j][0]
            j += 1
        if int(digits) > MAX_REPEAT:
            raise QueryError(
                f"repetition bound {int(digits)} exceeds the limit of {MAX_REPEAT}", pos, query
            )
        return int(digits), j

    low, j = number(i + 1)
    high: Optional[int] = low
    ch, pos = peek(j)
    if ch == ",":
        ch, pos = peek(j + 1)
        if ch == "}":
            high, j = None, j + 1
        else:
            high, j = number(j + 1)
            if high < low:
                raise QueryError(
                    f"repetition bounds reversed: minimum {low} exceeds maximum {high}",
                    pos,
                    query,
                )
    ch, pos = peek(j)
    if ch != "}":
        raise QueryError(f"expected '}}' to end the repetition, found {ch!r}", pos, query)
    text = query[brace : pos + 1]
    return Token("repeat", brace, text, (low, high)), j + 1


# --- parser ------------------------------------------------------------------------------


def parse(query: str) -> Node:
    """Parse a query into a syntax tree; raise ``QueryError`` on malformed syntax."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, not {type(query).__name__}", 0, str(query))
    tree = _Parser(query).parse()
    size = expanded_size(tree)
    if size > MAX_EXPANDED_SIZE:
        raise QueryError(
            f"query too large: repetitions expand it to {size} symbols, "
            f"the limit is {MAX_EXPANDED_SIZE}",
            0,
            query,
        )
    return tree


class _Parser:
    def __init__(self, query: str):
        self.query = query
        self.tokens = tokenize(query)
        self.index = 0

    def peek(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def error(self, message: str, pos: int) -> QueryError:
        return QueryError(message, pos, self.query)

    def parse(self) -> Node:
        tree = self.alternation(group=None, depth=0)
        token = self.peek()
        if token.kind == ")":
            raise self.error("unmatched ')' (no '(' opens it)", token.pos)
        return tree

    def alternation(self, group: Optional[Token], depth: int) -> Node:
        """Parse ``concat ("|" concat)*``; ``group`` is the '(' token if inside one."""
        options: list[Node] = []
        last_bar: Optional[Token] = None
        while True:
            branch = self.concat(depth)
            if branch is None:
                self.empty_branch(group, last_bar)
            options.append(branch)
            if self.peek().kind != "|":
                break
            last_bar = self.advance()
        if len(options) == 1:
            return options[0]
        return Alternation(tuple(options), options[0].pos)

    def empty_branch(self, group: Optional[Token], last_bar: Optional[Token]) -> NoReturn:
        """Raise the error that fits an alternative with nothing in it."""
        token = self.peek()
        if group is None:
            if token.kind == ")":
                raise self.error("unmatched ')' (no '(' opens it)", token.pos)
            if last_bar is not None and token.kind == "end":
                raise self.error("dangling '|': nothing follows it", last_bar.pos)
            if last_bar is None and token.kind == "|":
                raise self.error("dangling '|': nothing precedes it", token.pos)
            if last_bar is None:
                raise self.error("empty query", 0)
        elif token.kind == "end":
            raise self.error("unclosed '(': expected ')'", group.pos)
        elif token.kind == ")" and last_bar is None:
            raise self.error("empty group '()': it must contain an expression", token.pos)
        raise self.error(f"empty alternative before {token.text!r}", token.pos)

    def concat(self, depth: int) -> Optional[Node]:
        parts: list[Node] = []
        while True:
            token = self.peek()
            if token.kind == "repeat":
                raise self.error(f"dangling {token.text!r}: nothing before it to repeat", token.pos)
            if token.kind == "!":
                parts.append(self.negation())
                continue
            if token.kind not in ("char", ".", "("):
                break
            parts.append(self.postfix(depth))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Concat(tuple(parts), parts[0].pos)

    def postfix(self, depth: int) -> Node:
        node = self.atom(depth)
        while self.peek().kind == "repeat":
            token = self.advance()
            if not has_letter(node):  # e.g. (!A)*: a zero-width group
                raise self.repeated_negation(token)
            depth += 1
            if depth > MAX_DEPTH:
                raise self.error(f"query nests deeper than {MAX_DEPTH} levels", token.pos)
            low, high = token.bounds
            node = Repeat(node, low, high, token.pos)
        return node

    def repeated_negation(self, token: Token) -> QueryError:
        return self.error(
            f"a negation cannot be repeated or made optional ({token.text!r} applies to "
            "nothing but a negation)",
            token.pos,
        )

    def negation(self) -> Negation:
        """``!X`` or ``!(X|Y|...)``: single letters only, never repeated."""
        bang = self.advance()
        token = self.advance()
        if token.kind == "char":
            chars = {token.text}
        elif token.kind == "(":
            chars = set()
            while True:
                letter = self.advance()
                if letter.kind == ")" and not chars:
                    raise self.error("empty negation '!()': name the letters it forbids", letter.pos)
                if letter.kind == "end":
                    raise self.error("unclosed '(' after '!': expected ')'", token.pos)
                if letter.kind != "char":
                    raise self.error(
                        f"only single letters can be negated, as in !(X|Y); found {letter.text!r}",
                        letter.pos,
                    )
                chars.add(letter.text)
                after = self.advance()
                if after.kind == ")":
                    break
                if after.kind == "end":
                    raise self.error("unclosed '(' after '!': expected ')'", token.pos)
                if after.kind != "|":
                    raise self.error(
                        f"only single letters can be negated, as in !(X|Y); found {after.text!r} "
                        "after a letter",
                        after.pos,
                    )
        elif token.kind == "!":
            raise self.error("nested negation: '!' cannot follow '!'", token.pos)
        elif token.kind == "end":
            raise self.error("dangling '!': nothing follows it", bang.pos)
        else:
            raise self.error(
                f"'!' must be followed by a letter or a parenthesised alternation of letters "
                f"such as !(X|Y); found {token.text!r}",
                token.pos,
            )
        if self.peek().kind == "repeat":
            raise self.repeated_negation(self.peek())
        return Negation("".join(sorted(chars)), bang.pos)

    def atom(self, depth: int) -> Node:
        token = self.advance()
        if token.kind == "char":
            return Char(token.text, token.pos)
        if token.kind == ".":
            return AnyChar(token.pos)
        # only "(" reaches here: concat() checked the token kind
        if depth + 1 > MAX_DEPTH:
            raise self.error(f"query nests deeper than {MAX_DEPTH} levels", token.pos)
        inner = self.alternation(group=token, depth=depth + 1)
        if self.peek().kind != ")":
            raise self.error("unclosed '(': expected ')'", token.pos)
        self.advance()
        return inner
