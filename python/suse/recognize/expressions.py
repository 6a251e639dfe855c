"""DEFINE and MEASURES expressions: what Spark computes per row, and what depends on the match.

An expression is Spark SQL in which some parts look at the match: ``A.price`` (the last row of
A so far), ``FIRST(A.price, 1)``, ``LAST(price)``, ``PREV(price, 2)``, ``NEXT(...)``,
``PREV(LAST(A.price), 1)``, ``RUNNING`` / ``FINAL``, ``CLASSIFIER()``, ``MATCH_NUMBER()`` and
the aggregates ``sum avg count min max array_agg collect_list max_by min_by`` (with or without
``DISTINCT``) over a variable's rows. Each such part is a :class:`Leaf`; its argument
(``price * qty`` in ``sum(A.price * A.qty)``) is a row expression that Spark computes as a
column, qualifiers removed. In DEFINE, a function call whose columns all belong to one row
(``abs(B.price - B.cost)``, ``upper(A.name)``) is one such row expression too, so any Spark
function works there. The rest of the text stays as written: for MEASURES Spark evaluates it
over the leaves' values after matching; for DEFINE it is either Spark's too (when every leaf is
the current row or a fixed distance from it: ``PREV`` becomes ``lag``) or the small evaluator in
:mod:`suse.recognize.evaluate` runs it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from suse.errors import SqlError
from suse.recognize.pattern import variable_name

NAVIGATION = ("FIRST", "LAST", "PREV", "NEXT")
SYNONYMS = {"LAG": "PREV", "LEAD": "NEXT"}  # as Snowflake accepts them in DEFINE and MEASURES
AGGREGATES = ("SUM", "AVG", "COUNT", "MIN", "MAX", "ARRAY_AGG", "COLLECT_LIST", "MAX_BY", "MIN_BY")
BY_AGGREGATES = ("MAX_BY", "MIN_BY")  # (value, key): the value at the row of the greatest / least key
CLASSIFIER_VALUE = "CLASSIFIER()"  # an aggregate's argument that is each row's variable (array_agg(CLASSIFIER()))
# words that may stand before '(' without being a function call
NOT_CALLS = frozenset(("IN", "AND", "OR", "NOT", "IS", "WHEN", "THEN", "ELSE", "CASE", "BETWEEN", "LIKE", "ILIKE",
                       "RLIKE", "REGEXP", "EXISTS", "AS", "OVER", "END"))


@dataclass(frozen=True)
class Nav:
    """The value of row expression ``expr`` at a row chosen by the match: among the rows of
    ``qual`` (a variable, a subset, or None: every row) so far, the ``index``-th from the first
    (``FIRST``) or from the last (``LAST``), then ``physical`` rows further in the partition."""

    expr: str
    qual: Optional[str]
    logical: str = "LAST"
    index: int = 0
    physical: int = 0
    final: bool = False


@dataclass(frozen=True)
class Agg:
    func: str  # lower case: sum avg count min max array_agg collect_list max_by min_by
    expr: Optional[str]  # None: count(*) / count(A.*)
    qual: Optional[str]
    final: bool = False
    key: Optional[str] = None  # max_by / min_by: the row expression compared
    distinct: bool = False  # over the distinct non-NULL values only


@dataclass(frozen=True)
class Classifier:
    qual: Optional[str]
    final: bool = False


@dataclass(frozen=True)
class MatchNumber:
    pass


Leaf = Union[Nav, Agg, Classifier, MatchNumber]


@dataclass(frozen=True)
class Split:
    """An expression cut into text and leaves: ``pieces`` alternates source text (str) and
    indices into ``leaves``."""

    pieces: tuple
    leaves: tuple[Leaf, ...]
    #: where each piece starts in the statement (error positions of what a piece becomes)
    starts: tuple[int, ...] = ()

    def render(self, leaf_text) -> str:
        return "".join(p if isinstance(p, str) else leaf_text(self.leaves[p]) for p in self.pieces)

    def row_local(self, var: str, members: dict) -> bool:
        """Whether, in the DEFINE of ``var``, every leaf reads the current row or a fixed
        distance from it: Spark computes such a condition per row (``render_row``)."""
        return all(current_row(leaf, var, members) for leaf in self.leaves)

    def render_row(self, window: str) -> str:
        """A ``row_local`` condition as Spark SQL: qualifiers dropped, PREV/NEXT as lag/lead."""
        return self.render(lambda leaf: _row_text(leaf, window))


def current_row(leaf: Leaf, var: str, members: dict) -> bool:
    """Whether a DEFINE leaf of ``var`` reads the current row or a fixed distance from it."""
    if not isinstance(leaf, Nav) or leaf.logical != "LAST" or leaf.index != 0:
        return False
    return leaf.qual is None or leaf.qual == var or (leaf.qual in members and members[var] <= members[leaf.qual])


def _row_text(leaf: Leaf, window: str) -> str:
    assert isinstance(leaf, Nav)  # row_local: every leaf is a Nav
    if leaf.physical == 0:
        return f"({leaf.expr})"
    fn = "lag" if leaf.physical < 0 else "lead"
    return f"{fn}(({leaf.expr}), {abs(leaf.physical)}) OVER ({window})"


class Extractor:
    """Finds the leaves of one expression. ``tokens`` from the statement's tokenizer (without
    the end token), ``text`` the whole statement; ``names``: pattern variables and subsets."""

    def __init__(self, tokens: Sequence, text: str, columns: set[str], names: set[str], clause: str):
        self.toks = list(tokens)
        self.text = text
        self.columns = {c.lower() for c in columns}
        self.names = set(names)
        self.clause = clause  # "MEASURES" or "DEFINE"

    def fail(self, message: str, tok) -> SqlError:
        return SqlError(f"{self.clause}: {message}", tok.pos, self.text)

    def at(self, i: int, text: str) -> bool:
        return i < len(self.toks) and self.toks[i].kind == "op" and self.toks[i].text == text

    def word(self, i: int) -> str:
        return self.toks[i].text.upper() if i < len(self.toks) and self.toks[i].kind == "id" else ""

    def is_name(self, i: int) -> bool:
        t = self.toks[i]
        return t.kind in ("id", "qid") and variable_name(t) in self.names and self.at(i + 1, ".")

    def is_column(self, i: int) -> bool:
        """An unqualified column of the input (not a function name, not after '.' or AS)."""
        t = self.toks[i]
        if t.kind not in ("id", "qid") or self.ident(t).lower() not in self.columns or self.at(i + 1, "("):
            return False
        return not (i > 0 and (self.at(i - 1, ".") or self.word(i - 1) == "AS"))

    @staticmethod
    def ident(t) -> str:
        return t.text[1:-1].replace("``", "`") if t.kind == "qid" else t.text

    def split(self) -> Split:
        pieces: list = []
        starts: list[int] = []
        leaves: list[Leaf] = []
        i, last = 0, (self.toks[0].pos if self.toks else 0)
        while i < len(self.toks):
            t = self.toks[i]
            final = None
            j = i
            if self.word(i) in ("RUNNING", "FINAL") and (self.word(i + 1) in NAVIGATION + AGGREGATES + ("CLASSIFIER",)) and self.at(i + 2, "("):
                final = self.word(i) == "FINAL"
                if final and self.clause == "DEFINE":
                    raise self.fail("FINAL is for MEASURES only: DEFINE sees the match so far", t)
                j = i + 1
            w = self.word(j)
            leaf: Optional[Leaf] = None
            k = i + 1
            if (w in NAVIGATION or (w in SYNONYMS and not self.windowed(j))) and self.at(j + 1, "("):
                leaf, k = self.navigation(j)
            elif w in AGGREGATES and self.at(j + 1, "("):
                leaf, k = self.aggregate(j)
            elif w == "CLASSIFIER" and self.at(j + 1, "("):
                leaf, k = self.classifier(j)
            elif w == "MATCH_NUMBER" and self.at(j + 1, "("):
                if not self.at(j + 2, ")"):
                    raise self.fail("MATCH_NUMBER() takes no argument", self.toks[j + 2])
                if self.clause == "DEFINE":
                    raise self.fail("MATCH_NUMBER() is not allowed in DEFINE", self.toks[j])
                leaf, k = MatchNumber(), j + 3
            elif self.clause == "DEFINE" and final is None and (k := self.one_row_call(i)):
                expr, qual = self.row_expression(i, k, t)
                leaf = Nav(expr, qual)
            elif self.is_name(i):
                if self.at(i + 2, "*"):
                    raise self.fail(f"{self.ident(t)}.* is only allowed in count({self.ident(t)}.*)", t)
                if i + 2 >= len(self.toks) or self.toks[i + 2].kind not in ("id", "qid"):
                    raise self.fail(f"expected a column after {self.ident(t)}.", t)
                leaf, k = Nav(self.quote(self.toks[i + 2]), variable_name(t)), i + 3
            elif self.is_column(i):
                leaf, k = Nav(self.quote(t), None), i + 1
            if leaf is None:
                i += 1
                continue
            if final is not None:
                leaf = _with_final(leaf, final, self, t)
            pieces.append(self.text[last:t.pos])
            starts.append(last)
            if leaf not in leaves:
                leaves.append(leaf)
            pieces.append(leaves.index(leaf))
            starts.append(t.pos)
            end_tok = self.toks[k - 1]
            last = end_tok.pos + len(end_tok.text)
            i = k
        if self.toks:
            end_tok = self.toks[-1]
            pieces.append(self.text[last:end_tok.pos + len(end_tok.text)])
            starts.append(last)
        return Split(tuple(pieces), tuple(leaves), tuple(starts))

    def one_row_call(self, i: int) -> int:
        """The index after a function call at ``i`` whose columns all belong to one row (one
        variable, or all unqualified) and that holds no match function: Spark computes the whole
        call as a row expression. 0 when ``i`` is no such call."""
        if self.toks[i].kind != "id" or self.word(i) in NOT_CALLS or not self.at(i + 1, "(") or self.windowed(i):
            return 0
        if i > 0 and self.at(i - 1, "."):
            return 0
        close = self.close(i + 1)
        quals: set = set()
        for k in range(i + 2, close):
            w = self.word(k)
            if (w in NAVIGATION + AGGREGATES + ("CLASSIFIER", "MATCH_NUMBER", "RUNNING", "FINAL")
                    or (w in SYNONYMS and not self.windowed(k))) and self.at(k + 1, "("):
                return 0
            if self.is_name(k):
                quals.add(variable_name(self.toks[k]))
            elif self.is_column(k):
                quals.add(None)
        return close + 1 if len(quals) <= 1 else 0

    def windowed(self, j: int) -> bool:
        """Whether the call at ``j`` is followed by OVER: Spark's own window function."""
        return self.at(j + 1, "(") and self.word(self.close(j + 1) + 1) == "OVER"

    def quote(self, t) -> str:
        return "`" + self.ident(t).replace("`", "``") + "`"

    def close(self, open_index: int) -> int:
        """Index of the ')' matching the '(' at ``open_index``."""
        depth = 0
        for k in range(open_index, len(self.toks)):
            if self.at(k, "("):
                depth += 1
            elif self.at(k, ")"):
                depth -= 1
                if depth == 0:
                    return k
        raise self.fail("unclosed '('", self.toks[open_index])

    def arguments(self, j: int) -> tuple[list[tuple[int, int]], int]:
        """The top-level argument token ranges of the call at ``j`` and the index after ')'."""
        close = self.close(j + 1)
        args, start, depth = [], j + 2, 0
        for k in range(j + 2, close):
            if self.at(k, "("):
                depth += 1
            elif self.at(k, ")"):
                depth -= 1
            elif depth == 0 and self.at(k, ","):
                args.append((start, k))
                start = k + 1
        if start < close or args:
            args.append((start, close))
        return args, close + 1

    def row_expression(self, a: int, b: int, call) -> tuple[str, Optional[str]]:
        """The Spark text of tokens a..b-1 with qualifiers removed, and their one qualifier."""
        expr, quals = self.row_expression_quals(a, b, call)
        if len(quals) > 1:
            shown = ", ".join(sorted("no variable" if q is None else q for q in quals))
            raise self.fail(f"the columns in {call.text}(...) must all belong to one pattern variable, found {shown}", call)
        return expr, next(iter(quals), None)

    def row_expression_quals(self, a: int, b: int, call) -> tuple[str, set]:
        """The Spark text of tokens a..b-1 with qualifiers removed, and the qualifiers they use
        (None: an unqualified column; empty: no column at all)."""
        if a >= b:
            raise self.fail(f"{call.text}() needs an argument", call)
        if b - a == 1 and self.is_column(a):  # one column: the same text as a bare reference
            return self.quote(self.toks[a]), {None}
        if b - a == 3 and self.is_name(a) and self.toks[a + 2].kind in ("id", "qid"):
            return self.quote(self.toks[a + 2]), {variable_name(self.toks[a])}
        quals: set = set()
        out, last = [], self.toks[a].pos
        k = a
        while k < b:
            t = self.toks[k]
            w = self.word(k)
            if (w in NAVIGATION + AGGREGATES + ("CLASSIFIER", "MATCH_NUMBER", "RUNNING", "FINAL")) and self.at(k + 1, "("):
                raise self.fail(f"{t.text} cannot be nested in {call.text}() here", t)
            if self.is_name(k):
                quals.add(variable_name(t))
                out.append(self.text[last:t.pos])
                last = self.toks[k + 2].pos
                k += 2
                continue
            if self.is_column(k):
                quals.add(None)
            k += 1
        end = self.toks[b - 1]
        out.append(self.text[last:end.pos + len(end.text)])
        return "".join(out).strip(), quals

    def offset(self, rng: tuple[int, int], call) -> int:
        a, b = rng
        if b - a != 1 or self.toks[a].kind != "num" or "." in self.toks[a].text:
            raise self.fail(f"the offset of {call.text}() must be a whole number", self.toks[a] if a < b else call)
        return int(self.toks[a].text)

    def navigation(self, j: int) -> tuple[Nav, int]:
        call = self.toks[j]
        name = SYNONYMS.get(call.text.upper(), call.text.upper())
        args, after = self.arguments(j)
        if not args or len(args) > 2:
            raise self.fail(f"{call.text}() takes an expression and an optional offset", call)
        n = self.offset(args[1], call) if len(args) == 2 else (1 if name in ("PREV", "NEXT") else 0)
        a, b = args[0]
        if name in ("PREV", "NEXT") and self.word(a) in ("FIRST", "LAST") and self.at(a + 1, "(") and self.close(a + 1) == b - 1:
            inner, _ = self.navigation(a)
            return Nav(inner.expr, inner.qual, inner.logical, inner.index, -n if name == "PREV" else n), after
        expr, qual = self.row_expression(a, b, call)
        if name in ("PREV", "NEXT"):
            return Nav(expr, qual, "LAST", 0, -n if name == "PREV" else n), after
        return Nav(expr, qual, name, n, 0), after

    def aggregate(self, j: int) -> tuple[Agg, int]:
        call = self.toks[j]
        func = call.text.lower()
        args, after = self.arguments(j)
        distinct = False
        if args and self.word(args[0][0]) in ("DISTINCT", "ALL"):
            quantifier = self.toks[args[0][0]]
            distinct = quantifier.text.upper() == "DISTINCT"
            if distinct and func.upper() in BY_AGGREGATES:
                raise self.fail(f"DISTINCT in {call.text}() is not supported: it picks one row's value, "
                                "there is nothing to make distinct", quantifier)
            args[0] = (args[0][0] + 1, args[0][1])
        if func.upper() in BY_AGGREGATES:
            return self.by_aggregate(j, args, distinct), after
        if len(args) != 1:
            raise self.fail(f"{call.text}() over pattern variables takes one argument", call)
        a, b = args[0]
        if distinct and (b - a == 1 and self.at(a, "*") or b - a == 3 and self.is_name(a) and self.at(a + 2, "*")):
            raise self.fail(f"{call.text}(DISTINCT *) is not an aggregate: write {call.text}(DISTINCT expression)", call)
        if b - a == 1 and self.at(a, "*"):
            if func != "count":
                raise self.fail(f"{call.text}(*) is not an aggregate: write {call.text}(expression)", call)
            return Agg("count", None, None), after
        if b - a == 3 and self.is_name(a) and self.at(a + 2, "*"):
            if func != "count":
                raise self.fail(f"{call.text}(X.*) is not an aggregate: only count(X.*)", call)
            return Agg("count", None, variable_name(self.toks[a])), after
        expr, quals = self.aggregate_argument(a, b, call)
        if len(quals) > 1:
            self.row_expression(a, b, call)  # raises the error that names the variables
        return Agg(func, expr, next(iter(quals), None), distinct=distinct), after

    def aggregate_argument(self, a: int, b: int, call) -> tuple[str, set]:
        """As ``row_expression_quals``; besides, ``CLASSIFIER()`` / ``CLASSIFIER(V)`` alone is
        the variable of each row aggregated (of V's rows), as Trino allows."""
        if self.word(a) == "CLASSIFIER" and self.at(a + 1, "(") and self.close(a + 1) == b - 1:
            classifier, _ = self.classifier(a)
            return CLASSIFIER_VALUE, {classifier.qual}
        return self.row_expression_quals(a, b, call)

    def by_aggregate(self, j: int, args: list, distinct: bool) -> Agg:
        """max_by(value, key) / min_by(value, key): both arguments must read the same rows (one
        variable or subset, or every row); an argument without columns reads whichever the other
        reads, as in Trino."""
        call = self.toks[j]
        if len(args) != 2:
            more = " (the form with a count, max_by(x, y, n), is not supported)" if len(args) == 3 else ""
            raise self.fail(f"{call.text}() over pattern variables takes two arguments: value and key{more}", call)
        (expr, value_quals), (key, key_quals) = (self.aggregate_argument(a, b, call) for a, b in args)
        quals = value_quals | key_quals
        if len(quals) > 1:
            shown = ", ".join(sorted("no variable" if q is None else q for q in quals))
            raise self.fail(f"both arguments of {call.text}(...) must read the rows of one pattern variable, found {shown}", call)
        return Agg(call.text.lower(), expr, next(iter(quals), None), key=key, distinct=distinct)

    def classifier(self, j: int) -> tuple[Classifier, int]:
        call = self.toks[j]
        args, after = self.arguments(j)
        if not args:
            return Classifier(None), after
        a, b = args[0]
        if len(args) > 1 or b - a != 1 or variable_name(self.toks[a]) not in self.names:
            raise self.fail("CLASSIFIER takes no argument or one pattern variable or subset", call)
        return Classifier(variable_name(self.toks[a])), after


def _with_final(leaf: Leaf, final: bool, extractor: Extractor, tok) -> Leaf:
    if isinstance(leaf, Nav):
        return Nav(leaf.expr, leaf.qual, leaf.logical, leaf.index, leaf.physical, final)
    if isinstance(leaf, Agg):
        return dataclasses.replace(leaf, final=final)
    if isinstance(leaf, Classifier):
        return Classifier(leaf.qual, final)
    raise extractor.fail("RUNNING/FINAL applies to navigation, aggregates and CLASSIFIER", tok)
