"""A Spark job that ran out of memory, as a ``suse.errors.LimitError`` that says what to change.

The gathered layout (chosen when the largest partition looks small enough for the heap, or
with ``large_partitions=False``) holds each partition's events in one
executor's memory. A partition too large for the heap ends in ``java.lang.OutOfMemoryError``;
in local mode that error stops the JVM itself (exit code 52), so the action that ran the job
raises a raw ``Py4JJavaError`` (whose text names the OutOfMemoryError) or, when the JVM is
already gone, a lost connection (``ConnectionRefusedError``, ``Py4JError``). ``memory_errors()`` turns any of these into one error naming
``large_partitions`` and the memory settings; other failures pass through unchanged.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Iterator

from suse.errors import LimitError, exception_text

# Events of one partition the gathered layout holds per GiB of heap (measured with a value
# column, docs/SPARK.md "How it runs"): the message repeats it.
EVENTS_PER_GIB = "about 3.5 million"

_JVM_OOM_EXIT = 52  # SparkExitCode.OOM: the JVM's handler exits with it after an OutOfMemoryError
_MARKERS = (
    "java.lang.OutOfMemoryError",
    "SparkOutOfMemoryError",
    "exited with code 52",  # an executor lost on a cluster (that wording is not tested here)
)


def memory_error(exc: BaseException, large_partitions: bool = False) -> LimitError | None:
    """The LimitError for ``exc`` if it comes from a JVM out of memory, else None.

    ``large_partitions``: whether the job already used the streamed layout (then only the
    memory settings can help)."""
    if not _out_of_memory(exc):
        return None
    layout = (
        "" if large_partitions else
        "The gathered layout holds each partition's events in one executor's memory "
        f"({EVENTS_PER_GIB} events per GiB of heap): for partitions larger than that set "
        "large_partitions=True (in a job file: [input] large_partitions = true), which sorts and "
        "streams them instead. "
    )
    return LimitError(
        "Spark ran out of memory (java.lang.OutOfMemoryError) and stopped the job. " + layout +
        ("Give" if large_partitions else "Or give") + " Spark more memory: spark.executor.memory, or spark.driver.memory with a local "
        "master (set when the session starts; [spark.options] in a job file). A session whose "
        "JVM died of it cannot run further jobs: create a new one."
    )


@contextlib.contextmanager
def memory_errors(large_partitions: bool = False) -> Iterator[None]:
    """Run Spark actions (``write``, ``collect``, ...) on suse's results; an out-of-memory
    failure of the job becomes a ``suse.errors.LimitError`` saying what to change."""
    # py4j's records of a lost JVM are left out while the action runs (the action says it
    # once); what the process had before is put back, so the command line's stays in place
    py4j, root = logging.getLogger("py4j"), logging.getLogger()
    level, added = py4j.level, _not_from_py4j not in root.filters
    quiet_py4j_logging()
    quiet_accumulator_servers()
    try:
        yield
    except Exception as exc:
        error = memory_error(exc, large_partitions)
        if error is None:
            raise
        raise error from None
    finally:
        py4j.setLevel(level)
        if added:
            root.removeFilter(_not_from_py4j)


def _not_from_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def _out_of_memory(exc: BaseException) -> bool:
    text = exception_text(exc)
    if text is not None and any(marker in text for marker in _MARKERS):
        return True
    # The local JVM exited of it while this call waited: all that is seen here is that the
    # context or the connection to the JVM went away (or, for a Py4JJavaError, that its text
    # can no longer be read from the JVM). Its exit code tells why.
    lost = text is None or isinstance(exc, ConnectionError) or type(exc).__name__ in ("Py4JError", "Py4JNetworkError") or (
        "SparkContext was shut down" in text)
    return lost and _jvm_exit_code() == _JVM_OOM_EXIT


def quiet_py4j_logging() -> None:
    """For a program that reports Spark's failures itself (the command line): py4j logs each
    call that failed because the JVM went away, with a traceback, on the root logger; the
    program's own error says it once, so those records are left out for the process."""
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    root = logging.getLogger()
    if _not_from_py4j not in root.filters:
        root.addFilter(_not_from_py4j)


def _jvm_exit_code() -> int | None:
    try:
        from pyspark import SparkContext

        proc = getattr(SparkContext._gateway, "proc", None)  # the JVM pyspark started, if it did
        if proc is None:
            return None
        return proc.wait(timeout=5)  # exiting after an OutOfMemoryError takes a moment
    except Exception:  # still running (another failure), or no gateway at all
        return None


def quiet_accumulator_servers() -> None:
    """pyspark's accumulator server prints a traceback (EOFError) from its own thread when the
    JVM dies: the action waiting on the JVM says why, once, so that one is left out.

    Installed once for the process, not around each action: the server's thread may see the
    closed connection after the action has already raised."""
    try:
        from pyspark import accumulators
    except ImportError:
        return
    for name in ("AccumulatorTCPServer", "AccumulatorUnixServer"):
        server = getattr(accumulators, name, None)
        if server is None or server.handle_error in _QUIET_HANDLERS:
            continue
        server.handle_error = _quiet(server.handle_error)
        _QUIET_HANDLERS.add(server.handle_error)


def _quiet(original):
    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (EOFError, ConnectionError)):  # the JVM went away
            original(self, request, client_address)
    return handle_error


_QUIET_HANDLERS: set = set()
