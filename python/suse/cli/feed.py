"""A stream read in pieces (`suse.io.formats.iter_stream`) fed to the engines of a command, so
that memory does not grow with the stream: every evaluation time is answered in the piece where
one call over the whole stream would answer it."""
from __future__ import annotations

import bisect
import contextlib
import time
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np

from suse.errors import InputError, LateEventError
from suse.io.formats import Events

#: feed(events, times): the answers at `times` (sorted), one per time, after `events`.
Feed = Callable[[Events, Optional[list[int]]], list]


def play(pieces: Iterable[Events], feed: Feed, evaluate_at: Optional[Sequence[int]], lateness: int = 0) -> list:
    """Feed every piece; returns the answers at `evaluate_at`, in its order.

    One call over the whole stream takes an evaluation at T just before the first event later
    than T + lateness (or after the last event). That event is in the first piece whose largest
    timestamp exceeds T + lateness (events older than the ones before them are dropped or
    refused, never later than that), so T goes with that piece, and the times no piece reached
    with an empty batch at the end."""
    times = list(evaluate_at or ())
    order = sorted(range(len(times)), key=lambda k: times[k])
    waiting = [int(times[k]) for k in order]  # sorted; answered from the front
    answers: list = []
    for events in pieces:
        top = int(events.timestamps.max()) - lateness
        due = bisect.bisect_left(waiting, top)
        answers += feed(events, waiting[:due] if evaluate_at is not None else None)
        del waiting[:due]
    if waiting:
        answers += feed(Events("", np.empty(0, np.int64)), waiting)
    out: list = [None] * len(order)
    for k, answer in zip(order, answers):
        out[k] = answer
    return out


class Timed:
    """An engine whose `extend` calls are timed: `seconds` spent in them (events/s of one engine
    while the stream is read and other engines are fed too)."""

    def __init__(self, engine: Any):
        self.engine, self.seconds = engine, 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)

    def extend(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.engine.extend(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


@contextlib.contextmanager
def cli_words():
    """The library's advice names its keyword; on the command line it is an option."""
    try:
        yield
    except LateEventError as exc:
        raise LateEventError(exc.detail.replace('late="count"', "--late count"), event=exc.event) from None


def engine_feed(engines: Sequence[Any], late: str, evaluating: bool) -> Feed:
    """A `Feed` for `Exact` and `Summary` engines fed together (the answers: one tuple per time,
    an engine's answer each). Rows with op '-' (a CSV 'op' column) become `retract` calls at
    their place in the stream; errors name the line."""

    def feed(events: Events, times: Optional[list[int]]) -> list:
        _check_retractions(events, engines, evaluating)
        for lo, hi, retracting in _runs(events.retract, len(events)):
            if retracting:
                _retract(engines, events, lo, hi)
                continue
            part = events if (lo, hi) == (0, len(events)) else events[lo:hi]
            last = hi == len(events)
            with part.located(), cli_words():
                rows = [e.extend(events=part, evaluate_at=times if last else None, late=late) for e in engines]
        if not len(events):
            with cli_words():
                rows = [e.extend(events=events, evaluate_at=times, late=late) for e in engines]
        return list(zip(*rows)) if times else []

    return feed


def _runs(retract: Optional[np.ndarray], n: int) -> Iterator[tuple[int, int, bool]]:
    """(start, end, retracting) of the runs of events and of retractions, in order."""
    if retract is None or not retract.any():
        if n:
            yield 0, n, False
        return
    bounds = np.flatnonzero(np.diff(retract.astype(np.int8), prepend=np.int8(-1), append=np.int8(-1))).tolist()
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        yield lo, hi, bool(retract[lo])


def _check_retractions(events: Events, engines: Sequence[Any], evaluating: bool) -> None:
    """Retractions (rows with op '-') in a piece the engines cannot take: refused before any of
    its events is fed."""
    if events.retract is None or not events.retract.any():
        return
    if evaluating:
        raise InputError("--evaluate-at is not supported with retractions (rows with op '-'): an evaluation is "
                         "taken while events arrive, a retraction changes what came before it")
    if not all(engine.lateness for engine in engines):
        raise InputError(f"{events.where(int(events.retract.argmax()))}: a retraction (op '-') needs --lateness: "
                         "without it every event is final at once")


def _retract(engines: Sequence[Any], events: Events, lo: int, hi: int) -> None:
    for engine in engines:
        for i in range(lo, hi):
            value = 1 if events.values is None else int(events.values[i])
            try:
                engine.retract(events.chars[i], int(events.timestamps[i]), value)
            except InputError as exc:
                raise type(exc)(f"{events.where(i)}: {exc}") from None
