"""Standard MATCH_RECOGNIZE through `suse.spark.sql`: parsing and mode selection without Spark,
then a few statements on a local SparkSession (expected rows written out from the standard's
rules, and one differential run against tests/recognize_oracle.py)."""
from __future__ import annotations

import random
import re

import pytest

from recognize_oracle import oracle_matches
from suse.errors import SqlError
from suse.recognize.expressions import Nav
from suse.spark.sql.front import is_counting, parse
from suse.spark.sql.standard import StandardStatement

V_SHAPE = """SELECT * FROM orders MATCH_RECOGNIZE(
  PARTITION BY custkey
  ORDER BY orderdate
  MEASURES A.totalprice AS starting_price, LAST(B.totalprice) AS bottom_price, LAST(U.totalprice) AS top_price,
           MATCH_NUMBER() AS n, count(*) AS nrows, sum(B.totalprice) AS fall, FIRST(orderdate) AS first_day,
           CLASSIFIER() AS last_label
  ONE ROW PER MATCH
  AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+ D+)
  SUBSET U = (C, D)
  DEFINE B AS totalprice < PREV(totalprice),
         C AS totalprice > PREV(totalprice) AND totalprice <= A.totalprice,
         D AS totalprice > PREV(totalprice)
)"""

# customer 1: 100 falls to 80, climbs back to 95 (C, at most the start) and past it to 110 (D);
# then 105 falls to 90, back to 95 (C) and 120 (D). Customer 2: 50 40 45 60. Customer 3 never rises.
PRICES = {1: [100, 90, 80, 85, 95, 110, 105, 100, 90, 95, 120], 2: [50, 40, 45, 60], 3: [9, 8, 7]}


def test_mode_is_chosen_by_suse_clauses():
    assert not is_counting(V_SHAPE)
    assert isinstance(parse(V_SHAPE), StandardStatement)
    for clause in ("SUMMARY 24", "EVALUATE AT END", "SKIP TILL ANY MATCH", "SKIP TILL NEXT MATCH", "CONTIGUOUS"):
        assert is_counting(V_SHAPE.replace("ONE ROW PER MATCH", clause).replace("AFTER MATCH SKIP PAST LAST ROW", ""))
    with pytest.raises(SqlError, match="counting mode"):
        parse(V_SHAPE.replace("ONE ROW PER MATCH", "SUMMARY 24"))


@pytest.mark.parametrize("change, message", [
    (("PATTERN (A B+ C+ D+)", "PATTERN (A B+ C+ D+"), "unclosed '(' in PATTERN"),
    (("SUBSET U = (C, D)", "SUBSET U = (C, E)"), "E does not occur in PATTERN"),
    (("PAST LAST ROW", "TO FIRST Z"), "Z is not a pattern variable"),
    (("ONE ROW PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"), None),
    (("LAST(B.totalprice) AS", "LAST(B.totalprice + C.totalprice) AS"), "must all belong to one pattern variable"),
    (("sum(B.totalprice)", "sum(DISTINCT B.totalprice)"), None),
    (("sum(B.totalprice)", "max_by(DISTINCT B.totalprice, B.orderdate)"), "DISTINCT in max_by() is not supported"),
    (("count(*) AS nrows", "max_by(B.totalprice, B.orderdate) AS nrows"), None),
    (("count(*) AS nrows", "max_by(B.totalprice, orderdate) AS nrows"), "both arguments of max_by(...) must read the rows of one"),
    (("count(*) AS nrows", "min_by(B.totalprice, B.orderdate, 2) AS nrows"), "the form with a count"),
    (("FIRST(orderdate)", "FIRST(orderdate, x)"), "whole number"),
    (("DEFINE B AS", "DEFINE B AS FINAL"), None),
    (("D AS totalprice > PREV(totalprice)", "D AS MATCH_NUMBER() > 1"), "not allowed in DEFINE"),
])
def test_statement_errors_name_the_construct(change, message):
    text = V_SHAPE.replace(*change)
    if message is None:
        parse(text)  # valid
        return
    with pytest.raises(SqlError, match=re.escape(message)):
        st = parse(text)
        from suse.recognize.expressions import Extractor

        for _, tokens, _ in st.measures:  # the MEASURES check needs the columns: given here
            Extractor(tokens, st.text, {"totalprice", "orderdate", "custkey"}, set(st.variables) | set(st.subsets), "MEASURES").split()
        for _, (tokens, _) in st.define.items():
            Extractor(tokens, st.text, {"totalprice", "orderdate", "custkey"}, set(st.variables) | set(st.subsets), "DEFINE").split()


def test_define_refuses_a_function_it_cannot_run_exactly_by_name():
    """round() over values of two rows: they meet only in the matcher, which runs a fixed set of
    functions with Spark's semantics; over one row's columns Spark computes it."""
    from suse.recognize.expressions import Extractor
    from suse.spark.sql.standard import evaluated_condition

    def condition(define):
        st = parse(V_SHAPE.replace("C AS totalprice > PREV(totalprice) AND totalprice <= A.totalprice", define))
        tokens, _ = st.define["C"]
        sp = Extractor(tokens, st.text, {"totalprice", "orderdate", "custkey"}, set(st.variables) | {"U"}, "DEFINE").split()
        return evaluated_condition(sp, False)

    with pytest.raises(SqlError, match="'round' is not supported in a condition that refers to other rows.*apply other"):
        condition("C AS round(totalprice / A.totalprice, 1) < 1")
    assert condition("C AS round(totalprice / 3, 1) < A.totalprice AND abs(totalprice - A.totalprice) < 9").leaves == (
        Nav("round(totalprice / 3, 1)", None), Nav("`totalprice`", "A"), Nav("`totalprice`", None))


def test_exclusion_with_unmatched_rows_is_refused():
    """SQL:2016 and Trino forbid ALL ROWS PER MATCH WITH UNMATCHED ROWS with an exclusion."""
    with pytest.raises(SqlError, match="WITH UNMATCHED ROWS cannot be combined.*the SQL standard forbids it"):
        parse(V_SHAPE.replace("ONE ROW PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS").replace("A B+", "A {- B+ -}"))


# --- on Spark ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def orders(spark):
    rows = [(k, d, p) for k, prices in PRICES.items() for d, p in enumerate(prices)]
    df = spark.createDataFrame(rows, "custkey int, orderdate int, totalprice int")
    df.createOrReplaceTempView("orders")
    return df


def test_v_shape_one_row_per_match(spark, orders):
    from suse.spark import sql

    got = [tuple(r) for r in sql(spark, V_SHAPE).orderBy("custkey", "n").collect()]
    assert got == [
        (1, 100, 80, 110, 1, 6, 170, 0, "D"),
        (1, 105, 90, 120, 2, 5, 190, 6, "D"),
        (2, 50, 40, 60, 1, 4, 40, 0, "D"),
    ]
    with pytest.raises(SqlError, match="name of a partition column"):
        sql(spark, V_SHAPE.replace("AS n,", "AS custkey,"))
    with pytest.raises(SqlError, match=r"line 4, column 12: MEASURES starting_price: .*no_such"):
        sql(spark, V_SHAPE.replace("A.totalprice AS starting_price", "no_such(A.totalprice) AS starting_price"))


def test_all_rows_running_and_final_with_unmatched_rows(spark, orders):
    from suse.spark import sql

    out = sql(spark, """SELECT * FROM orders MATCH_RECOGNIZE(
        PARTITION BY custkey ORDER BY orderdate
        MEASURES RUNNING LAST(totalprice) AS running_price, FINAL LAST(totalprice) AS final_price,
                 CLASSIFIER() AS label, count(*) AS so_far, MATCH_NUMBER() AS n
        ALL ROWS PER MATCH WITH UNMATCHED ROWS
        AFTER MATCH SKIP TO LAST B
        PATTERN (A B+ C)
        DEFINE B AS totalprice < PREV(totalprice), C AS totalprice > PREV(totalprice))""")
    assert out.columns == ["custkey", "orderdate", "running_price", "final_price", "label", "so_far", "n", "totalprice"]
    got = [tuple(r) for r in out.where("custkey = 1").orderBy("orderdate", "n").collect()]
    # match 1: A=100 B=90 B=80 C=85; skip to the last B (row 2): match 2 starts there: A=80? no B
    # after it (85 rises), so row 2 is covered, row 3 (85) starts nothing, rows 4-5 rise;
    # match 2: A=110 B=105 B=100 B=90 C=95; skip to row 8 (90): A=90? 95 does not fall: no match;
    # row 10 (120) is unmatched.
    assert got == [
        (1, 0, 100, 85, "A", 1, 1, 100), (1, 1, 90, 85, "B", 2, 1, 90), (1, 2, 80, 85, "B", 3, 1, 80),
        (1, 3, 85, 85, "C", 4, 1, 85),
        (1, 4, None, None, None, None, None, 95),
        (1, 5, 110, 95, "A", 1, 2, 110), (1, 6, 105, 95, "B", 2, 2, 105), (1, 7, 100, 95, "B", 3, 2, 100),
        (1, 8, 90, 95, "B", 4, 2, 90), (1, 9, 95, 95, "C", 5, 2, 95),
        (1, 10, None, None, None, None, None, 120),
    ]


def test_max_by_min_by_distinct_and_functions_in_define(spark, orders):
    """Expected rows from the standard's rules: B falls by at least 5 (abs of PREV, computed by
    Spark's lag), C rises above the C before it, or the last B for the first C (coalesce of
    other rows: suse's evaluator). max_by of equal keys: the first row in match order."""
    from pyspark.sql import functions as F

    from suse.spark import sql

    out = sql(spark, """SELECT * FROM orders MATCH_RECOGNIZE(
        PARTITION BY custkey ORDER BY orderdate
        MEASURES max_by(orderdate, totalprice) AS peak_day, FINAL min_by(B.orderdate, B.totalprice) AS bottom_day,
                 count(DISTINCT totalprice % 10) AS endings, CLASSIFIER() AS label,
                 RUNNING max_by(C.orderdate, C.totalprice) AS c_peak, FINAL max_by(orderdate, totalprice % 10) AS first_five,
                 FINAL array_agg(DISTINCT totalprice % 10) AS all_endings, FINAL array_agg(CLASSIFIER()) AS labels
        ALL ROWS PER MATCH
        PATTERN (A B+ C+)
        DEFINE B AS abs(totalprice - PREV(totalprice)) >= 5 AND totalprice < PREV(totalprice),
               C AS totalprice > coalesce(LAST(C.totalprice, 1), LAST(B.totalprice)))""")
    got = [tuple(r) for r in out.select("custkey", "orderdate", "peak_day", "bottom_day", "endings", "label", "c_peak",
                                        "first_five", "all_endings").orderBy("custkey", "orderdate").collect()]
    labels = [tuple(r) for r in out.select("custkey", "labels").distinct().orderBy("custkey", F.size("labels")).collect()]
    assert labels == [(1, ["A", "B", "B", "C", "C"]), (1, ["A", "B", "B", "C", "C", "C"]), (2, ["A", "B", "C", "C"])]
    # customer 1: 100 90 80 85 95 110 | 105 100 90 95 120; customer 2: 50 40 45 60; 3: falls by 1
    assert got == [
        (1, 0, 0, 2, 1, "A", None, 3, [0, 5]), (1, 1, 0, 2, 1, "B", None, 3, [0, 5]), (1, 2, 0, 2, 1, "B", None, 3, [0, 5]),
        (1, 3, 0, 2, 2, "C", 3, 3, [0, 5]), (1, 4, 0, 2, 2, "C", 4, 3, [0, 5]), (1, 5, 5, 2, 2, "C", 5, 3, [0, 5]),
        (1, 6, 6, 8, 1, "A", None, 6, [5, 0]), (1, 7, 6, 8, 2, "B", None, 6, [5, 0]), (1, 8, 6, 8, 2, "B", None, 6, [5, 0]),
        (1, 9, 6, 8, 2, "C", 9, 6, [5, 0]), (1, 10, 10, 8, 2, "C", 10, 6, [5, 0]),
        (2, 0, 0, 1, 1, "A", None, 2, [0, 5]), (2, 1, 0, 1, 1, "B", None, 2, [0, 5]), (2, 2, 0, 1, 2, "C", 2, 2, [0, 5]),
        (2, 3, 3, 1, 2, "C", 3, 2, [0, 5]),
    ]


def test_array_agg_keeps_nulls_and_collect_list_drops_them(spark, orders):
    """Trino's array_agg keeps NULL elements, Spark's collect_list does not."""
    from suse.spark import sql

    out = sql(spark, """SELECT * FROM orders MATCH_RECOGNIZE(
        PARTITION BY custkey ORDER BY orderdate
        MEASURES array_agg(nullif(totalprice % 10, 0)) AS kept, collect_list(nullif(totalprice % 10, 0)) AS dropped
        ONE ROW PER MATCH
        PATTERN (A B+ C+)
        DEFINE B AS totalprice < PREV(totalprice), C AS totalprice > PREV(totalprice))""")
    got = [tuple(r) for r in out.where("custkey = 2").select("kept", "dropped").collect()]
    assert got == [([None, None, 5, None], [5])]  # customer 2: 50 40 45 60


def test_define_errors_on_spark_name_the_construct(spark, orders):
    from suse.spark import sql

    with pytest.raises(SqlError, match=r"line 11, column 15: DEFINE B: 'round' is not supported in a condition that refers"):
        sql(spark, V_SHAPE.replace("totalprice < PREV(totalprice),", "round(totalprice / A.totalprice, 1) < 1,"))
    with pytest.raises(SqlError, match=r"line 11, column 15: cannot compute 'stddev\(totalprice\)'.*MISSING_GROUP_BY"):
        sql(spark, V_SHAPE.replace("totalprice < PREV(totalprice),", "stddev(B.totalprice) > 1,"))


def test_spark_equals_the_oracle_on_a_random_table(spark):
    """ALL ROWS PER MATCH labels of a random table against the oracle, for a pattern with
    alternation, reluctance, anchors-free nesting and an empty-matching star."""
    from suse.spark import sql
    from suse.spark.sql.standard import parse_standard

    rng = random.Random(5)
    rows = [(k, t, rng.randint(0, 5)) for k in range(4) for t in range(rng.randint(0, 12))]
    spark.createDataFrame(rows, "k int, t int, x int").createOrReplaceTempView("rand_rows")
    text = """SELECT * FROM rand_rows MATCH_RECOGNIZE (PARTITION BY k ORDER BY t
        MEASURES CLASSIFIER() AS label, MATCH_NUMBER() AS n
        ALL ROWS PER MATCH SHOW EMPTY MATCHES AFTER MATCH SKIP TO NEXT ROW
        PATTERN ((A | B)+? C | B* )
        DEFINE A AS x < 2, B AS x BETWEEN 1 AND 3, C AS x >= 4)"""
    def key(r):
        return r[0], r[1], r[2] or "", r[3]

    got = sorted((tuple(r) for r in sql(spark, text).select("k", "t", "label", "n").collect()), key=key)
    node = parse_standard(text).pattern
    tests = {"A": lambda x: x < 2, "B": lambda x: 1 <= x <= 3, "C": lambda x: x >= 4}
    want = []
    for k in range(4):
        xs = [x for kk, _, x in rows if kk == k]
        number = 0
        for item in oracle_matches(node, len(xs), lambda v, r, path, xs=xs: tests[v](xs[r]), "next"):
            if item[0] != "match":
                continue
            number += 1
            if not item[2]:
                want.append((k, item[1], None, number))
            want += [(k, r, v, number) for r, v, _ in item[2]]
    assert got == sorted(want, key=key) and any(r[2] is None for r in want) and any(r[2] == "C" for r in want)


def test_runtime_errors_are_spark_errors_with_the_partition(spark, orders):
    from pyspark.errors import PySparkException

    from suse.spark import sql

    out = sql(spark, V_SHAPE.replace("AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO FIRST A"))
    with pytest.raises(PySparkException, match=r"would resume at its own first row.*partition custkey=1"):
        out.collect()


# Worked examples of published engines: the data are set up so that the documented result rows
# follow; the expected rows below are those results, written out here.

# Oracle's "Pattern Match: Simple V-Shape with 1 Row Output per Match": ticker ACME, April 2011.
ACME = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
# Snowflake's "Identifying Sequences of Rows That Match a Pattern": ABCD, October 2020.
ABCD = [50, 36, 39, 42, 30, 47, 71, 80, 75, 63]


def test_documented_examples(spark):
    import datetime as dt

    from suse.spark import sql

    rows = [("ACME", dt.date(2011, 4, 1 + i), p) for i, p in enumerate(ACME)]
    rows += [("ABCD", dt.date(2020, 10, 1 + i), p) for i, p in enumerate(ABCD)]
    spark.createDataFrame(rows, "symbol string, tstamp date, price int").createOrReplaceTempView("ticker")
    oracle = """SELECT * FROM (SELECT * FROM ticker WHERE symbol = 'ACME') MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY tstamp
        MEASURES STRT.tstamp AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp, LAST(UP.tstamp) AS end_tstamp
        ONE ROW PER MATCH
        AFTER MATCH SKIP TO LAST UP
        PATTERN (STRT DOWN+ UP+)
        DEFINE DOWN AS DOWN.price < PREV(DOWN.price), UP AS UP.price > PREV(UP.price)
        {within}) MR"""
    day = lambda d: dt.date(2011, 4, d)  # noqa: E731
    got = [tuple(r) for r in sql(spark, oracle.format(within="")).orderBy("start_tstamp").collect()]
    assert got == [("ACME", day(5), day(6), day(10)), ("ACME", day(10), day(12), day(13)), ("ACME", day(14), day(16), day(18))]
    # Flink SQL's WITHIN: from a match's first row to its last less than 3 days (our own case)
    got = [tuple(r) for r in sql(spark, oracle.format(within="WITHIN INTERVAL '3' DAY")).orderBy("start_tstamp").collect()]
    assert got == [("ACME", day(5), day(6), day(7)), ("ACME", day(11), day(12), day(13)), ("ACME", day(15), day(16), day(17))]

    snowflake = """SELECT company, match_number, start_date, end_date, rows_in_sequence, num_decreases, num_increases
      FROM (SELECT symbol AS company, tstamp AS price_date, price FROM ticker WHERE symbol = 'ABCD')
      MATCH_RECOGNIZE (
        PARTITION BY company ORDER BY price_date
        MEASURES MATCH_NUMBER() AS match_number, FIRST(price_date) AS start_date, LAST(price_date) AS end_date,
                 COUNT(*) AS rows_in_sequence, COUNT(row_with_price_decrease.*) AS num_decreases,
                 COUNT(row_with_price_increase.*) AS num_increases
        ONE ROW PER MATCH
        AFTER MATCH SKIP TO LAST row_with_price_increase
        PATTERN (row_before_decrease row_with_price_decrease+ row_with_price_increase+)
        DEFINE row_with_price_decrease AS price < LAG(price), row_with_price_increase AS price > LAG(price))"""
    got = [tuple(r) for r in sql(spark, snowflake).orderBy("match_number").collect()]
    oct_ = lambda d: dt.date(2020, 10, d)  # noqa: E731
    assert got == [("ABCD", 1, oct_(1), oct_(4), 4, 1, 2), ("ABCD", 2, oct_(4), oct_(8), 5, 1, 3)]


def test_unquoted_variable_names_are_case_insensitive():
    st = parse("""SELECT * FROM t MATCH_RECOGNIZE (ORDER BY d MEASURES CLASSIFIER() AS c
        AFTER MATCH SKIP TO LAST u PATTERN (a b+ `q`?) SUBSET u = (A, b) DEFINE B AS x < PREV(x), `q` AS true)""")
    assert st.variables == ["A", "B", "q"] and st.subsets == {"U": ["A", "B"]} and set(st.define) == {"B", "q"}
    assert st.skip[:2] == ("last", "U")
