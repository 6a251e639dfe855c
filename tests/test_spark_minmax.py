"""MIN/MAX and `of=` in Spark: batch `aggregate`, `aggregate_stream` and TOML jobs, each
against the engine run directly per partition (itself checked against the oracle in
test_minmax.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import tomllib

pytest.importorskip("pyspark")

import suse  # noqa: E402
from suse.errors import InputError, QueryError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.jobs.load import parse_config  # noqa: E402
from suse.spark.jobs.run import run_job  # noqa: E402
from suse.spark.streaming.aggregate import aggregate_stream, latest  # noqa: E402

CHARS = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"}
QUERY, WINDOW, SIZE = "A(B|C)*C", 12, 6


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    rows = [(k, int(t), int(x), int(v)) for k in "pq"
            for t, x, v in zip(sorted(rng.choice(200, 40, replace=False)), rng.integers(0, 9, 40), rng.integers(0, 1000, 40))]
    return pd.DataFrame(rows, columns=["k", "t", "x", "v"])


def direct(pdf: pd.DataFrame, aggregate_: str, of, size=SIZE) -> dict:
    """Per partition: the summary and the exact engine run directly, at the last timestamp."""
    q = suse.Query(QUERY, WINDOW, aggregate=aggregate_, of=of)
    out = {}
    for k, g in pdf.sort_values("t").groupby("k"):
        chars = "".join("A" if x < 3 else "B" if x < 6 else "C" for x in g.x)
        s = suse.Summary(q, size, "suse", seed=0)
        s.extend(chars, g.t.to_numpy(), g.v.to_numpy())
        ex = suse.exact(q, chars=chars, timestamps=g.t.to_numpy(), values=g.v.to_numpy())
        out[k] = (str(s.result().count), str(s.result().sum), s.result().min, s.result().max, str(ex.count), str(ex.sum))
    return out


def test_batch_aggregate_has_min_and_max_columns(spark, events):
    df = spark.createDataFrame(events)
    out = aggregate(df, QUERY, WINDOW, CHARS, "t", ["k"], value="v", summary_size=SIZE, exact=True,
                    aggregate="max", of="C")
    assert out.columns[-2:] == ["min", "max"] and dict(out.dtypes)["max"] == "bigint"
    got = {r.k: (r["count"], r["sum"], r["min"], r["max"], r.exact_count, r.exact_sum) for r in out.collect()}
    want = direct(events, "max", "C")
    assert got == want
    assert all(v[3] is not None for v in want.values())  # the test sees real maxima
    # Without min/max the columns are not there.
    plain = aggregate(df, QUERY, WINDOW, CHARS, "t", ["k"], value="v", summary_size=SIZE, aggregate="sum", of="AC")
    assert "max" not in plain.columns
    assert {r.k: r["sum"] for r in plain.collect()} == {k: v[1] for k, v in direct(events, "sum", "AC").items()}


def test_batch_aggregate_refuses_a_letter_outside_the_query(spark, events):
    with pytest.raises(QueryError, match="'D', which is not a letter of the query"):
        aggregate(spark.createDataFrame(events), QUERY, WINDOW, CHARS, "t", ["k"], value="v", aggregate="max", of="D")


def test_streaming_min_max_equal_the_batch_run(spark, events, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    events.to_json(src / "part-0.json", orient="records", lines=True)
    stream = spark.readStream.schema("k string, t long, x long, v long").json(str(src))
    out = aggregate_stream(stream, QUERY, WINDOW, CHARS, "t", ["k"], value="v", summary_size=SIZE,
                           aggregate="min", of="C")
    q = (out.writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start())
    q.awaitTermination()
    rows = latest(spark.read.parquet(str(tmp_path / "out")), ["k"]).collect()
    got = {r.k: (r["count"], r["sum"], r["min"], r["max"]) for r in rows}
    want = {k: v[:4] for k, v in direct(events, "min", "C").items()}
    assert got == want


JOB = """
name = "max of C"
[input]
path = "{src}"
format = "csv"
schema = "k string, t long, x long, v long"
timestamp = "t"
partition_by = ["k"]
value = "v"
[characters]
A = "x < 3"
B = "x >= 3 AND x < 6"
C = "x >= 6"
[[query]]
name = "max"
regex = "{query}"
window = {window}
aggregate = "max"
of = "C"
[[query]]
name = "count"
regex = "{query}"
window = {window}
[summary]
size = {size}
[output]
path = "{out}"
"""


def test_toml_job_with_max_of_a_letter(spark, events, tmp_path):
    events.to_csv(tmp_path / "in.csv", index=False, header=False)
    text = JOB.format(src=tmp_path / "in.csv", out=tmp_path / "out", query=QUERY, window=WINDOW, size=SIZE)
    run_job(parse_config(tomllib.loads(text)))
    result = spark.read.parquet(str(tmp_path / "out"))
    rows = {(r.query, r.k): (r["count"], r["sum"], r["min"], r["max"]) for r in result.collect()}
    want = direct(events, "max", "C")
    for k, v in want.items():
        assert rows[("max", k)] == v[:4]
        assert rows[("count", k)][2:] == (None, None)  # the other query has no min/max


def test_toml_job_refuses_of_outside_the_query(tmp_path):
    text = JOB.format(src=tmp_path / "in.csv", out=tmp_path / "out", query=QUERY, window=WINDOW, size=SIZE)
    with pytest.raises(InputError, match=r"query\[0\]\.of: of names 'Z', which is not a letter"):
        parse_config(tomllib.loads(text.replace('of = "C"', 'of = "Z"')))  # before Spark starts


def test_sql_table_function_refuses_min_max_instead_of_dropping_them(spark, events):
    from suse.spark import register

    register(spark)
    spark.createDataFrame(events).createOrReplaceTempView("minmax_events")
    sql = ("SELECT * FROM suse_aggregate(TABLE(SELECT k, t, IF(x < 3, 'A', 'B') AS c FROM minmax_events) "
           "PARTITION BY k, query => 'AB', window => 5, timestamp => 't', aggregate => 'max')")
    with pytest.raises(Exception, match="aggregate 'max' is not offered by the table function"):
        spark.sql(sql).collect()


def test_live_page_refuses_min_max_instead_of_showing_plain_sums(tmp_path):
    from suse.dashboard import serve

    job = tmp_path / "job.toml"
    job.write_text(JOB.format(src=tmp_path / "in.csv", out=tmp_path / "out", query=QUERY, window=WINDOW, size=SIZE))
    with pytest.raises(InputError, match="query 'max': the live page does not show aggregate min/max or `of`"):
        serve(job, log=lambda line: None)
