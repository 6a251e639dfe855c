"""Streaming evaluations at due times (``evaluate={"every": P}``): event-time timers emit a row
per partition at every multiple of P once the watermark passes it, also for a partition that
receives nothing any more. Each due time gives one row per partition; a run stopped and
restarted from its checkpoint equals an uninterrupted one, and both equal the batch API
evaluated at the same times."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

from suse.errors import InputError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.streaming.aggregate import aggregate_stream  # noqa: E402

CHARS = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"}
SCHEMA = "k string, t long, x long, v long"
KW = dict(query="A(B|C)*C", window=15, characters=CHARS, timestamp="t", partition_by=["k"], value="v",
          summary_size=5)
LATENESS, PERIOD = 10, 10
COLUMNS = ["count", "sum", "detected_count", "events", "late_events", "dropped_events"]


def make_steps(n_steps=4) -> list[pd.DataFrame]:
    """Events of p, q and r arriving out of order across files (delay < 8 < LATENESS, so never
    late, even against the global watermark); r sends events in the first file only."""
    rng = np.random.default_rng(11)
    rows = [(k, int(t), int(x), int(v)) for k in "pqr"
            for t, x, v in zip(rng.integers(0, 25 * n_steps - 8, 40), rng.integers(0, 9, 40), rng.integers(0, 5, 40))]
    pdf = pd.DataFrame(rows, columns=["k", "t", "x", "v"])
    step = (pdf.t + rng.integers(0, 8, len(pdf))) // 25
    pdf = pdf[(pdf.k != "r") | (step == 0)]
    step = step[pdf.index]
    return [pdf[step == i].sample(frac=1, random_state=i) for i in range(n_steps)]


def start(spark, src_dir, out_dir, ckpt):
    src = spark.readStream.schema(SCHEMA).json(str(src_dir))
    out = aggregate_stream(src, lateness=LATENESS, evaluate={"every": PERIOD}, **KW)
    return (out.writeStream.format("parquet").option("path", str(out_dir))
            .option("checkpointLocation", str(ckpt)).trigger(processingTime="0 seconds").start())


def rows_of(out_dir) -> pd.DataFrame:
    try:
        return pd.read_parquet(out_dir) if out_dir.exists() else pd.DataFrame()
    except (OSError, ValueError):  # a file still being written
        return pd.DataFrame()


def wait_for_rows(out_dir, n: int) -> pd.DataFrame:
    """Spark runs the batch that fires the last timers after the data batch: wait for it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = rows_of(out_dir)
        if len(rows) >= n:
            time.sleep(1)  # nothing more may come
            return rows_of(out_dir)
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {n} rows; got\n{rows_of(out_dir)}")


def test_due_rows_with_timers_restart_equals_uninterrupted_and_batch(spark, tmp_path):
    steps = make_steps()
    everything = pd.concat(steps)
    final_watermark = int(everything.t.max()) - LATENESS
    # every multiple of PERIOD from a partition's first event to below the final watermark
    expected_times = {
        k: list(range(-(-int(g.t.min()) // PERIOD) * PERIOD, final_watermark, PERIOD))
        for k, g in everything.groupby("k")
    }
    n_expected = sum(len(v) for v in expected_times.values())
    runs = []
    for restart_after in (None, 2):
        src, out, ckpt = (tmp_path / f"{restart_after}-{d}" for d in ("in", "out", "ckpt"))
        src.mkdir()
        query = start(spark, src, out, ckpt)
        for i, step in enumerate(steps):
            step.to_json(src / f"part-{i}.json", orient="records", lines=True)
            query.processAllAvailable()
            if restart_after == i + 1:
                query.stop()
                query = start(spark, src, out, ckpt)
        query.processAllAvailable()
        rows = wait_for_rows(out, n_expected)
        query.stop()
        assert not rows.duplicated(["k", "evaluated_at"]).any()  # one row per partition and due time
        got = {k: sorted(g.evaluated_at.tolist()) for k, g in rows.groupby("k")}
        assert got == expected_times
        runs.append(rows.sort_values(["k", "evaluated_at"]).reset_index(drop=True))

    r_last = int(everything[everything.k == "r"].t.max())
    assert max(expected_times["r"]) > r_last + 3 * PERIOD  # r's late rows came from timers alone
    pd.testing.assert_frame_equal(runs[0], runs[1])

    grid = sorted({t for times in expected_times.values() for t in times})
    batch = aggregate(spark.createDataFrame(everything, SCHEMA), evaluate=grid, **KW).toPandas()
    batch["late_events"] = 0
    want = runs[0][["k", "evaluated_at"]].merge(batch, on=["k", "evaluated_at"], how="left")
    assert len(want) == len(runs[0])
    for col in COLUMNS:
        assert runs[0][col].tolist() == want[col].tolist(), col
    assert [[tuple(e) for e in x] for x in runs[0].elements] == [[tuple(e) for e in x] for x in want.elements]


def test_due_rows_need_a_period_and_no_idle_timeout(spark, tmp_path):
    (tmp_path / "in").mkdir()
    src = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))
    with pytest.raises(InputError, match="cannot be combined"):
        aggregate_stream(src, evaluate={"every": PERIOD}, idle_timeout="1 hour", **KW)
    with pytest.raises(InputError, match="every"):
        aggregate_stream(src, evaluate="every 3 events", **KW)
    with pytest.raises(InputError, match="holds integers"):
        aggregate_stream(src, evaluate={"every": "1 day"}, **KW)


class _Value:
    """A value state held in memory (the three members advance_due uses)."""

    def __init__(self):
        self.value = None

    exists = property(lambda self: self.value is not None)
    get = property(lambda self: self.value)

    def update(self, value):
        self.value = value


def test_unusable_rows_alone_are_reported_not_lost():
    from suse.spark.events.rows import DROPPED, RANK, TIE, TS, VALUE
    from suse.spark.runners.plan import plan_of
    from suse.spark.streaming.aggregate import _OUTPUT
    from suse.spark.streaming.due import advance_due

    plan = plan_of("A(B|C)*C", 15, size=5, order="ABC")
    state, due = _Value(), _Value()
    rows = pd.DataFrame({"k": ["p", "p"], TS: [0, 0], RANK: [DROPPED, DROPPED], TIE: [1, 2], VALUE: [1, 1]})
    out = advance_due(plan, 0, PERIOD, ("p",), ["k"], iter([rows]), state, due, None, _OUTPUT)
    assert out[["k", "dropped_events", "events"]].values.tolist() == [["p", 2, 0]]
    assert out.evaluated_at.isna().all()
    # a timer with nothing new reports nothing; events then give due rows carrying the count
    assert len(advance_due(plan, 0, PERIOD, ("p",), ["k"], iter(()), state, due, 50, _OUTPUT)) == 0
    events = pd.DataFrame({"k": "p", TS: [60, 75], RANK: [0, 2], TIE: [1, 2], VALUE: [1, 1]})
    out = advance_due(plan, 0, PERIOD, ("p",), ["k"], iter([events]), state, due, None, _OUTPUT)
    assert out[["evaluated_at", "events", "dropped_events"]].values.tolist() == [[60, 1, 2], [70, 1, 2]]
