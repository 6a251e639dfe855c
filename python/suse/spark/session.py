"""A SparkSession set up for suse."""
from __future__ import annotations

import os
import sys
from typing import Mapping

from pyspark.sql import SparkSession

DEFAULTS = {
    # Workers must run this interpreter (it has suse and pandas); see _python_for_workers.
    "spark.pyspark.python": sys.executable,
    # Date-time strings and NTZ timestamps become epoch seconds in UTC, whatever the host says.
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",  # the CLI draws its own progress
    "spark.ui.enabled": "false",
}


def get_session(
    master: str | None = "local[2]", app_name: str = "suse", options: Mapping[str, str] | None = None
) -> SparkSession:
    """Create (or return the running) SparkSession with suse's defaults and ``options``.

    Options that Spark fixes at start-up (master, memory) only apply to a new session."""
    _python_for_workers()
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    conf = dict(DEFAULTS)
    if master and master.startswith("local"):
        conf["spark.sql.shuffle.partitions"] = str(2 * (os.cpu_count() or 1))
    conf.update({k: str(v) for k, v in (options or {}).items()})
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for key, value in (options or {}).items():  # runtime SQL options reach a reused session too
        if spark.conf.isModifiable(key):
            spark.conf.set(key, str(value))
    return spark


def _python_for_workers() -> None:
    # pyspark started from a plain Python process (not spark-submit) reads the worker
    # interpreter from PYSPARK_PYTHON only; the spark.pyspark.python option alone leaves
    # workers on the system `python3`. Respect an explicit setting (e.g. a packed venv).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
