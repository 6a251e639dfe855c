"""The `suse` command line: one typer app; each command lives in its own module."""
from __future__ import annotations

import functools
import os
import sys
from typing import Callable, TypeVar

import typer
from rich.console import Console

from suse.errors import QueryError, SuseError

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Aggregate regular-expression subsequence matches over event streams.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True, soft_wrap=True)


def _show_version(value: bool) -> None:
    if value:
        from suse import __version__

        typer.echo(f"suse {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True, help="Show the version and exit."),
) -> None:
    """Aggregate regular-expression subsequence matches over event streams."""

F = TypeVar("F", bound=Callable[..., object])


def friendly_errors(func: F) -> F:
    """Turn suse errors into a clear message and exit code 2 instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except QueryError as exc:
            err_console.print(f"[bold red]query error:[/] {exc.message} (position {exc.position})")
            err_console.print(exc.caret(), markup=False, highlight=False)
            raise typer.Exit(2) from None
        except SuseError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", markup=True, highlight=False)
            raise typer.Exit(2) from None
        except FileNotFoundError as exc:
            err_console.print(f"[bold red]error:[/] no such file: {exc.filename}")
            raise typer.Exit(2) from None
        except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug of ours: say so plainly; SUSE_DEBUG=1 shows the traceback
            if os.environ.get("SUSE_DEBUG"):
                raise
            err_console.print(
                f"[bold red]internal error:[/] {type(exc).__name__}: {exc}\n"
                "This is a bug in suse; rerun with SUSE_DEBUG=1 for the traceback and report it.",
                highlight=False,
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> None:
    from suse.cli import commands  # noqa: F401  (registers the commands on `app`)

    app(args=argv if argv is not None else sys.argv[1:], prog_name="suse")
