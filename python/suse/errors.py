"""Errors raised by suse. Every user-facing failure is one of these, never a bare traceback."""
from __future__ import annotations

import unicodedata
from typing import Optional


class SuseError(Exception):
    """Base class of all suse errors."""


class QueryError(SuseError, ValueError):
    """A malformed query. ``position`` is the 0-based index into ``query`` where the problem is."""

    def __init__(self, message: str, position: int, query: str):
        self.message = message
        self.position = position
        self.query = query
        super().__init__(f"{message} at position {position}")

    def caret(self) -> str:
        """The query with a caret under the offending position, for terminals.

        Tabs are copied into the caret line and wide characters take two columns, so the
        caret lines up; characters a terminal cannot show become '?'."""
        shown, pad = [], []
        for ch in self.query:
            if ch == "\t":
                shown.append(ch)
                pad.append(ch)
            elif not ch.isprintable():
                shown.append("?")
                pad.append(" ")
            else:
                shown.append(ch)
                pad.append("  " if unicodedata.east_asian_width(ch) in "WF" else " ")
        return f"{''.join(shown)}\n{''.join(pad[: self.position])}^"


class ConditionError(QueryError):
    """A malformed condition of ``where`` (``suse.query.conditions``): ``position`` is the
    0-based offset into the condition text (``query``), ``letter`` the letter it belongs to."""

    def __init__(self, message: str, position: int, condition: str, letter: str):
        self.letter = letter
        super().__init__(f"condition of {letter}: {message}", position, condition)


class SqlError(QueryError):
    """A malformed or unsupported SQL statement (``suse.spark.sql``, ``suse sql``). ``line`` and
    ``column`` are 1-based; ``position`` is the 0-based offset into ``query`` (the statement)."""

    def __init__(self, message: str, position: int, query: str):
        before = query[:position]
        self.line = before.count("\n") + 1
        self.column = position - (before.rfind("\n") + 1) + 1
        super().__init__(message, position, query)
        self.args = (f"line {self.line}, column {self.column}: {message}",)

    def __str__(self) -> str:
        return self.args[0]

    def caret(self) -> str:
        """The offending line of the statement with a caret under the column."""
        lines = self.query.split("\n")
        shown = lines[self.line - 1] if self.line <= len(lines) else ""
        return QueryError(self.message, self.column - 1, shown).caret()


class InputError(SuseError, ValueError):
    """Bad events or parameters: decreasing timestamps, bad values, wrong types, missing columns.

    ``event`` is the 0-based index (within the batch) of the offending event when there is
    one, and ``detail`` the message without the ``event N:`` prefix, so that a caller who
    read the events from a file can name the line instead."""

    def __init__(self, message: str, *, event: Optional[int] = None):
        self.event = event
        self.detail = message
        super().__init__(message if event is None else f"event {event}: {message}")


class LateEventError(InputError):
    """An event older than the horizon (largest timestamp seen - ``lateness``), which can no
    longer be put in order, or a retraction of an event that is already final."""


class StateError(InputError):
    """Saved state (``Summary.from_bytes``, Spark state) that is corrupt, from another
    version of suse, or does not match the query it claims."""


class LimitError(SuseError, ValueError):
    """A configuration whose engines would exceed a resource limit (``memory_limit``)."""


class InternalError(SuseError, RuntimeError):
    """A bug in suse: an invariant of the native kernel did not hold. The engine that raised it
    refuses further work; please report it with the input that caused it."""


class SparkSetupError(SuseError):
    """A Spark session that cannot run suse: its Python workers lack suse (or run another
    version of it). The message says how to fix the session."""


class SuseWarning(UserWarning):
    """Something suse can run but that probably does not do what was meant, e.g. a query
    letter no event can ever get."""


def exception_text(exc: BaseException) -> str | None:
    """``str(exc)``, or None when it cannot be read: a Py4JJavaError asks the JVM for its
    text, which fails when the JVM is gone."""
    try:
        return str(exc)
    except Exception:
        return None
