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
       evaluate=st.sampled_from(["end", {"every": 7}, [5, 20, 39]]),
       extras=st.lists(st.sampled_from([{}, {}, {"aggregate": "max"}, {"aggregate": "min"}, {"max_missing": 1},
                                        {"aggregate": "sum", "of": "a"}]), min_size=3, max_size=3))
def test_one_job_equals_one_job_per_query(frame, spec, size, evaluate, extras):
    common = dict(characters=CHARS, timestamp="t", partition_by="k", value="v", summary_size=size, exact=True,
                  evaluate=evaluate)
    queries = {}
    for (name, (rx, w, p)), extra in zip(spec.items(), extras):
        try:  # MIN/MAX, of= and max_missing= where the query takes them
            suse.Query(rx, w, policy=p, **extra)
        except (suse.QueryError, suse.InputError):
            extra = {}
        queries[name] = {"query": rx, "window": w, "policy": p, **extra}
    together = aggregate(frame, queries=queries, **common)
    assert together.columns[:2] == ["k", "query"]
    extra_columns = [c for c in EXTRA if c in together.columns]
    got = {name: [] for name in spec}
    for r in together.collect():
        got[r["query"]].append(tuple(str(r[c]) for c in RESULT + extra_columns))
    for name, q in queries.items():
        regex, own = _alone(q)
        alone = aggregate(frame, regex, **own, **common)
        want = [tuple(str(r[c]) if c in alone.columns else "None" for c in RESULT + extra_columns)
                for r in alone.collect()]
        assert sorted(got[name]) == sorted(want), name


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
    from suse.spark.jobs import run as jobs
    from suse.spark.jobs.load import load_config

    calls = []
    run_once = jobs.aggregate_job

    def recording(df, job):
        calls.append(job)
        return run_once(df, job)

    monkeypatch.setattr(jobs, "aggregate_job", recording)
    cfg = load_config(pathlib.Path(__file__).parent.parent / "examples" / "stocks.toml")
    cfg.output.path = str(tmp_path / "stocks")
    jobs.run_job(cfg)
    (job,) = calls  # one job for the set
    assert job.query_set
    assert [(q.label, q.regex, q.window, q.aggregate, q.policy, q.of, q.max_missing) for q in job.queries] == [
        ("Q0", "A(B|G)*A", "10 days", "count", "any", None, 0), ("Q1", "A*G(A|B)*G*A", "10 days", "count", "any", None, 0)]
    out = spark.read.parquet(cfg.output.path)
    assert out.columns[:2] == ["query", "ticker"]


EXTENDED = {"plain": "ab*c", "top": {"query": "ab*c", "aggregate": "max"}, "low": {"query": "a(b|c)", "aggregate": "min"},
            "cs": {"query": "ab*c", "aggregate": "sum", "of": "c"}, "near": {"query": "abc", "max_missing": 1}}
EXTRA = ["min", "max", "count_by_missing"]


def _alone(spec):
    spec = {"query": spec} if isinstance(spec, str) else dict(spec)
    return spec.pop("query"), spec


def test_min_max_of_and_approximate_queries_in_one_job_equal_each_alone(frame):
    common = dict(characters=CHARS, timestamp="t", partition_by="k", value="v", summary_size=3, exact=True,
                  evaluate={"every": 7}, window=6)
    together = aggregate(frame, queries=EXTENDED, **common)
    assert together.columns[-3:] == EXTRA
    for name, spec in EXTENDED.items():
        regex, own = _alone(spec)
        alone = aggregate(frame, regex, **{**common, **own})
        extra = [c for c in EXTRA if c in alone.columns]
        got = _rows(together.where(f"query = '{name}'"), RESULT + extra)
        assert got == _rows(alone, RESULT + extra), name
        absent = [c for c in EXTRA if c not in alone.columns]  # NULL for a query without them
        assert all(r[c] is None for r in together.where(f"query = '{name}'").collect() for c in absent), name


@pytest.mark.slow  # a streaming query and one batch job per query: about 60 s (170 s on a busy machine)
def test_streaming_query_set_equals_each_query_in_batch(spark, tmp_path):
    from suse.spark.streaming.aggregate import aggregate_stream, latest
    from test_spark_streaming import CHARS as SCHARS
    from test_spark_streaming import LATENESS, SCHEMA, make_steps, write

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


STREAM_JOB = """
name = "streaming set"
mode = "streaming"
[input]
path = "{src}"
format = "json"
schema = "k string, t long, x long, v long"
timestamp = "t"
partition_by = "k"
value = "v"
[characters]
A = "x < 3"
B = "x >= 3 AND x < 6"
C = "x >= 6"
[[query]]
name = "main"
regex = "A(B|C)*C"
window = 15
[[query]]
name = "top"
regex = "AB*"
window = 5
aggregate = "max"
[[query]]
name = "near"
regex = "ABC"
window = 15
max_missing = 1
of = "C"
aggregate = "sum"
[summary]
size = 5
[output]
path = "{out}"
[streaming]
checkpoint = "{ckpt}"
lateness = 10
"""
STREAM_COLUMNS = ["count", "sum", "detected_count", "events", "elements", "min", "max", "count_by_missing"]


def test_a_streaming_job_with_several_queries_restarts_and_equals_batch(spark, tmp_path):
    """One streaming query for the job's three queries: stopped and restarted from its checkpoint it
    ends where an uninterrupted run ends, and there each query's row equals that query in batch."""
    import tomllib

    from suse.spark.jobs.load import parse_config
    from suse.spark.jobs.run import run_job
    from suse.spark.streaming.aggregate import latest
    from test_spark_streaming import write

    steps = make_stream_steps()
    outcome = {}
    for run in ("restarted", "uninterrupted"):
        src, out, ckpt = (tmp_path / run / d for d in ("in", "out", "ckpt"))
        src.mkdir(parents=True)
        cfg = parse_config(tomllib.loads(STREAM_JOB.format(src=src, out=out, ckpt=ckpt)))
        if run == "restarted":
            write(steps[0], src, 0)
            assert run_job(cfg).batches == 1
        for i, step in enumerate(steps[1:] if run == "restarted" else steps):
            write(step, src, i + 1 if run == "restarted" else i)
        report = run_job(cfg)
        assert report.batches == 1
        rows = latest(spark.read.parquet(str(out)), ["k", "query"]).collect()
        outcome[run] = {(r.k, r.query): tuple(str(r[c]) for c in STREAM_COLUMNS) for r in rows}
    assert outcome["restarted"] == outcome["uninterrupted"]
    assert {q for _, q in outcome["restarted"]} == {"main", "top", "near"}
    everything = spark.createDataFrame(pd.concat(steps), "k string, t long, x long, v long")
    chars = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"}
    for name, regex, window, own in [("main", "A(B|C)*C", 15, {}), ("top", "AB*", 5, {"aggregate": "max"}),
                                     ("near", "ABC", 15, {"max_missing": 1, "of": "C", "aggregate": "sum"})]:
        alone = aggregate(everything, regex, window, chars, "t", ["k"], "v", summary_size=5, **own)
        for r in alone.collect():
            want = tuple(str(r[c]) if c in alone.columns else "None" for c in STREAM_COLUMNS)
            assert outcome["restarted"][(r.k, name)] == want, name


def make_stream_steps() -> list[pd.DataFrame]:
    from test_spark_streaming import make_steps

    return make_steps(3)
