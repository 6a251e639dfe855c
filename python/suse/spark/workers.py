"""Can a session's Python workers run suse? Checked once per session, before any job.

Spark's Python workers start the interpreter named by ``PYSPARK_PYTHON`` when the
SparkContext was created (default: ``python3`` on the PATH). A script run as
``.venv/bin/python script.py`` without an activated venv that builds its own session gets
workers on the system Python, which lacks suse; without this check the first job fails
half a minute later with a worker traceback ending in ``No module named 'suse'``.
"""
from __future__ import annotations

import re
import sys

from pyspark.sql import SparkSession

import suse
from suse.errors import SparkSetupError

_passed: set[str] = set()  # applicationIds whose workers imported this suse version

_FIX = (
    "Workers run the interpreter named by the PYSPARK_PYTHON environment variable as it was when "
    "the session was created. Fix: stop this session and create it with suse.spark.get_session(), "
    "which points the workers at this Python; or set PYSPARK_PYTHON={python} (the Python running "
    "suse {version}) before creating the SparkSession, e.g. os.environ['PYSPARK_PYTHON'] = "
    "sys.executable; on a cluster, ship an environment (docs/SPARK.md, 'Running on a cluster')."
)


def _probe():
    # Built inside a function so that cloudpickle sends the code by value: a worker that
    # cannot import suse must still be able to run it.
    def probe(_):
        import sys as _sys

        try:
            import suse as _suse  # noqa: I001  (suse first: the error names what users must fix)
            import suse._core  # noqa: F401
            import numpy  # noqa: F401
            import pandas  # noqa: F401
            import pyarrow  # noqa: F401
        except Exception as exc:  # ImportError, or a broken native module
            yield (_sys.executable, None, f"{type(exc).__name__}: {exc}")
            return
        yield (_sys.executable, _suse.__version__, None)

    return probe


def check_workers(spark: SparkSession) -> None:
    """Raise SparkSetupError, saying how to fix it, unless every Python worker of ``spark``
    imports suse (with its native core, numpy, pandas and pyarrow) at this version. Runs a
    tiny job the first time per session; later calls return at once."""
    try:
        sc = spark.sparkContext
        app = sc.applicationId
    except Exception:  # Spark Connect has no SparkContext: probe through a DataFrame instead
        _check_connect(spark)
        return
    if app in _passed:
        return
    fix = _FIX.format(python=sys.executable, version=suse.__version__)
    n = max(1, sc.defaultParallelism)
    try:
        found = sc.parallelize(range(n), n).mapPartitions(_probe()).collect()
    except Exception as exc:  # the workers did not even start
        raise SparkSetupError(
            f"Spark's Python workers ({sc.pythonExec}) failed to start: {_reason(exc)}. {fix}"
        ) from None
    for python, version, problem in found:
        if problem is not None:
            raise SparkSetupError(f"Spark's Python workers run {python}, which cannot import suse ({problem}). {fix}")
        if version != suse.__version__:
            raise SparkSetupError(
                f"Spark's Python workers run {python} with suse {version}, but this is suse "
                f"{suse.__version__}. {fix}"
            )
    _passed.add(app)


def _check_connect(spark: SparkSession) -> None:
    """The probe as a DataFrame job, for Spark Connect sessions (the server's workers)."""
    key = f"connect:{spark.conf.get('spark.app.id', '')}:{getattr(spark, 'session_id', '')}"
    if key in _passed:
        return
    probe = _probe()

    def as_frames(batches):
        import pandas as pd

        for _ in batches:
            rows = list(probe(None))
            yield pd.DataFrame(rows, columns=["python", "version", "problem"])

    fix = _FIX.format(python=sys.executable, version=suse.__version__)
    try:
        found = spark.range(2, numPartitions=2).mapInPandas(
            as_frames, "python string, version string, problem string").collect()
    except Exception as exc:
        raise SparkSetupError(f"the Spark Connect server's Python workers failed: {_reason(exc)}. {fix}") from None
    for python, version, problem in found:
        if problem is not None or version != suse.__version__:
            why = problem or f"it has suse {version}, this is suse {suse.__version__}"
            raise SparkSetupError(f"the Spark Connect server's Python workers run {python}, which cannot run this suse ({why}). {fix}")
    _passed.add(key)


_REASONS = [  # most telling first
    re.compile(r'Cannot run program "[^"]*"[^\n]*'),
    re.compile(r"\[PYTHON_VERSION_MISMATCH\][^\n]*"),
    re.compile(r"\b\w+Error: [^\n]+"),
]


def _reason(exc: Exception) -> str:
    text = str(exc)
    for pattern in _REASONS:
        m = pattern.search(text)
        if m:
            return m.group(0).strip().rstrip(".")
    return (text.strip().splitlines() or [type(exc).__name__])[0]
