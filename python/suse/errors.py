"""Errors raised by suse. Every user-facing failure is one of these, never a bare traceback."""
from __future__ import annotations


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
        """The query with a caret under the offending position, for terminals."""
        return f"{self.query}\n{' ' * self.position}^"


class InputError(SuseError, ValueError):
    """Bad events or parameters: decreasing timestamps, bad values, wrong types, missing columns."""


class SparkSetupError(SuseError):
    """A Spark session that cannot run suse: its Python workers lack suse (or run another
    version of it). The message says how to fix the session."""


class SuseWarning(UserWarning):
    """Something suse can run but that probably does not do what was meant, e.g. a query
    letter no event can ever get."""
