"""Structured Streaming: a directory of files arriving in steps, a stop and a restart from
the checkpoint, out-of-order and late events. Results must equal an uninterrupted run and
the batch API: nothing lost, nothing counted twice."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

from suse.errors import InputError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.streaming.aggregate import aggregate_stream, latest  # noqa: E402

CHARS = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"}
SCHEMA = "k string, t long, x long, v long"
KW = dict(query="A(B|C)*C", window=15, characters=CHARS, timestamp="t", partition_by=["k"], value="v",
          summary_size=5)
LATENESS = 10


def make_steps(n_steps=4) -> list[pd.DataFrame]:
    """Events of 3 partitions; an event with timestamp t arrives in file (t + delay) // 25
    with delay < 8 < LATENESS: out of order across files, but never late."""
    rng = np.random.default_rng(7)
    rows = [(k, int(t), int(x), int(v)) for k in "pqr"
            for t, x, v in zip(rng.integers(0, 25 * n_steps - 8, 40), rng.integers(0, 9, 40), rng.integers(0, 5, 40))]
    pdf = pd.DataFrame(rows, columns=["k", "t", "x", "v"])
    step = (pdf.t + rng.integers(0, 8, len(pdf))) // 25
    return [pdf[step == i].sample(frac=1, random_state=i) for i in range(n_steps)]


def start(spark, src_dir, out_dir, ckpt, fmt="json"):
    src = spark.readStream.schema(SCHEMA).format(fmt).load(str(src_dir))
    out = aggregate_stream(src, lateness=LATENESS, **KW)
    return (out.writeStream.format("parquet").option("path", str(out_dir))
            .option("checkpointLocation", str(ckpt)).trigger(processingTime="0 seconds").start())


def write(step: pd.DataFrame, directory, i, fmt="json"):
    path = directory / f"part-{i}.{fmt}"
    if fmt == "json":
        step.to_json(path, orient="records", lines=True)
    elif fmt == "csv":
        step.to_csv(path, index=False, header=False)
    else:
        step.to_parquet(path)


def final(spark, out_dir) -> dict:
    rows = latest(spark.read.parquet(str(out_dir)), ["k"]).collect()
    return {r.k: (r["count"], r["sum"], r.detected_count, r.events, [tuple(e) for e in r.elements], r.late_events)
            for r in rows}


def test_restart_from_checkpoint_equals_uninterrupted_and_batch(spark, tmp_path):
    steps = make_steps()
    results = []
    for restart_after in (None, 2):  # uninterrupted, then stopped after step 2 and resumed
        src, out, ckpt = (tmp_path / f"{restart_after}-{d}" for d in ("in", "out", "ckpt"))
        src.mkdir()
        query = start(spark, src, out, ckpt)
        for i, step in enumerate(steps):
            write(step, src, i)
            query.processAllAvailable()
            if restart_after == i + 1:
                query.stop()
                query = start(spark, src, out, ckpt)
        query.processAllAvailable()
        query.stop()
        results.append(final(spark, out))
        emitted = spark.read.parquet(str(out))
        # one row per partition per micro-batch that brought it events, each newer than the last
        assert emitted.groupBy("k", "events").count().where("count > 1").count() == 0

    everything = pd.concat(steps)
    batch = aggregate(spark.createDataFrame(everything, SCHEMA), **KW).collect()
    expected = {r.k: (r["count"], r["sum"], r.detected_count, r.events, [tuple(e) for e in r.elements], 0)
                for r in batch}
    assert results[0] == results[1] == expected
    assert all(events == (everything.k == k).sum() - (everything[everything.k == k].x > 8).sum()
               for k, (_, _, _, events, _, _) in expected.items())


def test_late_events_are_counted_not_fed(spark, tmp_path):
    src, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src.mkdir()
    first = pd.DataFrame({"k": "p", "t": [10, 20, 30, 40], "x": [0, 4, 7, 7], "v": 1})
    # watermark after the first file: 40 - 10 = 30; t=25 and t=5 are late, t=35 is not
    second = pd.DataFrame({"k": "p", "t": [25, 35, 5, 45], "x": [0, 7, 0, 7], "v": 1})
    query = start(spark, src, out, ckpt, fmt="csv")
    for i, step in enumerate([first, second]):
        write(step, src, i, fmt="csv")
        query.processAllAvailable()
    query.stop()
    got = final(spark, out)["p"]
    on_time = pd.concat([first, second[second.t >= 30]])
    (want,) = aggregate(spark.createDataFrame(on_time, SCHEMA), **KW).collect()
    assert got[-1] == 2  # late_events
    assert got[:5] == (want["count"], want["sum"], want.detected_count, want.events, [tuple(e) for e in want.elements])
    rows = spark.read.parquet(str(out)).orderBy("events").collect()
    assert [(r.events, r.pending_events, r.late_events) for r in rows] == [(4, 2, 0), (6, 3, 2)]


def test_streaming_rejects_what_it_cannot_do(spark, tmp_path):
    (tmp_path / "in").mkdir()
    src = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))
    with pytest.raises(InputError, match="window function"):
        aggregate_stream(src, **{**KW, "characters": {"A": "x > avg(x) OVER (PARTITION BY k)"}})
    with pytest.raises(InputError, match="needs a streaming DataFrame"):
        aggregate_stream(spark.createDataFrame(make_steps()[0], SCHEMA), **KW)
    with pytest.raises(InputError, match="holds integers"):
        aggregate_stream(src, **{**KW, "window": "1 day"})


def test_idle_partitions_are_flushed_reported_and_dropped(spark, tmp_path):
    import time

    src_dir, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src_dir.mkdir()
    src = spark.readStream.schema(SCHEMA).json(str(src_dir))
    query = (aggregate_stream(src, lateness=LATENESS, idle_timeout="1 second", **KW)
             .writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ckpt))
             .trigger(processingTime="500 milliseconds").start())

    def wait_for(condition) -> pd.DataFrame:
        # Polled with pandas: with processing-time timers every trigger runs a micro-batch, so
        # processAllAvailable() would not return.
        deadline, rows = time.monotonic() + 90, None
        while time.monotonic() < deadline:
            try:
                rows = pd.read_parquet(out) if out.exists() else pd.DataFrame()
            except (OSError, ValueError):  # a file still being written
                rows = pd.DataFrame()
            if len(rows) and condition(rows):
                return rows
            time.sleep(0.5)
        raise AssertionError(f"timed out; rows so far:\n{rows}")

    first = pd.DataFrame({"k": ["p", "p", "p", "q"], "t": [10, 12, 14, 10], "x": [0, 4, 7, 0], "v": 1})
    write(first, src_dir, 0)
    snapshot = wait_for(lambda r: r.expired.sum() == 2)  # p and q fell idle: one expired row each
    expired = snapshot[snapshot.expired].set_index("k")
    assert sorted(expired.index) == ["p", "q"]
    write(pd.DataFrame({"k": ["p"], "t": [11], "x": [0], "v": 1}), src_dir, 1)  # late, had p's state stayed
    rows = wait_for(lambda r: ((r.k == "p") & (r.events == 1)).any())
    query.stop()
    # p's new summary may itself fall idle before the stop (a slow machine): then its expired
    # row holds just the new event, never the dropped state's.
    assert sorted(rows[rows.expired & (rows.k == "p")].events) in ([3], [1, 3])
    # the expired row has fed what was buffered (t = 14 is within the lateness): final, not pending
    (want,) = aggregate(spark.createDataFrame(first[first.k == "p"], SCHEMA), **KW).collect()
    assert (expired.loc["p", "count"], expired.loc["p", "events"], expired.loc["p", "pending_events"]) == (want["count"], 3, 0)
    fresh = rows[(rows.k == "p") & ~rows.expired & (rows.events == 1)]
    assert len(fresh) == 1 and fresh.late_events.iloc[0] == 0  # a new summary after the drop


def test_checkpoint_of_the_previous_implementation_is_refused(spark, tmp_path):
    from pyspark.sql.streaming.state import GroupStateTimeout

    from suse.errors import StateError
    from suse.spark.streaming.aggregate import check_checkpoint

    (tmp_path / "in").mkdir()
    write(pd.DataFrame({"k": ["p"], "t": [1], "x": [0], "v": [1]}), tmp_path / "in", 0)
    src = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))

    def count(key, frames, state):
        yield pd.DataFrame({"k": [key[0]], "n": [sum(len(f) for f in frames)]})

    old = src.groupBy("k").applyInPandasWithState(count, "k string, n long", "n long", "append", GroupStateTimeout.NoTimeout)
    q = old.writeStream.format("parquet").option("path", str(tmp_path / "out")).option(
        "checkpointLocation", str(tmp_path / "ckpt")).start()
    q.processAllAvailable()
    q.stop()
    with pytest.raises(StateError, match="earlier suse"):
        check_checkpoint(tmp_path / "ckpt")
    check_checkpoint(tmp_path / "nothing-yet")  # a new location is fine


LETTER_SCHEMA = "k string, t long, c string"
LETTER_KW = dict(window=50, characters="c", timestamp="t", partition_by=["k"], summary_size=4)


def _letters(spark, src, query, on_change="error"):
    df = spark.readStream.schema(LETTER_SCHEMA).json(str(src))
    return aggregate_stream(df, query=query, on_change=on_change, **LETTER_KW)


def _run_two_configs(spark, tmp_path, on_change):
    """Phase 1 under query A(B|C)*C, then a restart on the same checkpoint under query AB*D."""
    src, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src.mkdir()
    one = pd.DataFrame({"k": ["p"] * 6 + ["q"] * 2, "t": [1, 2, 3, 4, 5, 6, 1, 2],
                        "c": list("ABCBAC") + list("AC")})
    two = pd.DataFrame({"k": ["p", "p", "r"], "t": [7, 8, 1], "c": ["B", "D", "A"]})

    def run(query, frame, i, mode):
        q = (_letters(spark, src, query, mode).writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(ckpt)).trigger(processingTime="0 seconds").start())
        try:
            write(frame, src, i)
            q.processAllAvailable()
        finally:
            q.stop()

    run("A(B|C)*C", one, 0, "error")
    return run, one, two, out


def test_restart_with_changed_query_stops_with_a_clear_error(spark, tmp_path):
    run, _, two, out = _run_two_configs(spark, tmp_path, "error")
    with pytest.raises(Exception, match=r"written with another configuration: query 'A\(B\|C\)\*C' \(now 'AB\*D'\)"):
        run("AB*D", two, 1, "error")
    # nothing of the new configuration was mixed into the output
    assert spark.read.parquet(str(out)).count() == 2


def test_restart_with_changed_query_migrates_by_replay(spark, tmp_path):
    import suse

    run, one, two, out = _run_two_configs(spark, tmp_path, "replay")
    run("AB*D", two, 1, "replay")
    rows = {(r.k, r.events): r for r in spark.read.parquet(str(out)).collect()}
    # p: 5 fed + C@6 pending, which the new job does not read (C is no letter of AB*D): 5 + B@7, D@8
    assert not rows[("p", 6)].migrated and rows[("p", 7)].migrated and not rows[("r", 1)].migrated
    # p's state: the first five events fed, the sixth pending (lateness 0 keeps the latest time)
    old = suse.Summary(suse.Query("A(B|C)*C", 50), 4, seed=0)
    old.extend(events=[(c, t) for c, t in zip(one.c[:5], one.t[:5])])
    new_q = suse.Query("AB*D", 50)
    want = suse.Summary(new_q, 4, seed=0)
    want.extend(events=[e for e in old.elements() if e[0] in new_q.alphabet] + [("B", 7), ("D", 8)])
    got = rows[("p", 7)]
    r = want.result()
    assert (got["count"], got.detected_count) == (str(r.count), str(r.detected_count))
    assert [tuple(e) for e in got.elements] == want.elements()
