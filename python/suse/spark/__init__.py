"""suse on Apache Spark: batch ``aggregate`` over DataFrames, Structured Streaming with the
per-partition summary kept in Spark state, and jobs described by a TOML file (docs/SPARK.md)."""
from suse.spark.batch import aggregate
from suse.spark.session import get_session

__all__ = ["aggregate", "get_session"]
