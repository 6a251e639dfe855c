"""The Spark SQL fronts against `aggregate` on the same job: the `suse_aggregate` table
function (an Arrow UDTF: `eval` gets Arrow batches, `terminate` runs each partition) and `suse.spark.sql`
(MATCH_RECOGNIZE, which runs `aggregate` itself), on the flights data or a synthetic stream.

    python bench/spark_sql.py [--data flights|synthetic] [--repeat 3] [--master local[2]]
                              [--events 1000000 --partitions 10000]   (synthetic only)

Each side is written to Spark's no-op sink from a cached input; JVM start-up and a warm-up
run are not counted; the best of --repeat runs is printed with events/s and the ratio.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from suse.spark import aggregate, get_session, register
from suse.spark import sql as suse_sql


def flights(spark):
    from suse.spark.jobs.datasets import load

    df = load(spark, "flights").where("tailnum IS NOT NULL")
    table = df.selectExpr(
        "tailnum", "time_hour",
        "CASE WHEN dep_time IS NULL THEN 'C' WHEN dep_delay >= 60 THEN 'D' WHEN arr_delay >= 30 THEN 'A' END AS c",
    )
    job = dict(query="D(D|A)*C", window="2 days", summary_size=24, key="tailnum", time="time_hour",
               within="INTERVAL '2' DAY")
    define = "C AS dep_time IS NULL, D AS dep_delay >= 60, A AS arr_delay >= 30"
    return df, table, job, define


def synthetic(spark, events: int, partitions: int):
    """The paper's workload characters (a(b*c)*d(e|f)g*, Zipf s=2 over the sorted letters),
    timestamp = index within the partition, |S| = tau = 100."""
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefg"))
    p = 1.0 / np.arange(1, 8) ** 2
    per = events // partitions
    pdf = pd.DataFrame({
        "k": np.repeat(np.arange(partitions), per),
        "t": np.tile(np.arange(per), partitions),
        "c": letters[rng.choice(7, per * partitions, p=p / p.sum())],
    })
    df = spark.createDataFrame(pdf)
    job = dict(query="a(b*c)*d(e|f)g*", window=100, summary_size=100, key="k", time="t", within="100")
    define = ", ".join(f"{x} AS c = '{x}'" for x in "abcdefg")
    return df, df, job, define


def timed(label: str, frame, repeat: int, events: int) -> float:
    frame.write.format("noop").mode("overwrite").save()  # warm-up
    best = min(_once(frame) for _ in range(repeat))
    print(f"{label:<32} {best:7.2f} s  {events / best:12,.0f} events/s", flush=True)
    return best


def _once(frame) -> float:
    t0 = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=["flights", "synthetic"], default="flights")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    spark = get_session(args.master, "suse-bench-sql")
    register(spark)
    if args.data == "flights":
        source, table, job, define = flights(spark)
    else:
        source, table, job, define = synthetic(spark, args.events, args.partitions)
    source, table = source.cache(), table.cache()
    n = table.count()
    source.count()
    table.createOrReplaceTempView("bench_table")
    source.createOrReplaceTempView("bench_source")
    events = table.where(f"c IN ({', '.join(repr(x) for x in sorted(set(job['query']) & set('abcdefgACD')))})").count()
    print(f"data={args.data} rows={n:,} query events={events:,} query={job['query']} window={job['window']} "
          f"summary={job['summary_size']} master={args.master}")

    base = timed("aggregate", aggregate(
        table, job["query"], job["window"], "c", job["time"], job["key"], summary_size=job["summary_size"]), args.repeat, events)
    window = job["window"] if isinstance(job["window"], int) else f"'{job['window']}'"
    udtf = timed("suse_aggregate (UDTF)", spark.sql(
        f"SELECT * FROM suse_aggregate(TABLE(bench_table) PARTITION BY {job['key']} ORDER BY {job['time']}, "
        f"query => '{job['query']}', window => {window}, summary_size => {job['summary_size']})"), args.repeat, events)
    pattern = " ".join(job["query"]).replace("( ", "(").replace(" )", ")").replace(" *", "*").replace(" |", " |")
    mr = timed("suse.spark.sql (MATCH_RECOGNIZE)", suse_sql(spark, f"""
        SELECT * FROM bench_source MATCH_RECOGNIZE (
          PARTITION BY {job['key']} ORDER BY {job['time']}
          PATTERN ({pattern}) DEFINE {define}
          WITHIN {job['within']} SUMMARY {job['summary_size']})"""), args.repeat, events)
    print(f"ratio UDTF / aggregate: {udtf / base:.2f}   MATCH_RECOGNIZE / aggregate: {mr / base:.2f}")


if __name__ == "__main__":
    main()
