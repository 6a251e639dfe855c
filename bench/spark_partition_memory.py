"""How many events of ONE partition the gathered layout holds per GiB of heap.

Each size runs in a fresh process (a local[2] session whose JVM gets ``--heap``), so that an
out-of-memory failure, which stops that JVM, does not end the measurement. One partition of
N events (timestamp = index, a value column, three characters), `A(B|C)*C`, written to the
no-op sink; prints per size whether it ran, its seconds and events/s, and with
``--large-partitions`` the streamed layout instead.

    python bench/spark_partition_memory.py [--heap 1g] [--events 5000000 10000000] [--large-partitions]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time


def one(events: int, heap: str, large: bool) -> None:
    from pyspark.sql import functions as F

    from suse.spark import aggregate, get_session
    from suse.spark.memory import memory_errors

    spark = get_session("local[2]", "partition-memory", {"spark.driver.memory": heap})
    df = spark.range(events).select(F.lit("p").alias("k"), F.col("id").alias("t"), (F.col("id") % 9).alias("x"),
                                    (F.col("id") % 5).alias("v"))
    out = aggregate(df, query="A(B|C)*C", window=15, characters={"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"},
                    timestamp="t", partition_by="k", value="v", summary_size=5, large_partitions=large)
    started = time.perf_counter()
    with memory_errors(large):
        out.write.format("noop").mode("overwrite").save()
    print(f"{time.perf_counter() - started:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heap", default="1g", help="spark.driver.memory of each run (local mode: the executors' heap)")
    ap.add_argument("--events", type=int, nargs="+", default=[5_000_000, 10_000_000])
    ap.add_argument("--large-partitions", action="store_true")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a single run, in the child process
    args = ap.parse_args()
    if args.one:
        return one(args.one, args.heap, args.large_partitions)
    layout = "streamed" if args.large_partitions else "gathered"
    for n in args.events:
        cmd = [sys.executable, __file__, "--one", str(n), "--heap", args.heap]
        proc = subprocess.run(cmd + (["--large-partitions"] if args.large_partitions else []),
                              capture_output=True, text=True)
        if proc.returncode == 0:
            seconds = float(proc.stdout.split()[-1])
            print(f"{layout}, heap {args.heap}, {n:,} events in one partition: ran in {seconds:.1f} s "
                  f"({n / seconds:,.0f} events/s)", flush=True)
        else:
            last = (proc.stderr.strip().splitlines() or ["?"])[-1]
            print(f"{layout}, heap {args.heap}, {n:,} events in one partition: FAILED: {last[:200]}", flush=True)


if __name__ == "__main__":
    main()
