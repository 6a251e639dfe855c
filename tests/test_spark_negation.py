"""Negation and contiguity on Spark: negated characters reach the engine, and under
contiguity rows that match no character break matches instead of being dropped."""
from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from suse.spark import aggregate  # noqa: E402

# One event per (k, t); character column "c"; "Z" is named by no predicate and no query.
ROWS = [("p", t, c) for t, c in enumerate("AEBABZABEB")] + [("q", t, c) for t, c in enumerate("ABZBAB")]


def _direct(query: str, policy: str, k: str, characters: str) -> int:
    """The engine on the partition's events in time order; rows with a character outside
    `characters` are what Spark passes under contiguity (or not at all otherwise)."""
    events = [(c, t) for kk, t, c in ROWS if kk == k]
    if policy != "contiguous":
        events = [(c, t) for c, t in events if c in characters]
    return suse.exact(suse.Query(query, 100, policy=policy), events).count


@pytest.mark.parametrize("query,policy", [("A!EB", "any"), ("A!EB", "next"), ("AB", "contiguous"),
                                          ("AB+", "contiguous"), ("A!EB", "contiguous")])
def test_aggregate_equals_the_engine_per_partition(spark, query, policy):
    df = spark.createDataFrame(pd.DataFrame(ROWS, columns=["k", "t", "c"]))
    characters = {"A": "c = 'A'", "B": "c = 'B'", "E": "c = 'E'"}
    out = aggregate(df, query=query, window=100, characters=characters, timestamp="t", partition_by=["k"],
                    summary_size=50, policy=policy, exact=True).toPandas()
    got = {r.k: int(r.exact_count) for r in out.itertuples()}
    want = {k: _direct(query, policy, k, "ABE") for k in "pq"}
    assert got == want
    assert {r.k: int(r["count"]) for _, r in out.iterrows()} == want  # a summary larger than the stream


def test_negated_rows_are_kept_and_contiguity_sees_every_row(spark):
    df = spark.createDataFrame(pd.DataFrame(ROWS, columns=["k", "t", "c"]))
    chars = {"A": "c = 'A'", "B": "c = 'B'", "E": "c = 'E'"}
    neg = aggregate(df, query="A!EB", window=100, characters=chars, timestamp="t", partition_by=["k"],
                    exact=True).toPandas().set_index("k")
    # p: A0 E1 B2 A3 B4 Z5 A6 B7 E8 B9 -> pairs with no E between: (A3,B4),(A3,B7),(A6,B7),(A0..)? no: E1 kills A0
    assert int(neg.loc["p", "exact_count"]) == 3
    cont = aggregate(df, query="AB", window=100, characters=chars, timestamp="t", partition_by=["k"],
                     policy="contiguous", exact=True).toPandas().set_index("k")
    assert int(cont.loc["p", "exact_count"]) == 2  # A3B4, A6B7
    assert int(cont.loc["q", "exact_count"]) == 2  # A0B1, A4B5 (Z2 breaks A0..B3)
