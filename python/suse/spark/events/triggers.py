"""Evaluation triggers: the timestamps at which a partition's result is reported.

The paper (§4) evaluates a query at moments when someone looks at the result, drawn from
a distribution over time. Four forms are accepted:

* ``"end"``: once, at the partition's last event.
* ``"every N events"``: at the timestamp of every N-th event of the partition (counting
  only events that got a character of the query), and at its last event so that every
  partition reports its final state.
* a list of timestamps: exactly those, for every partition (before the first event the
  result is empty; after the last it is the final state).
* ``{"every": "30 days"}``: at every multiple of the period (counted from time 0, the epoch
  for date-times, so all partitions share the same times) within the partition's time span,
  and at its last event.
* ``{"poisson": rate, "per": "1 day", "seed": 0}``: a Poisson process with ``rate``
  evaluations per ``per`` (default: the query window) over the partition's time span
  (first to last event). Each partition draws its own process from ``seed`` and a hash of
  its key, so runs are reproducible and partitions are independent.

Evaluating at time t reports the aggregate over the partition's events with timestamp <= t.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from suse.errors import InputError
from suse.spark.events.timing import TimeAxis

_EVERY = re.compile(r"every\s+(\d+)\s+events?", re.IGNORECASE)
FORMS = "'end', 'every N events', a list of timestamps, {every = DURATION}, or {poisson = RATE, per = DURATION, seed = K}"


@dataclass(frozen=True)
class Trigger:
    kind: str  # "end" | "every" | "period" | "at" | "poisson"
    every: int = 0
    at: tuple[int, ...] = ()
    rate: float = 0.0  # expected evaluations per `period`
    period: int = 0  # in the time axis' unit
    seed: int = 0

    def times(self, ts: np.ndarray, key: Sequence[Any] = ()) -> np.ndarray:
        """Sorted distinct evaluation timestamps for a partition whose sorted event
        timestamps are ``ts``."""
        if self.kind == "at":
            return np.array(self.at, dtype=np.int64)
        if len(ts) == 0:
            return np.empty(0, dtype=np.int64)
        if self.kind == "end":
            return ts[-1:].astype(np.int64)
        if self.kind == "every":
            return np.unique(np.append(ts[self.every - 1 :: self.every], ts[-1]))
        if self.kind == "period":
            first = -(-int(ts[0]) // self.period) * self.period  # the first multiple >= ts[0]
            return np.unique(np.append(np.arange(first, int(ts[-1]) + 1, self.period, dtype=np.int64), ts[-1]))
        return self._poisson(int(ts[0]), int(ts[-1]), key)

    def _poisson(self, first: int, last: int, key: Sequence[Any]) -> np.ndarray:
        # Python's Mersenne Twister: seeding it costs microseconds, numpy's Generator tens of
        # them, and a partition draws only a handful of points.
        rng = random.Random((self.seed << 64) | key_hash(key))
        rate = self.rate / self.period
        times, t = [], float(first)
        while True:
            t += rng.expovariate(rate)
            if t > last:
                break
            times.append(int(t))
        return np.unique(np.array(times, dtype=np.int64))


def key_hash(key: Sequence[Any]) -> int:
    """A hash of a partition key that is stable across processes and runs (``hash()`` of a
    str is salted per process)."""
    text = "\x1f".join("\x00" if k is None else f"{type(k).__name__}:{k}" for k in key)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def parse_trigger(spec: Any, axis: TimeAxis, window: int) -> Trigger:
    """Read a trigger in one of the forms of the module docstring."""
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower() == "end":
            return Trigger("end")
        m = _EVERY.fullmatch(text)
        if m:
            n = int(m.group(1))
            if n < 1:
                raise InputError("evaluate: 'every N events' needs N >= 1")
            return Trigger("every", every=n)
        raise InputError(f"evaluate: cannot read {spec!r}; expected {FORMS}")
    if isinstance(spec, dict) and "every" in spec:
        if set(spec) != {"every"}:
            raise InputError(f"evaluate: {{every = DURATION}} takes no other keys, got {sorted(spec)}")
        period = axis.span(spec["every"], "evaluate.every")
        if period <= 0:
            raise InputError("evaluate: 'every' needs a positive period")
        return Trigger("period", period=period)
    if isinstance(spec, dict):
        unknown = set(spec) - {"poisson", "per", "seed"}
        if "poisson" not in spec or unknown:
            raise InputError(f"evaluate: unknown keys {sorted(unknown) or list(spec)}; expected {FORMS}")
        rate = spec["poisson"]
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            raise InputError(f"evaluate: poisson rate must be a positive number, got {rate!r}")
        period = axis.span(spec["per"], "evaluate.per") if "per" in spec else window
        if period <= 0:
            raise InputError("evaluate: poisson needs a positive 'per' (the window is 0)")
        seed = spec.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"evaluate: poisson seed must be a non-negative integer, got {seed!r}")
        return Trigger("poisson", rate=float(rate), period=period, seed=seed)
    if isinstance(spec, (list, tuple)):
        if not spec:
            raise InputError("evaluate: the list of timestamps is empty")
        return Trigger("at", at=tuple(sorted({axis.instant(v) for v in spec})))
    raise InputError(f"evaluate: cannot read {spec!r}; expected {FORMS}")
