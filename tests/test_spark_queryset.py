"""aggregate(df, queries={...}): one Spark job for a query set equals one job per query."""
from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

import suse  # noqa: E402
from strategies import query_sets  # noqa: E402
from suse.errors import InputError  # noqa: E402
from suse.spark import aggregate  # noqa: E402

CHARS = {"a": "x < 3", "b": "x >= 3 AND x < 6", "c": "x >= 6 AND x < 9"}  # x = 9: no character
# dropped_events differs by design: in a set it counts the rows with a character of any query.
RESULT = ["k", "evaluated_at", "count", "sum", "detected_count", "events", "elements", "exact_count", "exact_sum"]


@pytest.fixture(scope="module")
def frame(spark):
    rng = np.random.default_rng(12)
    rows = [(k, int(t), int(x), int(v)) for k in "pq" for t, x, v in
            zip(sorted(rng.integers(0, 40, 30)), rng.integers(0, 10, 30), rng.integers(0, 6, 30))]
    rows.append(("q", None, 1, 1))  # a row without a timestamp: counted, not fed
    return spark.createDataFrame(pd.DataFrame(rows, columns=["k", "t", "x", "v"]).astype({"t": "Int64"}))


def _rows(df, names=RESULT) -> list[tuple]:
    return sorted(tuple(str(r[c]) for c in names) for r in df.collect())


@pytest.mark.slow  # one Spark job per query and example: about 50 s
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=query_sets(max_queries=3), size=st.integers(1, 4),
       evaluate=st.sampled_from(["end", {"every": 7}, [5, 20, 39]]))
def test_one_job_equals_one_job_per_query(frame, spec, size, evaluate):
    common = dict(characters=CHARS, timestamp="t", partition_by="k", value="v", summary_size=size, exact=True,
                  evaluate=evaluate)
    queries = {name: {"query": rx, "window": w, "policy": p} for name, (rx, w, p) in spec.items()}
    together = aggregate(frame, queries=queries, **common)
    assert together.columns[:2] == ["k", "query"]
    got = {name: [] for name in spec}
    for r in together.collect():
        got[r["query"]].append(tuple(str(r[c]) for c in RESULT))
    for name, (rx, w, p) in spec.items():
        alone = aggregate(frame, rx, w, policy=p, **common)
        assert sorted(got[name]) == _rows(alone), name


def test_per_query_settings_and_errors(spark, frame):
    out = aggregate(frame, queries={"short": "ab*c", "long": {"query": "ab*c", "window": 30, "summary_size": 2}},
                    window=3, characters=CHARS, timestamp="t", partition_by="k")
    rows = {(r["k"], r["query"]): r for r in out.collect()}
    assert {q for _, q in rows} == {"short", "long"}
    assert all(len(rows[(k, "long")]["elements"]) <= 2 for k in "pq")
    with pytest.raises(InputError, match="either query= or queries="):
        aggregate(frame, "ab", 3, CHARS, "t", queries={"a": "ab"})
    with pytest.raises(InputError, match="unknown setting 'size'"):
        aggregate(frame, queries={"a": {"query": "ab", "size": 3}}, window=3, characters=CHARS, timestamp="t")
    with pytest.raises(InputError, match="query 'a' has no window"):
        aggregate(frame, queries={"a": "ab"}, characters=CHARS, timestamp="t")
    with pytest.raises(suse.QueryError, match="query 'b': "):
        aggregate(frame, queries={"a": "ab", "b": "a(b"}, window=3, characters=CHARS, timestamp="t")


def test_estimated_probabilities_are_each_querys_own(frame):
    common = dict(characters=CHARS, timestamp="t", partition_by="k", value="v", summary_size=2,
                  probabilities="estimate", evaluate={"every": 5})
    together = aggregate(frame, queries={"ab": "ab*", "bc": "bc+"}, window=6, **common)
    for name, regex in [("ab", "ab*"), ("bc", "bc+")]:
        alone = aggregate(frame, regex, 6, **common)
        assert _rows(together.where(f"query = '{name}'"), RESULT[:-2]) == _rows(alone, RESULT[:-2])
    # The row without a timestamp has an `a`: a query set counts it for every query.
    assert {(r["query"], r["dropped_events"]) for r in together.where("k = 'q'").collect()} == {("ab", 1), ("bc", 1)}


def test_a_toml_job_with_two_queries_is_one_aggregate_call(spark, tmp_path, monkeypatch):
    from suse.spark import jobs
    from suse.spark.config import load_config

    calls = []

    def recording(*args, **kwargs):
        calls.append(kwargs.get("queries"))
        return aggregate(*args, **kwargs)

    monkeypatch.setattr(jobs, "aggregate", recording)
    cfg = load_config(pathlib.Path(__file__).parent.parent / "examples" / "stocks.toml")
    cfg.output.path = str(tmp_path / "stocks")
    jobs.run_job(cfg)
    assert calls == [{"Q0": {"query": "A(B|G)*A", "window": "10 days", "aggregate": "count", "policy": "any"},
                      "Q1": {"query": "A*G(A|B)*G*A", "window": "10 days", "aggregate": "count", "policy": "any"}}]
    out = spark.read.parquet(cfg.output.path)
    assert out.columns[:2] == ["query", "ticker"]


@pytest.mark.slow  # a streaming query and one batch job per query: about 60 s (170 s on a busy machine)
def test_streaming_query_set_equals_each_query_in_batch(spark, tmp_path):
    from test_spark_streaming import CHARS as SCHARS, LATENESS, SCHEMA, make_steps, write

    from suse.spark.streaming import aggregate_stream, latest

    queries = {"main": "A(B|C)*C", "pairs": {"query": "AB", "window": 5}, "next": {"query": "BC*", "policy": "next"},
               "adjacent": {"query": "A(B|C)", "policy": "contiguous"}}
    common = dict(window=15, characters=SCHARS, timestamp="t", partition_by=["k"], value="v", summary_size=5)
    steps = make_steps(2)
    src, out, ckpt = (tmp_path / d for d in ("in", "out", "ckpt"))
    src.mkdir()
    stream = aggregate_stream(spark.readStream.schema(SCHEMA).format("json").load(str(src)), lateness=LATENESS,
                              queries=queries, **common)
    handle = (stream.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
              .trigger(processingTime="0 seconds").start())
    for i, step in enumerate(steps):
        write(step, src, i)
        handle.processAllAvailable()
    handle.stop()
    rows = latest(spark.read.parquet(str(out)), ["k", "query"]).collect()
    got = {(r.k, r.query): (r["count"], r["sum"], r.detected_count, r.events, [tuple(e) for e in r.elements])
           for r in rows}
    everything = spark.createDataFrame(pd.concat(steps), SCHEMA)
    want = {}
    for name, spec in queries.items():
        spec = {"query": spec} if isinstance(spec, str) else spec
        kw = {**common, "window": spec.get("window", 15), "policy": spec.get("policy", "any")}
        for r in aggregate(everything, spec["query"], **kw).collect():
            want[(r.k, name)] = (r["count"], r["sum"], r.detected_count, r.events, [tuple(e) for e in r.elements])
    assert got == want
