"""The Spark tests again, on a Spark Connect session.

One process cannot hold a classic session (the shared `spark` fixture) and a Connect one, and
pyspark's functions build classic or Connect columns by process, so the subset runs in a
pytest subprocess whose `spark` fixture is a Connect session (SUSE_TEST_SPARK_CONNECT=1 in
tests/conftest.py). One Connect server for the whole subset."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("grpc", reason="Spark Connect needs the connect extras: pip install 'suse[connect]'")

TESTS = Path(__file__).parent
SUBSET = [  # batch, streaming (restart from a checkpoint), the SQL fronts, and bad input
    "test_spark_batch.py",
    "test_spark_streaming.py",
    "test_spark_stream_due.py",
    "test_spark_sql_udtf.py",
    "test_spark_sql_statement.py::test_statement_equals_aggregate",
    "test_spark_sql_statement.py::test_prev_becomes_lag_and_select_list",
    "test_spark_sql_statement.py::test_spark_errors_point_at_their_clause",
    "test_spark_recognize.py::test_v_shape_one_row_per_match",
    "test_spark_recognize.py::test_runtime_errors_are_spark_errors_with_the_partition",
]


@pytest.mark.slow
def test_spark_suites_pass_on_spark_connect(tmp_path):
    env = {**os.environ, "SUSE_TEST_SPARK_CONNECT": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t"),
         *[str(TESTS / t) for t in SUBSET]],
        capture_output=True, text=True, env=env, timeout=1500, cwd=TESTS.parent,
    )
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "passed" in summary and "skipped" not in summary and "deselected" not in summary, summary


@pytest.mark.slow
def test_local_connect_session_talks_to_its_own_server(tmp_path):
    # Port 15002 (pyspark's default) held by someone else: the session must still reach the
    # server it started (pyspark's own local start would connect to 15002).
    script = """
import socket
from suse.spark import get_session
squatter = socket.socket()
try:
    squatter.bind(("0.0.0.0", 15002))  # bound, not listening: a client that tries 15002 is refused
except OSError:
    pass  # already held by another process, as on a shared machine
spark = get_session("local[1]", "suse-port-test", connect=True)
port = int(spark.conf.get("spark.connect.grpc.binding.port"))
print("PORT", port, spark.range(7).count())
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "SPARK_TESTING"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("PORT")][0]
    port, count = map(int, line.split()[1:])
    assert port != 15002 and count == 7
