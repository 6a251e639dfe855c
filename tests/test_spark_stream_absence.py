"""``aggregate_stream(..., engine="exact")`` with a negation at the end of the pattern
(``A B+ !C``, issue 27 "Absence at the end"): every row is the exact engine's evaluation at the
row's time over the events accepted so far, so it equals the brute-force oracle
(``oracle.absence_aggregate``) and ``suse.exact(..., evaluate_at=[T])`` there: a match counts
once T >= f + W, refuted by a negated event in (l, f + W]. Per-micro-batch rows (T the largest
timestamp seen) and due-time rows (T a due time the watermark has passed) alike; strategies that
know nothing of the absence refuse the query by name (summaries of strategy fifo, random or
present count it: tests/test_spark_stream_where_summary.py)."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

import suse  # noqa: E402
from negation_strategies import absence_queries, streams  # noqa: E402
from oracle import absence_aggregate  # noqa: E402
from suse.errors import QueryError  # noqa: E402
from suse.spark import aggregate, aggregate_stream  # noqa: E402
from suse.spark.events.rows import RANK, TIE, TS, VALUE  # noqa: E402
from suse.spark.runners.plan import Plan  # noqa: E402
from suse.spark.streaming.aggregate import advance, output_columns  # noqa: E402
from suse.spark.streaming.due import advance_due, first_due  # noqa: E402
from suse.spec import QuerySpec  # noqa: E402
from test_spark_stream_due import _Value, wait_for_rows  # noqa: E402  (a value state without Spark)
from test_spark_stream_where import _accepted  # noqa: E402  (which arrivals are on time)

ORDER = "ABCDE"  # every character a random query names or negates, in rank order


def _frame(batch: list) -> pd.DataFrame:
    """A micro-batch of (char, ts, value, tie) as the step's input columns."""
    return pd.DataFrame({"k": "p", TS: [e[1] for e in batch], RANK: [ORDER.index(e[0]) for e in batch],
                         TIE: [e[3] for e in batch], VALUE: [e[2] for e in batch]})


def _want(query: str, window: int, accepted: list, at: int) -> tuple[str, str]:
    """The oracle over the accepted events in the engine's order (tie = position), at ``at``; the
    library's exact engine must agree."""
    events = [e[:3] for e in sorted(accepted, key=lambda e: e[3])]
    oracle = absence_aggregate(query, events, window, at=at)
    (library,) = suse.exact(suse.Query(query, window), events, evaluate_at=[at]).evaluations
    assert (library.count, library.sum) == (oracle["count"], oracle["sum"])
    return str(oracle["count"]), str(oracle["sum"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(absence_queries, streams(max_size=12, chars="abcde"), st.integers(1, 8), st.integers(0, 3), st.integers(1, 4),
       st.data())
def test_micro_batches_and_due_times_equal_the_oracle(query, stream, window, lateness, period, data):
    """The streaming steps themselves (no Spark): events in the engine's (timestamp, character,
    tie) order arrive shuffled by up to 4 time units over random micro-batches, the state held
    as Spark hands it back between them. Each per-micro-batch row equals the oracle over the
    accepted events at the row's time; each due-time row (evaluate={"every": period}) too, and
    the due times come one period apart, every one below the watermark; an idle partition's
    last row too."""
    query = query.upper()
    events = sorted(((c.upper(), t, max(v, 0)) for c, t, v in stream), key=lambda e: (e[1], ORDER.index(e[0])))
    ranked = [(*e, i) for i, e in enumerate(events)]
    delays = data.draw(st.lists(st.integers(0, 4), min_size=len(events), max_size=len(events)))
    arrival = [e for _, e in sorted(zip([e[1] + d for e, d in zip(events, delays)], ranked), key=lambda p: p[0])]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(arrival)), max_size=3)))
    batches = [arrival[a:b] for a, b in zip([0, *cuts], [*cuts, len(arrival)]) if b > a]
    plan = Plan(QuerySpec(query, window, aggregate="sum"), order=ORDER, engine="exact")
    state, due_state, due, accepted, due_times = _Value(), _Value(), _Value(), [], []
    for batch, ok in zip(batches, _accepted(batches, lateness)):
        accepted += [e for e, k in zip(batch, ok) if k]
        (row,) = advance(plan, lateness, ("p",), ["k"], iter([_frame(batch)]), state).to_dict("records")
        assert row["evaluated_at"] == max(e[1] for e in accepted)
        assert (row["count"], row["sum"]) == _want(query, window, accepted, row["evaluated_at"]), query
        rows = advance_due(plan, lateness, period, ("p",), ["k"], iter([_frame(batch)]), due_state, due, None,
                           output_columns(plan))
        for r in rows.itertuples():
            assert r.evaluated_at < due_state.value[2]  # the watermark has passed it: no event <= it can come
            assert (r.count, r.sum) == _want(query, window, accepted, r.evaluated_at), (query, r.evaluated_at)
            assert r.events == sum(1 for e in accepted if e[1] <= r.evaluated_at)
        due_times += list(rows.evaluated_at)
        state.value, due_state.value = tuple(state.value), tuple(due_state.value)
    # an idle partition's last row (idle_timeout): every buffered event fed, still evaluated at
    # the newest timestamp, so a match whose window is open then is in no row
    (last,) = advance(plan, lateness, ("p",), ["k"], iter(()), state, flush=True).to_dict("records")
    assert (last["count"], last["sum"]) == _want(query, window, accepted, max(e[1] for e in accepted))
    assert (last["pending_events"], last["events"]) == (0, len(accepted))
    if due_times:
        first = first_due(min(e[1] for e in accepted), period)
        assert due_times == list(range(first, first + period * len(due_times), period))


# --- a real stream ------------------------------------------------------------------------------

CHARS = {"A": "kind = 'a'", "B": "kind = 'b'", "C": "kind = 'c'"}
SCHEMA = "k string, t long, kind string"
QUERY, WINDOW, LATENESS = "A B+ !C", 10, 3
# Per partition, the events of each micro-batch:
#   p: {A0, B2} pending at 2, closed by 12 (a later micro-batch moves time past 0 + 10);
#   q: {A0, B2} pending, refuted by C9 in the next micro-batch, still refuted at 12;
#   r: {A0, B2} counted at 11 (11 >= 10), refuted by C9 arriving out of order (on time: the
#      watermark is 11 - 3 = 8) in the next micro-batch, as a negation between elements can be.
STEPS = [
    [("p", 0, "a"), ("p", 2, "b"), ("q", 0, "a"), ("q", 2, "b"), ("r", 0, "a"), ("r", 2, "b"), ("r", 11, "a")],
    [("p", 12, "a"), ("q", 9, "c")],
    [("q", 12, "a"), ("r", 9, "c")],
]
COUNTS = {"p": ["0", "1"], "q": ["0", "0", "0"], "r": ["1", "0"]}  # each partition's rows, in order


def _stream(spark, tmp_path, steps: list[list], due_rows: int = 0, **options) -> pd.DataFrame:
    """The rows of ``aggregate_stream`` (engine "exact") fed ``steps`` as micro-batches; with due
    times, once ``due_rows`` rows are out (the timers fire in a batch after the data)."""
    src, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src.mkdir()
    stream = spark.readStream.schema(SCHEMA).json(str(src))
    result = aggregate_stream(stream, QUERY, WINDOW, CHARS, "t", partition_by="k", engine="exact", lateness=LATENESS,
                              **options)
    query = (result.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(processingTime="0 seconds").start())
    try:
        for i, step in enumerate(steps):
            pd.DataFrame(step, columns=["k", "t", "kind"]).to_json(src / f"part-{i}.json", orient="records",
                                                                  lines=True)
            query.processAllAvailable()
        if due_rows:
            return wait_for_rows(out, due_rows)
    finally:
        query.stop()
    return spark.read.parquet(str(out)).toPandas()


@pytest.mark.slow  # a stream of three micro-batches
def test_a_stream_closes_and_refutes_across_micro_batches(spark, tmp_path):
    emitted = _stream(spark, tmp_path, STEPS)
    for k, counts in COUNTS.items():
        rows = emitted[emitted.k == k].sort_values("events")
        assert list(rows["count"]) == counts, k
        steps = [[(c.upper(), t) for kk, t, c in step if kk == k] for step in STEPS]
        steps = [s for s in steps if s]  # the micro-batches that gave the partition a row
        for i, r in enumerate(rows.itertuples()):  # each row: the library over what had arrived
            arrived = sorted(sum(steps[: i + 1], []), key=lambda e: e[1])
            (want,) = suse.exact(suse.Query(QUERY, WINDOW), arrived, evaluate_at=[r.evaluated_at]).evaluations
            assert (r.count, r.evaluated_at, r.events) == (str(want.count), arrived[-1][1], len(arrived))
    everything = spark.createDataFrame(pd.DataFrame(sum(STEPS, []), columns=["k", "t", "kind"]), SCHEMA)
    batch = aggregate(everything, QUERY, WINDOW, CHARS, "t", partition_by="k", engine="exact").toPandas()
    final = emitted.sort_values("events").groupby("k").last()
    for b in batch.itertuples():
        assert (final.loc[b.k, "count"], final.loc[b.k, "evaluated_at"]) == (b.count, b.evaluated_at)


def test_a_query_set_refuses_the_absence_on_a_stream_by_name(spark, tmp_path):
    # (summaries of every strategy count it: tests/test_spark_stream_where_summary.py)
    stream = spark.readStream.schema(SCHEMA).json(str(tmp_path))
    with pytest.raises(QueryError, match=r"query 'closing': a negation at the end of the pattern is not supported in a "
                                         r"query set yet"):
        aggregate_stream(stream, queries={"closing": QUERY, "plain": "A B"}, window=WINDOW, characters=CHARS,
                         timestamp="t", partition_by="k")


# Due times every 5, lateness 3: each row is final once the watermark has passed it. p's {A0, B2}
# and its B6 extensions close at 10; q's are refuted by C9 from a later micro-batch; r sends
# nothing after the first one, and its {A0, B1} is counted at 10 by a timer as the others move
# Spark's watermark on (to 20 - 3 = 17: due times 0, 5, 10, 15).
DUE_STEPS = [
    [("p", 0, "a"), ("p", 2, "b"), ("q", 0, "a"), ("q", 2, "b"), ("r", 0, "a"), ("r", 1, "b")],
    [("q", 9, "c"), ("p", 6, "b")],
    [("p", 20, "a")],
]
DUE_COUNTS = {"p": ["0", "0", "3", "3"], "q": ["0", "0", "0", "0"], "r": ["0", "0", "1", "1"]}


@pytest.mark.slow  # a stream of three micro-batches and the timers' batch after them
def test_due_rows_count_a_match_once_the_watermark_passes_its_window(spark, tmp_path):
    rows = _stream(spark, tmp_path, DUE_STEPS, sum(len(c) for c in DUE_COUNTS.values()), evaluate={"every": 5})
    everything = pd.DataFrame(sum(DUE_STEPS, []), columns=["k", "t", "kind"])
    for k, counts in DUE_COUNTS.items():
        got = rows[rows.k == k].sort_values("evaluated_at")
        assert list(got.evaluated_at) == [0, 5, 10, 15] and list(got["count"]) == counts, k
        mine = everything[everything.k == k].sort_values("t")
        events = [(c.upper(), int(t)) for t, c in zip(mine.t, mine.kind)]
        library = suse.exact(suse.Query(QUERY, WINDOW), events, evaluate_at=[0, 5, 10, 15]).evaluations
        assert [str(e.count) for e in library] == counts
    batch = aggregate(spark.createDataFrame(everything, SCHEMA), QUERY, WINDOW, CHARS, "t", partition_by="k",
                      engine="exact", evaluate=[0, 5, 10, 15]).toPandas()
    assert sorted(zip(batch.k, batch.evaluated_at, batch["count"])) == sorted(zip(rows.k, rows.evaluated_at,
                                                                                  rows["count"]))
