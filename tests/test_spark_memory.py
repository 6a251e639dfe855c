"""A partition too large for the gathered layout: Spark's JVM runs out of memory. The user must
get one suse error that names ``large_partitions`` and the memory settings, not a JVM trace
("This is a bug in suse") or a lost connection."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from helpers import run  # noqa: E402
from suse.errors import LimitError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.batch import layout  # noqa: E402
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


def test_the_accumulator_server_stays_quiet_when_the_jvm_goes_away_after_the_action(capsys):
    # pyspark's accumulator thread polls once a second, so it may see the JVM's closed
    # connection after the failing action has already raised and left memory_errors
    from pyspark.accumulators import AccumulatorTCPServer

    with pytest.raises(ValueError), memory_errors():
        raise ValueError("another failure")
    server = AccumulatorTCPServer.__new__(AccumulatorTCPServer)
    try:
        raise EOFError
    except EOFError:
        server.handle_error(None, ("localhost", 1))
    assert capsys.readouterr().err == ""
    try:
        raise KeyError("a real bug in the server")
    except KeyError:
        server.handle_error(None, ("localhost", 1))
    assert "KeyError" in capsys.readouterr().err


def test_a_java_error_whose_text_the_dead_jvm_cannot_give_is_recognised(monkeypatch):
    # once the JVM is gone, a Py4JJavaError cannot fetch its own text from it: the JVM's exit
    # code (52 after an OutOfMemoryError) decides
    from suse.spark import memory

    class Py4JJavaError(Exception):
        def __str__(self):
            raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(memory, "_jvm_exit_code", lambda: 52)
    assert isinstance(memory_error(Py4JJavaError()), LimitError)
    monkeypatch.setattr(memory, "_jvm_exit_code", lambda: None)
    assert memory_error(Py4JJavaError()) is None
    assert memory.exception_text(Py4JJavaError()) is None


def test_the_command_line_leaves_out_py4j_records_of_a_lost_jvm():
    import logging

    from suse.spark import memory

    root = logging.getLogger()
    try:
        memory.quiet_py4j_logging()
        memory.quiet_py4j_logging()  # once is enough: no second filter
        assert root.filters.count(memory._not_from_py4j) == 1
        lost = logging.LogRecord("root", logging.ERROR, "/x/site-packages/py4j/clientserver.py", 1,
                                 "Exception while sending command.", None, None)
        ours = logging.LogRecord("root", logging.ERROR, "/x/suse/cli/app.py", 1, "kept", None, None)
        assert not root.filter(lost) and root.filter(ours)
        with memory_errors():  # an action leaves the command line's filter in place
            pass
        assert not root.filter(lost)
    finally:
        root.removeFilter(memory._not_from_py4j)


def test_the_layout_is_chosen_from_the_largest_partition(spark, monkeypatch):
    rows = [("big", t, "abc"[t % 3]) for t in range(60)] + [("small", t, "ac"[t % 2]) for t in range(6)]
    df = spark.createDataFrame(rows, "k string, t long, c string")
    common = dict(characters={c: f"c = '{c}'" for c in "abc"}, timestamp="t", partition_by="k", summary_size=4)
    chosen = []
    original = layout._too_large_to_gather
    monkeypatch.setattr(layout, "_too_large_to_gather", lambda events: chosen.append(original(events)) or chosen[-1])

    def rows_of(**kw):
        return sorted(aggregate(df, "a(b|c)*c", 8, **common, **kw).drop("elements").collect())

    assert layout.gathered_limit(spark) > 1_000_000  # the test session's heap holds far more than 60 events
    gathered = rows_of()
    monkeypatch.setattr(layout, "GATHERED_EVENTS_PER_GIB", 1)  # now no partition fits: stream them
    streamed = rows_of()
    assert chosen == [False, True]
    assert streamed == gathered == rows_of(large_partitions=True)
    rows_of(large_partitions=False)  # given: no estimate
    assert chosen == [False, True]


def test_memory_settings_are_read_as_spark_reads_them():
    assert layout._memory_setting("4g") == 4 << 30
    assert layout._memory_setting("512m") == layout._memory_setting("512") == 512 << 20
    assert layout._memory_setting("2048k") == 2 << 20


JOB = """
name = "one big partition"
[input]
path = "{path}"
timestamp = "t"
partition_by = ["k"]
value = "v"
{layout}
[characters]
A = "x < 3"
B = "x >= 3 AND x < 6"
C = "x >= 6"
[query]
regex = "A(B|C)*C"
window = 15
[summary]
size = 5
seed = 1
[output]
path = "{out}"
show = 0
[spark]
master = "local[1]"
[spark.options]
# a 200 MB JVM (Spark refuses to start below 450 MB unless told the memory it may assume)
"spark.driver.memory" = "200m"
"spark.testing.memory" = "471859200"
"spark.sql.shuffle.partitions" = "1"
"""


def _one_partition(tmp_path, n: int, layout_line: str):
    rng = np.random.default_rng(0)
    events = pd.DataFrame({"k": "p", "t": np.arange(n), "x": rng.integers(0, 9, n), "v": rng.integers(0, 5, n)})
    events.to_parquet(tmp_path / "events.parquet")
    job = tmp_path / "job.toml"
    job.write_text(JOB.format(path=tmp_path / "events.parquet", out=tmp_path / "out", layout=layout_line))
    return events, job


@pytest.mark.slow
def test_suse_run_streams_a_partition_too_large_to_gather(tmp_path):
    # 800,000 events: more than the 200 MB heap is trusted with (about 470,000), and more
    # than the gathered layout could hold (it runs out of memory at 1,500,000 below)
    events, job = _one_partition(tmp_path, 800_000, "")
    proc = run("run", str(job), timeout=900)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_parquet(tmp_path / "out").sort_values("evaluated_at").iloc[-1]
    chars = np.where(events.x < 3, "A", np.where(events.x < 6, "B", "C"))
    summary = suse.Summary(suse.Query("A(B|C)*C", 15), 5, seed=1)
    summary.extend(list(chars), events.t.to_numpy(), events.v.to_numpy())
    assert out["count"] == str(summary.result().count)


@pytest.mark.slow
def test_suse_run_reports_a_partition_too_large_for_the_heap(tmp_path):
    _, job = _one_partition(tmp_path, 1_500_000, "large_partitions = false")  # gathered, as told
    proc = run("run", str(job), timeout=600)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "out of memory" in errors[0] and "[input] large_partitions = true" in errors[0]
    assert "spark.driver.memory" in errors[0]
    assert "Traceback" not in proc.stderr and "bug in suse" not in proc.stderr
    assert "OutOfMemoryError: Java heap space" not in proc.stderr  # the JVM's own stack trace
