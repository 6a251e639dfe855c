"""The `suse` command line: one typer app; each command lives in its own module.

Every failure ends in one line on standard error and exit code 2 (bad input, including bad
options) or 1 (a bug of ours, with a request to report it); never a traceback. Nothing the
user typed or supplied is read as rich markup.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import os
import sys
import typing
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperArgument, TyperCommand

from suse.errors import ConditionError, InputError, InternalError, QueryError, SuseError, exception_text

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Aggregate regular-expression subsequence matches over event streams.",
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class _PlainArgument(TyperArgument):
    """Arguments shown as `QUERY` / `[FILE]`, not `{QUERY}` / `QUERY <str>`."""

    def _usage_display_name(self) -> str:
        return self.display_name_raw if self.required else f"[{self.display_name_raw}]"

    def display_type(self, ctx) -> str:
        return ""


class Command(TyperCommand):
    """The class of every `suse` command (`@app.command(..., cls=Command)`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for param in self.params:
            if type(param) is TyperArgument:
                param.__class__ = _PlainArgument


err_console = Console(stderr=True, soft_wrap=True, highlight=False, emoji=False)


def stdout_console() -> Console:
    """Console for results. Piped output is not cut to 80 columns: tables keep their width."""
    console = Console(highlight=False, soft_wrap=True, emoji=False)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=True, emoji=False, width=10_000)
    return console


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


def one_line(message: str) -> str:
    """Messages with one problem per line (job files) joined into one line."""
    parts = [p.strip() for p in str(message).splitlines() if p.strip()]
    if len(parts) <= 1:
        return parts[0] if parts else ""
    head, rest = parts[0], "; ".join(parts[1:])
    return f"{head} {rest}" if head.endswith(":") else f"{head}; {rest}"


def read_text_file(path: Path, what: str) -> str:
    """A small input file the CLI reads whole (a leading BOM is dropped); an unreadable one is
    an InputError naming ``what`` it was."""
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, ValueError) as exc:  # (ValueError: not UTF-8, or a NUL in the name)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read {what} {str(path)!r}: {reason}") from None


def print_error(message: str, label: str = "error") -> None:
    # Text, not a markup string: a message may quote '[/x]' or 'data[old].csv' from the input.
    err_console.print(Text.assemble((f"{label}:", "bold red"), " ", one_line(message)))


def _quiet_broken_pipe() -> NoReturn:
    """The reader went away (`suse ... | head`): stop quietly, like Unix tools (128 + SIGPIPE)."""
    try:  # later flushes (at exit) must not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (in-process runs)
        pass
    raise SystemExit(141)


def options_command(name: str, options: type) -> Callable[[Callable[[Any], None]], Callable[..., None]]:
    """Register a command whose options are the fields of the dataclass `options` (their
    defaults are the typer Argument/Option objects): typer reads them from the signature built
    here, and the decorated body receives them as one object."""
    hints = typing.get_type_hints(options)
    signature = inspect.Signature([
        inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=f.default, annotation=hints[f.name])
        for f in dataclasses.fields(options)
    ])

    def register(body: Callable[[Any], None]) -> Callable[..., None]:
        def command(**given: Any) -> None:
            body(options(**given))

        command.__signature__ = signature  # type: ignore[attr-defined]
        command.__name__, command.__doc__ = body.__name__, body.__doc__
        return app.command(name, cls=Command)(friendly_errors(command))

    return register


def friendly_errors(func: F) -> F:
    """Turn suse errors into a clear message and exit code 2 instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ConditionError as exc:  # one line: the condition is short, its position is enough
            print_error(f"{exc.message} (position {exc.position} of {exc.query!r})", "query error")
            raise typer.Exit(2) from None
        except QueryError as exc:
            print_error(f"{exc.message} (position {exc.position})", "query error")
            err_console.print(Text(exc.caret()))
            raise typer.Exit(2) from None
        except InternalError as exc:  # the kernel's own check failed: a bug, not bad input
            _report_bug(exc)
        except SuseError as exc:
            print_error(str(exc))
            raise typer.Exit(2) from None
        except BrokenPipeError:
            _quiet_broken_pipe()
        except OSError as exc:  # a file we were pointed at: missing, a directory, unreadable
            name = exc.filename if exc.filename is not None else "input"
            print_error(f"cannot read {str(name)!r}: {exc.strerror or exc}")
            raise typer.Exit(2) from None
        except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug of ours: say so plainly; SUSE_DEBUG=1 shows the traceback
            _report_bug(exc)

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def optional_imports(command: str, extras: str) -> Iterator[None]:
    """Around a command's imports of an optional part (Spark, the experiments), which only
    the commands using it load: a missing package is one line naming the extra to install.
    With Spark, py4j's logging of a lost JVM is quieted: the command's own error reports it once."""
    try:
        yield
    except ModuleNotFoundError as exc:
        raise InputError(f"`suse {command}` needs {exc.name}: pip install 'suse[{extras}]'") from None
    if "spark" in extras.split(","):
        from suse.spark.memory import quiet_py4j_logging

        quiet_py4j_logging()


def _report_bug(exc: Exception) -> NoReturn:
    """Exit code 1 and one line asking for a report (docs/CLI.md); SUSE_DEBUG=1 re-raises."""
    if os.environ.get("SUSE_DEBUG"):
        raise exc
    text = exception_text(exc)
    print_error(
        f"{type(exc).__name__}: {'(its message could not be read)' if text is None else text}. This is a bug in "
        "suse; rerun with SUSE_DEBUG=1 "
        "for the traceback and report it.",
        "internal error",
    )
    raise typer.Exit(1) from None


def _usage_error(exc: typer.TyperException) -> int:
    """Option-parser errors as one line, without the validation library's wording."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # bare `suse` or `suse run`: show the help
        exc.show()  # type: ignore[attr-defined]  # click's NoArgsIsHelpError, a TyperException subclass
        return 2
    ctx = getattr(exc, "ctx", None)
    # click lists choices one per line ("Choose from:\n\tsuse,\n\tpresent, ..."): one line here
    message = " ".join(exc.format_message().replace("Value error, ", "").split())
    hint = f" (see '{ctx.command_path} -h')" if ctx is not None else ""
    print_error(message.rstrip(".") + hint)
    return getattr(exc, "exit_code", 2)


def main(argv: list[str] | None = None) -> NoReturn:
    from suse.cli import commands  # noqa: F401  (registers the commands on `app`)

    try:
        try:
            code = app(args=argv if argv is not None else sys.argv[1:], prog_name="suse", standalone_mode=False)
        finally:
            sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
    except BrokenPipeError:
        _quiet_broken_pipe()
    except typer.TyperException as exc:
        code = _usage_error(exc)
    except typer.Abort:
        code = 1
    except KeyboardInterrupt:
        code = 130
    raise SystemExit(code if isinstance(code, int) else 0)
