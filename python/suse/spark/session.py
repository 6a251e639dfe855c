"""A SparkSession set up for suse."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Iterator, Mapping

from pyspark.sql import SparkSession

from suse.spark.memory import quiet_accumulator_servers

DEFAULT_MASTER = "local[2]"
DEFAULTS = {
    # Date-time strings and NTZ timestamps become epoch seconds in UTC, whatever the host says.
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",  # the CLI draws its own progress
    "spark.ui.enabled": "false",
    # pandas 2.x warns about a concat inside pyspark's own streaming worker code; not ours to fix.
    "spark.executorEnv.PYTHONWARNINGS": "ignore:The behavior of DataFrame concatenation:FutureWarning",
    # The Python workers' batch arrays (a few MB each) come from a heap kept between batches
    # rather than fresh mappings the kernel must zero page by page: a fifth less worker CPU.
    "spark.executorEnv.MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "spark.executorEnv.MALLOC_TRIM_THRESHOLD_": str(128 << 20),
}


def get_session(
    master: str | None = None, app_name: str = "suse", options: Mapping[str, object] | None = None,
    connect: bool = False,
) -> SparkSession:
    """Create (or return the running) SparkSession with suse's defaults and ``options``.

    ``master`` None means: what spark-submit was given, else ``local[2]``. Options that Spark
    fixes at start-up (master, memory) only apply to a new session.

    ``connect=True`` returns a Spark Connect session instead: for a ``local[...]`` master,
    pyspark starts a Connect server in a JVM of its own and this process talks to it over
    gRPC (needs ``pip install 'suse[connect]'``); ``master`` may also be a Connect URL,
    ``sc://host:15002``, whose server must have suse on its Python workers."""
    options = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (options or {}).items()}
    python = _python_for_workers(options.get("spark.pyspark.python"))
    builder = SparkSession.builder.appName(app_name)
    if master is None and not _under_spark_submit():
        master = DEFAULT_MASTER
    if connect:
        builder = builder.remote(master or DEFAULT_MASTER)
    elif master:
        builder = builder.master(master)
    conf = {**DEFAULTS, "spark.pyspark.python": python, "spark.driver.extraJavaOptions": _QUIET_JVM}
    if master and master.startswith("local"):
        conf["spark.sql.shuffle.partitions"] = str(2 * (os.cpu_count() or 1))
    conf.update(options)
    if connect and not (master or DEFAULT_MASTER).startswith("local"):
        conf = dict(options)  # a remote server has its own static configuration
    if connect and (master or DEFAULT_MASTER).startswith("local"):
        spark = _local_connect(master or DEFAULT_MASTER, {**conf, "spark.app.name": app_name})
    else:
        for key, value in conf.items():
            builder = builder.config(key, value)
        with _interrupt_after_start():
            spark = builder.getOrCreate()
    if not connect:
        spark.sparkContext.setLogLevel("ERROR")
        quiet_accumulator_servers()  # its thread's traceback when the JVM dies: the action says why
    for key, value in options.items():  # runtime options reach a reused session too
        if spark.conf.isModifiable(key):
            spark.conf.set(key, value)
    return spark


# Applies when this process starts the JVM; options given by the user replace it. Arrow's
# bounds checks (a reference count read per value) cost a tenth of the JVM's time reading the
# results of the Python workers; the batches come from pyarrow, whole and well formed.
_QUIET_JVM = (f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties').as_uri()} "
              "-Darrow.enable_unsafe_memory_access=true")


@contextlib.contextmanager
def _interrupt_after_start() -> Iterator[None]:
    """Ctrl-C while the JVM starts takes effect once it has: pyspark, interrupted while it waits
    for the JVM's connection file, deletes the file's folder and the starting JVM prints a
    Java stack trace; a running JVM is stopped cleanly by the interrupt's handlers instead."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    asked: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: asked.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if asked:
        raise KeyboardInterrupt


def _local_connect(master: str, conf: dict[str, str]) -> SparkSession:
    """A local Connect server on a free port (or ``spark.connect.grpc.binding.port``) and a
    client of it. pyspark's own ``remote("local[...]")`` starts the server but then connects
    to port 15002, which may be another process's server."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    running = SparkSession._instantiatedSession  # the server's JVM, started by an earlier call
    if running is None or running._sc._jsc is None:
        opts = dict(conf)
        if "spark.connect.grpc.binding.port" not in opts:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                opts["spark.connect.grpc.binding.port"] = str(probe.getsockname()[1])
        os.environ["SPARK_LOCAL_REMOTE"] = "1"  # as pyspark's local start sets it
        RemoteSession._start_connect_server(master, opts)
        running = SparkSession._instantiatedSession
    service = getattr(running._jvm, "org.apache.spark.sql.connect.service.SparkConnectService$")
    port = int(getattr(service, "MODULE$").localPort())
    runtime = {c._1() for c in running._jvm.PythonSQLUtils.listRuntimeSQLConfigs()}
    opts = {k: v for k, v in conf.items() if k in runtime}  # the client may set only these, as in pyspark
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark.sql.functions now build Connect columns
    return RemoteSession.builder.remote(f"sc://localhost:{port}").config(map=opts).getOrCreate()


def _under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit started the JVM and then us


def _python_for_workers(configured: str | None) -> str:
    # pyspark started from a plain Python process (not spark-submit) gives workers the
    # interpreter named by PYSPARK_PYTHON only: the spark.pyspark.python option alone leaves
    # them on the system `python3`, which lacks suse. An explicit PYSPARK_PYTHON wins (e.g.
    # ./environment/bin/python of a packed venv), then the option, then this interpreter.
    python = os.environ.get("PYSPARK_PYTHON") or configured or sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    return python
