"""Where a job's rows go: a `Sink` writes a batch result, starts a stream's writer, and reads
back what was written (the closing table of `suse run`). `FileSink` is the `[output]` table:
parquet, CSV or JSON files. Another destination is one more class with these three methods
(Structured Streaming's `foreachBatch` reaches any system Spark has no file format for)."""
from __future__ import annotations

from typing import Optional, Protocol

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from suse.spark.jobs.config import OutputConfig

#: Columns a CSV file reads back as strings, with their types.
_TYPED = (("events", "long"), ("late_events", "long"), ("count_double", "double"), ("dropped_events", "long"),
          ("corrupt_records", "long"))


class Sink(Protocol):
    def write(self, df: DataFrame) -> None:
        """Write a batch job's rows (runs the job)."""

    def start(self, df: DataFrame, checkpoint: str, trigger: str) -> StreamingQuery:
        """Start writing a streaming job's rows in append mode."""

    def read(self, spark: SparkSession) -> Optional[DataFrame]:
        """What has been written, or None when nothing has been yet."""


class FileSink:
    """Files in `output.path` in `output.format`; CSV gets a header and JSON text for arrays."""

    def __init__(self, output: OutputConfig):
        self.path, self.format, self.mode = output.path, output.format, output.mode

    def _flat(self, df: DataFrame) -> DataFrame:
        # CSV has no arrays: the retained elements (and count_by_missing) become JSON strings.
        if self.format != "csv":
            return df
        for name in ("elements", "count_by_missing"):
            if name in df.columns:
                df = df.withColumn(name, F.to_json(name))
        return df

    def write(self, df: DataFrame) -> None:
        writer = self._flat(df).write.mode(self.mode).format(self.format)
        writer.option("header", "true").save(self.path)  # header: CSV only; other formats ignore it

    def start(self, df: DataFrame, checkpoint: str, trigger: str) -> StreamingQuery:
        writer = (self._flat(df).writeStream.format(self.format).option("path", self.path)
                  .option("checkpointLocation", checkpoint).option("header", "true").outputMode("append"))
        writer = writer.trigger(availableNow=True) if trigger == "available_now" else writer.trigger(processingTime=trigger)
        return writer.start()

    def read(self, spark: SparkSession) -> Optional[DataFrame]:
        reader = spark.read.format(self.format).option("header", "true")
        try:
            written = reader.load(self.path)
            written.schema  # noqa: B018  (resolves the files: fails when none were written yet)
        except PySparkException:
            return None
        for name, kind in _TYPED:
            if name in written.columns:
                written = written.withColumn(name, F.col(name).cast(kind))
        return written
