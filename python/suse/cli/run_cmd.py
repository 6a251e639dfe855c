"""`suse run JOB.toml`: a batch or streaming Spark job described by a job file."""
from __future__ import annotations

import contextlib
import datetime as dt
import warnings
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from suse.cli.app import Command, app, err_console, friendly_errors, optional_imports, stdout_console
from suse.errors import SuseWarning


@app.command("run", cls=Command)
@friendly_errors
def run(
    job: Path = typer.Argument(..., metavar="JOB", help="Job file (TOML); see docs/SPARK.md and examples/."),
    master: Optional[str] = typer.Option(None, help="Spark master, overriding spark.master (e.g. local[4])."),
    output: Optional[str] = typer.Option(None, help="Output path, overriding output.path."),
) -> None:
    """Run a batch or streaming Spark job described by JOB (a TOML file)."""
    with optional_imports("run", "spark"):
        from suse.spark.jobs.load import load_config
        from suse.spark.jobs.run import run_job
    cfg = load_config(job)
    if master:
        cfg.spark.master = master
    if output:
        cfg.output.path = output
    with _suse_warnings_on(err_console):
        report = run_job(cfg, err_console)
    out = stdout_console()
    if report.top:
        table = Table(title=Text(f"{cfg.name}: largest partitions"), title_justify="left")
        columns = [c for c in report.top[0] if c in _SHOWN or c in report.keys or c == "query"]
        if len(cfg.queries) == 1 and "query" in columns:
            columns.remove("query")
        for c in columns:
            table.add_column(c, justify="right" if c in _NUMERIC else "left", no_wrap=True)
        for row in report.top:
            table.add_row(*[Text(_cell(row[c])) for c in columns])  # Text: partition keys are data, not markup
        out.print(table)
    if report.dropped or report.corrupt:
        err_console.print(
            Text("warning: ", style="bold yellow")
            + Text(f"{report.dropped:,} rows with a NULL or unreadable timestamp were dropped and "
                   f"{report.corrupt:,} corrupt input records skipped; per partition: columns "
                   f"dropped_events, corrupt_records"),
            highlight=False,
        )
    extra = f", {report.batches} micro-batches" if report.batches is not None else ""
    out.print(f"output: {report.output} ({cfg.output.format}{extra}, {report.seconds:.1f} s)", markup=False)


@contextlib.contextmanager
def _suse_warnings_on(console: Console) -> Iterator[None]:
    """Print suse's warnings (a query letter no event can get, ...) as `warning: ...` lines
    as they occur; other libraries' warnings keep their usual treatment."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", SuseWarning)
        default = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, SuseWarning):
                console.print(Text("warning: ", style="bold yellow") + Text(str(message)), highlight=False)
            else:
                default(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


_SHOWN = ("evaluated_at", "count", "exact_count", "detected_count", "events", "late_events")
_NUMERIC = ("count", "exact_count", "detected_count", "avg", "events", "late_events")


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
