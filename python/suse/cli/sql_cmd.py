"""`suse sql "SELECT ... MATCH_RECOGNIZE (...)"`: a statement run on a local Spark session."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.table import Table
from rich.text import Text

from suse.cli.app import Command, app, err_console, friendly_errors, optional_imports, print_error, stdout_console
from suse.errors import InputError, SqlError

_BUILT_IN = ("flights", "stocks")
_FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json"}


@app.command("sql", cls=Command)
@friendly_errors
def sql_command(
    statement: str = typer.Argument(..., metavar="STATEMENT", help="A MATCH_RECOGNIZE statement (docs/SPARK.md, 'Spark SQL'); '-' reads it from standard input."),
    table: List[str] = typer.Option([], "--table", "-t", metavar="NAME=PATH", help="Make a file or directory (parquet, csv, json) available as table NAME; repeatable. The datasets flights and stocks are built in."),
    output: Optional[Path] = typer.Option(None, help="Write the result here (parquet) instead of only showing it."),
    show: int = typer.Option(20, help="Rows to show."),
    master: Optional[str] = typer.Option(None, help="Spark master (default local[2])."),
) -> None:
    """Run a MATCH_RECOGNIZE-style statement with suse and show (or write) the result."""
    text = sys.stdin.read() if statement == "-" else statement
    try:
        _run(text, table, output, show, master)
    except SqlError as exc:  # one line: where, and what
        print_error(str(exc))
        raise typer.Exit(2) from None


def _run(text: str, tables: list[str], output: Optional[Path], show: int, master: Optional[str]) -> None:
    from suse.spark.sql.front import parse

    statement = parse(text)  # a mistake in the statement costs no Spark start-up
    sources = {}
    for spec in tables:
        name, sep, path = spec.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise InputError(f"--table {spec!r}: expected NAME=PATH")
        if not Path(path).exists():
            raise InputError(f"--table {name}: {path!r} does not exist")
        sources[name.strip()] = Path(path)
    with optional_imports("sql", "spark"):
        from suse.spark import get_session
        from suse.spark import sql as run_sql
        from suse.spark.jobs.datasets import load
    spark = get_session(master, "suse-sql")
    for name, path in sources.items():
        _reader(spark, path).createOrReplaceTempView(name)
    wanted = statement.source.lower()
    if not statement.source_is_query and wanted in _BUILT_IN and wanted not in {n.lower() for n in sources}:
        load(spark, wanted).createOrReplaceTempView(wanted)
    result = run_sql(spark, text)
    if output is not None:
        result.write.mode("overwrite").parquet(str(output))
        result = spark.read.parquet(str(output))
    rows = result.limit(show).collect()
    out = stdout_console()
    grid = Table(show_header=True)
    for c in result.columns:
        grid.add_column(c, no_wrap=True)
    for r in rows:
        grid.add_row(*[Text(_cell(v)) for v in r])
    out.print(grid)
    if output is not None:
        out.print(f"output: {output}", markup=False)
    err_console.file.flush()


def _reader(spark, path: Path):
    suffix = path.suffix.lower() if path.is_file() else next(
        (p.suffix.lower() for p in sorted(path.iterdir()) if p.suffix.lower() in _FORMATS), ".parquet")
    fmt = _FORMATS.get(suffix)
    if fmt is None:
        raise InputError(f"cannot tell the format of {str(path)!r}: expected .parquet, .csv or .json")
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", True).option("inferSchema", True).option("escape", '"')  # RFC 4180
    return reader.load(str(path))


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):  # elements: (variable, time, value) triples
        return json.dumps([list(v) if isinstance(v, tuple) else v for v in value], default=str)
    return str(value)
