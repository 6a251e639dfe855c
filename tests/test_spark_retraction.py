"""The `op` column: retractions ("-") in batch and across streaming micro-batches, against
the batch result over the events that remain."""
from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from suse.spark import aggregate  # noqa: E402
from suse.spark.streaming import aggregate_stream, latest  # noqa: E402

SCHEMA = "k string, t long, c string, v long, op string"
KW = dict(query="A(B|C)*C", window=20, characters="c", timestamp="t", partition_by=["k"], value="v",
          summary_size=3)


def _rows(result) -> dict:
    return {r.k: (r["count"], r["sum"], r.detected_count, r.events, [tuple(e) for e in r.elements]) for r in result}


def test_batch_retractions_cancel_equal_events(spark):
    events = pd.DataFrame({"k": list("pppppqq"), "t": [1, 2, 3, 4, 5, 1, 2], "c": list("ABCCCAC"),
                           "v": [1, 2, 3, 4, 4, 1, 1], "op": "+"})
    # p: C@3 (v=3) and C@5 (v=4) taken back; C@4 (also v=4) stays
    retractions = pd.DataFrame({"k": ["p", "p"], "t": [3, 5], "c": ["C", "C"], "v": [3, 4], "op": ["-", "-"]})
    frame = spark.createDataFrame(pd.concat([events, retractions]), SCHEMA)
    got = _rows(aggregate(frame, op="op", **KW).collect())
    remaining = events.drop(index=[2, 4])
    want = _rows(aggregate(spark.createDataFrame(remaining, SCHEMA), **KW).collect())
    assert got == want and got["p"][3] == 3  # A@1 B@2 C@4


def test_batch_rejects_a_retraction_of_nothing_and_a_bad_op(spark):
    frame = spark.createDataFrame([("p", 1, "A", 1, "+"), ("p", 2, "C", 1, "-")], SCHEMA)
    with pytest.raises(Exception, match=r"a retraction \(op '-'\) has no event to cancel: k=p, timestamp=2"):
        aggregate(frame, op="op", **KW).collect()
    frame = spark.createDataFrame([("p", 1, "A", 1, "x")], SCHEMA)
    with pytest.raises(Exception, match=r"op column 'op' must be '\+' or '-', got 'x'"):
        aggregate(frame, op="op", **KW).collect()


def test_streaming_retractions_across_micro_batches(spark, tmp_path):
    src, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src.mkdir()
    first = pd.DataFrame({"k": "p", "t": [10, 20, 30, 40], "c": list("ABCC"), "v": 1, "op": "+"})
    # watermark after the first file: 40 - 15 = 25. C@30 is pending: taken back. B@20 is final:
    # rejected. C@45 comes and goes within the micro-batch; B@35 is new.
    second = pd.DataFrame({"k": "p", "t": [30, 20, 45, 45, 35], "c": list("CBCCB"), "v": 1,
                           "op": ["-", "-", "+", "-", "+"]})
    df = spark.readStream.schema(SCHEMA).json(str(src))
    q = (aggregate_stream(df, lateness=15, op="op", **KW).writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(ckpt)).trigger(processingTime="0 seconds").start())
    try:
        for i, step in enumerate([first, second]):
            step.to_json(src / f"part-{i}.json", orient="records", lines=True)
            q.processAllAvailable()
    finally:
        q.stop()
    (row,) = latest(spark.read.parquet(str(out)), ["k"]).collect()
    remaining = pd.DataFrame({"k": "p", "t": [10, 20, 35, 40], "c": list("ABBC"), "v": 1, "op": "+"})
    (want,) = aggregate(spark.createDataFrame(remaining, SCHEMA), **KW).collect()
    assert _rows([row]) == _rows([want])
    assert (row.rejected_retractions, row.late_events) == (1, 0)
