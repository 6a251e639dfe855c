"""The batch runner's grouped path (one native call per Arrow batch, suse.spark.runners.gathered) must
give exactly the rows of the per-partition path: same keys, values, doubles, elements and
order within each partition and query, for partitions that span batches, NULL keys, dropped and corrupt rows, values, every
trigger form and counts beyond 2^53."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from helpers import in_partition_order  # noqa: E402
from suse import _core  # noqa: E402
from suse.errors import InputError  # noqa: E402
from suse.spark.events.rows import CORRUPT, DROPPED, RANK, TIE, TS, VALUE  # noqa: E402
from suse.spark.events.triggers import Trigger  # noqa: E402
from suse.spark.runners.gathered import serves  # noqa: E402
from suse.spark.runners.plan import plan_of  # noqa: E402
from suse.spark.runners.sorted import run_sorted  # noqa: E402


def sorted_batches(rng, n_parts, order, with_value, chunk):
    """Events of ``n_parts`` partitions (key columns a: string with NULLs, b: long), sorted as
    Spark sorts them, cut into Arrow batches of ``chunk`` rows."""
    rows = []
    for p in range(n_parts):
        a = None if p % 5 == 0 else f"k{p // 3}"
        b = p % 3
        for _ in range(int(rng.integers(0, 40))):
            rank = int(rng.integers(0, len(order)))
            if rng.random() < 0.05:
                rank = DROPPED if rng.random() < 0.5 else CORRUPT
            rows.append((a, b, int(rng.integers(0, 30)), rank, int(rng.integers(0, 2**40)), int(rng.integers(0, 9))))
    rows.sort(key=lambda r: (r[0] is not None, r[0] or "", r[1], r[2], r[3], r[4]))
    cols = {"a": pa.array([r[0] for r in rows], pa.string()), "b": pa.array([r[1] for r in rows], pa.int64()),
            TS: pa.array([r[2] for r in rows], pa.int64()), RANK: pa.array([r[3] for r in rows], pa.int32()),
            TIE: pa.array([r[4] for r in rows], pa.int64())}
    if with_value:
        cols[VALUE] = pa.array([r[5] for r in rows], pa.int64())
    return pa.table(cols).to_batches(max_chunksize=chunk)


def both(plan, batches, keys, with_value):
    value = VALUE if with_value else None
    old = pa.Table.from_batches(list(run_sorted(plan, keys, iter(batches), TS, RANK, value, grouped=False)))
    new = list(run_sorted(plan, keys, iter(batches), TS, RANK, value))
    return (in_partition_order(old.to_pylist(), keys),
            in_partition_order(pa.Table.from_batches(new).to_pylist() if new else [], keys))


TRIGGERS = [Trigger("end"), Trigger("every", every=3), Trigger("period", period=7), Trigger("at", at=(5, 12, 40)),
            Trigger("poisson", rate=2.0, period=10, seed=3)]


@pytest.mark.parametrize("seed", range(12))
def test_grouped_equals_per_partition(seed):
    rng = np.random.default_rng(seed)
    regex, order = [("a(b|c)*d", "abcde"), ("AB*C", "ABC"), ("x+y?", "xyz")][seed % 3]
    plan = plan_of(regex, int(rng.integers(0, 20)), size=int(rng.integers(1, 6)), order=order,
                trigger=TRIGGERS[seed % len(TRIGGERS)], strategy=["suse", "random"][seed % 2], seed=seed)
    assert serves(plan)
    with_value = seed % 2 == 0
    batches = sorted_batches(rng, int(rng.integers(1, 30)), order, with_value, chunk=int(rng.integers(1, 50)))
    keys = [["a", "b"], ["b"], []][seed % 3]
    if keys == ["b"]:  # one key column: re-sort by it alone
        table = pa.Table.from_batches(batches).sort_by([("b", "ascending"), (TS, "ascending"), (RANK, "ascending")])
        batches = table.to_batches(max_chunksize=7)
    elif not keys:
        table = pa.Table.from_batches(batches).sort_by([(TS, "ascending"), (RANK, "ascending")])
        batches = table.to_batches(max_chunksize=11)
    old, new = both(plan, batches, keys, with_value)
    assert new == old
    assert len(old) > 0 or not batches


def test_counts_beyond_double_precision_convert_as_python_does():
    # 60 A's in one window: 2^60 - 1 matches of A+, past 2^53, so the doubles come from Python.
    n = 60
    batch = pa.RecordBatch.from_pydict({"k": [1] * n + [2] * 3, TS: list(range(n)) + [0, 1, 2], RANK: [0] * (n + 3),
                                        TIE: [0] * (n + 3), VALUE: [2**40] * (n + 3)})
    plan = plan_of("A+", 1000, size=100, order="A", aggregate="sum")
    old, new = both(plan, [batch], ["k"], True)
    assert new == old
    assert new[0]["count"] == str(2**60 - 1) and new[0]["count_double"] == float(2**60 - 1)
    assert new[1]["count"] == "7" and new[1]["avg"] == old[1]["avg"]


def test_only_plain_plans_take_the_grouped_path():
    assert not serves(plan_of("AB", 5, order="AB", exact=True))
    assert not serves(plan_of("AB", 5, order="AB", aggregate="max"))
    assert not serves(plan_of("AB", 5, order="AB", max_missing=1))


def test_set_call_refuses_what_each_query_alone_refuses():
    """Unordered evaluation times are refused even where the shared engine (which reads every
    query's times merged) would answer, as `summary_groups` refuses them."""
    templates = [plan_of(q, 5, order="ab", size=3).new_summary()._engine for q in ("ab", "a+")]
    ts, offsets = np.array([1, 2], np.int64), np.array([0, 2], np.int64)
    evals, eval_offsets = np.array([3, 1], np.int64), np.array([0, 2], np.int64)
    with pytest.raises(InputError, match="evaluation times must be in increasing order"):
        _core.summary_set_groups(templates, b"ab", ts, None, offsets, [evals, evals], [eval_offsets, eval_offsets])
    with pytest.raises(InputError, match="2 queries but 1 lists"):
        _core.summary_set_groups(templates, b"ab", ts, None, offsets, [evals], [eval_offsets])


def test_native_call_refuses_bad_groups():
    template = plan_of("AB", 5, order="AB").new_summary()._engine
    ts = np.array([1, 2], np.int64)
    with pytest.raises(InputError, match="offsets must rise from 0 to 2"):
        _core.summary_groups(template, b"AB", ts, None, np.array([0, 1], np.int64), ts[:0], np.array([0, 0], np.int64))
    with pytest.raises(InputError, match="timestamps must not decrease"):
        _core.summary_groups(template, b"AB", ts[::-1].copy(), None, np.array([0, 2], np.int64), ts[:1],
                             np.array([0, 1], np.int64))
    used = plan_of("AB", 5, order="AB").new_summary()
    used.extend("A", [1])
    with pytest.raises(InputError, match="seen no event"):
        _core.summary_groups(used._engine, b"AB", ts, None, np.array([0, 2], np.int64), ts[:1], np.array([0, 1], np.int64))


@pytest.mark.parametrize("seed", range(6))
def test_grouped_query_set_equals_per_partition(seed):
    from suse.spark.runners.multi import MultiPlan

    rng = np.random.default_rng(100 + seed)
    order = "abcde"
    plans = (("q0", plan_of("a(b|c)*d", 12, size=3, order=order, trigger=TRIGGERS[seed % 5]), (0, 1, 2, 3)),
             ("q1", plan_of("ab*e", 5, size=2, order=order, trigger=Trigger("every", every=2)), (0, 1, 4)),
             ("q2", plan_of("c+", 30, size=4, order=order, seed=seed, strategy="random"), (2,)))
    plan = MultiPlan(plans, order, False)
    assert serves(plan)
    batches = sorted_batches(rng, int(rng.integers(1, 25)), order, seed % 2 == 0, chunk=int(rng.integers(1, 40)))
    old, new = both(plan, batches, ["a", "b"], seed % 2 == 0)
    assert new == old
    assert {r["query"] for r in new} == {"q0", "q1", "q2"} or not new


@pytest.mark.parametrize("seed", range(10))
def test_shared_counting_of_a_query_set_equals_each_query_alone(seed):
    """In a query set, the plain queries whose events fit their summary in a partition are
    counted by one shared exact engine (`_core.summary_set_groups`); the others run their
    summaries. Sizes straddle the partitions' event counts (up to 40 events), so both happen
    within one batch, next to queries that never share (contiguity, negation, `of`)."""
    from suse.spark.runners.multi import MultiPlan

    rng = np.random.default_rng(300 + seed)
    order = "abcde"
    regexes = ["a(b|c)*d", "a(b|c)*e", "ab*e", "a(b|c)*d(e|b)", "c+", "(a|b)c*d"]
    plans = []
    for i, regex in enumerate(regexes):
        letters = sorted(set(regex) & set(order))
        plans.append((f"q{i}", plan_of(regex, int(rng.integers(0, 30)), size=int(rng.integers(1, 30)), order=order,
                                    strategy=["suse", "fifo", "adaptive"][i % 3], trigger=TRIGGERS[(seed + i) % 5]),
                      tuple(order.index(c) for c in letters)))
    plans.append(("contiguous", plan_of("ab*d", 20, policy="contiguous", size=15, order=order), tuple(range(5))))
    plans.append(("negated", plan_of("a!cd", 20, size=15, order=order), (0, 2, 3)))
    plans.append(("of", plan_of("a(b|c)*d", 20, size=15, order=order, of="b", aggregate="sum"), (0, 1, 2, 3)))
    plan = MultiPlan(tuple(plans), order, False)
    assert serves(plan)
    with_value = seed % 2 == 0
    batches = sorted_batches(rng, int(rng.integers(1, 20)), order, with_value, chunk=int(rng.integers(5, 200)))
    old, new = both(plan, batches, ["a", "b"], with_value)
    assert new == old
