"""Standard MATCH_RECOGNIZE (`suse.spark.sql`, ONE ROW PER MATCH) against the bare shuffle and
sort of the same rows.

    python bench/spark_recognize.py [--rows 1000000] [--partitions 10000] [--repeat 2] [--master local[2]]
                                    [--statement v_shape|cascade]

The statements: the "V shape" over prices (a row, falling prices, rising prices; prices are
pseudo-random, xxhash64 of the row id, so V shapes of every length occur), and a flights
cascade (an aircraft's on-time departure, then at least two delayed ones, each delayed at least
as long as the one before; delays pseudo-random, one in eight NULL). Each side is written
to Spark's no-op sink from a cached input; JVM start-up and a warm-up run are not counted; the
best of --repeat runs is printed with rows/s and the ratio. The baseline is
`repartition(ticker).sortWithinPartitions(ticker, t)`: what any per-partition ordered pass costs.
"""
from __future__ import annotations

import argparse
import os
import time

from pyspark.sql import functions as F

from suse.spark import get_session
from suse.spark import sql as suse_sql

STATEMENT = """SELECT * FROM bench_prices MATCH_RECOGNIZE (
  PARTITION BY ticker ORDER BY t
  MEASURES A.price AS start_price, LAST(B.price) AS bottom_price, LAST(C.price) AS top_price,
           count(*) AS length
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A B+ C+)
  DEFINE B AS price < PREV(price), C AS price > PREV(price))"""

CASCADE = """SELECT * FROM bench_flights MATCH_RECOGNIZE (
  PARTITION BY tailnum ORDER BY t
  MEASURES FIRST(t) AS on_time_at, LAST(D.t) AS last_delay_at, LAST(D.dep_delay) AS worst, count(D.*) AS delays
  ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
  PATTERN (A D{2,})
  DEFINE A AS dep_delay <= 15, D AS dep_delay > 15 AND dep_delay >= PREV(dep_delay))"""


def cpu_seconds(root: int) -> float:
    """User + system CPU time of process ``root`` and every process below it, with their
    finished children (Linux /proc)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    total = 0.0
    for pid, t in times.items():
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        total += t if p == root else 0.0
    return total


def timed(label: str, df, repeat: int, rows: int, jvm: int) -> tuple[float, float]:
    df.write.format("noop").mode("overwrite").save()  # warm-up
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        start, cpu = time.perf_counter(), cpu_seconds(jvm)
        df.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, cpu_seconds(jvm) - cpu)
    print(f"{label:<48} {best:8.2f} s   {rows / best:12,.0f} rows/s   CPU {best_cpu:7.2f} s")
    return best, best_cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--statement", choices=["v_shape", "cascade"], default="v_shape")
    args = ap.parse_args()
    spark = get_session(args.master, "bench-recognize", {"spark.sql.shuffle.partitions": "8"})
    df = spark.range(args.rows).select(
        (F.col("id") % args.partitions).alias("ticker"),
        (F.col("id") / args.partitions).cast("long").alias("t"),
        (F.abs(F.xxhash64("id")) % 1000).alias("price"),
    ).cache()
    df.count()
    df.createOrReplaceTempView("bench_prices")
    key, value, statement = "ticker", "price", STATEMENT
    if args.statement == "cascade":
        df = df.select(F.col("ticker").alias("tailnum"), "t",
                       F.when(F.col("price") % 8 == 0, F.lit(None)).otherwise(F.col("price") % 120 - 20).alias("dep_delay"))
        df.createOrReplaceTempView("bench_flights")
        key, value, statement = "tailnum", "dep_delay", CASCADE
    print(f"{args.statement}: {args.rows:,} rows in {args.partitions:,} partitions, master {args.master}")
    jvm = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
    base = timed("bare shuffle + sort (repartition, sortWithinPartitions)",
                 df.repartition(key).sortWithinPartitions(key, "t"), args.repeat, args.rows, jvm)
    lag = timed("shuffle + sort + lag window (PREV in Spark)",
                df.withColumn("p", F.expr(f"lag({value}) OVER (PARTITION BY {key} ORDER BY t)"))
                .repartition(key).sortWithinPartitions(key, "t"), args.repeat, args.rows, jvm)
    out = suse_sql(spark, statement)
    matches = out.count()
    mr = timed("suse.spark.sql standard MATCH_RECOGNIZE", out, args.repeat, args.rows, jvm)
    print(f"matches: {matches:,}")
    print(f"ratio MATCH_RECOGNIZE / bare shuffle+sort: {mr[0] / base[0]:.2f} (CPU {mr[1] / base[1]:.2f})   "
          f"/ shuffle+sort+lag: {mr[0] / lag[0]:.2f} (CPU {mr[1] / lag[1]:.2f})")


if __name__ == "__main__":
    main()
