"""A negation at the end of the pattern on Spark batch jobs with the exact engine: each
partition's result is the exact engine's evaluation at the time Spark reports
(`evaluated_at`), so a match still pending then is not counted."""
from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
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
