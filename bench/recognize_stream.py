"""The streaming step of standard MATCH_RECOGNIZE (suse.recognize.runner.advance) against the
batch body (runner.run) over the same partition, without Spark.

    python bench/recognize_stream.py [--rows 200000] [--step 1000] [--repeat 3]

One partition of pseudo-random prices; the "V shape" (A B+ C+, B falling, C rising, ONE ROW PER
MATCH). The DEFINE flags are precomputed columns as Spark would give them (batch) and, for the
streaming side, the same: the row-local PREV conditions then run in the evaluator only on
Spark, so this measures the matcher's stepping and the buffer's slicing. Streaming makes
``--step`` more rows final per call, as micro-batches do; the best of --repeat runs is printed
as rows/s, with the number of matches (streaming has one fewer when the partition's last match
could still grow with a next row: it stays pending, as it would in a live stream).
"""
from __future__ import annotations

import argparse
import random
import time

import pyarrow as pa

from suse.recognize.expressions import Agg, Nav
from suse.recognize.matcher import Cursor, Skip, compile_pattern
from suse.recognize.pattern import Repeat, Seq, Var
from suse.recognize.runner import ERROR, KIND, Condition, Plan, Resume, advance, run


def make(rows: int) -> tuple[Plan, pa.Table]:
    rng = random.Random(1)
    prices = [rng.randint(0, 100) for _ in range(rows)]
    falls = [i > 0 and prices[i] < prices[i - 1] for i in range(rows)]
    rises = [i > 0 and prices[i] > prices[i - 1] for i in range(rows)]
    table = pa.table({"price": pa.array(prices, pa.int64()), "d_B": falls, "d_C": rises})
    node = Seq((Var("A", 0), Repeat(Var("B", 0), 1, None, True), Repeat(Var("C", 0), 1, None, True)))
    leaves = (Nav("`price`", "A"), Agg("count", None, None))
    schema = pa.schema([pa.field("_suse_l0", pa.int64()), pa.field("_suse_l1", pa.int64()),
                        pa.field(KIND, pa.int32()), pa.field(ERROR, pa.string())])
    plan = Plan(keys=(), program=compile_pattern(node, ["A", "B", "C"]), members={v: frozenset([i]) for i, v in enumerate("ABC")},
                conditions=(Condition(), Condition(column="d_B"), Condition(column="d_C")), skip=Skip(), all_rows=False,
                empty="show", leaves=leaves, expr_columns={"`price`": "price"}, passthrough=(), schema=schema)
    return plan, table


def batch(plan: Plan, table: pa.Table) -> int:
    return sum(b.num_rows for b in run(plan, iter(table.to_batches())))


def streaming(plan: Plan, table: pa.Table, step: int) -> int:
    buffer, base, cursor, emitted = table.slice(0, 0), 0, Cursor(), 0
    for final in range(step, table.num_rows + step, step):
        final = min(final, table.num_rows)
        buffer = table.slice(base, final - base)
        local = Cursor(cursor.pos - base, cursor.covered - base, cursor.number)
        out, drop = advance(plan, buffer, final - base, Resume(local, base), None)
        emitted += sum(b.num_rows for b in out)
        cursor = Cursor(base + local.pos, base + local.covered, local.number)
        base += drop
    return emitted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--step", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    plan, table = make(args.rows)
    for name, fn in (("batch (runner.run)", lambda: batch(plan, table)),
                     (f"streaming (advance, {args.step} rows final per step)", lambda: streaming(plan, table, args.step))):
        best, matches = float("inf"), 0
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            matches = fn()
            best = min(best, time.perf_counter() - t0)
        print(f"{name}: {args.rows} rows, {matches} matches, {best:.2f} s, {args.rows / best:,.0f} rows/s")


if __name__ == "__main__":
    main()
