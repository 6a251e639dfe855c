"""Spark as users start it: a session whose Python workers cannot import
suse, or import another version, is refused before any job with a message that says how to
fix it, by ``aggregate`` and ``aggregate_stream`` alike."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("pyspark")

import suse  # noqa: E402
from suse.spark import (
    check_workers,  # noqa: E402
    workers,  # noqa: E402
)

# Two sessions in one process, one after the other: workers without suse, then workers
# with a suse of another version. The session is built the way users build it, not with
# get_session.
SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import pandas as pd
    from pyspark.sql import SparkSession
    import suse
    from suse.spark import aggregate, aggregate_stream

    for python in sys.argv[1:]:
        os.environ["PYSPARK_PYTHON"] = python
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
        df = spark.createDataFrame(pd.DataFrame({"t": [1, 2], "x": [0, 5]}))
        stream = spark.readStream.format("rate").load()
        calls = [
            lambda: aggregate(df, "AB", 10, {"A": "x < 3", "B": "x >= 3"}, "t"),
            lambda: aggregate_stream(stream, "AB", 10, {"A": "value < 3", "B": "value >= 3"}, "value"),
        ]
        for call in calls:
            started = time.perf_counter()
            try:
                call()
                print("NO ERROR")
            except suse.SparkSetupError as exc:
                print(f"{time.perf_counter() - started:.1f}s {exc}")
        spark.stop()
    """
)


def _venv(path, fake_version: str | None = None) -> str:
    """A Python like this one but without suse (or with a stub claiming another version)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    if fake_version:
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        # The probe also imports numpy, pandas and pyarrow: borrow this environment's copies.
        ours = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        stub = os.path.join(site, "suse")
        os.makedirs(stub)
        with open(os.path.join(stub, "__init__.py"), "w") as f:
            f.write(f"__version__ = {fake_version!r}\n")
        with open(os.path.join(stub, "_core.py"), "w") as f:
            f.write("")
        with open(os.path.join(site, "borrowed.pth"), "w") as f:
            f.write(ours + "\n")
    return str(python)


def test_workers_without_suse_with_another_version_or_not_starting_are_refused_before_any_job(tmp_path):
    bare = _venv(tmp_path / "bare")
    other = _venv(tmp_path / "other", fake_version="0.0.1-other")
    missing = str(tmp_path / "no-such-python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "VIRTUAL_ENV")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, bare, other, missing], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 6 and "NO ERROR" not in proc.stdout, proc.stdout
    for line in lines[:2]:  # aggregate, aggregate_stream on workers without suse
        assert f"run {bare}, which cannot import suse (ModuleNotFoundError: No module named 'suse')" in line
    for line in lines[2:4]:  # ... with another suse
        assert f"run {other} with suse 0.0.1-other, but this is suse {suse.__version__}" in line
    for line in lines[4:]:  # ... with an interpreter that does not exist
        assert f"Spark's Python workers ({missing}) failed to start: Cannot run program" in line
    for line in lines:
        assert "PYSPARK_PYTHON" in line and sys.executable in line and "get_session()" in line
        assert float(line.split("s ", 1)[0]) < 30  # a probe job, not a failed real job with retries


def test_probe_runs_once_per_session(spark, monkeypatch):
    check_workers(spark)  # the shared session's workers run this Python: passes
    assert spark.sparkContext.applicationId in workers._passed

    def no_jobs(*args, **kwargs):
        raise AssertionError("the probe ran again")

    monkeypatch.setattr(spark.sparkContext, "parallelize", no_jobs)
    started = time.perf_counter()
    check_workers(spark)
    assert time.perf_counter() - started < 0.01
