"""``aggregate_stream(..., where=..., engine="exact")``: conditions between a match's events over
a stream, the exact engine (a pickled ``suse.Exact``) kept per partition in Spark's state.

Every row must equal the brute-force oracle (tests/oracle.py's ``where_aggregate``) over the
events accepted so far, evaluated at the row's time, and the batch ``aggregate`` over the
same events at the same times: through out-of-order arrivals, late events (counted, never
fed), NULL attributes, and a restart from the checkpoint with partial matches pending."""
from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from oracle import where_aggregate  # noqa: E402
from suse.errors import InputError, QueryError, StateError  # noqa: E402
from suse.spark import aggregate, aggregate_stream  # noqa: E402
from suse.spark.events.rows import ATTRIBUTE, RANK, TIE, TS, VALUE  # noqa: E402
from suse.spark.runners.plan import Plan  # noqa: E402
from suse.spark.streaming.aggregate import advance, fingerprint, latest, output_columns, reconcile  # noqa: E402
from suse.spark.streaming.due import advance_due  # noqa: E402
from suse.spec import QuerySpec  # noqa: E402
from test_spark_stream_due import _Value  # noqa: E402  (a value state without Spark)
from test_spark_where import exact_job  # noqa: E402
from test_where_exact import queries, streams  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")


def _null(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _accepted(arrivals: list[list], lateness: int) -> list[list[bool]]:
    """Per micro-batch, which arrivals are on time: an event is late when its timestamp is below
    the partition's watermark as it stood before its micro-batch (largest timestamp seen in
    the earlier ones - lateness), as docs/SPARK.md states."""
    out, watermark = [], None
    for batch in arrivals:
        ok = [watermark is None or e[1] >= watermark for e in batch]
        out.append(ok)
        seen = [e[1] for e, k in zip(batch, ok) if k]
        if seen:
            watermark = max(watermark if watermark is not None else -math.inf, max(seen) - lateness)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(max_size=9), queries(), st.integers(0, 6), st.integers(0, 3), st.data())
def test_micro_batches_equal_the_oracle(events, query, window, lateness, data):
    """The streaming step itself (no Spark): events in the engine's (timestamp, character, tie)
    order arrive shuffled by up to 4 time units over random micro-batches, the state pickled
    between them; each row equals the oracle over the accepted events at the row's time."""
    pattern, where = query
    order = "ABC"
    events = sorted(events, key=lambda e: (e[1], order.index(e[0])))  # the engine's order, tie = position
    ranked = [(*e, i) for i, e in enumerate(events)]
    delays = data.draw(st.lists(st.integers(0, 4), min_size=len(events), max_size=len(events)))
    arrival = [e for _, e in sorted(zip([e[1] + d for e, d in zip(events, delays)], ranked), key=lambda p: p[0])]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(arrival)), max_size=3)))
    batches = [arrival[a:b] for a, b in zip([0, *cuts], [*cuts, len(arrival)]) if b > a]
    plan = Plan(QuerySpec(pattern, window, aggregate="sum", where=where), order=order, engine="exact",
                attributes=("p", "s"))
    state, accepted, late = _Value(), [], 0
    for batch, ok in zip(batches, _accepted(batches, lateness)):
        frame = pd.DataFrame({"k": "p", TS: [e[1] for e in batch], RANK: [order.index(e[0]) for e in batch],
                              TIE: [e[4] for e in batch], VALUE: [e[2] for e in batch],
                              ATTRIBUTE.format(0): [e[3]["p"] for e in batch],  # NULL -> NaN, as Spark gives it
                              ATTRIBUTE.format(1): [e[3]["s"] for e in batch]})
        (row,) = advance(plan, lateness, ("p",), ["k"], iter([frame]), state).to_dict("records")
        accepted += [e for e, k in zip(batch, ok) if k]
        late += ok.count(False)
        fed = sorted(accepted, key=lambda e: e[4])
        want = where_aggregate(pattern, [e[:4] for e in fed], window, where, at=row["evaluated_at"])
        assert (row["count"], row["sum"]) == (str(want["count"]), str(want["sum"])), (pattern, where)
        assert row["evaluated_at"] == max(e[1] for e in accepted)
        assert (row["events"], row["late_events"]) == (len(accepted), late)
        state.value = tuple(state.value)  # what Spark's state store hands back


def test_due_times_equal_the_oracle_without_spark():
    """evaluate={every}: a row per due time once the watermark passes it, over all events up to it."""
    where = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p"}
    plan = Plan(QuerySpec("AB+C", 6, where=where), order="ABC", engine="exact", attributes=("p",))
    rng = np.random.default_rng(5)
    events = sorted({(int(t), "ABC"[int(r)]) for t, r in zip(rng.integers(0, 40, 30), rng.integers(0, 3, 30))})
    rows = [(c, t, 1, {"p": [None, 1, 2, 3.5][int(rng.integers(0, 4))]}) for t, c in events]
    state, due, out = _Value(), _Value(), []
    for part in np.array_split(np.arange(len(rows)), 4):
        frame = pd.DataFrame({"k": "p", TS: [rows[i][1] for i in part], RANK: ["ABC".index(rows[i][0]) for i in part],
                              TIE: part, VALUE: 1, ATTRIBUTE.format(0): [rows[i][3]["p"] for i in part]})
        out.append(advance_due(plan, 3, 10, ("p",), ["k"], iter([frame]), state, due, None, output_columns(plan)))
    got = pd.concat([o for o in out if len(o)])
    assert list(got.evaluated_at) == [0, 10, 20, 30]  # 40 is not passed yet: the watermark is below it
    for r in got.itertuples():
        want = where_aggregate("AB+C", rows, 6, where, at=r.evaluated_at)
        assert (r.count, r.sum) == (str(want["count"]), str(want["sum"]))
        assert r.events == sum(1 for e in rows if e[1] <= r.evaluated_at)
    assert "elements" not in got and "detected_count" not in got


# --- a real stream ------------------------------------------------------------------------------

CHARS = {"A": "kind = 'a'", "B": "kind = 'b'", "C": "kind = 'c'"}
SCHEMA = "k string, t long, kind string, price double, label string, n long, v long"
QUERY, WINDOW, LATENESS = "AB+C", 12, 6
WHERE = {"B": "(LAST(B.price, 1) IS NULL OR B.price > LAST(B.price, 1)) AND (B.label = A.label OR A.label IS NULL)",
         "C": "C.price < B.price OR C.n >= A.n + 1"}


def _rows(n_steps: int = 4) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """Two partitions; an event at t arrives in step (t + delay) // 15, delay < LATENESS, so
    out of order but on time; the last step adds two late events (t = 1 and 2). NULL prices,
    labels and integers; (k, t, kind) unique so the oracle's order is the engine's."""
    rng = np.random.default_rng(27)
    out = []
    for k in "pq":
        kinds = rng.choice(list("abc"), 60, p=[0.3, 0.45, 0.25])
        for t, kind in sorted({(int(t), str(c)) for t, c in zip(rng.integers(3, 15 * n_steps - LATENESS, 60), kinds)}):
            out.append((k, t, kind, [None, 1.0, 2.0, 2.5, 3.0, 4.0, 5.5, 7.0][rng.integers(0, 8)],
                        [None, "x", "x", "y"][rng.integers(0, 4)], [None, 1, 2, 3][rng.integers(0, 4)],
                        int(rng.integers(0, 5))))
    rows = pd.DataFrame(out, columns=["k", "t", "kind", "price", "label", "n", "v"]).astype({"n": "Int64"})
    step = (rows.t + rng.integers(0, LATENESS, len(rows))) // 15
    steps = [rows[step == i].sample(frac=1, random_state=i) for i in range(n_steps)]
    late = pd.DataFrame([("p", 1, "a", 1.0, "x", 1, 1), ("q", 2, "c", 0.5, None, None, 2)], columns=rows.columns)
    steps[-1] = pd.concat([steps[-1], late.astype(rows.dtypes)])
    return rows, steps


def _oracle(rows: pd.DataFrame, k: str, at: int) -> tuple[str, str]:
    g = rows[rows.k == k].sort_values(["t", "kind"])
    events = [(kind.upper(), t, v, {"price": _null(p), "label": _null(label), "n": None if pd.isna(n) else int(n)})
              for t, kind, v, p, label, n in zip(g.t, g.kind, g.v, g.price, g.label, g.n)]
    found = where_aggregate(QUERY, events, WINDOW, WHERE, at=at)
    return str(found["count"]), str(found["sum"])


def _start(spark, src, out, ckpt):
    stream = spark.readStream.schema(SCHEMA).json(str(src))
    result = aggregate_stream(stream, QUERY, WINDOW, CHARS, "t", partition_by="k", value="v", where=WHERE,
                              engine="exact", lateness=LATENESS)
    return (result.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
            .trigger(processingTime="0 seconds").start())


def _write(step: pd.DataFrame, directory, i) -> None:
    step.astype(object).where(step.notna(), None).to_json(directory / f"part-{i}.json", orient="records", lines=True)


@pytest.mark.slow  # a stream of four micro-batches and a restart: about a minute here
def test_a_stream_restarted_mid_match_equals_the_oracle_and_batch(spark, tmp_path):
    rows, steps = _rows()
    src, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src.mkdir()
    query = _start(spark, src, out, ckpt)
    try:
        for i, step in enumerate(steps):
            _write(step, src, i)
            query.processAllAvailable()
            if i == 1:  # stop with events pending and partial matches open, resume from the checkpoint
                emitted = spark.read.parquet(str(out)).collect()
                assert any(r.pending_events for r in emitted)
                query.stop()
                query = _start(spark, src, out, ckpt)
    finally:
        query.stop()
    emitted = spark.read.parquet(str(out)).toPandas()
    assert "elements" not in emitted and "detected_count" not in emitted
    assert len(emitted) == 2 * len(steps)  # a row per partition per micro-batch
    on_time = pd.concat(steps)
    on_time = on_time[on_time.t >= 3]  # every event but the two late ones
    for r in emitted.itertuples():
        # the micro-batch of the row: the step after which the partition had this many arrivals
        arrivals = np.cumsum([(s.k == r.k).sum() for s in steps])
        i = int(np.flatnonzero(arrivals == r.events + r.late_events)[0])
        seen = pd.concat(steps[: i + 1])
        seen = seen[seen.t >= 3]
        assert r.evaluated_at == seen[seen.k == r.k].t.max()
        assert (r.count, r.sum) == _oracle(seen, r.k, r.evaluated_at)
    final = latest(spark.read.parquet(str(out)), ["k"]).toPandas().set_index("k")
    assert (final.late_events == 1).all()
    batch = aggregate(spark.createDataFrame(on_time.astype(object).where(on_time.notna(), None), SCHEMA), QUERY,
                      WINDOW, CHARS, "t", partition_by="k", value="v", where=WHERE, engine="exact").toPandas()
    for b in batch.itertuples():
        f = final.loc[b.k]
        assert (f["count"], f["sum"], f.evaluated_at, f.events) == (b.count, b.sum, b.evaluated_at, b.events)
    assert final["count"].astype(int).sum() > 0  # the conditions keep some matches and drop others


def test_what_streaming_cannot_count_with_conditions_is_refused_by_name(spark, tmp_path):
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    # (summaries of every strategy count them: tests/test_spark_stream_where_summary.py)
    with pytest.raises(QueryError, match=r"query 'r': where is not supported in a query set"):
        aggregate_stream(stream, None, WINDOW, CHARS, "t", queries={"r": {"query": QUERY, "where": WHERE}, "s": "AC"})
    with pytest.raises(InputError, match=r"engine='exact' runs a single query"):
        aggregate_stream(stream, None, WINDOW, CHARS, "t", queries={"s": "AC"}, engine="exact")
    with pytest.raises(InputError, match=r"no column 'volume', which the condition of B reads"):
        aggregate_stream(stream, QUERY, WINDOW, CHARS, "t", engine="exact", where={"B": "B.volume > 1"})


def test_a_counting_statement_over_a_streaming_table_is_refused_by_name(spark, tmp_path):
    import suse.spark
    from suse.errors import SqlError

    spark.readStream.schema(SCHEMA).json(str(tmp_path)).createOrReplaceTempView("where_stream")
    statement = """SELECT * FROM where_stream MATCH_RECOGNIZE (
      PARTITION BY k ORDER BY t MEASURES COUNT(*) AS n PATTERN (A B+ C)
      DEFINE A AS kind = 'a', B AS kind = 'b' AND B.price > LAST(B.price, 1), C AS kind = 'c'
      WITHIN 12 SUMMARY EXACT)"""
    with pytest.raises(SqlError, match=r"a counting statement reads a batch table, but where_stream is streaming: "
                                       r"count a stream with suse.spark.aggregate_stream"):
        suse.spark.sql(spark, statement)


def test_replay_refuses_to_migrate_an_exact_engine():
    summary = Plan(QuerySpec("AB+C", 8), order="ABC")
    exact = Plan(QuerySpec("AB+C", 8, where={"C": "C.p > 1"}), order="ABC", engine="exact", attributes=("p",))
    state = _Value()
    state.update((summary.new_summary().to_bytes(), b"", None, None, 0, 0, 0, 0))
    with pytest.raises(StateError, match=r"engine 'summary' \(now 'exact'\).*the exact engine needs every event"):
        reconcile(exact, fingerprint(exact, 0, CHARS), fingerprint(summary, 0, CHARS), "replay", ("p",), state)


# --- the batch runner's attribute columns, from Arrow without a Python call per value -----------

@pytest.mark.parametrize("array", [
    pa.array([1, None, -3, 2**62, 0, 7], pa.int64()),
    pa.array([1.5, None, float("nan"), 0.1, 2.0, 1.5], pa.float64()),
    pa.array([0.1, None, 3.0, 0.1, -2.5, 1e-7], pa.float32()),
    pa.array([Decimal("1.10"), None, Decimal("3"), Decimal("-0.25"), Decimal("1.1"), Decimal("7")], pa.decimal128(5, 2)),
    pa.array(["x", None, "y", "", "x", "z"]),
    pa.array([True, None, False, True, True, False]),
], ids=["long", "double", "float", "decimal", "string", "boolean"])
def test_arrow_columns_read_as_the_conditions_engine_reads_lists(array):
    import suse
    from suse.api.where import WhereCounter
    from suse.spark.runners.plan import condition_columns

    condition = "C.x IS NULL OR C.x = C.x" if pa.types.is_boolean(array.type) or pa.types.is_string(array.type) else (
        "C.x > A.x OR C.x IS NULL")
    counter = WhereCounter(suse.Query("A B C", 5, where={"C": condition, "B": "B.timestamp >= 0"}))
    chars, ts = b"ACBCAC", np.arange(6, dtype=np.int64)
    want = counter.attribute_columns(chars, ts, None, {"x": array.to_pylist()})
    got = condition_columns(counter, chars, ts, {"x": array})
    assert got == want and [[type(v) for v in c] for c in got] == [[type(v) for v in c] for c in want]


def test_an_infinite_attribute_is_named_with_its_event():
    import suse
    from suse.api.where import WhereCounter
    from suse.spark.runners.plan import condition_columns

    counter = WhereCounter(suse.Query("A C", 5, where={"C": "C.x > A.x"}))
    with pytest.raises(InputError, match=r"attribute 'x' of event 2: an infinite value"):
        condition_columns(counter, b"ACA", np.arange(3, dtype=np.int64), {"x": pa.array([1.0, 2.0, float("inf")])})


@pytest.mark.slow  # a streaming job of its own
def test_a_streaming_job_file_counts_conditions_at_due_times(spark, tmp_path):
    """mode = "streaming" with [query] where and evaluate.engine = "exact", rows at due times:
    each equals the batch run at the same time."""
    import tomllib

    from suse.spark.jobs.load import parse_config
    from suse.spark.jobs.run import run_job

    rows, steps = _rows()
    src = tmp_path / "in"
    src.mkdir()
    everything = pd.concat(steps)
    _write(everything, src, 0)
    text = exact_job(src, tmp_path / "out", SCHEMA, QUERY, WINDOW, WHERE, "{ every = 10 }", head='mode = "streaming"',
                     tail=f'[streaming]\ncheckpoint = "{tmp_path / "ckpt"}"\nlateness = {LATENESS}\n')
    run_job(parse_config(tomllib.loads(text)))
    got = spark.read.json(str(tmp_path / "out")).toPandas()
    # one file, one micro-batch: no event is late; the watermark (newest 53 - 6) has passed 40, not 50
    assert sorted(got.evaluated_at) == [10, 10, 20, 20, 30, 30, 40, 40]
    batch = aggregate(spark.createDataFrame(everything.astype(object).where(everything.notna(), None), SCHEMA), QUERY,
                      WINDOW, CHARS, "t", partition_by="k", value="v", where=WHERE, engine="exact",
                      evaluate=[10, 20, 30, 40]).toPandas()
    want = {(r.k, r.evaluated_at): (r.count, r.sum, r.events) for r in batch.itertuples()}
    assert {(r.k, r.evaluated_at): (r.count, r.sum, r.events) for r in got.itertuples()} == want
