"""One streaming partition's step with `where`, without Spark: ``advance`` (what
``aggregate_stream``'s stateful processor runs per partition and micro-batch) over a series of
micro-batches, the state handed back between them as Spark does. It times the whole step:
loading the state (a pickle: the exact engine, or a summary with conditions, which replays its
retained elements), feeding the events the watermark passed, saving the state, and the row's
evaluation on a copy that takes the pending events. ``--engine exact`` is the exact engine
with the conditions; ``--engine summary`` a summary of ``--size`` elements (``--strategy``).

    python bench/spark_stream_where.py [--engine exact|summary] [--strategy fifo|random|present] [--size 100]
                                       [--batch 1000] [--batches 10] [--window 100] [--lateness 10]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from suse.spark.events.rows import ATTRIBUTE, RANK, TIE, TS, VALUE
from suse.spark.runners.plan import Plan
from suse.spark.streaming.aggregate import advance
from suse.spec import QuerySpec, SummarySpec

# a rising run of B prices closed by a C below the last B
WHERE = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p"}


class State:
    """A value state in memory, handed back as a tuple (as Spark's store does)."""

    def __init__(self) -> None:
        self.value: tuple | None = None

    exists = property(lambda self: self.value is not None)
    get = property(lambda self: self.value)

    def update(self, value: tuple) -> None:
        self.value = tuple(value)


def micro_batches(n: int, size: int, lateness: int) -> list[pd.DataFrame]:
    """``n`` micro-batches of ``size`` events, one timestamp per event, each shuffled within
    ``lateness`` (on time, out of order); 10% NULL prices."""
    rng = np.random.default_rng(7)
    out = []
    for b in range(n):
        t = np.arange(b * size, (b + 1) * size)
        t = t[np.argsort(t + rng.integers(0, lateness + 1, size), kind="stable")]
        prices = np.where(rng.random(size) < 0.1, np.nan, rng.integers(0, 100, size).astype(float))
        out.append(pd.DataFrame({"k": "p", TS: t, RANK: rng.choice(3, size, p=[0.2, 0.6, 0.2]).astype(np.int32),
                                 TIE: t, VALUE: 1, ATTRIBUTE.format(0): prices}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", choices=["exact", "summary"], default="summary")
    parser.add_argument("--strategy", choices=["fifo", "random", "present"], default="fifo")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--window", type=int, default=100)
    parser.add_argument("--lateness", type=int, default=10)
    args = parser.parse_args()
    plan = Plan(QuerySpec("AB+C", args.window, where=WHERE), SummarySpec(args.size, args.strategy), order="ABC",
                engine=args.engine, attributes=("p",))
    state, seconds = State(), []
    for frame in micro_batches(args.batches, args.batch, args.lateness):
        t0 = time.perf_counter()
        advance(plan, args.lateness, ("p",), ["k"], iter([frame]), state)
        seconds.append(time.perf_counter() - t0)
    step = statistics.median(seconds[1:] or seconds)  # the first builds the engine from nothing
    engine = "exact engine" if args.engine == "exact" else f"summary {args.strategy} of {args.size}"
    print(f"streaming step with where, {engine}: micro-batches of {args.batch:,} events, window {args.window}, "
          f"lateness {args.lateness}: {step * 1000:,.1f} ms per micro-batch (median of {len(seconds) - 1}), "
          f"{args.batch / step:,.0f} events/s")


if __name__ == "__main__":
    main()
