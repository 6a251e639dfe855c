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


class StateError(InputError):
    """Saved state (``Summary.from_bytes``, Spark state) that is corrupt, from another
    version of suse, or does not match the query it claims."""


class LimitError(SuseError, ValueError):
    """A configuration whose engines would exceed a resource limit (``memory_limit``)."""


class InternalError(SuseError, RuntimeError):
    """A bug in suse: an invariant of the native kernel did not hold. The engine that raised it
    refuses further work; please report it with the input that caused it."""
