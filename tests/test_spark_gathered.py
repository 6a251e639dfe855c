"""The gathered layout of the batch job (each partition's events collected into lists by
Spark, sorted per partition by the runner) must give exactly the rows of the streamed layout
(a shuffle and a sort of the whole input, ``large_partitions=True``) and of the per-partition
reference path: unordered lists, equal timestamps and ranks told apart by value and tie,
NULL keys, dropped and corrupt rows, query sets."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from helpers import in_partition_order  # noqa: E402
from suse import _core  # noqa: E402
from suse.errors import InputError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.events.rows import CORRUPT, DROPPED, RANK, TIE, TS, VALUE  # noqa: E402
from suse.spark.events.triggers import Trigger  # noqa: E402
from suse.spark.runners.gathered import PACKED, WIDE, rank_bits, run_gathered  # noqa: E402
from suse.spark.runners.plan import plan_of  # noqa: E402
from suse.spark.runners.sorted import run_sorted  # noqa: E402


def random_rows(rng, n_parts: int, order: str, far: bool = False) -> list[tuple]:
    """(a, b, ts, rank, tie, value) rows; few timestamps, so equal (ts, rank) pairs are common.
    ``far``: some partitions' times straddle +-2^61, where a time stops fitting beside the rank."""
    rows = []
    for p in range(n_parts):
        a = None if p % 5 == 0 else f"k{p // 3}"
        base = (2**61 - 6) * (1 if p % 4 == 1 else -1) if far and p % 2 else 0
        for _ in range(int(rng.integers(0, 40))):
            rank = int(rng.integers(0, len(order)))
            if rng.random() < 0.05:
                rank = DROPPED if rng.random() < 0.5 else CORRUPT
            rows.append((a, p % 3, base + int(rng.integers(0, 12)), rank, int(rng.integers(-2**40, 2**40)),
                         int(rng.integers(0, 9))))
    return rows


def _key(r):
    return (r[0] is not None, r[0] or "", r[1])


def sorted_layout(rows, with_value: bool) -> list[pa.RecordBatch]:
    """What the streamed layout hands the runner: rows sorted by (keys, ts, rank, tie)."""
    rows = sorted(rows, key=lambda r: (*_key(r), r[2], r[3], r[4]))
    cols = {"a": pa.array([r[0] for r in rows], pa.string()), "b": pa.array([r[1] for r in rows], pa.int64()),
            TS: pa.array([r[2] for r in rows], pa.int64()), RANK: pa.array([r[3] for r in rows], pa.int32())}
    if with_value:
        cols[VALUE] = pa.array([r[5] for r in rows], pa.int64())
    return pa.table(cols).to_batches(max_chunksize=13)


def gathered_layout(rng, rows, with_value: bool, per_batch: int, bits: int) -> list[pa.RecordBatch]:
    """What the gathered layout hands the runner: a row per partition (in key order, as the
    streamed output comes), its rows as lists in a random order: usable events packed as
    (ts << bits) | rank where ts fits, the others (and the counted rows, without time or
    value) whole."""
    parts: dict = {}
    for r in rows:
        parts.setdefault((r[0], r[1]), []).append(r)
    out = {name: [] for name in ["a", "b", PACKED, VALUE, TIE, WIDE]}
    fits = range(-(1 << (63 - bits)), 1 << (63 - bits))
    for (a, b) in sorted(parts, key=lambda k: _key(k)):
        part = [parts[(a, b)][i] for i in rng.permutation(len(parts[(a, b)]))]
        packable = [r[3] >= 0 and r[2] in fits for r in part]
        packed = [r for r, p in zip(part, packable) if p]
        out["a"].append(a)
        out["b"].append(b)
        out[PACKED].append([(r[2] << bits) | r[3] for r in packed])
        out[TIE].append([r[4] for r in packed])
        out[VALUE].append([r[5] for r in packed])
        whole = [(r[2], r[3], r[4], r[5]) if r[3] >= 0 else (None, r[3], r[4], None) for r, p in zip(part, packable) if not p]
        names = [TS, RANK, TIE, VALUE] if with_value else [TS, RANK]
        out[WIDE].append([dict(zip(names, w)) for w in whole])
    wide = [(TS, pa.int64()), (RANK, pa.int32())] + ([(VALUE, pa.int64()), (TIE, pa.int64())] if with_value else [])
    types = {"a": pa.string(), "b": pa.int64(), PACKED: pa.list_(pa.int64()), VALUE: pa.list_(pa.int64()),
             TIE: pa.list_(pa.int64()), WIDE: pa.list_(pa.struct(wide))}
    names = [n for n in types if with_value or n not in (VALUE, TIE)]
    table = pa.table({n: pa.array(out[n], types[n]) for n in names})
    return table.to_batches(max_chunksize=per_batch)


TRIGGERS = [Trigger("end"), Trigger("every", every=3), Trigger("at", at=(2, 7, 40))]


@pytest.mark.parametrize("seed", range(12))
def test_gathered_equals_sorted_layout(seed):
    rng = np.random.default_rng(seed)
    regex, order = [("a(b|c)*d", "abcde"), ("AB*C", "ABC"), ("x+y?", "xyz")][seed % 3]
    plan = plan_of(regex, int(rng.integers(0, 8)), size=int(rng.integers(1, 6)), order=order,
                trigger=TRIGGERS[seed % len(TRIGGERS)], strategy=["suse", "fifo"][seed % 2], seed=seed,
                aggregate=["count", "sum"][seed % 2])
    with_value = seed % 4 < 2
    rows = random_rows(rng, int(rng.integers(1, 30)), order, far=seed % 6 in (1, 2))
    value = VALUE if with_value else None
    expected = pa.Table.from_batches(
        list(run_sorted(plan, ["a", "b"], iter(sorted_layout(rows, with_value)), TS, RANK, value, grouped=False)))
    layout = gathered_layout(rng, rows, with_value, int(rng.integers(1, 9)), rank_bits(order))
    got = list(run_gathered(plan, ["a", "b"], iter(layout), rank_bits(order)))
    got_rows = pa.Table.from_batches(got).to_pylist() if got else []
    assert in_partition_order(got_rows, ["a", "b"]) == in_partition_order(expected.to_pylist(), ["a", "b"])


def test_sort_groups_orders_each_group_and_refuses_bad_arrays():
    ts = np.array([3, 1, 2, 2, 9, 0], np.int64)
    ranks = np.array([0, 0, 1, 0, 0, 0], np.int32)
    ties = np.array([0, 0, 0, 5, 0, 0], np.int64)
    order = _core.sort_groups(np.array([0, 4, 6], np.int64), ts, ranks, ties)
    assert order.tolist() == [1, 3, 2, 0, 5, 4]
    with pytest.raises(InputError, match="one entry per event"):
        _core.sort_groups(np.array([0, 6], np.int64), ts, ranks[:5], None)
    with pytest.raises(InputError, match="offsets"):
        _core.sort_groups(np.array([0, 5], np.int64), ts, ranks, None)


def test_sort_packed_groups_sorts_each_group_by_time_then_rank():
    packed = np.array([(3 << 2) | 1, (3 << 2) | 0, (-5 << 2) | 3, 7, 2], np.int64)
    got = _core.sort_packed_groups(np.array([0, 3, 5], np.int64), packed)
    assert got.tolist() == [(-5 << 2) | 3, (3 << 2) | 0, (3 << 2) | 1, 2, 7]
    assert packed.tolist()[0] == (3 << 2) | 1  # a sorted copy
    with pytest.raises(InputError, match="offsets"):
        _core.sort_packed_groups(np.array([0, 4], np.int64), packed)


CHARS = {"a": "x < 3", "b": "x >= 3 AND x < 6", "c": "x >= 6 AND x < 9"}  # x = 9: no character


def test_aggregate_gathered_equals_large_partitions(spark):
    rng = np.random.default_rng(5)
    rows = [(None if i % 7 == 0 else f"k{i % 4}", int(rng.integers(0, 15)), int(rng.integers(0, 10)),
             int(rng.integers(0, 4))) for i in range(400)]
    rows.append(("k1", None, 1, 1))  # no timestamp: counted, not fed
    # Times straddling +-2^61, where 3 letters' ranks (2 bits) no longer fit beside them.
    rows += [(f"far{s}", s * 2**61 - 5 + i // 2, int(rng.integers(0, 10)), i % 4) for s in (1, -1) for i in range(20)]
    df = spark.createDataFrame(pd.DataFrame(rows, columns=["k", "t", "x", "v"]).astype({"t": "Int64"}))
    common = dict(characters=CHARS, timestamp="t", partition_by="k", value="v", summary_size=4,
                  evaluate={"every": 9}, aggregate="sum")
    runs = [dict(query="a(b|c)*c", window=6), dict(queries={"q0": "a(b|c)*c", "q1": {"query": "ab*", "window": 3}},
                                                   window=6)]
    for kw in runs:
        gathered = aggregate(df, **common, **kw)
        streamed = aggregate(df, **common, **kw, large_partitions=True)
        plans = [f._jdf.queryExecution().executedPlan().toString() for f in (gathered, streamed)]
        assert "collect_list" in plans[0] and "collect_list" not in plans[1]  # the two layouts ran
        assert sorted(map(str, gathered.collect())) == sorted(map(str, streamed.collect()))
        assert any(r["dropped_events"] for r in gathered.collect())
        assert {r["k"] for r in gathered.collect() if r["count"]} >= {"far1", "far-1"}


def test_elements_false_leaves_only_that_column_out(spark):
    rows = [(f"k{i % 3}", i // 3, i % 10, i % 4) for i in range(120)]
    df = spark.createDataFrame(pd.DataFrame(rows, columns=["k", "t", "x", "v"]))
    common = dict(characters=CHARS, timestamp="t", partition_by="k", value="v", summary_size=3, evaluate={"every": 7})
    for kw in (dict(query="a(b|c)*c", window=8), dict(query="a(b|c)*c", window=8, large_partitions=True),
               dict(queries={"q0": "a(b|c)*c", "q1": {"query": "ab*", "window": 3}}, window=8)):
        full = aggregate(df, **common, **kw)
        lean = aggregate(df, **common, **kw, elements=False)
        assert lean.columns == [c for c in full.columns if c != "elements"]
        assert sorted(map(str, lean.collect())) == sorted(map(str, full.drop("elements").collect()))


@pytest.mark.parametrize("option", ["elements", "large_partitions"])
def test_layout_options_take_booleans_only(spark, option):
    df = spark.createDataFrame(pd.DataFrame({"k": ["a"], "t": [1], "x": [1]}))
    with pytest.raises(InputError, match=f"{option} must be True or False, got 'false'"):
        aggregate(df, "a(b|c)*c", 5, CHARS, "t", "k", **{option: "false"})
