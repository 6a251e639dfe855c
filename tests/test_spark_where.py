"""``suse.spark.aggregate(..., where=..., engine="exact")``: conditions between a match's
events over a DataFrame's columns, per partition, against the brute-force oracle
(tests/oracle.py's ``where_aggregate``), and what refuses ``where`` by name."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from helpers import live_page_job  # noqa: E402
from oracle import where_aggregate  # noqa: E402
from suse.errors import InputError, QueryError  # noqa: E402
from suse.spark import aggregate  # noqa: E402

CHARS = {"A": "kind = 'a'", "B": "kind = 'b'", "C": "kind = 'c'"}
QUERY, WINDOW = "AB+C", 8
RISING = {"B": "LAST(B.price, 1) IS NULL OR B.price > LAST(B.price, 1)", "C": "C.price < B.price"}
CASES = {
    "rising run": RISING,
    "same label, a gap of at most 2": {
        "B": "(B.label = A.label OR A.label IS NULL) AND (LAST(B.timestamp, 1) IS NULL OR B.timestamp - LAST(B.timestamp, 1) <= 2)",
        "C": "C.label <> FIRST(B.label) OR C.price * 2 >= A.price + 1"},
}


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    """Two partitions of about 16 events with NULL prices and labels, ties and equal prices;
    (k, t, kind) is unique, so the order by (timestamp, character) is the oracle's order."""
    rng = np.random.default_rng(27)
    out = []
    for k in "pq":
        kinds = rng.choice(list("abc"), 24, p=[0.3, 0.45, 0.25])
        for t, kind in sorted({(int(t), str(c)) for t, c in zip(rng.integers(0, 24, 24), kinds)}):
            price = [None, 1.0, 2.0, 2.5, 3.0, 4.0, 5.5, 7.0][rng.integers(0, 8)]
            label = [None, "x", "x", "y"][rng.integers(0, 4)]
            out.append((k, t, kind, price, label, int(rng.integers(0, 5))))
    return pd.DataFrame(out, columns=["k", "t", "kind", "price", "label", "v"])


@pytest.fixture(scope="module")
def frame(spark, rows):
    # explicit types: a column of Python None and floats stays a nullable double
    return spark.createDataFrame(rows.astype(object).where(rows.notna(), None),
                                 "k string, t long, kind string, price double, label string, v long")


def partition_events(rows: pd.DataFrame) -> dict[str, list[tuple]]:
    """Per partition, its events in Spark's order (timestamp, then the characters' order),
    as (char, timestamp, value, attributes) with NULL prices as None."""
    out = {}
    for k, g in rows.groupby("k"):
        g = g.sort_values(["t", "kind"])
        out[k] = [(kind.upper(), int(t), int(v),
                   {"price": None if p is None or (isinstance(p, float) and math.isnan(p)) else p, "label": label})
                  for t, kind, v, p, label in zip(g.t, g.kind, g.v, g.price, g.label)]
    return out


def expected(rows: pd.DataFrame, where, at) -> dict:
    """Per partition and evaluation time: the oracle's count and sum."""
    out = {}
    for k, events in partition_events(rows).items():
        for t in at:
            found = where_aggregate(QUERY, events, WINDOW, where, at=t)
            out[(k, t)] = (str(found["count"]), str(found["sum"]))
    return out


@pytest.mark.parametrize("name", CASES)
def test_exact_counts_per_partition_equal_the_oracle(frame, rows, name):
    at = [8, 16, 23]
    result = aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", value="v", where=CASES[name],
                       engine="exact", evaluate=at).collect()
    got = {(r["k"], r["evaluated_at"]): (r["count"], r["sum"]) for r in result}
    want = expected(rows, CASES[name], at)
    assert got == want
    assert any(int(c) > 0 for c, _ in want.values())  # the conditions have matches to keep or drop
    assert "detected_count" not in result[0] and "elements" not in result[0]


def test_the_conditions_change_the_count(frame, rows):
    # the same query without conditions counts more: the conditions are applied, not ignored
    plain = aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", engine="exact").collect()
    with_where = aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", engine="exact", where=RISING).collect()
    assert sum(int(r["count"]) for r in with_where) < sum(int(r["count"]) for r in plain)


def test_engine_exact_without_conditions_is_the_exact_engine(frame, rows):
    got = {r["k"]: r["count"] for r in
           aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", engine="exact").collect()}
    for k, g in rows.groupby("k"):
        g = g.sort_values(["t", "kind"])
        assert got[k] == str(suse.exact(suse.Query(QUERY, WINDOW), chars="".join(g.kind).upper(),
                                        timestamps=g.t.to_numpy()).count)


def test_a_missing_or_unusable_column_is_named(spark, frame):
    with pytest.raises(InputError, match=r"no column 'volume', which the condition of B reads"):
        aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", engine="exact",
                  where={"B": "B.volume > 1"})
    dated = frame.selectExpr("*", "to_date('2020-01-01') AS day")
    with pytest.raises(InputError, match=r"column 'day'.*has type date"):
        aggregate(dated, QUERY, WINDOW, CHARS, "t", engine="exact", where={"C": "C.day IS NULL"})


def test_what_does_not_count_conditions_refuses_them_by_name(frame):
    with pytest.raises(InputError, match=r"matches per row are not available for 'AB\+C' with conditions"):
        aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", where=RISING, strategy="fifo", matches=3)
    with pytest.raises(QueryError, match=r"query 'r': where is not supported in a query set"):
        aggregate(frame, None, WINDOW, CHARS, "t", queries={"r": {"query": QUERY, "where": RISING}, "s": "AC"})
    with pytest.raises(InputError, match=r"engine='exact' runs a single query"):
        aggregate(frame, None, WINDOW, CHARS, "t", queries={"s": "AC"}, engine="exact")
    with pytest.raises(InputError, match=r"leave exact out"):
        aggregate(frame, QUERY, WINDOW, CHARS, "t", engine="exact", exact=True)
    with pytest.raises(QueryError, match=r"policy 'next'"):
        aggregate(frame, QUERY, WINDOW, CHARS, "t", engine="exact", where=RISING, policy="next")
    with pytest.raises(InputError, match=r"engine must be one of 'summary', 'exact'"):
        aggregate(frame, QUERY, WINDOW, CHARS, "t", engine="fast")


# --- summaries with conditions (batch): each partition's events through suse.Summary ---------------


def library_rows(rows: pd.DataFrame, where, at, size: int, strategy: str, aggregate: str = "sum") -> dict:
    """Per partition and evaluation time: what the library's summary with conditions (a
    WhereSummary, seed 0 as Spark's default) gives over the partition's events in Spark's order."""
    out = {}
    for k, events in partition_events(rows).items():
        summary = suse.Summary(suse.Query(QUERY, WINDOW, aggregate=aggregate, where=where), size, strategy, seed=0)
        for ev in summary.extend(events, evaluate_at=at, elements=True):
            out[(k, ev.timestamp)] = (str(ev.count), str(ev.sum), str(ev.detected_count),
                                      sum(t <= ev.timestamp for _, t, _, _ in events), [e[:3] for e in ev.elements])
    return out


def summary_rows(frame, where, at, size: int, strategy: str, **options) -> list:
    return aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", value="v", aggregate="sum", where=where,
                     evaluate=at, summary_size=size, strategy=strategy, **options).collect()


@pytest.mark.parametrize("strategy", ["fifo", "random", "present", "suse", "adaptive"])
def test_summary_rows_equal_the_library_summary_over_each_partition(frame, rows, strategy):
    at, size = [8, 16, 23], 4
    out = summary_rows(frame, RISING, at, size, strategy, exact=True)
    got = {(r["k"], r["evaluated_at"]): (r["count"], r["sum"], r["detected_count"], r["events"],
                                         [tuple(e) for e in r["elements"]]) for r in out}
    assert got == library_rows(rows, RISING, at, size, strategy)
    # and, read back from the elements, each count is the oracle's over the retained events
    events = partition_events(rows)
    for r in out:
        kept = [e for e in events[r["k"]] if (e[0], e[1], e[2]) in {tuple(x) for x in r["elements"]}]
        assert len(kept) == len(r["elements"]) <= size
        assert r["count"] == str(where_aggregate(QUERY, kept, WINDOW, RISING)["count"])
    # the summary is smaller than the partitions: it evicts, and counts less than exactly
    assert any(r["events"] > size for r in out)
    assert {(r["k"], r["evaluated_at"]): (r["exact_count"], r["exact_sum"]) for r in out} == expected(rows, RISING, at)


@pytest.mark.parametrize("strategy", ["fifo", "random", "present"])
def test_a_summary_larger_than_the_partitions_counts_as_the_oracle(frame, rows, strategy):
    at = [8, 16, 23]
    name = "same label, a gap of at most 2"
    out = summary_rows(frame, CASES[name], at, 100, strategy)
    assert {(r["k"], r["evaluated_at"]): (r["count"], r["sum"]) for r in out} == expected(rows, CASES[name], at)
    assert any(r["count"] != "0" for r in out)


def test_summary_min_and_max_with_conditions_are_the_oracles_over_the_retained_elements(frame, rows):
    out = aggregate(frame, QUERY, WINDOW, CHARS, "t", partition_by="k", value="v", aggregate="max", of="B",
                    where=RISING, evaluate=[16, 23], summary_size=5, strategy="random").collect()
    events = partition_events(rows)
    for r in out:
        listed = {(x["char"], x["timestamp"]) for x in r["elements"]}  # (with `of`, other letters' values are 0)
        kept = [e for e in events[r["k"]] if e[:2] in listed]
        found = where_aggregate(QUERY, kept, WINDOW, RISING, of="B")
        assert (r["count"], r["min"], r["max"]) == (str(found["count"]), found["min"], found["max"])
    assert any(r["max"] is not None for r in out)


@pytest.mark.slow  # a job of its own: 8-18 s here, as the one above
def test_a_job_file_counts_conditions_with_summaries(spark, tmp_path, rows):
    from suse.spark.jobs.load import load_config
    from suse.spark.jobs.run import run_job

    (tmp_path / "in").mkdir()
    rows.to_json(tmp_path / "in" / "part.json", orient="records", lines=True)
    job = tmp_path / "job.toml"
    job.write_text(exact_job(tmp_path / "in", tmp_path / "out", "k string, t long, kind string, price double, "
                             "label string, v long", QUERY, WINDOW, RISING, "[8, 16, 23]",
                             summary='size = 4\nstrategy = "present"'))
    run_job(load_config(job))
    out = spark.read.json(str(tmp_path / "out")).collect()
    want = library_rows(rows, RISING, [8, 16, 23], 4, "present", "count")
    assert {(r["k"], r["evaluated_at"]): (r["count"], r["detected_count"]) for r in out} == {
        key: (count, detected) for key, (count, _, detected, _, _) in want.items()}


@pytest.mark.slow  # a job of its own: about 20 s here
def test_a_job_file_counts_conditions_over_json_columns(spark, tmp_path, rows):
    from suse.spark.jobs.load import load_config
    from suse.spark.jobs.run import run_job

    (tmp_path / "in").mkdir()
    rows.to_json(tmp_path / "in" / "part.json", orient="records", lines=True)
    job = tmp_path / "job.toml"
    job.write_text(exact_job(tmp_path / "in", tmp_path / "out", "k string, t long, kind string, price double, "
                             "label string, v long", QUERY, WINDOW, RISING, "[8, 16, 23]"))
    run_job(load_config(job))
    out = spark.read.json(str(tmp_path / "out")).collect()
    assert {(r["k"], r["evaluated_at"]): (r["count"], r["sum"]) for r in out} == expected(rows, RISING, [8, 16, 23])


def exact_job(source, out, schema: str, query: str, window: int, where: dict, at: str, head: str = "", tail: str = "",
              summary: str = "") -> str:
    """A job file counting ``query`` with conditions ``where`` on the exact engine, JSON in and
    out (``at``: the TOML value of ``[evaluate] at``; ``head``/``tail``: lines before and after;
    ``summary``: the lines of a ``[summary]`` table, which count with summaries instead)."""
    table, engine = (f"[summary]\n{summary}", "") if summary else ("", 'engine = "exact"')
    conditions = ", ".join(f"{letter} = '{condition}'" for letter, condition in where.items())
    characters = "\n".join(f'{c} = "{p}"' for c, p in CHARS.items())
    return f"""{head}
[input]
path = "{source}"
format = "json"
schema = "{schema}"
timestamp = "t"
partition_by = "k"
value = "v"
[characters]
{characters}
[query]
regex = "{query}"
window = {window}
where = {{ {conditions} }}
{table}
[evaluate]
at = {at}
{engine}
[output]
path = "{out}"
format = "json"
{tail}"""


# --- the SQL front: counting mode's DEFINE split into the row predicate and `where` -------------

STATEMENT = """SELECT * FROM where_rows MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY t
  MEASURES COUNT(*) AS n, SUM(v) AS total
  PATTERN (A B+ C)
  DEFINE A AS kind = 'a',
         B AS kind = 'b' AND coalesce(price, 0) BETWEEN -1 AND 100
              AND (LAST(B.price, 1) IS NULL OR B.price > LAST(B.price, 1)),
         C AS kind = 'c' AND coalesce(price, 0) <= max(coalesce(price, 0)) OVER (PARTITION BY k)
              AND C.price < B.price
  WITHIN 8 SUMMARY EXACT EVALUATE AT 8, 16, 23
)"""


def test_sql_splits_each_define_into_the_row_predicate_and_where(spark, frame, rows):
    import suse.spark

    frame.createOrReplaceTempView("where_rows")
    out = suse.spark.sql(spark, STATEMENT).collect()
    assert {(r["k"], r["evaluated_at"]): (r["n"], r["total"]) for r in out} == expected(rows, RISING, [8, 16, 23])
    assert "elements" not in out[0]


@pytest.mark.parametrize("clause, strategy", [("SUMMARY 4 PRESENT", "present"), ("SUMMARY 4", "suse"),
                                              ("SUMMARY 4 ADAPTIVE", "adaptive")])
def test_sql_counts_a_define_between_rows_with_a_summary(spark, frame, rows, clause, strategy):
    import suse.spark

    frame.createOrReplaceTempView("where_rows")
    out = suse.spark.sql(spark, STATEMENT.replace("SUMMARY EXACT", clause)).collect()
    want = library_rows(rows, RISING, [8, 16, 23], 4, strategy)
    assert {(r["k"], r["evaluated_at"]): (r["n"], r["total"], [(e["char"], e["timestamp"], e["value"])
                                                                for e in r["elements"]]) for r in out} == {
        key: (count, total, elements) for key, (count, total, _, _, elements) in want.items()}


@pytest.mark.parametrize("change, message, at", [
    ("C.price < B.price", "DEFINE C: avg() over the match's rows is a condition over a whole prefix", "avg(B.price)"),
    ("C.price < B.price", "DEFINE C: LAST(price, 1) without a variable reads any row", "LAST(price, 1)"),
    ("C.price < B.price", "DEFINE C: ", "% 2"),
    ("C.price < B.price", "DEFINE C: LAST(price * 2): a condition between a match's rows reads one column at a time", "LAST(B.price * 2, 1)"),
])
def test_sql_refuses_what_the_conditions_cannot_say_at_its_position(spark, frame, change, message, at):
    import suse.spark
    from suse.errors import SqlError

    frame.createOrReplaceTempView("where_rows")
    replacement = {"avg(B.price)": "C.price < avg(B.price)", "LAST(price, 1)": "C.price < LAST(price, 1)",
                   "% 2": "C.price < B.price % 2", "LAST(B.price * 2, 1)": "C.price < LAST(B.price * 2, 1)"}[at]
    text = STATEMENT.replace(change, replacement)
    with pytest.raises(SqlError) as info:
        suse.spark.sql(spark, text)
    assert message in str(info.value)
    assert info.value.position == text.index(at), (str(info.value), text[info.value.position:][:30])


def test_the_live_page_refuses_conditions_by_name(tmp_path):
    from suse.dashboard import serve

    job = live_page_job(tmp_path, {"A": "kind = 'a'", "B": "kind = 'b'"},
                        'regex = "AB"\nwindow = 5\nwhere = { B = "B.price > A.price" }')
    with pytest.raises(InputError, match=r"the live page does not run conditions between events \(where\)"):
        serve(job, log=lambda line: None)
