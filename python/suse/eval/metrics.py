"""The paper's evaluation metrics (§7.1), computed without overflow.

Match counts are Python ints and routinely exceed 10**38 (they grow exponentially in the
window), so ratios are exact `Fraction`s and only their logarithms become floats:
`math.log10` accepts ints of any size without converting them to float first.

Zero-baseline rule (relative recall improvement): every per-timestamp ratio is taken as
``(suse + 1) / (baseline + 1)``, at every timestamp, not only where the baseline is zero.
Why this rule and not excluding those timestamps:
- the timestamps where a baseline retains nothing are exactly where a good summary matters
  most; dropping them would bias the average towards the baselines;
- the ratio stays finite and is 1 (no improvement) when both retain nothing;
- for the counts that dominate the average (> 10**3) it differs from suse/baseline by
  less than 0.1%, and applying it everywhere keeps the metric one formula.
The number of timestamps where the baseline (or suse) retained zero is reported next to it.
"""
from __future__ import annotations

import math
import resource
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np


def evaluation_timestamps(start: int, end: int, count: int, process: str = "uniform",
                          seed: int | Sequence[int] | np.random.Generator | None = 0) -> np.ndarray:
    """Sorted integer evaluation timestamps in ``[start, end]`` (the moments a user refreshes).

    ``uniform``: ``count`` independent uniform draws (§4: a fixed number N of samples).
    ``poisson``: arrivals of a Poisson process with rate ``count / (end - start)``, so the number
    of timestamps is itself random with mean ``count`` (conditioned on its size a Poisson process
    is uniform, which is why the paper saw no difference between the two).
    Draws may repeat; each is an independent trigger.
    """
    if end < start or count < 0:
        raise ValueError(f"need start <= end and count >= 0, got [{start}, {end}], {count}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if process == "uniform":
        ts = rng.integers(start, end, size=count, endpoint=True)
    elif process == "poisson":
        span = max(end - start, 1)
        gaps = rng.exponential(span / max(count, 1), size=4 * count + 16)
        points = start + np.cumsum(gaps)
        ts = np.floor(points[points <= end]).astype(np.int64)
    else:
        raise ValueError(f"process must be 'uniform' or 'poisson', not {process!r}")
    return np.sort(ts.astype(np.int64))


def log10(x: int | Fraction) -> float:
    """log10 of a positive int or Fraction of any size (no float overflow)."""
    if x <= 0:
        raise ValueError(f"log10 of a non-positive number: {x}")
    x = Fraction(x)
    return math.log10(x.numerator) - math.log10(x.denominator)


@dataclass(frozen=True)
class Improvement:
    """Relative recall improvement of one strategy over a baseline across evaluation timestamps."""

    log10_mean: float        # log10 of the mean of the per-timestamp ratios (the paper's metric)
    log10_ratios: tuple[float, ...]  # per-timestamp log10 ratio, for box plots
    timestamps: int
    zero_baseline: int       # timestamps where the baseline retained no match
    zero_suse: int           # timestamps where the strategy itself retained no match

    @property
    def mean_log10(self) -> float:
        """The geometric-mean view: not dominated by a single huge ratio."""
        return sum(self.log10_ratios) / len(self.log10_ratios) if self.log10_ratios else math.nan


def improvement_ratio(suse: int, baseline: int) -> Fraction:
    """One timestamp's ratio under the zero-baseline rule of this module: (suse+1)/(baseline+1)."""
    if suse < 0 or baseline < 0:
        raise ValueError("match counts are non-negative")
    return Fraction(int(suse) + 1, int(baseline) + 1)


def relative_recall_improvement(suse: Sequence[int], baseline: Sequence[int]) -> Improvement:
    """Average over timestamps of (matches retained by suse) / (matches retained by baseline)."""
    if len(suse) != len(baseline):
        raise ValueError(f"{len(suse)} suse counts but {len(baseline)} baseline counts")
    if not suse:
        return Improvement(math.nan, (), 0, 0, 0)
    ratios = [improvement_ratio(s, b) for s, b in zip(suse, baseline)]
    return Improvement(
        log10_mean=log10(sum(ratios) / len(ratios)),
        log10_ratios=tuple(log10(r) for r in ratios),
        timestamps=len(ratios),
        zero_baseline=sum(1 for b in baseline if b == 0),
        zero_suse=sum(1 for s in suse if s == 0),
    )


@dataclass(frozen=True)
class Recall:
    """Mean of found / truth over the timestamps where the truth is non-zero."""

    mean: float              # nan when no timestamp has a non-zero truth
    values: tuple[float, ...]
    undefined: int           # timestamps with truth == 0 (nothing to recall), excluded


def recall(found: Sequence[int], truth: Sequence[int]) -> Recall:
    """Absolute recall (retained / exact) or detected recall (detected / exact), per timestamp.

    The exact count at a timestamp covers every match of the whole stream up to it, so
    ``found <= truth`` always holds for a correct engine; a violation is an engine bug.
    """
    if len(found) != len(truth):
        raise ValueError(f"{len(found)} counts but {len(truth)} ground-truth counts")
    values = []
    for f, t in zip(found, truth):
        if f > t:
            raise ValueError(f"found {f} matches but the ground truth has only {t}")
        if t > 0:
            values.append(float(Fraction(int(f), int(t))))
    mean = sum(values) / len(values) if values else math.nan
    return Recall(mean, tuple(values), len(found) - len(values))


# --- performance --------------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    """Per-element processing time in seconds over the timed elements."""

    min: float
    mean: float
    max: float
    p50: float
    p99: float
    elements: int


def throughput(process: Callable[[], object], events: int) -> tuple[float, float]:
    """(events per second, elapsed seconds) of one call that processes ``events`` events."""
    t0 = time.perf_counter()
    process()
    elapsed = time.perf_counter() - t0
    return events / elapsed if elapsed > 0 else math.inf, elapsed


def per_element_latency(insert: Callable[[str, int], object], chars: str,
                        timestamps: Sequence[int]) -> Latency:
    """Time each ``insert(char, timestamp)`` call on its own.

    One Python call per element, so each figure includes ~1 microsecond of call overhead;
    that is below the resolution the paper plots (10^-5 .. 10^-1 s).
    """
    times = np.empty(len(chars), dtype=np.float64)
    clock = time.perf_counter_ns
    for i, (c, t) in enumerate(zip(chars, timestamps)):
        t0 = clock()
        insert(c, int(t))
        times[i] = clock() - t0
    times *= 1e-9
    if not len(times):
        return Latency(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    return Latency(float(times.min()), float(times.mean()), float(times.max()),
                   float(np.percentile(times, 50)), float(np.percentile(times, 99)), len(times))


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports ru_maxrss in KiB).

    It is a high-water mark for the whole process, so experiments measure each configuration
    in a freshly forked worker (whose mark starts at the fork) and report it there.
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mib() -> float:
    """Resident set size right now, to report the memory a configuration added on top."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20
