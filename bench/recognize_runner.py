"""The per-partition side of standard MATCH_RECOGNIZE without Spark's workers: the body
`suse.spark.sql` hands to `mapInArrow` (`suse.recognize.runner.run`: matching and MEASURES),
timed on the driver over the rows Spark sorted for it.

    python bench/recognize_runner.py [--rows 200000] [--partitions 2000] [--repeat 5] [--profile]

The statement and the prices are those of bench/spark_recognize.py (the V shape, ONE ROW PER
MATCH). The sorted input is collected once as Arrow batches; each run feeds them to the same
function Spark's Python workers would call. Prints the best and the median rows/s of --repeat
runs and the least CPU time of one (steadier than the wall clock on a shared machine);
--profile adds one run under cProfile (its 18 most expensive functions).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time

from pyspark.sql import functions as F
from pyspark.sql.classic.dataframe import DataFrame

from spark_recognize import STATEMENT
from suse.spark import get_session
from suse.spark import sql as suse_sql


def captured_body(spark, statement: str):
    """(the sorted input as Arrow batches, the mapInArrow function) of ``statement``."""
    seen = {}
    original = DataFrame.mapInArrow

    def capture(self, func, schema, *args, **kwargs):
        seen["df"], seen["func"] = self, func
        return original(self, func, schema, *args, **kwargs)

    DataFrame.mapInArrow = capture
    try:
        suse_sql(spark, statement)
    finally:
        DataFrame.mapInArrow = original
    return list(seen["df"]._collect_as_arrow()), seen["func"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    spark = get_session("local[2]", "bench-recognize-runner", {"spark.sql.shuffle.partitions": "2"})
    spark.range(args.rows).select(
        (F.col("id") % args.partitions).alias("ticker"),
        (F.col("id") / args.partitions).cast("long").alias("t"),
        (F.abs(F.xxhash64("id")) % 1000).alias("price"),
    ).createOrReplaceTempView("bench_prices")
    batches, body = captured_body(spark, STATEMENT)
    times, cpu, out_rows = [], [], 0
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        out_rows = sum(b.num_rows for b in body(iter(batches)))
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    print(f"{args.rows:,} rows in {args.partitions:,} partitions, {len(batches)} Arrow batches, {out_rows:,} matches")
    print(f"run(): best {args.rows / min(times):,.0f} rows/s, median {args.rows / statistics.median(times):,.0f} rows/s "
          f"({args.repeat} runs); CPU time best {min(cpu):.3f} s ({args.rows / min(cpu):,.0f} rows per CPU second)")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(lambda: list(body(iter(batches))))
        pstats.Stats(profile).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
