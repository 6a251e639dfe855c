"""DEFINE / MEASURES expressions of standard MATCH_RECOGNIZE without Spark: which parts are
leaves, what each leaf is worth for a match (running and final), and the DEFINE evaluator's
three-valued logic."""
from __future__ import annotations

from decimal import Decimal

import pytest

from suse.errors import SqlError
from suse.recognize.evaluate import ConditionParser, Rows, leaf_value
from suse.recognize.expressions import Agg, Classifier, Extractor, MatchNumber, Nav
from suse.recognize.matcher import RecognizeError
from suse.spark.sql.statement import tokenize

COLUMNS = {"price", "day"}
NAMES = {"A", "B", "U"}


def split(text, clause="MEASURES"):
    return Extractor(tokenize(text)[:-1], text, COLUMNS, NAMES, clause).split()


def test_leaves_and_the_text_around_them():
    sp = split("FINAL LAST(B.price, 1) - PREV(FIRST(A.price), 2) + abs(price) * count(U.*) + sum(A.price * 2)")
    assert sp.leaves == (
        Nav("`price`", "B", "LAST", 1, 0, True),
        Nav("`price`", "A", "FIRST", 0, -2),
        Nav("`price`", None),
        Agg("count", None, "U"),
        Agg("sum", "price * 2", "A"),
    )
    assert sp.render(lambda leaf: f"L{sp.leaves.index(leaf)}") == "L0 - L1 + abs(L2) * L3 + L4"
    assert split("CLASSIFIER(U) || MATCH_NUMBER()").leaves == (Classifier("U"), MatchNumber())
    assert split("NEXT(price)").leaves == (Nav("`price`", None, "LAST", 0, 1),)
    assert split("LAG(price, 2)").leaves == (Nav("`price`", None, "LAST", 0, -2),)  # Snowflake's synonym
    assert split("lag(price) OVER (ORDER BY day)").leaves == (Nav("`price`", None), Nav("`day`", None))  # Spark's own
    assert split("CAST(price AS DOUBLE)").leaves == (Nav("`price`", None),)  # DOUBLE is a type, not a column


@pytest.mark.parametrize("text, message", [
    ("LAST(A.price + B.price)", "one pattern variable"),
    ("PREV(PREV(price))", "cannot be nested"),
    ("FIRST(price, -1)", "whole number"),
    ("A.*", "only allowed in count"),
    ("sum(*)", "not an aggregate"),
])
def test_extraction_errors(text, message):
    with pytest.raises(SqlError, match=message):
        split(text)


# rows:   0    1    2    3    4    5
PRICES = [10, 7, 5, 8, 12, 3]
LABELS = [0, 1, 1, 2, 2]  # a match of rows 0-4: A B B C C (variables A=0, B=1, C=2)
ROWS = Rows(6, {"`price`": PRICES}, ("A", "B", "C"), {"A": frozenset([0]), "B": frozenset([1]), "C": frozenset([2]),
                                                     "U": frozenset([1, 2])})


@pytest.mark.parametrize("leaf, upto, want", [
    (Nav("`price`", None), 5, 12),                 # the last row of the match
    (Nav("`price`", None), 3, 5),                  # running: the last row so far
    (Nav("`price`", "B", "FIRST", 1), 5, 5),
    (Nav("`price`", "B", "LAST", 0, -1), 5, 7),    # PREV(LAST(B.price)): the row before the last B
    (Nav("`price`", "C", "LAST", 0, 1), 5, 3),     # NEXT may leave the match (row 5)
    (Nav("`price`", "C", "LAST", 0, 2), 5, None),  # ... but not the partition
    (Nav("`price`", "A", "LAST", 0, -1), 5, None),
    (Nav("`price`", "C"), 3, None),                # no C yet
    (Agg("count", None, None), 4, 4),
    (Agg("count", None, "U"), 5, 4),
    (Agg("sum", "`price`", "U"), 5, 32),
    (Agg("avg", "`price`", "B"), 5, 6.0),
    (Agg("min", "`price`", None), 5, 5),
    (Agg("array_agg", "`price`", "C"), 5, [8, 12]),
    (Agg("sum", "`price`", "C"), 3, None),         # sum over no row is NULL, count is 0
    (Classifier(None), 5, "C"),
    (Classifier("B"), 5, "B"),
    (Classifier(None), 0, None),                   # the empty match
    (MatchNumber(), 5, 7),
])
def test_leaf_values(leaf, upto, want):
    assert leaf_value(leaf, ROWS, 0, LABELS, upto, 7) == want


def condition(text):
    return ConditionParser(tokenize(text)[:-1], text, "DEFINE").parse()


@pytest.mark.parametrize("text, leaves, want", [
    ("_suse_leaf0 > _suse_leaf1 AND _suse_leaf0 <= 10", [5, 3], True),
    ("_suse_leaf0 > _suse_leaf1", [5, None], None),
    ("_suse_leaf0 > _suse_leaf1 OR TRUE", [5, None], True),
    ("_suse_leaf0 > _suse_leaf1 AND FALSE", [5, None], False),
    ("NOT (_suse_leaf0 IS NULL)", [None], False),
    ("_suse_leaf0 IS NOT NULL", [1], True),
    ("_suse_leaf0 * 1.1 >= _suse_leaf1", [10, 11.0], True),      # decimal literal mixed with a double
    ("_suse_leaf0 / 2 = 2.5", [5], True),                         # integer division gives a double
    ("-_suse_leaf0 + 3 % 2 = -4", [5], True),
    ("_suse_leaf0 = 'x'", ["x"], True),
    ("_suse_leaf0 = _suse_leaf1", [Decimal("1.5"), 1.5], True),
])
def test_condition_evaluator(text, leaves, want):
    assert condition(text)(leaves) is want


def test_condition_evaluator_refuses_functions_and_fails_on_division_by_zero():
    with pytest.raises(SqlError, match="'abs' is not supported"):
        condition("abs(_suse_leaf0) > 1")
    with pytest.raises(RecognizeError, match="division by zero"):
        condition("_suse_leaf0 / 0 > 1")([1])
