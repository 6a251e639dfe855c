"""Approximate matching (`max_missing`) in the Spark pipeline: batch, streaming and TOML jobs
carry `count_by_missing` (decimal strings) equal to the engine run directly per partition."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from suse.errors import QueryError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.jobs.load import load_config  # noqa: E402
from suse.spark.jobs.run import run_job  # noqa: E402
from suse.spark.streaming.aggregate import aggregate_stream, latest  # noqa: E402

CHARS = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"}
QUERY, WINDOW, K = "ABC", 8, 1


def _events() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = [(k, t, int(x)) for k in "pq" for t, x in enumerate(rng.integers(0, 9, 14))]
    return pd.DataFrame(rows, columns=["k", "t", "x"])


def _direct(pdf: pd.DataFrame, size: int) -> dict:
    """Per partition: a summary of `size` run directly, as count_by_missing strings."""
    q = suse.Query(QUERY, WINDOW, max_missing=K)
    out = {}
    for k, g in pdf.sort_values(["k", "t"]).groupby("k"):
        chars = "".join(np.select([g.x < 3, g.x < 6], ["A", "B"], "C"))
        s = suse.Summary(q, size, "suse", seed=0)
        s.extend(chars, g.t.to_numpy())
        out[k] = [str(c) for c in s.result().count_by_missing]
    return out


def test_batch_count_by_missing_equals_the_engine(spark):
    pdf = _events()
    out = aggregate(spark.createDataFrame(pdf), QUERY, WINDOW, CHARS, "t", "k", summary_size=6, exact=True,
                    max_missing=K)
    rows = {r.k: r for r in out.collect()}
    assert {k: list(r.count_by_missing) for k, r in rows.items()} == _direct(pdf, 6)
    for r in rows.values():
        assert sum(map(int, r.count_by_missing)) == int(r["count"])
    # Without max_missing the output keeps its columns.
    plain = aggregate(spark.createDataFrame(pdf), QUERY, WINDOW, CHARS, "t", "k", summary_size=6)
    assert "count_by_missing" not in plain.columns


def test_batch_refuses_negation_with_max_missing(spark):
    with pytest.raises(QueryError, match="negation"):
        aggregate(spark.createDataFrame(_events()), "A!BC", WINDOW, CHARS, "t", "k", max_missing=1)


def test_streaming_count_by_missing(spark, tmp_path):
    pdf = _events()
    src_dir, out_dir, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src_dir.mkdir()
    pdf.to_json(src_dir / "part-0.json", orient="records", lines=True)
    src = spark.readStream.schema("k string, t long, x long").json(str(src_dir))
    out = aggregate_stream(src, QUERY, WINDOW, CHARS, "t", "k", summary_size=6, max_missing=K)
    query = (out.writeStream.format("parquet").option("path", str(out_dir))
             .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = latest(spark.read.parquet(str(out_dir)), ["k"]).collect()
    assert {r.k: list(r.count_by_missing) for r in rows} == _direct(pdf, 6)


JOB = """
name = "approximate"
[characters]
A = "x < 3"
B = "x >= 3 AND x < 6"
C = "x >= 6"
[input]
path = "{src}"
format = "csv"
timestamp = "t"
partition_by = ["k"]
[[query]]
regex = "ABC"
window = 8
max_missing = 1
[[query]]
regex = "AB"
window = 8
[summary]
size = 6
[output]
path = "{out}"
format = "{fmt}"
"""


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_toml_job(spark, tmp_path, fmt):
    pdf = _events()
    pdf.to_csv(tmp_path / "events.csv", index=False)
    path = tmp_path / "job.toml"
    path.write_text(JOB.format(src=tmp_path / "events.csv", out=tmp_path / "out", fmt=fmt))
    run_job(load_config(path))
    kw = {"header": "true"} if fmt == "csv" else {}
    out = spark.read.format(fmt).options(**kw).load(str(tmp_path / "out")).collect()
    approx = {r.k: r.count_by_missing for r in out if r.query == "ABC"}
    want = _direct(pdf, 6)
    if fmt == "csv":  # CSV has no arrays: a JSON list of strings
        want = {k: '["' + '","'.join(v) + '"]' for k, v in want.items()}
    else:
        approx = {k: list(v) for k, v in approx.items()}
    assert approx == want
    assert all(r.count_by_missing is None for r in out if r.query == "AB")
