"""The live state behind the page: per-partition summaries (one per strategy) and exact
engines fed in event-time order, evaluated when someone refreshes (paper §4).

Events arrive already classified (``source.py``), as arrays sorted by time. ``advance``
feeds every event up to a stream time; ``refresh`` is an evaluation trigger at the current
stream time. A partition's result only changes when it gets events, so each evaluation
stores a row only for partitions whose numbers changed; the chart fills in the rest.

The page keeps the last ``MAX_EVALUATIONS`` evaluations (and of each partition's history only
what they need): refreshes cannot grow the memory, the checkpoint or an answer without bound
(5,000 refreshes once grew one partition's answer to 0.9 MB).
"""
from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

import suse
from suse.api.matching import RetainedMatches
from suse.dashboard.numbers import duration_text, number, recall
from suse.errors import InputError
from suse.spec import QuerySpec

MAX_EVALUATIONS = 1000  # kept for the charts; about 200 bytes each in a partition's answer

@dataclass
class QueryEvents:
    """One query's classified events over all partitions, sorted by (time, partition, rank,
    tie): ``pid`` indexes ``keys``, ``chars`` holds the characters as bytes."""

    spec: QuerySpec  # its window in the timestamps' unit
    keys: list[tuple]
    pid: np.ndarray  # int32
    ts: np.ndarray  # int64
    chars: np.ndarray  # uint8
    values: Optional[np.ndarray]  # int64, or None when the job has no value column
    probabilities: Optional[dict[str, float]] = None  # None: estimated online by each summary

    def __len__(self) -> int:
        return len(self.ts)

    @property
    def label(self) -> str:
        return self.spec.label


@dataclass
class Settings:
    size: int
    strategies: list[str]  # the first is the job's own
    seed: int
    exact: bool


@dataclass
class Partition:
    summaries: dict[str, suse.Summary]
    exact: Optional[suse.Exact]
    fed: int = 0
    dirty: bool = False
    # [evaluation id, events, {strategy: count}, exact count]; counts as decimal strings
    history: list[list] = field(default_factory=list)
    elements: dict[str, list] = field(default_factory=dict)  # retained at the last evaluation
    matches: dict[str, RetainedMatches] = field(default_factory=dict)  # their matches, as counted


class LiveQuery:
    def __init__(self, events: QueryEvents, settings: Settings):
        self.events = events
        self.settings = settings
        self.query = events.spec.compile()
        self.parts: dict[int, Partition] = {}
        self.pos = 0  # events[:pos] have been fed

    def new_partition(self) -> Partition:
        s = self.settings
        summaries = {
            name: suse.Summary(self.query, s.size, name, self.events.probabilities, seed=s.seed) for name in s.strategies
        }
        return Partition(summaries, suse.Exact(self.query) if s.exact else None)

    def feed_until(self, t: int) -> int:
        """Feed every event with timestamp <= t; returns how many."""
        ev = self.events
        stop = int(np.searchsorted(ev.ts, t, side="right"))
        if stop <= self.pos:
            return 0
        n = stop - self.pos
        self.feed_range(self.pos, stop)
        self.pos = stop
        return n

    def feed_range(self, start: int, stop: int, exact_only: bool = False) -> None:
        ev = self.events
        pids = ev.pid[start:stop]
        order = np.argsort(pids, kind="stable")  # by partition, time order kept within each
        sorted_pids = pids[order]
        edges = np.flatnonzero(np.diff(sorted_pids)) + 1
        for group in np.split(order + start, edges):
            p = int(ev.pid[group[0]])
            part = self.parts.get(p)
            if part is None:
                part = self.parts[p] = self.new_partition()
            chars = ev.chars[group].tobytes()
            ts = ev.ts[group]
            values = None if ev.values is None else ev.values[group]
            if not exact_only:
                for summary in part.summaries.values():
                    summary.extend(chars, ts, values)
                part.fed += len(group)
                part.dirty = True
            if part.exact is not None:
                part.exact.extend(chars=chars, timestamps=ts, values=values)

    def numbers(self, part: Partition) -> tuple[int, dict[str, str], Optional[str], dict[str, list]]:
        """A partition's events, counts per strategy, exact count and retained elements now."""
        counts = {name: str(s.result().count) for name, s in part.summaries.items()}
        exact = str(part.exact.result().count) if part.exact is not None else None
        return part.fed, counts, exact, {name: s.elements() for name, s in part.summaries.items()}

    def evaluate(self, evaluation: int) -> None:
        """Record the current numbers of every partition that got events since the last
        evaluation (if they changed)."""
        for part in self.parts.values():
            if not part.dirty:
                continue
            fed, counts, exact, elements = self.numbers(part)
            last = part.history[-1] if part.history else None
            if last is None or last[1:] != [fed, counts, exact]:
                part.history.append([evaluation, fed, counts, exact])
            part.elements = elements
            # The matches as each summary counts them (with the gaps between its elements).
            part.matches = {name: s.retained_matches() for name, s in part.summaries.items()}
            part.dirty = False

    def forget_before(self, oldest: int) -> None:
        """Drop history rows that no evaluation from ``oldest`` on needs: of the rows before
        it, only the last (the numbers in force at ``oldest``) stays."""
        for part in self.parts.values():
            history = part.history
            drop = 0
            while drop + 1 < len(history) and history[drop + 1][0] <= oldest:
                drop += 1
            if drop:
                del history[:drop]

    def rows(self) -> list[dict]:
        """The partition table: the latest evaluated numbers of every partition seen."""
        primary = self.settings.strategies[0]
        out = []
        for p, part in self.parts.items():
            if not part.history:
                continue
            _, fed, counts, exact = part.history[-1]
            ex = None if exact is None else int(exact)
            out.append({
                "pid": p,
                "key": [_jsonable(k) for k in self.events.keys[p]],
                "events": fed,
                "counts": {name: number(int(c)) for name, c in counts.items()},
                "exact": number(ex),
                "recall": recall(int(counts[primary]), ex),
            })
        return out


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)


class Live:
    """All queries of a job, the stream clock and the evaluations; thread-safe."""

    def __init__(self, queries: Sequence[QueryEvents], settings: Settings, datetime_axis: bool, speed: float,
                 name: str = "suse job"):
        if not any(len(q) for q in queries):
            raise InputError("the job's input has no events with a character of the query: nothing to show")
        self.name = name
        self.settings = settings
        self.queries = [LiveQuery(q, settings) for q in queries]
        self.datetime_axis = datetime_axis
        self.speed = speed  # stream time units per wall-clock second
        self.first = min(int(q.ts[0]) for q in queries if len(q))
        self.last = max(int(q.ts[-1]) for q in queries if len(q))
        self.clock: float = float(self.first)
        self.evaluations: list[dict] = []  # the last `keep`, ids increasing
        self.keep = MAX_EVALUATIONS
        self.lock = threading.RLock()

    @property
    def evaluation_count(self) -> int:
        """Evaluations made since the start (the oldest may have been dropped)."""
        return self.evaluations[-1]["id"] + 1 if self.evaluations else 0

    @property
    def finished(self) -> bool:
        return all(lq.pos == len(lq.events) for lq in self.queries)

    def advance(self, seconds: float) -> None:
        """Move the stream clock on by ``seconds`` of wall time and feed what it passed."""
        with self.lock:
            if not self.finished:
                self.clock = min(self.clock + self.speed * seconds, float(self.last))
            for lq in self.queries:
                lq.feed_until(int(self.clock))

    def refresh(self) -> dict:
        """An evaluation trigger at the current stream time."""
        with self.lock:
            ev = {
                "id": self.evaluation_count,
                "at": int(self.clock),
                "wall": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            }
            self.evaluations.append(ev)
            for lq in self.queries:
                lq.evaluate(ev["id"])
            if len(self.evaluations) > self.keep:
                del self.evaluations[:-self.keep]
                for lq in self.queries:
                    lq.forget_before(self.evaluations[0]["id"])
            return ev

    # --- what the page reads --------------------------------------------------------------

    def status(self) -> dict:
        with self.lock:
            return {
                "clock": int(self.clock),
                "first": self.first,
                "last": self.last,
                "finished": self.finished,
                "speed": self.speed,
                "fed": sum(lq.pos for lq in self.queries),
                "total": sum(len(lq.events) for lq in self.queries),
                "evaluations": self.evaluation_count,
                "last_evaluation": self.evaluations[-1] if self.evaluations else None,
            }

    def meta(self) -> dict:
        return {
            "name": self.name,
            "datetime": self.datetime_axis,
            "strategies": self.settings.strategies,
            "size": self.settings.size,
            "exact": self.settings.exact,
            "queries": [
                {"label": lq.events.label, "regex": lq.query.regex,
                 "window": duration_text(lq.query.window) if self.datetime_axis else str(lq.query.window),
                 "policy": lq.query.policy, "alphabet": lq.query.alphabet, "partitions": len(lq.events.keys)}
                for lq in self.queries
            ],
        }

    def query(self, index: int) -> LiveQuery:
        if not 0 <= index < len(self.queries):
            raise InputError(f"no query {index}; the job has {len(self.queries)}")
        return self.queries[index]

    def table(self, q: int) -> list[dict]:
        with self.lock:
            return self.query(q).rows()

    def partition(self, q: int, pid: int) -> dict:
        """A partition's numbers at every kept evaluation since its first, and its retained
        elements."""
        with self.lock:
            lq = self.query(q)
            part = lq.parts.get(pid)
            if part is None or not part.history:
                raise InputError(f"partition {pid} has not been evaluated yet")
            history = part.history
            series, current, i = [], None, 0
            for ev in self.evaluations:
                while i < len(history) and history[i][0] <= ev["id"]:
                    current, i = history[i], i + 1
                if current is None:  # before the partition's first evaluation
                    continue
                _, fed, counts, exact = current
                series.append({
                    "evaluation": ev["id"], "at": ev["at"], "events": fed,
                    "counts": {name: number(int(c)) for name, c in counts.items()},
                    "exact": None if exact is None else number(int(exact)),
                })
            return {
                "pid": pid,
                "key": [_jsonable(k) for k in lq.events.keys[pid]],
                "series": series,
                "elements": {name: [list(e) for e in els] for name, els in part.elements.items()},
            }

    def elements(self, q: int, pid: int, strategy: str) -> list:
        with self.lock:
            part = self.query(q).parts.get(pid)
            if part is None or strategy not in part.elements:
                raise InputError(f"partition {pid} has no evaluated elements for strategy {strategy!r}")
            return part.elements[strategy]

    def _retained(self, q: int, pid: int, strategy: str) -> RetainedMatches:
        with self.lock:
            lq = self.query(q)
            part = lq.parts.get(pid)
            if part is None or strategy not in part.elements:
                raise InputError(f"partition {pid} has no evaluated elements for strategy {strategy!r}")
            if strategy not in part.matches:  # elements without their summary (restored, or from Spark)
                if not RetainedMatches.told_by_elements(lq.query):
                    raise InputError(
                        f"the matches of partition {pid}'s elements depend on the events between them (negation or "
                        "contiguity), which are known again at the partition's next evaluation")
                part.matches[strategy] = RetainedMatches.of_elements(lq.query, part.elements[strategy])
            return part.matches[strategy]

    def match(self, q: int, pid: int, strategy: str, n: int, containing: Optional[int] = None) -> dict:
        """The n-th match (0-based, in order) among the elements a strategy retained at the last
        evaluation, through element `containing` if given: the kernel's enumeration, so the
        page shows exactly the matches the summary counts (policy, negation, contiguity)."""
        match = self._retained(q, pid, strategy).nth(n, containing)
        return {"match": None if match is None else list(match), "n": n, "gave_up": False}
