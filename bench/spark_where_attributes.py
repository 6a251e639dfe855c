"""The Spark batch runner's Python side for `where` without Spark: `run_sorted` over Arrow
batches with the attribute columns the conditions read, as `mapInArrow` hands them to one
Python worker (N events in P partitions, sorted by key then time, Arrow batches of 10,000
rows). It times the whole per-partition path: reading the attribute columns out of Arrow,
turning them into condition values, and the conditions engine (``--engine exact``) or a
summary with conditions per partition (``--engine summary``, ``--strategy``, ``--size``).

    python bench/spark_where_attributes.py [--events 200000] [--partitions 100] [--kind int|float|string]
                                           [--engine exact|summary] [--strategy fifo|random|present] [--size 50]
"""
from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa

from suse.spark.events.rows import ATTRIBUTE, RANK, TIE, TS
from suse.spark.runners.plan import Plan
from suse.spark.runners.sorted import run_sorted
from suse.spec import QuerySpec, SummarySpec
from timing import best_time

WINDOW = 10
# a rising run of B prices closed by a C below the last B, and a label A and C share
WHERE = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p AND C.label = A.label"}


def batches(events: int, partitions: int, kind: str, rows: int = 10_000) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(7)
    ids = np.arange(events)
    k, t = ids % partitions, ids // partitions
    sort = np.lexsort((t, k))
    prices = {"int": pa.array(rng.integers(0, 1000, events)), "float": pa.array(rng.random(events)),
              "string": pa.array(rng.integers(0, 1000, events).astype(str))}[kind]
    labels = pa.array(np.array(["x", "y", "z"])[rng.integers(0, 3, events)])
    mask = pa.array(rng.random(events) < 0.05)  # 5% NULL prices
    prices = pa.compute.if_else(mask, pa.scalar(None, prices.type), prices)
    table = pa.table({"k": k[sort], TS: t[sort], RANK: rng.integers(0, 3, events).astype(np.int32)[sort],
                      TIE: rng.integers(0, 2**62, events), ATTRIBUTE.format(0): labels.take(sort),
                      ATTRIBUTE.format(1): prices.take(sort)})
    return table.to_batches(max_chunksize=rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--kind", choices=["int", "float", "string"], default="int")
    parser.add_argument("--engine", choices=["exact", "summary"], default="exact")
    parser.add_argument("--strategy", choices=["fifo", "random", "present"], default="fifo")
    parser.add_argument("--size", type=int, default=50)
    args = parser.parse_args()
    data = batches(args.events, args.partitions, args.kind)
    plan = Plan(QuerySpec("AB+C", WINDOW, where=WHERE), SummarySpec(args.size, args.strategy), order="ABC",
                engine=args.engine, attributes=("label", "p"))
    seconds, _ = best_time(lambda: sum(b.num_rows for b in run_sorted(plan, ["k"], iter(data), TS, RANK, None)), 3)
    engine = args.engine if args.engine == "exact" else f"summary {args.strategy} of {args.size}"
    print(f"where through run_sorted, {engine}: {args.events:,} events, {args.partitions:,} partitions, "
          f"{args.kind} prices, window {WINDOW}: {args.events / seconds:,.0f} events/s")


if __name__ == "__main__":
    main()
