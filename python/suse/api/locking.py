"""One lock per engine object, so that threads may share one (docs/API.md, "Threads").

Every public method of `Exact`, `Summary`, `ExactSet` and `SummarySet` runs under its object's
lock from start to end: the Python-side state (the reorder buffer of `lateness=`, counters of
late events, the last timestamp of a set) and the native engine change together, and two calls
on one object take turns. The native engines release the GIL for their work, so threads that
hold objects of their own run in parallel.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

Method = TypeVar("Method", bound=Callable[..., Any])


class Locked:
    """Gives each instance its own re-entrant lock (re-entrant: `insert` calls `extend`, and
    `result` reads `late`), also instances made with `cls.__new__` when loading a saved form."""

    _lock: threading.RLock

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        self = super().__new__(cls)
        self._lock = threading.RLock()
        return self

    def __getstate__(self) -> dict:
        """Pickled without the lock (a new object gets its own)."""
        with self._lock:
            return {k: v for k, v in self.__dict__.items() if k != "_lock"}


def locked(method: Method) -> Method:
    """Run `method` under its object's lock."""

    @functools.wraps(method)
    def under_lock(self: Locked, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return under_lock  # type: ignore[return-value]
