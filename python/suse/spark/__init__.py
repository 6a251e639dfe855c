"""suse on Apache Spark: batch ``aggregate`` over DataFrames, ``aggregate_stream`` for
Structured Streaming with each partition's summary kept in Spark state, and jobs described
by a TOML file (``suse run``). See docs/SPARK.md."""
from suse.spark.batch import aggregate
from suse.spark.config import JobConfig, load_config
from suse.spark.jobs import run_job
from suse.spark.memory import memory_errors
from suse.spark.session import get_session
from suse.spark.streaming import aggregate_stream, check_checkpoint, latest
from suse.spark.recognize import sql
from suse.spark.udtf import register
from suse.spark.workers import check_workers

__all__ = ["JobConfig", "aggregate", "aggregate_stream", "check_checkpoint", "check_workers", "get_session", "latest", "load_config", "memory_errors", "register", "run_job", "sql"]
