"""DEFINE / MEASURES expressions of standard MATCH_RECOGNIZE without Spark: which parts are
leaves, what each leaf is worth for a match (running and final), and the DEFINE evaluator's
three-valued logic."""
from __future__ import annotations

from decimal import Decimal

import pytest

from suse.errors import SqlError
from suse.recognize.evaluate import ConditionParser, Rows, leaf_value
from suse.recognize.expressions import CLASSIFIER_VALUE, Agg, Classifier, Extractor, MatchNumber, Nav
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


def test_max_by_min_by_and_distinct_leaves():
    assert split("FINAL max_by(B.day, B.price) + min_by(day, 1) + max_by(1, U.price)").leaves == (
        Agg("max_by", "`day`", "B", True, key="`price`"),
        Agg("min_by", "`day`", None, key="1"),
        Agg("max_by", "1", "U", key="`price`"),  # an argument without columns reads the other's rows
    )
    assert split("count(DISTINCT B.price) + array_agg(ALL A.day)").leaves == (
        Agg("count", "`price`", "B", distinct=True), Agg("array_agg", "`day`", "A"))
    # Trino's examples: CLASSIFIER() as an aggregate's argument, the rows of its variable
    assert split("array_agg(CLASSIFIER()) || max_by(CLASSIFIER(A), A.day)").leaves == (
        Agg("array_agg", CLASSIFIER_VALUE, None), Agg("max_by", CLASSIFIER_VALUE, "A", key="`day`"))


def test_define_folds_a_call_on_one_row_into_a_row_expression():
    """A function whose columns are all of one row is computed by Spark; calls that mix rows, or
    hold a navigation, are left to the evaluator around their leaves."""
    assert split("upper(A.day) = B.day AND round(price / 3, 1) > 2", "DEFINE").leaves == (
        Nav("upper(day)", "A"), Nav("`day`", "B"), Nav("round(price / 3, 1)", None))
    sp = split("abs(B.price - PREV(B.price)) > 5 AND coalesce(LAST(B.day, 1), 0) < B.day AND abs(A.price - B.price) > 1",
               "DEFINE")
    assert sp.leaves == (Nav("`price`", "B"), Nav("`price`", "B", "LAST", 0, -1), Nav("`day`", "B", "LAST", 1),
                         Nav("`day`", "B"), Nav("`price`", "A"))
    assert split("price IN (1, 2) AND NOT (price > 1)", "DEFINE").leaves == (Nav("`price`", None),)  # IN, NOT: no calls
    assert split("abs(A.price)").leaves == (Nav("`price`", "A"),)  # MEASURES: Spark evaluates the text after matching


@pytest.mark.parametrize("text, message", [
    ("LAST(A.price + B.price)", "one pattern variable"),
    ("PREV(PREV(price))", "cannot be nested"),
    ("FIRST(price, -1)", "whole number"),
    ("A.*", "only allowed in count"),
    ("sum(*)", "not an aggregate"),
    ("max_by(A.price, price)", "both arguments of max_by.*one pattern variable, found A, no variable"),
    ("min_by(A.price, A.day + B.day)", "one pattern variable"),
    ("max_by(A.price, A.day, 2)", "the form with a count"),
    ("max_by(A.price)", "takes two arguments"),
    ("max_by(DISTINCT A.price, A.day)", "DISTINCT in max_by"),
    ("count(DISTINCT *)", "not an aggregate"),
    ("max_by(CLASSIFIER(), A.day)", "found A, no variable"),
    ("array_agg(CLASSIFIER() || A.day)", "CLASSIFIER cannot be nested"),
])
def test_extraction_errors(text, message):
    with pytest.raises(SqlError, match=message):
        split(text)


# rows:   0    1    2    3    4    5
PRICES = [10, 7, 5, 8, 12, 3]
LABELS = [0, 1, 1, 2, 2]  # a match of rows 0-4: A B B C C (variables A=0, B=1, C=2)
TIES = [1, 1, 2, 1, 2, 2]
GAPS = [None, None, None, None, 0, None]
ROWS = Rows(6, {"`price`": PRICES, "`day`": list(range(6)), "`tie`": TIES, "`gap`": GAPS}, ("A", "B", "C"), {"A": frozenset([0]), "B": frozenset([1]), "C": frozenset([2]),
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
    (Agg("array_agg", "`gap`", "U"), 5, [None, None, None, 0]),  # array_agg keeps NULLs, as Trino's
    (Agg("collect_list", "`gap`", "U"), 5, [0]),                 # collect_list drops them, as Spark's
    (Agg("max_by", "`day`", "B", key="`price`"), 5, 1),         # the B rows 1, 2 have prices 7, 5
    (Agg("min_by", "`day`", None, key="`price`"), 5, 2),
    (Agg("max_by", "`day`", None, key="`tie`"), 5, 2),          # equal keys: the first row in match order
    (Agg("min_by", "`day`", None, key="`tie`"), 5, 0),
    (Agg("max_by", "`day`", "U", key="`gap`"), 5, 4),           # NULL keys are skipped
    (Agg("max_by", "`gap`", "U", key="`day`"), 4, None),        # ... NULL values are not
    (Agg("max_by", "`day`", "A", key="`gap`"), 5, None),        # no key at all: NULL
    (Agg("max_by", "`day`", None, key="`price`", final=True), 3, 0),  # running: among the rows so far
    (Agg("count", "`tie`", None, distinct=True), 5, 2),
    (Agg("sum", "`tie`", None, distinct=True), 5, 3),
    (Agg("avg", "`tie`", "U", distinct=True), 5, 1.5),
    (Agg("array_agg", "`tie`", None, distinct=True), 5, [1, 2]),  # in order of first occurrence
    (Agg("count", "`gap`", None, distinct=True), 5, 1),           # NULL is not a value
    (Agg("array_agg", CLASSIFIER_VALUE, "U"), 5, ["B", "B", "C", "C"]),
    (Agg("array_agg", CLASSIFIER_VALUE, None, distinct=True), 3, ["A", "B"]),
    (Agg("max_by", CLASSIFIER_VALUE, None, key="`price`"), 5, "C"),  # row 4: 12
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
    # functions, with Spark's NULL rules
    ("abs(_suse_leaf0 - _suse_leaf1) > 5", [3, 10], True),
    ("abs(_suse_leaf0 - _suse_leaf1) > 5", [3, None], None),
    ("coalesce(_suse_leaf0, 0) < _suse_leaf1", [None, 1], True),
    ("coalesce(_suse_leaf0, _suse_leaf1 / 0) = 1", [1, 1], True),    # lazy: the division is never made
    ("nvl(_suse_leaf0, _suse_leaf1) IS NULL", [None, None], True),
    ("ifnull(_suse_leaf0, 2) = 2", [None], True),
    ("nullif(_suse_leaf0, 3) IS NULL", [3], True),
    ("nullif(_suse_leaf0, 3) = 4", [4], True),
    ("greatest(_suse_leaf0, _suse_leaf1, 2) = 7", [None, 7], True),  # NULL skipped
    ("least(_suse_leaf0, _suse_leaf1) IS NULL", [None, None], True),
    ("least(_suse_leaf0, 2.5) = 2.5", [3.0], True),
    ("if(_suse_leaf0 > 1, 'big', 'small') = 'small'", [None], True),  # a NULL condition takes the else
    ("iff(_suse_leaf0 > 1, _suse_leaf1, 0) = 9", [2, 9], True),
    ("_suse_leaf0 BETWEEN 1 AND _suse_leaf1", [2, 3], True),
    ("_suse_leaf0 BETWEEN 1 AND _suse_leaf1", [2, None], None),
    ("_suse_leaf0 BETWEEN 3 AND _suse_leaf1", [2, None], False),       # FALSE AND NULL
    ("_suse_leaf0 NOT BETWEEN 3 AND 5 AND TRUE", [2], True),
    ("_suse_leaf0 IN (1, _suse_leaf1)", [2, 2], True),
    ("_suse_leaf0 IN (1, _suse_leaf1)", [2, None], None),
    ("_suse_leaf0 IN (1, 2)", [None], None),
    ("_suse_leaf0 NOT IN (1, 3)", [2], True),
    ("CASE WHEN _suse_leaf0 > 1 THEN _suse_leaf1 ELSE 0 END = 5", [2, 5], True),
    ("CASE WHEN _suse_leaf0 > 1 THEN 1 END IS NULL", [None], True),
    ("CASE _suse_leaf0 WHEN 1 THEN 'a' WHEN 2 THEN 'b' END = 'b'", [2], True),
])
def test_condition_evaluator(text, leaves, want):
    assert condition(text)(leaves) is want


def test_condition_evaluator_refuses_functions_and_fails_on_division_by_zero():
    with pytest.raises(SqlError, match="'round' is not supported.*apply other functions to the columns of one row"):
        condition("round(_suse_leaf0) > 1")
    with pytest.raises(SqlError, match="nullif\\(\\) takes 2 arguments, found 1"):
        condition("nullif(_suse_leaf0) > 1")
    with pytest.raises(RecognizeError, match="division by zero"):
        condition("_suse_leaf0 / 0 > 1")([1])
