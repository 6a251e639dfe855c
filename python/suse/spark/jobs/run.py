"""Run a job described by a job file (``suse run JOB.toml``): load, aggregate, write, report."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

import suse
from suse.errors import InputError, SuseError
from suse.spark.batch.aggregate import aggregate_job
from suse.spark.events.rows import analysing, spark_message
from suse.spark.jobs import datasets
from suse.spark.jobs.config import JobConfig
from suse.spark.jobs.load import check_job
from suse.spark.jobs.sinks import FileSink, Sink
from suse.spark.memory import memory_errors
from suse.spark.session import get_session
from suse.spark.streaming.aggregate import aggregate_stream_job, check_checkpoint, latest


@dataclass
class JobReport:
    output: str
    keys: list[str]
    top: list[dict] = field(default_factory=list)  # the largest partitions, newest row each
    seconds: float = 0.0
    batches: int | None = None  # micro-batches run (streaming)
    dropped: int = 0  # rows with a query character but a NULL or unreadable timestamp
    corrupt: int = 0  # records the reader could not parse (JSON, CSV)


def run_job(cfg: JobConfig, console: Console | None = None) -> JobReport:
    console = console or Console(stderr=True)
    started = time.perf_counter()
    check_job(cfg)  # everything that needs no data fails here, before Spark starts
    with spark_errors(), memory_errors(cfg.input.large_partitions):
        with console.status(f"starting Spark ({cfg.spark.master or 'default master'})"):
            spark = get_session(cfg.spark.master, cfg.spark.app_name, cfg.spark.options)
        run = _stream if cfg.mode == "streaming" else _batch
        report = run(spark, cfg, console, FileSink(cfg.output))
    report.seconds = time.perf_counter() - started
    return report


# --- input -------------------------------------------------------------------------------------


def load_input(spark: SparkSession, cfg: JobConfig, streaming: bool = False) -> DataFrame:
    inp = cfg.input
    if inp.dataset is not None:
        args = {}
        if inp.dataset == "synthetic":
            args = inp.synthetic.model_dump()
            args["alphabet"] = args["alphabet"] or suse.Query(cfg.queries[0].regex, 0).alphabet
        df = datasets.load(spark, inp.dataset, **args)
    else:
        fmt = inp.format or _guess_format(inp.path)
        options = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in inp.options.items()}
        if fmt == "csv":
            # RFC 4180 as `suse exact` reads it: a quote inside a quoted field is doubled ("")
            options = {"header": "true", "inferSchema": "true", "escape": '"', **options}
        reader = spark.read.format(fmt).options(**options)
        if inp.schema_:
            reader = reader.schema(_with_corrupt(spark, fmt, inp.schema_))
        if streaming:
            # A file stream needs its schema up front: take the one given, or the files'.
            schema = _with_corrupt(spark, fmt, inp.schema_ or _catch("input.path", lambda: reader.load(inp.path).schema))
            if cfg.streaming and cfg.streaming.max_files_per_trigger:
                options["maxFilesPerTrigger"] = str(cfg.streaming.max_files_per_trigger)
            df = spark.readStream.format(fmt).options(**options).schema(schema).load(inp.path)
        else:
            df = _catch("input.path", lambda: reader.load(inp.path))
    for name, expression in inp.columns.items():
        df = _catch(f"input.columns.{name}", lambda: _checked(df.withColumn(name, F.expr(expression))))
    if inp.filter:
        df = _catch("input.filter", lambda: _checked(df.where(F.expr(inp.filter))))
    return df


def _with_corrupt(spark: SparkSession, fmt: str, schema):
    """The schema plus the reader's corrupt-record column (JSON, CSV): a line that cannot be
    parsed then lands there and is counted in ``corrupt_records`` instead of vanishing."""
    if fmt not in ("json", "csv"):
        return schema
    name = spark.conf.get("spark.sql.columnNameOfCorruptRecord", "_corrupt_record")
    if isinstance(schema, str):
        from suse.spark.jobs.checks import parse_ddl

        known = parse_ddl(schema) or {}
        return schema if name.lower() in known else f"{schema}, `{name}` STRING"
    if name in schema.fieldNames():
        return schema
    from pyspark.sql import types as T

    return T.StructType([*schema.fields, T.StructField(name, T.StringType())])


def _guess_format(path: str) -> str:
    for fmt in ("parquet", "csv", "json"):
        if path.rstrip("/").endswith("." + fmt):
            return fmt
    return "parquet"


def _checked(df: DataFrame) -> DataFrame:
    df.schema  # analysis happens here: bad SQL fails now, with the key that holds it
    return df


def _catch(key: str, make):
    try:
        with analysing():
            return make()
    except PySparkException as exc:
        raise InputError(f"{key}: {spark_message(exc)}") from None


# --- batch -------------------------------------------------------------------------------------


def _batch(spark: SparkSession, cfg: JobConfig, console: Console, sink: Sink) -> JobReport:
    df = load_input(spark, cfg)
    inp = cfg.input
    results = []
    job = cfg.spec(cfg.queries[0].replicate)
    if job.query_set and len({tuple(q.replicate or ()) for q in cfg.queries}) == 1:
        # One job for the whole set: rows are classified, shuffled and sorted once.
        out = aggregate_job(df, job)
        results.append(out.select("query", *[c for c in out.columns if c != "query"]))
    for q, spec in zip(cfg.queries, job.queries) if not results else ():
        one = dataclasses.replace(cfg.spec(q.replicate), queries=(spec,), query_set=False)
        results.append(aggregate_job(df, one).select(F.lit(q.label).alias("query"), "*"))
    # Queries with aggregate min/max add min/max columns and approximate queries
    # count_by_missing; the others get NULLs there.
    result = functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), results).persist()
    try:
        with spark_progress(spark, console, f"{cfg.name}: running"):
            sink.write(result)
        keys = [f.name for f in result.schema.fields[1 : 1 + len(inp.partition_by)]]
        newest = latest(result, ["query", *keys], by="evaluated_at")
        top = _top(newest, cfg.output.show)
        dropped, corrupt = _counted(newest, by_query=True)
    finally:
        # after a failure the JVM may be gone: the error that ended the job says why
        with contextlib.suppress(Py4JError, PySparkException):
            result.unpersist()
    return JobReport(cfg.output.path, keys, top, dropped=dropped, corrupt=corrupt)


def _counted(newest: DataFrame, by_query: bool = False) -> tuple[int, int]:
    """Rows dropped and corrupt records over all partitions. Every query reads the same
    input but counts only rows with its own characters: report the largest count."""
    sums = [F.sum("dropped_events").alias("d"), F.sum("corrupt_records").alias("c")]
    per_query = newest.groupBy("query").agg(*sums) if by_query else newest.agg(*sums)
    row = per_query.agg(F.max("d").cast("long"), F.max("c").cast("long")).first()
    return (row[0] or 0, row[1] or 0) if row else (0, 0)


def _top(df: DataFrame, n: int) -> list[dict]:
    if n == 0:
        return []
    return [r.asDict() for r in df.drop("elements").orderBy(F.col("count_double").desc()).limit(n).collect()]


# --- streaming ---------------------------------------------------------------------------------


def _stream(spark: SparkSession, cfg: JobConfig, console: Console, sink: Sink) -> JobReport:
    st, inp = cfg.streaming, cfg.input
    assert st is not None  # the config validator guarantees it
    check_checkpoint(st.checkpoint)  # before any Spark work: an old checkpoint is refused
    src = load_input(spark, cfg, streaming=True)
    multi = len(cfg.queries) > 1
    out = aggregate_stream_job(src, cfg.spec(), on_change=st.on_change)
    query = sink.start(out, st.checkpoint, st.trigger)
    batches = _watch(query, console, cfg.name, st.timeout)
    keys = list(inp.partition_by)
    written = sink.read(spark)
    if written is None:  # no input files yet
        return JobReport(cfg.output.path, keys, [], batches=batches)
    newest = latest(written, ["query", *keys] if multi else keys)
    top = _top(newest, cfg.output.show)
    dropped, corrupt = _counted(newest, by_query=multi)
    return JobReport(cfg.output.path, keys, top, batches=batches, dropped=dropped, corrupt=corrupt)


def _watch(query, console: Console, name: str, timeout: float | None) -> int:
    """Wait for a streaming query, showing micro-batches as they finish; Ctrl-C stops it.
    Returns how many micro-batches read input."""
    deadline = None if timeout is None else time.monotonic() + timeout
    name = escape(name)  # the job's name is text, not rich markup
    rows: dict[int, int] = {}  # batch id -> input rows

    def note() -> None:
        for p in query.recentProgress:
            if p["numInputRows"]:
                rows[p["batchId"]] = p["numInputRows"]

    try:
        with console.status(f"{name}: streaming") as status:
            while not query.awaitTermination(0.5):
                note()
                status.update(f"{name}: {len(rows)} micro-batches, {sum(rows.values()):,} rows read")
                if deadline is not None and time.monotonic() > deadline:
                    query.stop()
    except KeyboardInterrupt:
        query.stop()
    if query.exception() is not None:
        raise query.exception()
    note()
    return len(rows)


# --- plumbing ----------------------------------------------------------------------------------


@contextlib.contextmanager
def spark_errors() -> Iterator[None]:
    """Spark failures as InputError with the useful line, not a JVM stack trace. An error
    raised by suse inside a Python worker comes back wrapped; its message is unwrapped."""
    try:
        yield
    except SuseError:
        raise
    except PySparkException as exc:
        text = str(exc)
        inner = re.search(r"suse\.errors\.(?:InputError|QueryError|SuseError): (.+)", text) or re.search(
            r"\[USER_RAISED_EXCEPTION\] suse: (.+?)(?: SQLSTATE: \w+)?$", text, re.MULTILINE
        )  # the second: a check Spark ran itself (raise_error), e.g. a negative value
        raise InputError(inner.group(1).strip() if inner else f"Spark: {spark_message(exc)}") from None


@contextlib.contextmanager
def spark_progress(spark: SparkSession, console: Console, description: str) -> Iterator[None]:
    """A progress bar fed by Spark's status tracker (tasks of the running stages)."""
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),  # job names are text
               TextColumn("{task.completed}/{task.total} tasks"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(description, total=None)

        def poll() -> None:
            while not stop.wait(0.25):
                try:
                    stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
                except (Py4JError, ConnectionError):  # the JVM went away: the job itself reports why
                    return
                stages = [s for s in stages if s is not None]
                if stages:
                    progress.update(
                        task, total=sum(s.numTasks for s in stages),
                        completed=sum(s.numCompletedTasks for s in stages),
                        description=f"{description} (stage {', '.join(str(s.stageId) for s in stages)})",
                    )

        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
