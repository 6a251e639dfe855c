"""Synthetic workloads: exact target distributions, determinism, empirical frequencies."""
from __future__ import annotations

import math

import numpy as np
import pytest

from suse.errors import InputError
from suse.io.synthetic import abcd_blocks, alphabet_probabilities, aseq_queries, synthetic_stream

PAPER_LETTERS = "abcdefg"  # the letters of a(b*c)*d(e|f)g*


def test_zipf_probabilities_follow_rank_over_sorted_letters():
    p = alphabet_probabilities("gfedcba", "zipf", 2.0)
    assert list(p) == list(PAPER_LETTERS)
    h = sum(1 / r**2 for r in range(1, 8))
    for r, c in enumerate(PAPER_LETTERS, start=1):
        assert p[c] == pytest.approx(1 / r**2 / h)


def test_uniform_and_normal_probabilities():
    assert alphabet_probabilities("ABCD", "uniform") == {c: 0.25 for c in "ABCD"}
    p = alphabet_probabilities(PAPER_LETTERS, "normal")
    assert math.fsum(p.values()) == pytest.approx(1.0)
    assert max(p, key=p.get) == "d"  # centred on the middle letter
    assert p["a"] == pytest.approx(p["g"]) and p["c"] == pytest.approx(p["e"])
    assert alphabet_probabilities("X", "normal") == {"X": 1.0}


@pytest.mark.parametrize("dist", ["zipf", "uniform", "normal"])
def test_same_seed_same_stream(dist):
    a = synthetic_stream(PAPER_LETTERS, 500, dist, seed=7, values="uniform")
    b = synthetic_stream(PAPER_LETTERS, 500, dist, seed=7, values="uniform")
    c = synthetic_stream(PAPER_LETTERS, 500, dist, seed=8, values="uniform")
    assert a == b
    assert a != c


def test_stream_shape():
    ev = synthetic_stream("ba", 10, seed=1, values="uniform")
    assert len(ev) == 10
    assert ev.timestamps.tolist() == list(range(10))
    assert set(ev.chars) <= {"a", "b"}
    assert ev.values.min() >= 1 and ev.values.max() <= 100
    assert synthetic_stream("ab", 5).values is None
    assert len(synthetic_stream("ab", 0)) == 0


@pytest.mark.parametrize("dist", ["zipf", "uniform", "normal"])
def test_empirical_frequency_close_to_target(dist):
    n = 100_000
    ev = synthetic_stream(PAPER_LETTERS, n, dist, seed=3)
    target = alphabet_probabilities(PAPER_LETTERS, dist)
    for c, p in target.items():
        observed = ev.chars.count(c) / n
        # 5 binomial standard deviations (plus a floor): fails by chance ~1e-6 per letter.
        assert abs(observed - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-4, (c, observed, p)


def test_abcd_blocks():
    ev = abcd_blocks(3)
    assert ev.chars == "AAABBBCCCDDD"
    assert ev.timestamps.tolist() == list(range(12))
    assert ev.values is None
    assert len(abcd_blocks(0)) == 0


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(alphabet="", n=3), "alphabet is empty"),
        (dict(alphabet="a-", n=3), "'-' is not an ASCII letter or digit"),
        (dict(alphabet="ab", n=-1), "n must be >= 0"),
        (dict(alphabet="ab", n=3, distribution="pareto"), "unknown distribution 'pareto'"),
        (dict(alphabet="ab", n=3, zipf_s=float("nan")), "zipf_s must be finite"),
        (dict(alphabet="ab", n=3, values="normal"), "unknown values 'normal'"),
    ],
)
def test_bad_parameters(kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        synthetic_stream(**kwargs)


def test_values_are_int64():
    assert synthetic_stream("ab", 4, values="uniform").values.dtype == np.int64


def test_aseq_queries_share_the_prefix_and_refuse_no_items():
    default = aseq_queries(4)
    assert default["q0"] == "a(b*c)*d(e|f)g*" and len(set(default.values())) == 4
    flights = aseq_queries(5, prefix="D(D|A)*", items=("C", "A", "O"))
    assert flights["q0"] == "D(D|A)*C" and all(q.startswith("D(D|A)*") for q in flights.values())
    assert len(set(flights.values())) == 5
    with pytest.raises(InputError, match="at least one suffix"):
        aseq_queries(1, items=())
