"""`suse.spark.sql` and `suse sql`: MATCH_RECOGNIZE-style statements run by `aggregate`.

Parsing tests need no Spark; the statement tests compare with `aggregate` on the same data,
so the translation (variables -> characters, PREV -> lag, WITHIN, SUMMARY, EVALUATE) is
checked against the API it claims to call."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from suse.errors import SqlError
from suse.spark.sql.front import parse
from suse.spark.sql.statement import assign_letters

FLIGHTS = """SELECT * FROM flights
MATCH_RECOGNIZE (
  PARTITION BY tailnum ORDER BY time_hour
  MEASURES COUNT(*) AS cascades, SUM(delay_minutes) AS minutes
  PATTERN (DELAY (DELAY | LATE)* CANCEL)
  DEFINE CANCEL AS dep_time IS NULL, DELAY AS dep_delay >= 60, LATE AS arr_delay >= 30
  WITHIN INTERVAL '2' DAY
  SUMMARY 24 EVALUATE EVERY INTERVAL '30' DAY
)"""


def test_parse_maps_variables_and_clauses():
    st = parse(FLIGHTS)
    assert st.letters == {"CANCEL": "C", "DELAY": "D", "LATE": "L"}
    assert st.regex == "D(D|L)*C"
    assert st.window == "2 days" and st.summary_size == 24 and st.evaluate == {"every": "30 days"}
    assert st.measures == [("cascades", "count", None), ("minutes", "sum", "delay_minutes")]
    assert st.partition_by == ["tailnum"] and st.order_by == "time_hour" and st.policy == "any"


def test_parse_quantifiers_policies_and_lengths():
    st = parse("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A{2,3} B+ C? (A | B){1,}) "
               "DEFINE A AS x < 1, B AS x > 1 WITHIN 20 SKIP TILL NEXT MATCH EVALUATE EVERY 5 EVENTS)")
    assert st.regex == "A{2,3}B+C?(A|B){1,}" and st.window == 20 and st.policy == "next"
    assert st.define["C"] == "true"  # SQL: a variable without DEFINE matches any row
    assert st.evaluate == "every 5 events"
    st = parse("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B) DEFINE A AS x, B AS y "
               "WITHIN INTERVAL '90 minutes' CONTIGUOUS EVALUATE RANDOMLY 2 PER INTERVAL '1' HOUR SEED 3)")
    assert st.window == "90 minutes" and st.policy == "contiguous"
    assert st.evaluate == {"poisson": 2, "per": "1 hours", "seed": 3}


def test_long_variable_names_get_distinct_letters():
    letters = assign_letters(["DELAY", "DROP", "D", "CANCEL", "C2"])
    assert letters["D"] == "D" and len(set(letters.values())) == 5
    assert all(len(c) == 1 and c.isalnum() for c in letters.values())


@pytest.mark.parametrize("text, line, column, message", [
    ("SELECT * FROM t\nMATCH_RECOGNIZE (\n  ORDER BY ts\n  PATERN (A B)\n)", 4, 3, "unknown clause 'PATERN'"),
    ("SELECT * FROM t MATCH_RECOGNIZE (\n ORDER BY ts PATTERN (A B*?) DEFINE A AS x WITHIN 5 SUMMARY 5)", 2, 27, "reluctant"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts\n PATTERN (A (B) DEFINE A AS x WITHIN 5)", 2, 10, "unclosed '(' in PATTERN"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B)\n  AFTER MATCH SKIP PAST LAST ROW WITHIN 5 SUMMARY 5)", 2, 3, "counting mode"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A B) WITHIN INTERVAL '2')", 1, 79, "needs a unit"),
    ("SELECT * FROM t MATCH_RECOGNIZE (PATTERN (A B) WITHIN 5)", 1, 17, "needs ORDER"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts DESC PATTERN (A) WITHIN 5 SUMMARY 5)", 1, 46, "ascending"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A (B | ) C) DEFINE A AS x, B AS y, C AS z WITHIN 5 SUMMARY 5)", 1, 62, "PATTERN: empty alternative"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (X Y) WITHIN 5 SUMMARY 5)", 1, 57, "X and Y have no DEFINE"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts PATTERN (A) WITHIN 5) WHERE x > 1", 1, 68, "after MATCH_RECOGNIZE"),
    ("SELECT * FROM t MATCH_RECOGNIZE (ORDER BY ts MEASURES MAX(x) PATTERN (A) WITHIN 5 SUMMARY 5)", 1, 55, "COUNT(*), SUM"),
    ("   ", 1, 1, "empty"),
])
def test_errors_carry_line_and_column(text, line, column, message):
    with pytest.raises(SqlError) as info:
        parse(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert message in str(err) and str(err).startswith(f"line {line}, column {column}: ")


# --- on Spark ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flights_like(spark):
    """Three aircraft, hourly, with departure/arrival delays and some cancellations."""
    rng = np.random.default_rng(11)
    rows = []
    for tail in ("N1", "N2", "N3"):
        for h in range(0, 24 * 60, 3):
            cancelled = rng.random() < 0.08
            rows.append((tail, pd.Timestamp("2013-01-01", tz="UTC") + pd.Timedelta(hours=h),
                         None if cancelled else 900.0, float(rng.choice([0, 10, 70, 120])),
                         float(rng.choice([0, 40]))))
    pdf = pd.DataFrame(rows, columns=["tailnum", "time_hour", "dep_time", "dep_delay", "arr_delay"])
    df = spark.createDataFrame(pdf, "tailnum string, time_hour timestamp, dep_time double, dep_delay double, arr_delay double")
    df = df.withColumn("delay_minutes", df.dep_delay.cast("bigint"))
    df.createOrReplaceTempView("flights_like")
    return df


def test_statement_equals_aggregate(spark, flights_like):
    from suse.spark import aggregate, sql

    got = sql(spark, FLIGHTS.replace("FROM flights", "FROM flights_like"))
    assert got.columns == ["tailnum", "evaluated_at", "cascades", "minutes", "events", "dropped_events",
                           "corrupt_records", "elements"]
    want = aggregate(
        flights_like, "D(D|L)*C", "2 days",
        {"C": "dep_time IS NULL", "D": "dep_delay >= 60", "L": "arr_delay >= 30"}, "time_hour", "tailnum",
        value="delay_minutes", summary_size=24, evaluate={"every": "30 days"}, aggregate="sum",
    )
    mine = got.orderBy("tailnum", "evaluated_at").collect()
    theirs = want.orderBy("tailnum", "evaluated_at").collect()
    assert [(r.tailnum, r.evaluated_at, r.cascades, r.minutes, r.events) for r in mine] == \
        [(r.tailnum, r.evaluated_at, r["count"], r["sum"], r.events) for r in theirs]
    names = {"C": "CANCEL", "D": "DELAY", "L": "LATE"}
    assert [[(names[c], t, v) for c, t, v in r.elements] for r in theirs] == [[tuple(e) for e in r.elements] for r in mine]
    assert len(mine) == 3 * 3 and any(r.cascades != "0" for r in mine)
    # the grid: multiples of 30 days since the epoch, plus each aircraft's last event
    days = {r.evaluated_at.astimezone(dt.timezone.utc).date() for r in mine}
    assert {dt.date(2013, 1, 15), dt.date(2013, 2, 14)} <= days  # epoch days 15,720 and 15,750


def test_prev_becomes_lag_and_select_list(spark, flights_like):
    from suse.spark import aggregate, sql

    got = sql(spark, """
        SELECT tailnum, n FROM (SELECT * FROM flights_like WHERE tailnum <> 'N3')
        MATCH_RECOGNIZE (
          PARTITION BY tailnum ORDER BY time_hour
          MEASURES COUNT(*) AS n
          PATTERN (UP+ DOWN)
          DEFINE UP AS dep_delay > PREV(dep_delay), DOWN AS dep_delay < PREV(dep_delay)
          WITHIN INTERVAL '12' HOUR SUMMARY 8)""")
    assert got.columns == ["tailnum", "n"]
    want = aggregate(
        flights_like.where("tailnum <> 'N3'"), "U+D", "12 hours",
        {"U": "dep_delay > lag(dep_delay) OVER (PARTITION BY tailnum ORDER BY time_hour)",
         "D": "dep_delay < lag(dep_delay) OVER (PARTITION BY tailnum ORDER BY time_hour)"},
        "time_hour", "tailnum", summary_size=8)
    assert sorted(tuple(r) for r in got.collect()) == sorted((r.tailnum, r["count"]) for r in want.collect())
    assert len(got.collect()) == 2


def test_spark_errors_point_at_their_clause(spark, flights_like):
    from suse.spark import sql

    base = ("SELECT * FROM flights_like MATCH_RECOGNIZE (PARTITION BY tailnum ORDER BY time_hour\n"
            "  PATTERN (D C) DEFINE D AS dep_delay >= 60, C AS {cond}\n  WITHIN {within})")
    with pytest.raises(SqlError) as info:
        sql(spark, base.format(cond="no_such_column IS NULL", within="INTERVAL '1' DAY"))
    assert (info.value.line, info.value.column) == (2, 51) and "DEFINE C" in str(info.value)
    with pytest.raises(SqlError) as info:
        sql(spark, base.format(cond="dep_time IS NULL", within="20"))
    assert info.value.line == 3 and "holds date-times" in str(info.value)
    with pytest.raises(SqlError, match="cannot read nowhere"):
        sql(spark, "SELECT * FROM nowhere MATCH_RECOGNIZE (ORDER BY t PATTERN (A) DEFINE A AS true WITHIN 3)")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "suse", *args], capture_output=True, text=True, env=env, timeout=300)


def test_cli_sql_error_is_one_line_exit_2():
    proc = run_cli("sql", "SELECT * FROM stocks MATCH_RECOGNIZE (ORDER BY date PATTERN (A B) WITHIN 3 DAYS)")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert proc.stderr.startswith("error: line 1, column ") and "DAYS" in proc.stderr


def test_cli_sql_runs_on_a_file(tmp_path):
    pytest.importorskip("pyspark")
    path = tmp_path / "ev.csv"
    pd.DataFrame({"k": ["x"] * 6 + ["y"] * 3, "t": [1, 2, 3, 4, 5, 6, 1, 2, 3],
                  "kind": list("abbcab" "abc")}).to_csv(path, index=False)
    proc = run_cli("sql", "--table", f"ev={path}", "--output", str(tmp_path / "out"),
                   "SELECT k, n FROM ev MATCH_RECOGNIZE (PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n "
                   "PATTERN (a b* c) DEFINE a AS kind = 'a', b AS kind = 'b', c AS kind = 'c' WITHIN 10 SKIP TILL ANY MATCH)")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_parquet(tmp_path / "out").sort_values("k")
    assert got.values.tolist() == [["x", "4"], ["y", "2"]]  # x: a1 c4 with any of b2, b3; y: a1 c3, a1 b2 c3
    assert "n" in proc.stdout and "x" in proc.stdout


@pytest.mark.parametrize("kinds, policy, count", [
    ("D A X C", "SKIP TILL ANY MATCH", "2"), ("D A X C", "CONTIGUOUS", "0"),
    ("D A A C", "SKIP TILL ANY MATCH", "4"), ("D A A C", "CONTIGUOUS", "1"),
])
def test_all_subsequences_versus_contiguous(spark, kinds, policy, count):
    """The side-by-side example of docs/SPARK.md."""
    from suse.spark import sql

    spark.createDataFrame([(i + 1, k) for i, k in enumerate(kinds.split())], "t long, kind string") \
        .createOrReplaceTempView("side_by_side")
    (row,) = sql(spark, f"""SELECT n FROM side_by_side MATCH_RECOGNIZE (ORDER BY t MEASURES COUNT(*) AS n
        PATTERN (D A* C) DEFINE D AS kind = 'D', A AS kind = 'A', C AS kind = 'C' WITHIN 10 {policy})""").collect()
    assert row.n == count
