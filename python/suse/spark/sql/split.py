"""Counting mode's DEFINE with conditions between a match's rows.

``DEFINE B AS kind = 'B' AND B.price > LAST(B.price, 1), C AS C.price < B.price`` is cut at its
top-level ANDs. A conjunct whose every part reads the row itself (a column, ``B.col`` of its own
variable, ``PREV``/``NEXT`` of the row: the standard mode's row-local test,
``Split.row_local``; a conjunct naming no variable and no FIRST/LAST goes to Spark as
written, window functions included) goes into the row predicate, the engine character's; the others
(``LAST``/``FIRST``, another variable's column) become the letter's condition of ``where``
(docs/QUERY.md), counted by the exact engine. What that language cannot say (PREV of a match's
row, aggregates over the match, expressions inside LAST) is a :class:`suse.SqlError` naming the
construct, at its position.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from suse.errors import SqlError
from suse.recognize.expressions import Agg, Classifier, Extractor, Leaf, Nav, Split
from suse.recognize.pattern import variable_name

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COLUMN = re.compile(r"`((?:[^`]|``)*)`")


@dataclass(frozen=True)
class CrossCondition:
    """A letter's condition of ``where`` and where its pieces came from in the statement."""

    text: str
    anchors: tuple[tuple[int, int], ...]  # (offset in text, position in the statement), ascending

    def position(self, offset: int) -> int:
        """The statement position of offset ``offset`` of ``text``."""
        at, start = self.anchors[0]
        for piece_at, piece_start in self.anchors:
            if piece_at > offset:
                break
            at, start = piece_at, piece_start
        return start + max(0, offset - at)


def crosses_rows(tokens: Sequence, names: set[str]) -> bool:
    """Whether a DEFINE may read other rows of the match: a qualified column (``X.col``) or
    ``FIRST(``/``LAST(``; others go to Spark as written."""
    for k, t in enumerate(tokens[:-1]):
        following = tokens[k + 1].text
        if following == "." and t.kind in ("id", "qid") and variable_name(t) in names:
            return True
        if following == "(" and t.kind == "id" and t.text.upper() in ("FIRST", "LAST"):
            return True
    return False


def conjuncts(tokens: Sequence) -> list[list]:
    """The tokens between top-level ANDs (not the AND of BETWEEN x AND y)."""
    out: list[list] = [[]]
    depth = between = 0
    for t in tokens:
        depth += {"(": 1, ")": -1}.get(t.text, 0) if t.kind == "op" else 0
        word = t.text.upper() if t.kind == "id" else ""
        if depth == 0 and word == "BETWEEN":
            between += 1
        elif depth == 0 and word == "AND":
            if between:
                between -= 1
            else:
                out.append([])
                continue
        out[-1].append(t)
    return out


def split_define(var: str, tokens: Sequence, text: str, columns: dict[str, str], letters: dict[str, str],
                 window: str, as_written: Callable[[str], str]) -> tuple[str, CrossCondition | None]:
    """The row predicate (Spark SQL; ``true`` when every conjunct reads other rows) and the
    condition between rows (None when there is none) of ``DEFINE var AS tokens``.
    ``columns``: the input's column names by lower-case name; ``as_written``: what a conjunct
    naming no variable and no FIRST/LAST becomes (the DEFINE of counting mode without a split:
    Spark's own window functions stay Spark's)."""
    rows: list[str] = []
    cross: list[Split] = []
    for part in conjuncts(tokens):
        if not part:
            raise SqlError(f"DEFINE {var}: a condition is missing around AND", tokens[0].pos, text)
        if not crosses_rows(part, set(letters)):
            rows.append(f"({as_written(text[part[0].pos:part[-1].pos + len(part[-1].text)])})")
            continue
        sp = Extractor(part, text, set(columns), set(letters), "DEFINE").split()
        if sp.row_local(var, {}):
            rows.append(f"({sp.render_row(window)})")
        else:
            cross.append(sp)
    if not cross:
        return " AND ".join(rows), None
    pieces: list[str] = []
    anchors: list[tuple[int, int]] = []
    for k, sp in enumerate(cross):
        if k:
            pieces.append(" AND ")
        pieces.append("(")
        for piece, start in zip(sp.pieces, sp.starts):
            anchors.append((sum(map(len, pieces)), start))
            pieces.append(piece if isinstance(piece, str) else _reference(sp.leaves[piece], var, columns, letters,
                                                                           start, text))
        pieces.append(")")
    return " AND ".join(rows) or "true", CrossCondition("".join(pieces), tuple(anchors))


def _reference(leaf: Leaf, var: str, columns: dict[str, str], letters: dict[str, str], at: int, text: str) -> str:
    """A leaf of a condition between rows in the ``where`` language."""
    def refuse(what: str) -> SqlError:
        return SqlError(f"DEFINE {var}: {what}", at, text)

    if isinstance(leaf, Agg):
        raise refuse(f"{leaf.func}() over the match's rows is a condition over a whole prefix, which cannot be "
                     "counted without enumerating the matches; compare single rows (LAST(X.col, n), FIRST(X.col))")
    if isinstance(leaf, Classifier):
        raise refuse("CLASSIFIER() is not supported in a condition between a match's rows")
    assert isinstance(leaf, Nav)  # MATCH_NUMBER() is refused in DEFINE by the extractor
    if leaf.physical:
        raise refuse("PREV/NEXT of a match's row reads the partition's rows around it, which the conditions between "
                     "a match's rows cannot; write LAST(X.col, n) for the match's n-th X before")
    found = _COLUMN.fullmatch(leaf.expr)
    if found is None:
        raise refuse(f"{leaf.logical}({leaf.expr}): a condition between a match's rows reads one column at a time; "
                     f"write the expression around the references, e.g. LAST(X.a, 1) * 2")
    name = columns.get(found.group(1).replace("``", "`").lower(), found.group(1))
    if not _IDENT.fullmatch(name):
        raise refuse(f"column {name!r}: a condition between a match's rows reads columns named like identifiers")
    qual = leaf.qual if leaf.qual is not None else var
    if leaf.qual is None and (leaf.logical, leaf.index) != ("LAST", 0):
        raise refuse(f"{leaf.logical}({name}, {leaf.index}) without a variable reads any row of the match; "
                     f"name the variable, e.g. {leaf.logical}({var}.{name}, {leaf.index})")
    letter = letters[qual]
    if not letter.isalpha():
        raise refuse(f"variable {qual} became the engine character {letter!r}, which conditions cannot name; "
                     "use fewer than 53 variables")
    if (leaf.logical, leaf.index) == ("LAST", 0):
        return f"{letter}.{name}"
    return f"{leaf.logical}({letter}.{name}, {leaf.index})"
