"""The `op` column: retractions ("-") in batch and across streaming micro-batches, against
the batch result over the events that remain."""
from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from suse.spark import aggregate  # noqa: E402
from suse.spark.streaming.aggregate import aggregate_stream, latest  # noqa: E402

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


# Two micro-batches with retractions. After the first, the watermark is 40 - 15 = 25 (for a
# query over A, B, C): C@30 is pending and is taken back, B@20 is final and the retraction is
# rejected. C@45 comes and goes within the second micro-batch; B@35 is new.
FIRST = pd.DataFrame({"k": "p", "t": [10, 20, 30, 40], "c": list("ABCC"), "v": 1, "op": "+"})
SECOND = pd.DataFrame({"k": "p", "t": [30, 20, 45, 45, 35], "c": list("CBCCB"), "v": 1,
                       "op": ["-", "-", "+", "-", "+"]})


def _stream_two_batches(spark, tmp_path, keys: list[str], **kw) -> list:
    """Run `aggregate_stream(op="op", lateness=15, **kw)` over FIRST then SECOND; the latest
    row per `keys`."""
    src, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src.mkdir()
    df = spark.readStream.schema(SCHEMA).json(str(src))
    q = (aggregate_stream(df, lateness=15, op="op", **kw).writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(ckpt)).trigger(processingTime="0 seconds").start())
    try:
        for i, step in enumerate([FIRST, SECOND]):
            step.to_json(src / f"part-{i}.json", orient="records", lines=True)
            q.processAllAvailable()
    finally:
        q.stop()
    return latest(spark.read.parquet(str(out)), keys).collect()


def test_streaming_retractions_across_micro_batches(spark, tmp_path):
    (row,) = _stream_two_batches(spark, tmp_path, ["k"], **KW)
    remaining = pd.DataFrame({"k": "p", "t": [10, 20, 35, 40], "c": list("ABBC"), "v": 1, "op": "+"})
    (want,) = aggregate(spark.createDataFrame(remaining, SCHEMA), **KW).collect()
    assert _rows([row]) == _rows([want])
    assert (row.rejected_retractions, row.late_events) == (1, 0)


SET = {"one": "A(B|C)*C", "two": {"query": "AB", "window": 30}}
SET_KW = dict(window=20, characters="c", timestamp="t", partition_by=["k"], value="v", summary_size=3)


def _set_rows(rows) -> dict:
    return {(r.k, r.query): (r["count"], r["sum"], r.detected_count, r.events, [tuple(e) for e in r.elements])
            for r in rows}


def test_query_set_takes_retractions_in_batch(spark):
    events = pd.DataFrame({"k": list("ppppp"), "t": [1, 2, 3, 4, 5], "c": list("ABCBC"), "v": [1, 2, 3, 4, 5], "op": "+"})
    retractions = pd.DataFrame({"k": ["p", "p"], "t": [2, 5], "c": ["B", "C"], "v": [2, 5], "op": "-"})
    frame = spark.createDataFrame(pd.concat([events, retractions]), SCHEMA)
    got = _set_rows(aggregate(frame, op="op", queries=SET, **SET_KW).collect())
    remaining = spark.createDataFrame(events.drop(index=[1, 4]), SCHEMA)
    want = _set_rows(aggregate(remaining, queries=SET, **SET_KW).collect())
    assert got == want and got[("p", "two")][0] == "1"  # A@1 B@4


def test_streaming_query_set_takes_retractions_across_micro_batches(spark, tmp_path):
    # Each query's horizon moves with the events of its own letters, as when it runs alone.
    # "one" (A, B, C) fares as above. "two" (A, B) has seen A@10 B@20 only: watermark 5, so B@20
    # is still pending and taken back; it never sees the C rows. C@45 comes and goes, B@35 is new.
    rows = _stream_two_batches(spark, tmp_path, ["k", "query"], queries=SET, **SET_KW)
    assert {r.query: r.rejected_retractions for r in rows} == {"one": 1, "two": 0}
    want = {}
    for name, kept in (("one", ([10, 20, 35, 40], "ABBC")), ("two", ([10, 35], "AB"))):
        remaining = pd.DataFrame({"k": "p", "t": kept[0], "c": list(kept[1]), "v": 1, "op": "+"})
        out = aggregate(spark.createDataFrame(remaining, SCHEMA), queries=SET, **SET_KW).collect()
        want |= {k: v for k, v in _set_rows(out).items() if k[1] == name}
    assert _set_rows(rows) == want and want[("p", "two")][0] == "1"  # A@10 B@35
