"""A negation at the end of the pattern on Spark batch jobs, with the exact engine and with the
summaries that count it (every strategy): each partition's result is the
engine's evaluation at the time Spark reports (`evaluated_at`), so a match still pending then
is not counted."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from helpers import live_page_job  # noqa: E402
from suse.errors import InputError, QueryError  # noqa: E402
from suse.spark import aggregate  # noqa: E402

# p: A0 B2 B4 A5 C8 B12 ({A5, B12} closes at 15); q: the same and a late X so that it has closed.
P = [("A", 0), ("B", 2), ("B", 4), ("A", 5), ("C", 8), ("B", 12)]
ROWS = [("p", t, c) for c, t in P] + [("q", t, c) for c, t in P + [("A", 20)]]


def test_exact_engine_partitions_count_what_has_closed(spark):
    df = spark.createDataFrame(pd.DataFrame(ROWS, columns=["k", "t", "c"]))
    chars = {"A": "c = 'A'", "B": "c = 'B'", "C": "c = 'C'"}
    out = aggregate(df, query="A B+ !C", window=10, characters=chars, timestamp="t", partition_by=["k"],
                    engine="exact").toPandas().set_index("k")
    q = suse.Query("A B+ !C", 10)
    for k in "pq":
        events = [(c, t) for kk, t, c in ROWS if kk == k]
        at = int(out.loc[k, "evaluated_at"])
        (want,) = suse.exact(q, events, evaluate_at=[at]).evaluations
        assert int(out.loc[k, "count"]) == want.count
    assert (int(out.loc["p", "count"]), int(out.loc["q", "count"])) == (0, 1)


# --- summaries (every strategy): each partition through suse.Summary --------------------------------

CHARS = {"A": "c = 'A'", "B": "c = 'B'", "C": "c = 'C'"}


@pytest.fixture(scope="module")
def long_rows() -> pd.DataFrame:
    """Two partitions of about 30 events of A, B and C (the negated character), values 0-4."""
    rng = np.random.default_rng(27)
    out = []
    for k in "pq":
        for t in sorted(set(rng.integers(0, 60, 36).tolist())):
            out.append((k, t, str(rng.choice(list("ABC"), p=[0.3, 0.5, 0.2])), int(rng.integers(0, 5))))
    return pd.DataFrame(out, columns=["k", "t", "c", "v"])


@pytest.mark.parametrize("strategy", ["fifo", "random", "present", "suse", "adaptive"])
def test_summary_rows_equal_the_library_summary_over_each_partition(spark, long_rows, strategy):
    """Rows at evaluation times and at the end: the library's summary (same size, strategy and
    seed) over the partition's events in Spark's order, its elements included; the exact
    counts beside them are the exact engine's."""
    df = spark.createDataFrame(long_rows)
    at, size, window = [20, 40, 59], 6, 10
    out = aggregate(df, "A B+ !C", window, CHARS, "t", partition_by="k", value="v", aggregate="sum", evaluate=at,
                    summary_size=size, strategy=strategy, seed=5, exact=True).collect()
    query = suse.Query("A B+ !C", window, aggregate="sum")
    want = {}
    for k, g in long_rows.groupby("k"):
        events = [(c, int(t), int(v)) for t, c, v in zip(g.t, g.c, g.v)]
        summary = suse.Summary(query, size, strategy, seed=5)
        exact = suse.exact(query, events, evaluate_at=at).evaluations
        for ev, ex in zip(summary.extend(events, evaluate_at=at, elements=True), exact):
            want[(k, ev.timestamp)] = (str(ev.count), str(ev.sum), str(ev.detected_count), ev.elements,
                                       str(ex.count), sum(t <= ev.timestamp for _, t, _ in events))
    got = {(r["k"], r["evaluated_at"]): (r["count"], r["sum"], r["detected_count"],
                                         [(e["char"], e["timestamp"], e["value"]) for e in r["elements"]],
                                         r["exact_count"], r["events"]) for r in out}
    assert got == want
    assert any(r["events"] > size for r in out) and any(r["count"] != "0" for r in out)
    assert any("C" in {e["char"] for e in r["elements"]} for r in out)  # negated events are elements too


def test_a_summary_larger_than_the_partitions_counts_as_the_exact_engine(spark, long_rows):
    df = spark.createDataFrame(long_rows)
    out = aggregate(df, "A B+ !C", 10, CHARS, "t", partition_by="k", evaluate=[20, 40, 59], summary_size=100,
                    strategy="present", exact=True).collect()
    assert all(r["count"] == r["exact_count"] for r in out) and any(r["count"] != "0" for r in out)


def test_query_sets_and_matches_refuse_the_absence_by_name(spark, long_rows):
    df = spark.createDataFrame(long_rows)
    with pytest.raises(QueryError, match=r"query 'closing': a negation at the end of the pattern is not supported in "
                                         r"a query set yet"):
        aggregate(df, None, 10, CHARS, "t", queries={"closing": "A B+ !C", "plain": "A B"}, strategy="fifo")
    with pytest.raises(InputError, match=r"matches per row are not available for 'A B\+ !C' with negation"):
        aggregate(df, "A B+ !C", 10, CHARS, "t", strategy="fifo", matches=3)


def test_the_live_page_refuses_it_by_name(tmp_path):
    from suse.dashboard import serve

    job = live_page_job(tmp_path, CHARS, 'regex = "A B+ !C"\nwindow = 5\n[summary]\nstrategy = "fifo"')
    with pytest.raises(InputError, match="the live page does not run a negation at the end of the pattern yet"):
        serve(job, log=lambda line: None)
