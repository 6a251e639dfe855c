"""Synthetic streams for the paper's workloads (docs/RESULTS.md, "How we measure").

Characters are drawn independently from a distribution over the query's *sorted*,
de-duplicated letters, and the timestamp of event i is i:

* ``zipf``: P(rank r) proportional to 1 / r**s, rank 1 being the first sorted letter.
* ``uniform``: every letter equally likely.
* ``normal``: a normal curve centred on the middle letter with standard deviation
  ``len(letters) / 6`` (so the letters span about +-3 sd), discretised by giving letter i
  the curve's mass on [i - 0.5, i + 0.5] and renormalising over the letters.
"""
from __future__ import annotations

import math

import numpy as np

from suse.errors import InputError
from suse.io.formats import Events

__all__ = ["alphabet_probabilities", "synthetic_stream", "abcd_blocks", "aseq_queries"]

DISTRIBUTIONS = ("zipf", "uniform", "normal")
VALUE_RANGE = (1, 100)  # values="uniform" draws integers uniformly from this range, inclusive


def _letters(alphabet: str) -> str:
    letters = "".join(sorted(set(alphabet)))
    if not letters:
        raise InputError("alphabet is empty")
    bad = [c for c in letters if not (c.isascii() and c.isalnum())]
    if bad:
        raise InputError(f"alphabet character {bad[0]!r} is not an ASCII letter or digit")
    return letters


def _weights(k: int, distribution: str, zipf_s: float) -> list[float]:
    if distribution == "zipf":
        if not (math.isfinite(zipf_s) and zipf_s >= 0):
            raise InputError(f"zipf_s must be finite and >= 0, got {zipf_s}")
        return [1.0 / r**zipf_s for r in range(1, k + 1)]
    if distribution == "uniform":
        return [1.0] * k
    if distribution == "normal":
        mid, sd = (k - 1) / 2, k / 6

        def cdf(x: float) -> float:
            return 0.5 * (1.0 + math.erf((x - mid) / (sd * math.sqrt(2.0))))

        return [cdf(i + 0.5) - cdf(i - 0.5) for i in range(k)]
    raise InputError(f"unknown distribution {distribution!r}: expected one of {DISTRIBUTIONS}")


def alphabet_probabilities(
    alphabet: str, distribution: str = "zipf", zipf_s: float = 2.0
) -> dict[str, float]:
    """The exact per-letter probabilities ``synthetic_stream`` samples from, in sorted order."""
    letters = _letters(alphabet)
    w = _weights(len(letters), distribution, zipf_s)
    total = math.fsum(w)
    return {c: x / total for c, x in zip(letters, w)}


def synthetic_stream(
    alphabet: str,
    n: int,
    distribution: str = "zipf",
    zipf_s: float = 2.0,
    seed: int | None = 0,
    values: str | None = None,
) -> Events:
    """``n`` events with characters drawn i.i.d. from ``alphabet_probabilities`` and
    timestamps 0..n-1. ``values="uniform"`` adds integer values uniform on VALUE_RANGE.
    The same arguments and seed always give the same stream."""
    if n < 0:
        raise InputError(f"n must be >= 0, got {n}")
    if values not in (None, "uniform"):
        raise InputError(f"unknown values {values!r}: expected None or 'uniform'")
    probs = alphabet_probabilities(alphabet, distribution, zipf_s)
    rng = np.random.default_rng(seed)
    codes = np.frombuffer("".join(probs).encode("ascii"), dtype=np.uint8)
    picks = rng.choice(len(codes), size=n, p=np.array(list(probs.values())))
    chars = codes[picks].tobytes().decode("ascii")
    vals = None
    if values == "uniform":
        lo, hi = VALUE_RANGE
        vals = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64)
    return Events(chars, np.arange(n, dtype=np.int64), vals)


def abcd_blocks(i: int) -> Events:
    """A^i B^i C^i D^i with timestamps 0..4i-1: the exact-mode workload for ``ABCD``."""
    if i < 0:
        raise InputError(f"block length must be >= 0, got {i}")
    return Events("A" * i + "B" * i + "C" * i + "D" * i, np.arange(4 * i, dtype=np.int64))


#: The paper's query split where A-Seq's experiments split theirs: a shared prefix, then a suffix.
ASEQ_PREFIX = "a(b*c)*d"
_SUFFIX_ITEMS = ("(e|f)", "g*", "e", "f", "g", "(e|g)", "(f|g)", "e*", "f*", "b", "c")


def aseq_queries(n: int, seed: int | None = 0, prefix: str = ASEQ_PREFIX,
                 items: tuple[str, ...] = _SUFFIX_ITEMS) -> dict[str, str]:
    """``n`` distinct regexes ``prefix + suffix`` named q0..q{n-1}, as A-Seq's experiments draw
    query sets: one common prefix, then one or two ``items`` (default: over the workload's
    letters). With the defaults q0 is the paper's query ``a(b*c)*d(e|f)g*`` (otherwise the first
    item alone); the others are a seeded shuffle of the remaining suffixes."""
    if not items:
        raise InputError("items must name at least one suffix")
    pairs = [a + b for a in items for b in items if not (a == b and a.endswith("*"))]
    singles = list(items)
    first = "(e|f)g*" if items == _SUFFIX_ITEMS else items[0]
    rest = [s for s in singles + pairs if s != first]
    if not 0 <= n <= len(rest) + 1:
        raise InputError(f"n must be between 0 and {len(rest) + 1}, got {n}")
    rng = np.random.default_rng(seed)
    order = [rest[i] for i in rng.permutation(len(rest))]
    return {f"q{i}": prefix + s for i, s in enumerate(([first] + order)[:n])}
