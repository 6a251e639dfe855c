"""The Spark batch runner's Python side without Spark: `run_sorted` over Arrow batches.

Builds what `mapInArrow` hands one Python worker in bench/spark_scale.py (N events in P
partitions, the paper's workload characters, sorted by key then time, Arrow batches of 10,000
rows) and times the per-partition function on it, so its overhead outside the native kernel
can be profiled (`--profile` prints cProfile's top entries).

    python bench/runner_direct.py [--events 1000000] [--partitions 10000] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats

import numpy as np
import pyarrow as pa

from suse.spark.events.rows import RANK, TIE, TS
from suse.spark.runners.plan import Plan, plan_of
from suse.spark.runners.sorted import run_sorted
from timing import best_time

QUERY = "a(b*c)*d(e|f)g*"


def batches(events: int, partitions: int, rows: int = 10_000) -> list[pa.RecordBatch]:
    order = "abcdefg"
    weights = np.array([1 / (i + 1) ** 2 for i in range(len(order))])
    rng = np.random.default_rng(7)
    ranks = rng.choice(len(order), size=events, p=weights / weights.sum()).astype(np.int32)
    ids = np.arange(events)
    k, t = ids % partitions, ids // partitions
    sort = np.lexsort((t, k))
    table = pa.table({"k": k[sort], TS: t[sort], RANK: ranks[sort], TIE: rng.integers(0, 2**62, events)})
    return table.to_batches(max_chunksize=rows)


def plan() -> Plan:
    return plan_of(QUERY, 100, size=100, order="abcdefg")


def run(data: list[pa.RecordBatch], p: Plan, grouped: bool = True) -> int:
    return sum(b.num_rows for b in run_sorted(p, ["k"], iter(data), TS, RANK, None, grouped))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--per-partition", action="store_true", help="the per-partition path (one native call each)")
    args = ap.parse_args()
    data, p = batches(args.events, args.partitions), plan()
    grouped = not args.per_partition
    run(data, p, grouped)  # warm-up
    best, out = best_time(lambda: run(data, p, grouped), args.repeat)
    print(f"events={args.events:,} partitions={args.partitions:,} query={QUERY} |S|=100 tau=100: "
          f"{'per partition' if args.per_partition else 'grouped'}: {best:.3f} s, {args.events / best:,.0f} events/s, {out:,} result rows")
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(run, data, p, grouped)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
