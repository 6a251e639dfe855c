"""suse on Apache Spark: batch ``aggregate`` over DataFrames, ``aggregate_stream`` for
Structured Streaming with each partition's summary kept in Spark state, and jobs described
by a TOML file (``suse run``). See docs/SPARK.md."""
from suse.spark.batch.aggregate import aggregate
from suse.spark.jobs.config import JobConfig
from suse.spark.jobs.load import load_config
from suse.spark.jobs.run import run_job
from suse.spark.memory import memory_errors
from suse.spark.session import get_session
from suse.spark.sql.front import sql
from suse.spark.sql.udtf import register
from suse.spark.streaming.aggregate import aggregate_stream, check_checkpoint, latest
from suse.spark.workers import check_workers

__all__ = ["JobConfig", "aggregate", "aggregate_stream", "check_checkpoint", "check_workers", "get_session", "latest", "load_config", "memory_errors", "register", "run_job", "sql"]
