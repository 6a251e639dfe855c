"""Standard MATCH_RECOGNIZE over Structured Streaming: files arriving in steps (rows out of order
within the watermark's delay), several statements over the same stream; once the watermark has
passed every row, the emitted rows equal the batch run of the same statement over the same rows.

Each partition ends with a row whose price is NULL, on which no DEFINE holds: a stream has no
last row, so without it the last match of a partition could wait for the next row for ever.
The rows a batch run gives at that row itself (an unmatched row, an empty match) are not
decided in streaming and are left out of the comparison; partition 0 only moves the watermark."""
from __future__ import annotations

import datetime as dt
import random
import time

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from suse.errors import SqlError  # noqa: E402

SCHEMA = "k int, ts timestamp, price int"
DAY0 = dt.datetime(2020, 1, 1)
V_SHAPE = """SELECT * FROM {src} MATCH_RECOGNIZE(
  PARTITION BY k ORDER BY ts
  MEASURES A.price AS starting_price, LAST(B.price) AS bottom_price, LAST(U.price) AS top_price,
           MATCH_NUMBER() AS n, count(*) AS nrows, sum(B.price) AS fall, FIRST(ts) AS first_day, CLASSIFIER() AS last_label
  ONE ROW PER MATCH
  PATTERN (A B+ C+ D+)
  SUBSET U = (C, D)
  DEFINE B AS price < PREV(price), C AS price > PREV(price) AND price <= A.price, D AS price > PREV(price))"""
ALL_ROWS = """SELECT * FROM {src} MATCH_RECOGNIZE(
  PARTITION BY k ORDER BY ts
  MEASURES RUNNING LAST(price) AS running_price, FINAL LAST(price) AS final_price, CLASSIFIER() AS label,
           count(*) AS so_far, MATCH_NUMBER() AS n, NEXT(price) AS next_price
  ALL ROWS PER MATCH WITH UNMATCHED ROWS
  AFTER MATCH SKIP TO LAST B
  PATTERN (A B+ C)
  DEFINE A AS price IS NOT NULL, B AS price < PREV(price), C AS price > PREV(price))"""
NEXT_ROW = """SELECT * FROM {src} MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts
  MEASURES CLASSIFIER() AS label, MATCH_NUMBER() AS n
  ALL ROWS PER MATCH SHOW EMPTY MATCHES AFTER MATCH SKIP TO NEXT ROW
  PATTERN ((A | B)+? C | B* )
  DEFINE A AS price < 20, B AS price BETWEEN 10 AND 30, C AS price >= 40
  WITHIN INTERVAL '3' DAY)"""
STATEMENTS = {"v_shape": V_SHAPE, "all_rows": ALL_ROWS, "next_row": NEXT_ROW}


def make_rows() -> pd.DataFrame:
    rng = random.Random(28)
    prices = {1: [100, 90, 80, 85, 95, 110, 105, 100, 90, 95, 120], 2: [50, 40, 45, 60]}
    prices.update({k: [rng.randrange(0, 60, 5) for _ in range(rng.randint(4, 14))] for k in (3, 4, 5)})
    rows = []
    for k, ps in prices.items():
        rows += [(k, DAY0 + dt.timedelta(days=d), p) for d, p in enumerate(ps)]
        rows.append((k, DAY0 + dt.timedelta(days=20), None))  # the partition's end
    return pd.DataFrame(rows, columns=["k", "ts", "price"]).astype({"price": "Int64"})  # NULL stays NULL in JSON


def write(step: pd.DataFrame, directory, i):
    out = step.assign(ts=step.ts.dt.strftime("%Y-%m-%dT%H:%M:%S"))
    out.to_json(directory / f"part-{i}.json", orient="records", lines=True)


def keyed(rows) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


def run_stream(spark, text: str, rows: pd.DataFrame, directory, expected: int) -> list[tuple]:
    """The rows ``text`` emits over ``rows`` arriving in three files, once the watermark passed
    them (waiting up to two minutes for ``expected`` rows)."""
    from suse.spark import sql

    src_dir = directory / "in"
    src_dir.mkdir(parents=True)
    spark.readStream.schema(SCHEMA).json(str(src_dir)).withWatermark("ts", "2 days").createOrReplaceTempView("prices_stream")
    name = f"rs_{directory.name}"
    query = (sql(spark, text.format(src="prices_stream")).writeStream.format("memory").queryName(name)
             .outputMode("append").trigger(processingTime="0 seconds").start())
    try:
        # rows arrive in 7-day steps, shuffled within a step: out of order, never behind the watermark
        days = (rows.ts - DAY0).dt.days
        for i in range(3):
            write(rows[(days >= 7 * i) & (days < 7 * i + 7)].sample(frac=1, random_state=i), src_dir, i)
            query.processAllAvailable()
        write(pd.DataFrame({"k": [0], "ts": [DAY0 + dt.timedelta(days=40)], "price": [0]}), src_dir, 99)
        query.processAllAvailable()
        deadline, got = time.monotonic() + 120, []
        while time.monotonic() < deadline:  # the batch that fires the last timers runs after the data's
            got = keyed(spark.sql(f"SELECT * FROM {name} WHERE k <> 0").collect())
            if query.exception() is not None:
                raise query.exception()
            if len(got) >= expected:
                time.sleep(2)  # nothing more may come
                return keyed(spark.sql(f"SELECT * FROM {name} WHERE k <> 0").collect())
            time.sleep(1)
        return got
    finally:
        query.stop()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STATEMENTS))
def test_streaming_rows_equal_the_batch_run(spark, tmp_path, name):
    from suse.spark import sql

    rows = make_rows()
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("prices_batch")
    text = STATEMENTS[name]
    batch = sql(spark, text.format(src="prices_batch")).where("k <> 0")
    end = DAY0 + dt.timedelta(days=20)
    if "ALL ROWS" in text:  # the end rows' own rows: not decided in a stream, or decided as in batch
        batch = batch.where(f"ts < '{end}'")
    want = [r for r in batch.collect()]
    assert len(want) >= 3 and (name != "all_rows" or any(r.label is None for r in want))
    got = run_stream(spark, text, rows, tmp_path / name, len(want))
    if "ALL ROWS" in text:
        got = [r for r in got if r[1] < end]
    assert got == keyed(want)


def test_streaming_refuses_what_it_cannot_decide(spark, tmp_path):
    from suse.spark import sql

    (tmp_path / "in").mkdir()
    stream = spark.readStream.schema(SCHEMA + ", seq int").json(str(tmp_path / "in"))
    stream.createOrReplaceTempView("no_watermark")
    stream.withWatermark("ts", "1 day").createOrReplaceTempView("marked")
    with pytest.raises(SqlError, match="needs an event-time watermark"):
        sql(spark, V_SHAPE.format(src="no_watermark"))
    with pytest.raises(SqlError, match="must be the watermark column ts, ascending; found seq"):
        sql(spark, V_SHAPE.format(src="marked").replace("ORDER BY ts", "ORDER BY seq"))
    with pytest.raises(SqlError, match="found ts DESC"):
        sql(spark, V_SHAPE.format(src="marked").replace("ORDER BY ts", "ORDER BY ts DESC"))
    with pytest.raises(SqlError, match=r"anchor \$"):
        sql(spark, V_SHAPE.format(src="marked").replace("D+)", "D+ $)"))
    with pytest.raises(SqlError, match="never ends in streaming"):
        sql(spark, V_SHAPE.format(src="marked").replace("(A B+ C+ D+)", "(A B+ C+ D+ A*)"))
    with pytest.raises(SqlError, match="'round' is not supported.*PREV or NEXT"):
        sql(spark, V_SHAPE.format(src="marked").replace("price < PREV(price)", "round(price - PREV(price)) > 2"))
    sql(spark, V_SHAPE.format(src="marked").replace("price < PREV(price)", "abs(price - PREV(price)) > 2"))  # the evaluator's
    sql(spark, V_SHAPE.format(src="marked").replace("(A B+ C+ D+)", "(A B+ C+ D+ A*?)"))  # reluctant: accepted
    sql(spark, V_SHAPE.format(src="marked").replace("(A B+ C+ D+)", "(A B+ C+ D+ A*)").replace("DEFINE", "WITHIN INTERVAL '1' DAY DEFINE"))


@pytest.mark.slow
def test_a_restart_from_the_checkpoint_goes_on_where_it_stood(spark, tmp_path):
    """Stopped after the second file and started again on the same checkpoint: the matches that
    straddle the stop come out once, as in the batch run."""
    from suse.spark import sql

    rows = make_rows()
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("prices_batch")
    want = keyed(sql(spark, V_SHAPE.format(src="prices_batch")).where("k <> 0").collect())
    src_dir, out_dir, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src_dir.mkdir()

    def start():
        spark.readStream.schema(SCHEMA).json(str(src_dir)).withWatermark("ts", "2 days").createOrReplaceTempView("prices_stream")
        return (sql(spark, V_SHAPE.format(src="prices_stream")).writeStream.format("parquet").option("path", str(out_dir))
                .option("checkpointLocation", str(ckpt)).trigger(processingTime="0 seconds").start())

    query = start()
    days = (rows.ts - DAY0).dt.days
    try:
        for i in range(3):
            write(rows[(days >= 7 * i) & (days < 7 * i + 7)].sample(frac=1, random_state=i), src_dir, i)
            query.processAllAvailable()
            if i == 1:
                query.stop()
                query = start()
        write(pd.DataFrame({"k": [0], "ts": [DAY0 + dt.timedelta(days=40)], "price": [0]}), src_dir, 99)
        query.processAllAvailable()
        deadline, got = time.monotonic() + 120, []
        while time.monotonic() < deadline and len(got) < len(want):
            time.sleep(1)
            try:
                got = keyed(spark.read.parquet(str(out_dir)).where("k <> 0").collect())
            except Exception:  # noqa: BLE001 - no file yet
                got = []
        time.sleep(2)
        got = keyed(spark.read.parquet(str(out_dir)).where("k <> 0").collect())
    finally:
        query.stop()
    assert got == want


FUNCTIONS = """SELECT * FROM late_stream MATCH_RECOGNIZE(
  PARTITION BY k ORDER BY ts
  MEASURES FIRST(ts) AS start_ts, max_by(ts, price) AS peak_ts, count(DISTINCT price % 10) AS endings,
           max_by(ts, price % 10) AS first_tie_ts
  ONE ROW PER MATCH
  PATTERN (A B+)
  DEFINE B AS abs(price - PREV(price)) <= 10 AND price > PREV(price))"""


@pytest.mark.slow
def test_rows_behind_the_watermark_are_counted_in_the_progress(spark, tmp_path):
    """A row that comes after the watermark passed its time is dropped and counted: the observed
    metric late_rows of the query's progress. The statement also runs max_by, DISTINCT and a
    function of PREV (the evaluator's abs, as a stream has no lag) on a stream."""
    from suse.spark import sql
    from suse.spark.streaming.recognize import METRICS

    src_dir = tmp_path / "in"
    src_dir.mkdir()
    spark.readStream.schema(SCHEMA).json(str(src_dir)).withWatermark("ts", "2 days").createOrReplaceTempView("late_stream")
    query = (sql(spark, FUNCTIONS).writeStream.format("memory").queryName("late_rows").outputMode("append")
             .trigger(processingTime="0 seconds").start())
    day = lambda d: DAY0 + dt.timedelta(days=d)  # noqa: E731
    try:
        prices = [10, 15, 25, 50, 55, 58, 40, None]  # day 7: the partition's end (no condition holds)
        write(pd.DataFrame({"k": 1, "ts": [day(d) for d in range(8)], "price": prices}).astype({"price": "Int64"}), src_dir, 0)
        query.processAllAvailable()  # the watermark is now day 5
        write(pd.DataFrame({"k": [1, 0], "ts": [day(1), day(40)], "price": [99, 0]}), src_dir, 1)  # day 1: late
        query.processAllAvailable()
        deadline, got = time.monotonic() + 60, []
        while time.monotonic() < deadline and len(got) < 2:
            time.sleep(1)
            got = sorted(tuple(r) for r in spark.sql("SELECT * FROM late_rows WHERE k <> 0").collect())
        late = sum(p.observedMetrics[METRICS].late_rows for p in query.recentProgress if METRICS in p.observedMetrics)
    finally:
        query.stop()
    # 10 15 25 (then 50: a rise of 25) and 50 55 58 (then 40 falls); price % 10: 0 5 5 and 0 5 8
    assert got == [(1, day(0), day(2), 2, day(1)), (1, day(3), day(5), 3, day(5))]
    assert late == 1
