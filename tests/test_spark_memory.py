"""A partition too large for the gathered layout: Spark's JVM runs out of memory. The user must
get one suse error that names ``large_partitions`` and the memory settings, not a JVM trace
("This is a bug in suse") or a lost connection."""
from __future__ import annotations

import time

import pytest

pytest.importorskip("pyspark")

from suse.errors import LimitError  # noqa: E402
from suse.spark.memory import memory_error, memory_errors  # noqa: E402

# The first lines of what a gathered job over 1,500,000 events of one partition raised in a
# JVM of 200 MB (a Py4JJavaError from DataFrameWriter.save).
SPARK_OOM = (
    "An error occurred while calling o363.save.\n: org.apache.spark.SparkException: Job aborted due to stage "
    "failure: Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 in stage 3.0 (TID 4) "
    "(192.0.2.2 executor driver): java.lang.OutOfMemoryError: Java heap space"
)


def test_an_out_of_memory_failure_names_the_layout_and_the_memory_settings():
    error = memory_error(RuntimeError(SPARK_OOM))
    assert isinstance(error, LimitError)
    text = str(error)
    assert "large_partitions=True" in text and "[input] large_partitions = true" in text
    assert "spark.executor.memory" in text and "spark.driver.memory" in text
    # the streamed layout already runs: only memory can help, so only memory is named
    assert "large_partitions=True" not in str(memory_error(RuntimeError(SPARK_OOM), large_partitions=True))
    with pytest.raises(LimitError, match="large_partitions"):
        with memory_errors():
            raise RuntimeError(SPARK_OOM)


def test_other_failures_pass_through_at_once():
    started = time.monotonic()
    with pytest.raises(ValueError, match="something else"):
        with memory_errors():
            raise ValueError("something else")
    # a lost connection to a JVM that did not exit of an out-of-memory error is not one
    assert memory_error(ConnectionRefusedError(111, "Connection refused")) is None
    assert time.monotonic() - started < 10  # the JVM's exit code is awaited only when it is gone
