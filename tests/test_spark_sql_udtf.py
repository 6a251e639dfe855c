"""`suse_aggregate`, the Spark SQL table function: same rows as `aggregate` on the same data,
errors at analysis time, and no partition mixed into another."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

from pyspark.errors import PySparkException  # noqa: E402

from suse.spark import aggregate, register  # noqa: E402


def grpc_error() -> type:
    try:
        import grpc
    except ModuleNotFoundError:
        return PySparkException
    return grpc.RpcError


COLUMNS = ["k", "evaluated_at", "count", "sum", "avg", "count_double", "sum_double", "detected_count",
           "events", "dropped_events", "corrupt_records", "elements"]


def rows(df) -> list[tuple]:
    cols = COLUMNS + [c for c in ("exact",) if c in df.columns]
    return [tuple(r) for r in df.select(*cols).orderBy("k", "evaluated_at").collect()]


def events(n=300, seed=3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-01-01", tz="UTC")
    rows = []
    for k in ("p", "q", "r"):
        hours = np.sort(rng.choice(24 * 40, n, replace=False))  # distinct times per partition
        for h in hours:
            rows.append((k, (start + pd.Timedelta(hours=int(h))).to_pydatetime(),
                         str(rng.choice(list("DACX"), p=[0.35, 0.3, 0.15, 0.2])), int(rng.integers(0, 90))))
    pdf = pd.DataFrame(rows, columns=["k", "t", "c", "v"])
    pdf.loc[5, "t"] = None  # a NULL time: counted in dropped_events, as by aggregate
    return pdf


@pytest.fixture(scope="module")
def table(spark):
    register(spark)
    df = spark.createDataFrame(events(), "k string, t timestamp, c string, v long")
    df.createOrReplaceTempView("udtf_events")
    return df


def test_udtf_equals_aggregate(spark, table):
    got = spark.sql("""
        SELECT * FROM suse_aggregate(
          TABLE(SELECT k, t, c, v FROM udtf_events) PARTITION BY k ORDER BY t,
          query => 'D(D|A)*C', window => '2 days', summary_size => 6, value => 'v',
          evaluate => 'every 40 events', exact => true)""")
    want = aggregate(table, query="D(D|A)*C", window="2 days", characters="c", timestamp="t",
                     partition_by="k", value="v", summary_size=6, evaluate="every 40 events", exact=True)
    assert got.schema == want.schema  # same columns, types and order
    mine = rows(got.withColumn("exact", got.exact_count))
    assert mine == rows(want.withColumn("exact", want.exact_count))
    assert len(mine) > 10 and any(r[2] != "0" for r in mine)
    assert {r[0]: r[9] for r in mine} == {"p": 1, "q": 0, "r": 0}  # the NULL time, counted


def test_udtf_poisson_json_and_integer_time_one_stream(spark):
    register(spark)
    rng = np.random.default_rng(1)
    pdf = pd.DataFrame({"t": np.arange(400), "c": rng.choice(list("abcd"), 400)})
    df = spark.createDataFrame(pdf, "t long, c string")
    df.createOrReplaceTempView("udtf_ints")
    got = spark.sql("""
        SELECT * FROM suse_aggregate(TABLE(udtf_ints), 'a(b|c)*d', 30, timestamp => 't',
          summary_size => 20, evaluate => '{"poisson": 5, "per": 100, "seed": 4}')""")
    want = aggregate(df, "a(b|c)*d", 30, "c", "t", summary_size=20, evaluate={"poisson": 5, "per": 100, "seed": 4})
    assert got.schema == want.schema
    key = ["evaluated_at", "count", "detected_count", "events", "elements"]
    assert [tuple(r) for r in got.select(*key).orderBy("evaluated_at").collect()] == \
        [tuple(r) for r in want.select(*key).orderBy("evaluated_at").collect()]
    assert got.count() >= 4


def analysis_error(spark, text: str) -> str:
    # Spark Connect reports a failing analyze() as a gRPC error (status INTERNAL), classic
    # Spark as an AnalysisException: both carry suse's message.
    with pytest.raises((PySparkException, grpc_error())) as info:
        spark.sql(text).collect()
    return str(info.value)


def test_udtf_errors_at_analysis(spark, table):
    base = "SELECT * FROM suse_aggregate(TABLE(SELECT k, t, c FROM udtf_events) PARTITION BY k, {})"
    assert "unclosed '('" in analysis_error(spark, base.format("query => 'D(A', window => '1 day'"))
    assert "holds date-times" in analysis_error(spark, base.format("query => 'DA', window => 5"))
    assert "unknown argument 'windw'" in analysis_error(spark, base.format("query => 'DA', windw => '1 day'"))
    assert "character column 'kind' not found" in analysis_error(
        spark, base.format("query => 'DA', window => '1 day', characters => 'kind'"))


def test_udtf_refuses_partitions_mixed_in_one_call(spark, table):
    # No PARTITION BY: Spark would hand arbitrary slices of the table to each call.
    message = analysis_error(spark, """
        SELECT * FROM suse_aggregate(TABLE(SELECT k, t, c FROM udtf_events), query => 'DA', window => '1 day')""")
    assert "Add PARTITION BY k" in message


def test_udtf_evaluated_at_is_utc(spark, table):
    (row,) = spark.sql("""
        SELECT evaluated_at FROM suse_aggregate(TABLE(SELECT k, t, c FROM udtf_events WHERE k = 'q')
          PARTITION BY k, query => 'D', window => '1 day')""").collect()
    last = events().query("k == 'q' and c == 'D'").t.max()
    # pyspark returns naive local date-times; the test process runs in UTC like the session
    assert row.evaluated_at.astimezone(dt.timezone.utc) == last.to_pydatetime()


def test_row_and_arrow_forms_agree_with_partitions_over_many_batches(spark, table):
    # Arrow batches of 7 rows: every partition reaches eval in many batches.
    text = """SELECT * FROM {}(TABLE(SELECT k, t, c, v FROM udtf_events) PARTITION BY k ORDER BY t,
        query => 'D(D|A)*C', window => '2 days', summary_size => 6, value => 'v', evaluate => 'every 25 events')"""
    register(spark, "suse_rows", arrow=False)
    old = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "7")
    try:
        arrow = rows(spark.sql(text.format("suse_aggregate")))
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", old)
    assert arrow == rows(spark.sql(text.format("suse_rows")))
    assert len(arrow) >= 30 and any(r[2] != "0" for r in arrow) and {r[0] for r in arrow} == {"p", "q", "r"}


def test_udtf_refuses_a_negative_value(spark, table):
    bad = spark.createDataFrame([("p", dt.datetime(2024, 1, 1), "D", 3), ("p", dt.datetime(2024, 1, 2), "D", -4)],
                                "k string, t timestamp, c string, v long")
    bad.createOrReplaceTempView("udtf_negative")
    with pytest.raises((PySparkException, grpc_error())) as info:
        spark.sql("""SELECT * FROM suse_aggregate(TABLE(udtf_negative) PARTITION BY k, query => 'D',
                     window => '1 day', value => 'v')""").collect()
    assert "the value column is negative (-4) in partition k='p'" in str(info.value)
