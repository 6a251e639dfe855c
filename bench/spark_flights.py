"""Spark job vs the same engine run directly, on the flights job (examples/flights.toml).

Both sides run the same plan (query, window, summary, evaluation triggers, exact counts)
over the same per-aircraft event streams. The characters are computed once by Spark and
collected for the direct run, which then loops over the partitions in one Python process.
The Spark side is the full `aggregate` job (classification, shuffle, sort, engine, result
batches) on the cached input, written to Spark's no-op sink; the direct side produces the
same result table (one Arrow table of the same columns) from the engine's rows. JVM start-up
(the session, and JIT warm-up: the first runs of a job are slower) is not counted: the job
runs `--warmup` times before it is timed. Bar: Spark costs at most 2x the direct run.

    python bench/spark_flights.py [--job examples/flights.toml] [--master local[2]] [--repeat 3]
                                  [--size N] [--window W]

Any single-query job file works with --job (e.g. examples/synthetic.toml, where the engine
rather than Spark's fixed per-job cost dominates).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import pyarrow as pa

from suse.spark.batch.layout import run
from suse.spark.events.rows import RANK, TIE, TS, VALUE
from suse.spark.jobs.load import load_config
from suse.spark.jobs.run import load_input
from suse.spark.prepare import prepare
from suse.spark.runners.plan import ARROW_TYPES, evaluate_partition, result_columns
from suse.spark.session import get_session

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--job", default=str(ROOT / "examples" / "flights.toml"))
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per side; the best is reported")
    ap.add_argument("--warmup", type=int, default=3, help="untimed Spark runs first (JIT warm-up)")
    ap.add_argument("--size", type=int, help="override summary.size")
    ap.add_argument("--window", help="override query.window (an integer or a duration)")
    args = ap.parse_args()
    cfg = load_config(args.job)
    (q,) = cfg.queries
    if args.size:
        cfg.summary.size = args.size
    if args.window:
        q.window = int(args.window) if args.window.isdigit() else args.window

    t0 = time.perf_counter()
    spark = get_session(args.master, "suse-bench", cfg.spark.options)
    session_s = time.perf_counter() - t0

    df = load_input(spark, cfg).cache()
    rows = df.count()
    cfg.summary.probabilities = "online"  # the job's own (estimated) probabilities are not the point here
    events, plan = prepare(df, cfg.spec(q.replicate))

    # The same events for the direct run: characters computed once, sorted like the job sorts.
    keys = list(events.keys)
    pdf = events.usable.toPandas().sort_values([*keys, TS, RANK, TIE], kind="stable")
    n = len(pdf)
    groups = [
        (key, plan.chars(g[RANK].to_numpy()), g[TS].to_numpy(), g[VALUE].to_numpy() if events.has_value else None)
        for key, g in pdf.groupby(keys, sort=False)
    ]

    def direct() -> int:
        keys_out, rows = [], []
        for key, c, t, v in groups:
            for row in evaluate_partition(plan, key, c, t, v):
                keys_out.append(key if isinstance(key, tuple) else (key,))
                rows.append(row)
        table = {k: [kk[i] for kk in keys_out] for i, k in enumerate(keys)}
        table.update(result_columns(rows, plan.exact))
        return pa.table({k: pa.array(v, type=ARROW_TYPES.get(k)) for k, v in table.items()}).num_rows

    def spark_job() -> None:
        run(events, plan).write.format("noop").mode("overwrite").save()

    for _ in range(max(1, args.warmup)):  # Python workers start, code is generated, the JIT warms up
        spark_job()
    direct_rows = direct()
    spark_s = min(_timed(spark_job) for _ in range(args.repeat))
    direct_s = min(_timed(direct) for _ in range(args.repeat))

    print(f"job: {args.job}")
    summ, ev = cfg.summary, cfg.evaluate
    print(f"query {q.regex!r}, window {q.window!r}, summary size {summ.size}, strategy {summ.strategy}, "
          f"evaluate {ev.at!r}, exact {ev.exact}")
    print(f"input rows {rows:,}; events with a query character {n:,}; partitions {len(groups):,}; "
          f"result rows {direct_rows:,}")
    print(f"master {args.master}; Spark session start {session_s:.1f} s and {args.warmup} warm-up runs (not counted); "
          f"best of {args.repeat}")
    print(f"spark  job    {spark_s:7.2f} s  {n / spark_s:12,.0f} events/s")
    print(f"direct engine {direct_s:7.2f} s  {n / direct_s:12,.0f} events/s")
    ratio = spark_s / direct_s
    print(f"ratio spark/direct {ratio:.2f} (bar: <= 2.00) {'OK' if ratio <= 2 else 'OVER'}")


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
