"""``aggregate_stream`` with a bounded summary of a query with conditions (``where=``) or with a
negation at the end of the pattern (``A B+ !C``): a ``WhereSummary`` per partition, kept in
Spark's state as a tagged pickle (with where, beside the pending events' attribute values).

Every row must be what the library's ``suse.Summary`` (same size, strategy and seed) gives over
the partition's events accepted so far, in the batch order, evaluated at the row's time:
through out-of-order arrivals, late events, micro-batch boundaries and due times; the last
rows of a real stream equal the batch ``aggregate`` over the same events; a summary larger
than the stream counts as the brute-force oracle. ``random``'s generator travels in the
pickle, so it draws as one uninterrupted run does."""
from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from pyspark.sql import DataFrame  # noqa: E402

import suse  # noqa: E402
from oracle import absence_aggregate, where_aggregate  # noqa: E402
from suse.errors import QueryError, StateError  # noqa: E402
from suse.spark import aggregate, aggregate_stream, latest  # noqa: E402
from suse.spark.events.rows import ATTRIBUTE, RANK, TIE, TS, VALUE  # noqa: E402
from suse.spark.runners.plan import Plan  # noqa: E402
from suse.spark.streaming import engines  # noqa: E402
from suse.spark.streaming.aggregate import advance, fingerprint, output_columns, reconcile  # noqa: E402
from suse.spark.streaming.due import advance_due  # noqa: E402
from suse.spec import QuerySpec, SummarySpec  # noqa: E402
from test_spark_stream_due import _Value  # noqa: E402  (a value state without Spark)
from test_spark_stream_where import CHARS, LATENESS, SCHEMA, _accepted, _rows, _write  # noqa: E402
from test_spark_where import exact_job  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")

ORDER = "ABC"
RISING = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p"}
#: (pattern, where, the attribute columns its conditions read)
KINDS = {"where": ("AB+C", RISING, ("p",)), "absence": ("A B+ !C", None, ())}
STRATEGIES = ("fifo", "random", "present", "suse", "adaptive")
#: the strategies of the real streams (slow): the default, and the two whose state changes most
STREAM_STRATEGIES = ("suse", "fifo", "random")


def _plan(kind: str, window: int, size: int, strategy: str, seed: int = 7) -> Plan:
    pattern, where, attributes = KINDS[kind]
    return Plan(QuerySpec(pattern, window, aggregate="sum", where=where), SummarySpec(size=size, strategy=strategy,
                                                                                      seed=seed),
                order=ORDER, attributes=attributes)


def _frame(plan: Plan, batch: list) -> pd.DataFrame:
    """A micro-batch of (char, ts, value, attributes, tie) as the step's input columns."""
    columns = {"k": "p", TS: [e[1] for e in batch], RANK: [ORDER.index(e[0]) for e in batch],
               TIE: [e[4] for e in batch], VALUE: [e[2] for e in batch]}
    for i, name in enumerate(plan.attributes):
        columns[ATTRIBUTE.format(i)] = [e[3][name] for e in batch]  # NULL -> NaN, as Spark gives it
    return pd.DataFrame(columns)


def _library(plan: Plan, accepted: list, times: list[int]) -> list[suse.Evaluation]:
    """The library's summary over the accepted events in the engine's order (tie = position)."""
    query = plan.query()
    summary = suse.Summary(query, plan.summary.size, plan.summary.strategy, seed=plan.summary.seed)
    fed = [e[:4] if query.where is not None else e[:3] for e in sorted(accepted, key=lambda e: e[4])]
    return summary.extend(fed, evaluate_at=times, elements=True)


def _as_row(ev: suse.Evaluation) -> tuple:
    return (str(ev.count), str(ev.sum), str(ev.detected_count), [e[:3] for e in ev.elements])


def _got(row) -> tuple:
    return (row["count"], row["sum"], row["detected_count"], [(e["char"], e["timestamp"], e["value"])
                                                              for e in row["elements"]])


def _oracle(plan: Plan, accepted: list, at: int) -> tuple[str, str]:
    fed = [e[:4] for e in sorted(accepted, key=lambda e: e[4])]
    pattern, where = plan.spec.regex, plan.spec.where
    found = (where_aggregate(pattern, fed, plan.window, dict(where), at=at) if where is not None
             else absence_aggregate(pattern, [e[:3] for e in fed], plan.window, at=at))
    return str(found["count"]), str(found["sum"])


events_strategy = st.lists(st.tuples(st.sampled_from(ORDER), st.integers(0, 30), st.integers(0, 3),
                                     st.sampled_from([None, 1.0, 2.0, 2.0, 3.5])), max_size=14)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(KINDS)), st.sampled_from(STRATEGIES), st.sampled_from([3, 100]), events_strategy,
       st.integers(1, 8), st.integers(0, 3), st.integers(2, 6), st.data())
def test_micro_batches_and_due_times_equal_the_library_summary(kind, strategy, size, raw, window, lateness, period,
                                                               data):
    """The streaming steps themselves (no Spark): events in the engine's (timestamp, character,
    tie) order arrive shuffled by up to 4 time units over random micro-batches, the state held
    as Spark hands it back between them. Each per-micro-batch row, each due-time row and an
    idle partition's last row equal the library's summary over the accepted events at the
    row's time; a summary larger than the stream counts as the oracle."""
    plan = _plan(kind, window, size, strategy)
    events = sorted({(c, t): (c, t, v, {"p": p}) for c, t, v, p in raw}.values(), key=lambda e: (e[1], ORDER.index(e[0])))
    ranked = [(*e, i) for i, e in enumerate(events)]
    delays = data.draw(st.lists(st.integers(0, 4), min_size=len(events), max_size=len(events)))
    arrival = [e for _, e in sorted(zip([e[1] + d for e, d in zip(events, delays)], ranked), key=lambda p: p[0])]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(arrival)), max_size=3)))
    batches = [arrival[a:b] for a, b in zip([0, *cuts], [*cuts, len(arrival)]) if b > a]
    state, due_state, due, accepted = _Value(), _Value(), _Value(), []
    for batch, ok in zip(batches, _accepted(batches, lateness)):
        accepted += [e for e, k in zip(batch, ok) if k]
        (row,) = advance(plan, lateness, ("p",), ["k"], iter([_frame(plan, batch)]), state).to_dict("records")
        assert row["evaluated_at"] == max(e[1] for e in accepted)
        (want,) = _library(plan, accepted, [row["evaluated_at"]])
        assert _got(row) == _as_row(want), (kind, strategy)
        if size > len(accepted):
            assert (row["count"], row["sum"]) == _oracle(plan, accepted, row["evaluated_at"])
        rows = advance_due(plan, lateness, period, ("p",), ["k"], iter([_frame(plan, batch)]), due_state, due, None,
                           output_columns(plan))
        for r in rows.to_dict("records"):
            assert r["evaluated_at"] < due_state.value[2]  # the watermark has passed it
            (want,) = _library(plan, [e for e in accepted if e[1] <= r["evaluated_at"]], [r["evaluated_at"]])
            assert _got(r) == _as_row(want), (kind, strategy, r["evaluated_at"])
        state.value, due_state.value = tuple(state.value), tuple(due_state.value)
    if accepted:  # an idle partition's last row (idle_timeout): every buffered event fed
        (last,) = advance(plan, lateness, ("p",), ["k"], iter(()), state, flush=True).to_dict("records")
        (want,) = _library(plan, accepted, [max(e[1] for e in accepted)])
        assert _got(last) == _as_row(want) and last["pending_events"] == 0


def _stepped_state(plan: Plan) -> tuple:
    """A partition's state after two micro-batches, with events pending."""
    state = _Value()
    events = [("A", 1, 1, {"p": 1.0}, 0), ("B", 2, 1, {"p": 2.0}, 1), ("B", 3, 1, {"p": None}, 2),
              ("C", 4, 1, {"p": 0.5}, 3), ("A", 5, 1, {"p": 3.0}, 4)]
    for batch in (events[:3], events[3:]):
        advance(plan, 2, ("p",), ["k"], iter([_frame(plan, batch)]), state)
    return tuple(state.value)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_edited_or_foreign_state_is_a_state_error(kind):
    plan = _plan(kind, 6, 3, "random")
    blob, pending, *_ = _stepped_state(plan)
    n = len(np.frombuffer(pending, dtype=[("ts", "<i8"), ("rank", "<i4"), ("tie", "<i8"), ("value", "<i8")]))
    assert n and engines.load(plan, blob, n)[0].result() is not None  # the state itself reads back
    edited = bytearray(blob)
    edited[len(edited) // 2] ^= 0xFF
    saved = pickle.loads(blob)
    foreign = {
        "edited": bytes(edited),
        "cut short": blob[: len(blob) // 2],
        "a plain summary's": Plan(QuerySpec("AB", 6), order=ORDER).new_summary().to_bytes(),
        "an exact engine's": engines.dump(Plan(plan.spec, order=ORDER, engine="exact", attributes=plan.attributes),
                                          suse.Exact(plan.query()), engines.no_attributes(plan, n)),
        "another tag": pickle.dumps({**saved, "kind": "suse exact stream state v1"}),
        "attributes of another shape": pickle.dumps({**saved, "attributes": np.empty((n + 1, 1), dtype=object)}),
        "inconsistent elements": pickle.dumps({**saved, "engine": _tampered(saved["engine"])}),
    }
    for what, bad in foreign.items():
        with pytest.raises(StateError):
            engines.load(plan, bad, n)
            pytest.fail(what)


def _tampered(summary) -> object:
    """A pickled summary whose retained elements go back in time (an edited checkpoint)."""
    function, (query, options, state) = summary.__reduce__()

    class Edited:
        def __reduce__(self):
            return function, (query, options, {**state, "retained": state["retained"][::-1]})

    return Edited()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_replay_refuses_to_migrate_a_summary_with_where_or_absence(kind):
    old, new = _plan(kind, 6, 3, "fifo"), _plan(kind, 6, 4, "fifo")
    state = _Value()
    state.update(_stepped_state(old))
    with pytest.raises(StateError, match=r"summary_size 3 \(now 4\).*not yet those of a summary with where or a "
                                         r"negation at the end of the pattern"):
        reconcile(new, fingerprint(new, 0, CHARS), fingerprint(old, 0, CHARS), "replay", ("p",), state)


def test_what_the_summaries_on_a_stream_cannot_count_is_refused_by_name(spark, tmp_path):
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(QueryError, match=r"query 'w': where is not supported in a query set yet"):
        aggregate_stream(stream, None, 12, CHARS, "t", queries={"w": "AB+C", "s": "AC"}, where=STREAM_WHERE)
    with pytest.raises(QueryError, match=r"query 'r': a negation at the end of the pattern is not supported in a "
                                         r"query set yet"):
        aggregate_stream(stream, None, 12, CHARS, "t", queries={"r": "A B+ !C", "s": "AC"}, strategy="fifo")


# --- a real stream ------------------------------------------------------------------------------

STREAM_WHERE = {"B": "LAST(B.price, 1) IS NULL OR B.price > LAST(B.price, 1)", "C": "C.price < B.price"}
STREAM_KINDS = {"where": ("AB+C", STREAM_WHERE), "absence": ("A B+ !C", None)}
WINDOW, SIZE, SEED = 12, 6, 11


def _stream_rows(spark, tmp_path, kind: str, strategy: str, steps: list[pd.DataFrame]) -> DataFrame:
    """The rows of ``aggregate_stream`` over ``steps`` as micro-batches."""
    pattern, where = STREAM_KINDS[kind]
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(src))
    result = aggregate_stream(stream, pattern, WINDOW, CHARS, "t", partition_by="k", value="v", where=where,
                              lateness=LATENESS, summary_size=SIZE, strategy=strategy, seed=SEED)
    query = (result.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(processingTime="0 seconds").start())
    try:
        for i, step in enumerate(steps):
            _write(step, src, i)
            query.processAllAvailable()
    finally:
        query.stop()
    return spark.read.parquet(str(out))


def _partition_library(rows: pd.DataFrame, kind: str, strategy: str, k: str, at: int) -> tuple:
    pattern, where = STREAM_KINDS[kind]
    g = rows[rows.k == k].sort_values(["t", "kind"])
    events = [(kind_.upper(), int(t), int(v), {"price": None if pd.isna(p) else p})
              for t, kind_, v, p in zip(g.t, g.kind, g.v, g.price)]
    summary = suse.Summary(suse.Query(pattern, WINDOW, where=where), SIZE, strategy, seed=SEED)
    (ev,) = summary.extend(events if where else [e[:3] for e in events], evaluate_at=[at], elements=True)
    return _as_row(ev)


@pytest.mark.slow  # a stream of three micro-batches: 40-70 s here
@pytest.mark.parametrize("strategy", STREAM_STRATEGIES)
@pytest.mark.parametrize("kind", sorted(STREAM_KINDS))
def test_a_stream_of_summaries_equals_the_library_and_batch(spark, tmp_path, kind, strategy):
    """Every row is the library's summary over the events that had arrived on time, and each
    partition's last row is the batch run's."""
    rows, steps = _rows(3)
    if kind == "absence":  # a sparser stream, so that windows close among the retained elements
        steps = [s[(s.t < 3) | (s.t % 3 == 0)] for s in steps]
    on_time = pd.concat(steps)
    on_time = on_time[on_time.t >= 3]  # the late events are the two at t = 1 and 2
    pattern, where = STREAM_KINDS[kind]
    out = _stream_rows(spark, tmp_path, kind, strategy, steps)
    emitted = out.toPandas()
    assert len(emitted) == 2 * len(steps)  # a row per partition per micro-batch
    for r in emitted.to_dict("records"):
        arrivals = np.cumsum([(s.k == r["k"]).sum() for s in steps])
        i = int(np.flatnonzero(arrivals == r["events"] + r["late_events"])[0])
        seen = pd.concat(steps[: i + 1])
        seen = seen[seen.t >= 3]
        assert r["evaluated_at"] == seen[seen.k == r["k"]].t.max()
        assert _got(r) == _partition_library(seen, kind, strategy, r["k"], r["evaluated_at"]), i
    batch = aggregate(spark.createDataFrame(on_time.astype(object).where(on_time.notna(), None), SCHEMA),
                      pattern, WINDOW, CHARS, "t", partition_by="k", value="v", where=where, summary_size=SIZE,
                      strategy=strategy, seed=SEED).toPandas()
    final = latest(out, ["k"]).toPandas().set_index("k")
    for b in batch.to_dict("records"):
        f = final.loc[b["k"]]
        assert (f["evaluated_at"], f["events"], _got(f)) == (b["evaluated_at"], b["events"], _got(b))
    assert (final.events > SIZE).all()  # the summaries evict
    assert (emitted.late_events > 0).any()


@pytest.mark.slow  # a streaming job of its own
def test_a_streaming_job_file_counts_conditions_with_a_summary(spark, tmp_path):
    """mode = "streaming" with [query] where and [summary] strategy: the rows at due times equal
    the batch run's at the same times."""
    import tomllib

    from suse.spark.jobs.load import parse_config
    from suse.spark.jobs.run import run_job

    rows, steps = _rows(3)
    src = tmp_path / "in"
    src.mkdir()
    everything = pd.concat(steps)
    _write(everything, src, 0)
    text = exact_job(src, tmp_path / "out", SCHEMA, "AB+C", WINDOW, STREAM_WHERE, "{ every = 10 }",
                     head='mode = "streaming"', summary=f'size = {SIZE}\nstrategy = "present"\nseed = {SEED}',
                     tail=f'[streaming]\ncheckpoint = "{tmp_path / "ckpt"}"\nlateness = {LATENESS}\n')
    run_job(parse_config(tomllib.loads(text)))
    got = spark.read.json(str(tmp_path / "out")).toPandas()
    times = sorted(set(got.evaluated_at))
    assert len(times) >= 2
    batch = aggregate(spark.createDataFrame(everything.astype(object).where(everything.notna(), None), SCHEMA), "AB+C",
                      WINDOW, CHARS, "t", partition_by="k", value="v", where=STREAM_WHERE, summary_size=SIZE,
                      strategy="present", seed=SEED, evaluate=[int(t) for t in times]).toPandas()
    want = {(r.k, r.evaluated_at): (r.count, r.sum, r.detected_count, r.events) for r in batch.itertuples()}
    assert {(r.k, r.evaluated_at): (r.count, r.sum, r.detected_count, r.events) for r in got.itertuples()} == want
