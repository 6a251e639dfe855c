"""The evaluation metrics on tiny cases checked by hand."""
import math
from fractions import Fraction

import numpy as np
import pytest

from suse.eval import metrics


def test_relative_improvement_plain_ratios():
    # (9+1)/(4+1) = 2 and (99+1)/(9+1) = 10: mean 6
    imp = metrics.relative_recall_improvement([9, 99], [4, 9])
    assert imp.log10_mean == pytest.approx(math.log10(6))
    assert imp.log10_ratios == pytest.approx((math.log10(2), 1.0))
    assert imp.mean_log10 == pytest.approx((math.log10(2) + 1) / 2)
    assert (imp.timestamps, imp.zero_baseline, imp.zero_suse) == (2, 0, 0)


def test_zero_baseline_rule_is_add_one_everywhere():
    assert metrics.improvement_ratio(0, 0) == 1          # neither retains anything: no gain
    assert metrics.improvement_ratio(9, 0) == 10         # finite where the baseline is empty
    assert metrics.improvement_ratio(0, 9) == Fraction(1, 10)
    imp = metrics.relative_recall_improvement([0, 9, 0], [0, 0, 4])
    # ratios 1, 10, 1/5 -> mean 11.2/3
    assert imp.log10_mean == pytest.approx(math.log10(11.2 / 3))
    assert (imp.zero_baseline, imp.zero_suse) == (2, 2)


def test_huge_counts_do_not_overflow():
    big = 3 * 10**39                      # beyond 2**128 and float32; ratios stay exact
    imp = metrics.relative_recall_improvement([big, 10**400], [2**128 - 1, 1])
    r1 = Fraction(big + 1, 2**128)
    r2 = Fraction(10**400 + 1, 2)
    assert imp.log10_mean == pytest.approx(metrics.log10((r1 + r2) / 2))
    assert imp.log10_mean == pytest.approx(400 - math.log10(4), abs=1e-9)
    assert imp.log10_ratios[0] == pytest.approx(math.log10(3e39 / 2**128))
    assert metrics.log10(10**1000) == pytest.approx(1000)
    assert metrics.log10(Fraction(1, 10**500)) == pytest.approx(-500)
    with pytest.raises(ValueError):
        metrics.log10(0)


def test_recall_excludes_zero_truth_and_rejects_impossible_counts():
    r = metrics.recall([1, 0, 3, 0], [4, 0, 3, 5])
    assert r.values == (0.25, 1.0, 0.0)
    assert r.mean == pytest.approx(1.25 / 3)
    assert r.undefined == 1
    assert metrics.recall([10**50], [4 * 10**50]).mean == 0.25
    assert math.isnan(metrics.recall([0], [0]).mean)
    with pytest.raises(ValueError):
        metrics.recall([5], [4])
    with pytest.raises(ValueError):
        metrics.relative_recall_improvement([1], [1, 2])


@pytest.mark.parametrize("process", ["uniform", "poisson"])
def test_evaluation_timestamps_are_seeded_sorted_and_in_range(process):
    a = metrics.evaluation_timestamps(100, 1099, 50, process, seed=7)
    b = metrics.evaluation_timestamps(100, 1099, 50, process, seed=7)
    assert np.array_equal(a, b) and a.dtype == np.int64
    assert np.all(np.diff(a) >= 0) and a.min() >= 100 and a.max() <= 1099
    if process == "uniform":
        assert len(a) == 50
    else:  # a Poisson count: mean 50, far inside these bounds
        assert 20 < len(a) < 90
    assert not np.array_equal(a, metrics.evaluation_timestamps(100, 1099, 50, process, seed=8))
    with pytest.raises(ValueError):
        metrics.evaluation_timestamps(0, 10, 5, "gaussian")


def test_latency_and_throughput_measure_the_callable():
    seen = []
    lat = metrics.per_element_latency(lambda c, t: seen.append((c, t)), "ab", [1, 2])
    assert seen == [("a", 1), ("b", 2)]
    assert lat.elements == 2 and 0 <= lat.min <= lat.mean <= lat.max
    eps, elapsed = metrics.throughput(lambda: sum(range(1000)), 1000)
    assert eps > 0 and elapsed > 0
    assert metrics.peak_rss_mib() > 1 and metrics.current_rss_mib() > 1  # hwm is sampled lazily
