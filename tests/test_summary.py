"""The state summary: invariants against recomputation, selection, serialisation, bad input."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import suse
from oracle import stnm_aggregate
from strategies import queries, streams
from suse.io.synthetic import synthetic_stream

STRATEGIES = list(suse.api.STRATEGIES)  # every strategy the kernel offers, adaptive included


def _check_counters(s: suse.Summary) -> None:
    """Everything the summary maintains equals a fresh recomputation from what it retains."""
    r = s.result()
    if len(s):
        fresh = suse.exact(s.query, s.elements())
        assert (r.count, r.sum, r.partial_count) == (fresh.count, fresh.sum, fresh.partial_count)
    else:
        assert (r.count, r.sum, r.partial_count) == (0, 0, 0)
    maintained, rebuilt = s._engine._active_counters()
    assert maintained == rebuilt
    # The float estimates that drive selection track the exact local counters (their sums only
    # under SUM: for other aggregates the estimates are count-only).
    sums = s._engine.config.aggregate == "sum"
    estimates, _ = s._engine._estimates()
    for (est_c, est_s), (c, sm) in zip(estimates, s._engine._exact_locals()):
        assert math.isclose(est_c, c, rel_tol=1e-9, abs_tol=1e-6)
        assert not sums or math.isclose(est_s, sm, rel_tol=1e-9, abs_tol=1e-6)


@settings(max_examples=120, deadline=None)
@given(
    query=queries,
    events=streams(max_size=14),
    window=st.integers(0, 6),
    size=st.integers(1, 6),
    strategy=st.sampled_from(STRATEGIES),
    policy=st.sampled_from(["any", "next"]),
    ttl=st.one_of(st.none(), st.integers(0, 8)),
    aggregate=st.sampled_from(["count", "sum"]),
)
def test_counters_equal_recomputation_after_every_step(query, events, window, size, strategy, policy, ttl, aggregate):
    q = suse.Query(query, window=window, policy=policy, aggregate=aggregate)
    s = suse.Summary(q, size=size, strategy=strategy, seed=7, time_to_live=ttl)
    for ev in events:
        s.insert(*ev)
        assert len(s) <= size
        _check_counters(s)
    known = [t for c, t, _ in events if c in q.alphabet]
    if ttl is not None and known:  # the summary's clock only sees characters of the query
        last = known[-1]
        assert all(last - t <= ttl for _, t, _ in s.elements())


@settings(max_examples=60, deadline=None)
@given(query=queries, events=streams(max_size=12), window=st.integers(0, 6), strategy=st.sampled_from(STRATEGIES))
def test_summary_as_large_as_the_stream_is_exact_at_every_step(query, events, window, strategy):
    q = suse.Query(query, window=window)
    s = suse.Summary(q, size=len(events), strategy=strategy, seed=1)
    times = sorted({t for _, t, _ in events})
    got = s.extend(events=events, evaluate_at=times)
    want = suse.exact(q, events, evaluate_at=times).evaluations
    assert [(e.count, e.sum, e.partial_count) for e in got] == [(e.count, e.sum, e.partial_count) for e in want]
    # Nothing was evicted, so everything formed is still retained.
    assert s.result().detected_count == s.result().count


@settings(max_examples=60, deadline=None)
@given(query=queries, events=streams(max_size=12), window=st.integers(0, 6), size=st.integers(1, 6))
def test_skip_till_next_match_summary_matches_its_definition(query, events, window, size):
    q = suse.Query(query, window=window, policy="next")
    s = suse.Summary(q, size=size, strategy="suse", seed=3)
    s.extend(events=events)
    expected = stnm_aggregate(q.automaton, s.elements(), window)
    assert (s.result().count, s.result().sum) == (expected["count"], expected["sum"])


def test_detected_count_is_monotone_and_bounds_the_retained_count():
    q = suse.Query("a(b*c)*d(e|f)g*", window=30)
    ev = synthetic_stream("abcdefg", 600, "uniform", seed=2)
    s = suse.Summary(q, size=25, strategy="suse", seed=1)
    previous = 0
    for chunk in range(0, 600, 50):
        s.extend(ev.chars[chunk : chunk + 50], ev.timestamps[chunk : chunk + 50])
        r = s.result()
        assert r.detected_count >= previous and r.detected_count >= r.count
        previous = r.detected_count
    assert previous > 0


FIGURE_2 = [("A", 1), ("A", 2), ("B", 3), ("D", 4), ("B", 5), ("C", 6), ("A", 7), ("B", 8), ("C", 9), ("A", 10)]


def test_figure_2_fifo_retains_two_matches():
    q = suse.Query("AB*C", window=1000)
    s = suse.Summary(q, size=5, strategy="fifo")
    s.extend(events=FIGURE_2)
    assert s.result().count == 2
    assert [c for c, _, _ in s.elements()] == ["C", "A", "B", "C", "A"]  # D4 is not in the alphabet


def test_figure_2_best_possible_is_eight():
    """Brute force over every 5-element subsequence: 8 matches at most (the paper's SuSe answer)."""
    import itertools

    q = suse.Query("AB*C", window=1000)
    known = [e for e in FIGURE_2 if e[0] in q.alphabet]
    best = max(suse.exact(q, list(sub)).count for sub in itertools.combinations(known, 5))
    assert best == 8


def test_serialisation_round_trip_continues_identically():
    q = suse.Query("a(b*c)*d(e|f)g*", window=40, aggregate="sum")
    ev = synthetic_stream("abcdefg", 800, "zipf", seed=4, values="uniform")
    one = suse.Summary(q, size=30, strategy="suse", seed=9)
    two = suse.Summary(q, size=30, strategy="suse", seed=9)
    one.extend(ev.chars[:400], ev.timestamps[:400], ev.values[:400])
    two.extend(ev.chars[:400], ev.timestamps[:400], ev.values[:400])
    restored = suse.Summary.from_bytes(two.to_bytes())
    unpickled = pickle.loads(pickle.dumps(restored))
    for s in (one, unpickled):
        s.extend(ev.chars[400:], ev.timestamps[400:], ev.values[400:])
    assert one.elements() == unpickled.elements()
    assert one.result() == unpickled.result()
    assert unpickled.query == q and unpickled.size == 30


def test_random_strategy_is_reproducible_with_a_seed():
    q = suse.Query("a(b|c)*a", window=20)
    ev = synthetic_stream("abc", 300, "uniform", seed=5)
    runs = []
    for _ in range(2):
        s = suse.Summary(q, size=10, strategy="random", seed=42)
        s.extend(events=ev)
        runs.append(s.elements())
    assert runs[0] == runs[1]


def test_summary_counts_never_wrap():
    q = suse.Query("a+", window=10**6)
    s = suse.Summary(q, size=200, strategy="suse", seed=1)
    s.extend("a" * 200, list(range(200)))
    assert s.result().count == 2**200 - 1
    s.extend("a" * 50, list(range(200, 250)))  # now full: selection on big integers
    assert s.result().count == 2**200 - 1 and len(s) == 200
    assert s.result().count == suse.exact(q, s.elements()).count


def test_given_probabilities_are_used_and_validated():
    q = suse.Query("AB*C", window=100)
    s = suse.Summary(q, size=3, probabilities={"A": 0.5, "B": 0.25, "C": 0.25})
    s.extend(events=FIGURE_2)
    assert len(s) == 3
    with pytest.raises(suse.InputError, match="sum to 1"):
        suse.Summary(q, size=3, probabilities={"A": 0.5, "B": 0.25, "C": 0.2})
    with pytest.raises(suse.InputError, match="no probability for 'C'"):
        suse.Summary(q, size=3, probabilities={"A": 0.5, "B": 0.5})
    with pytest.raises(suse.InputError, match="not a character of the query"):
        suse.Summary(q, size=3, probabilities={"A": 0.5, "Z": 0.5})
    with pytest.raises(suse.InputError, match="non-negative"):
        suse.Summary(q, size=3, probabilities={"A": 1.5, "B": -0.5})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(size=0), "at least 1"),
        (dict(size=5, strategy="lru"), "strategy must be one of"),
        (dict(size=5, time_to_live=-1), "at least 0"),
        (dict(size=5, seed=-3), "at least 0"),
        (dict(size="5"), "must be an integer"),
    ],
)
def test_bad_summary_parameters(kwargs, message):
    with pytest.raises(suse.InputError, match=message):
        suse.Summary(suse.Query("ab", window=3), **kwargs)


def test_bad_batch_changes_nothing():
    q = suse.Query("ab", window=5)
    s = suse.Summary(q, size=4)
    s.extend("ab", [1, 2])
    before = (s.result(), s.elements())
    with pytest.raises(suse.InputError, match="earlier"):
        s.extend("ab", [5, 4])
    with pytest.raises(suse.InputError, match="negative"):
        s.extend("ab", [5, 6], [1, -2])
    assert (s.result(), s.elements()) == before
    with pytest.raises(suse.InputError, match="not a serialised"):
        suse.Summary.from_bytes(b"nonsense")


def _recall_ratio(strategy_counts, baseline_counts):
    """Mean log10 of (suse + 1) / (baseline + 1) over evaluation timestamps."""
    return float(np.mean([math.log10((a + 1) / (b + 1)) for a, b in zip(strategy_counts, baseline_counts)]))


@pytest.mark.parametrize("size, window", [(100, 100), (50, 200)])
def test_suse_retains_at_least_as_many_matches_as_the_baselines(size, window):
    """The paper's relative recall improvement on its synthetic workload (small and averaged).

    (50, 200) is a window larger than the summary, where the paper's unbounded look-ahead
    made `suse` lose to every baseline before the horizon was capped at |S|.
    """
    q = suse.Query("a(b*c)*d(e|f)g*", window=window)
    improvements = {b: [] for b in ("fifo", "random", "present")}
    for seed in range(3):
        ev = synthetic_stream("abcdefg", 3000, "zipf", seed=seed)
        times = np.sort(np.random.default_rng(seed).integers(500, 3000, size=25))
        counts = {}
        for strategy in STRATEGIES:
            s = suse.Summary(q, size=size, strategy=strategy, seed=seed)
            counts[strategy] = [e.count for e in s.extend(events=ev, evaluate_at=times)]
        for b in improvements:
            improvements[b].append(_recall_ratio(counts["suse"], counts[b]))
    for baseline, values in improvements.items():
        assert np.mean(values) >= 0, (baseline, values)


@pytest.mark.parametrize("query", ["(aa)*b", "(ab|ba)*", "((ab)*c)+"])
@pytest.mark.parametrize("strategy", ["suse", "fifo", "adaptive"])
def test_automata_whose_transitions_cycle_on_one_character(query, strategy):
    """In-place counter updates need a working copy when one character's transitions form a
    cycle (in `(aa)*b`, 'a' maps 0 -> 1 -> 0); the copy path must agree with recomputation."""
    q = suse.Query(query, window=6, aggregate="sum")
    ev = synthetic_stream(q.alphabet, 60, "uniform", seed=3, values="uniform")
    s = suse.Summary(q, size=7, strategy=strategy, seed=2)
    for c, t, v in zip(ev.chars, ev.timestamps.tolist(), ev.values.tolist()):
        s.insert(c, t, v)
        _check_counters(s)
    assert suse.exact(q, events=ev).count > 0


FIGURE2 = ("AABBCABCA", [1, 2, 3, 5, 6, 7, 8, 9, 10])  # the paper's Fig. 2 without D4 (skipped)


def test_adaptive_keeps_the_best_possible_on_figure_2():
    """Fig. 2, size 5 after A10: 8 matches is the best any 5 elements hold (A1 A2 B3 B5 C6).
    `suse` trades realised matches for expected ones and ends with none."""
    q = suse.Query("AB*C", window=1000)
    counts = {}
    for strategy in ("suse", "present", "adaptive"):
        s = suse.Summary(q, size=5, strategy=strategy)
        s.extend(*FIGURE2)
        counts[strategy] = s.result().count
    assert counts == {"suse": 0, "present": 8, "adaptive": 8}


@pytest.mark.parametrize("dist,seed", [("uniform", 2), ("zipf", 1)])
def test_adaptive_gives_up_a_dead_cluster_where_the_window_offers_more(dist, seed):
    """(|S|, τ) = (50, 150), 2,000 events: a window holds three times what the summary can.
    Both strategies build a cluster early and then hold it after its initiators expired (its
    matches dead); `suse`'s count then stays. `adaptive`'s stale mode (dead matches 2^10 x the
    live ones and the count far below its record of one window) gives the dead cluster up for
    a live one and ends 14-16x richer. With the stale mode off (window condition never met) the
    same streams end at `suse`'s count (uniform: 6.2e11) or below it (Zipf: 1.1e8 < 3.7e8)."""
    from suse.io.synthetic import alphabet_probabilities

    q = suse.Query("a(b*c)*d(e|f)g*", window=150)
    ev = synthetic_stream("abcdefg", 2000, dist, seed=seed)
    counts = {}
    for strategy in ("suse", "adaptive"):
        s = suse.Summary(q, size=50, strategy=strategy, probabilities=alphabet_probabilities("abcdefg", dist))
        s.extend(ev.chars, ev.timestamps)
        assert len(s) <= 50
        counts[strategy] = s.result().count
    assert counts["adaptive"] > 10 * counts["suse"], counts


def _adaptive_over_suse(dist, seed, size=100, window=500, events=3000):
    """Mean log10 ((adaptive + 1) / (suse + 1)) over 50 uniform evaluation times of the paper's
    query on one synthetic stream (given probabilities), as `suse experiment beyond` measures."""
    from suse.eval import metrics
    from suse.io.synthetic import alphabet_probabilities

    q = suse.Query("a(b*c)*d(e|f)g*", window=window)
    ev = synthetic_stream("abcdefg", events, dist, seed=seed)
    at = np.unique(metrics.evaluation_timestamps(0, events - 1, 50, "uniform", seed=[seed, 50, 0]))
    counts = {}
    for strategy in ("suse", "adaptive"):
        s = suse.Summary(q, size=size, strategy=strategy, probabilities=alphabet_probabilities("abcdefg", dist))
        counts[strategy] = [e.count for e in s.extend(ev.chars, ev.timestamps, None, evaluate_at=at)]
        assert len(s) <= size
    return float(np.mean([math.log10((a + 1) / (b + 1)) for a, b in zip(counts["adaptive"], counts["suse"])]))


def test_adaptive_keeps_far_more_where_suse_switches_clusters():
    """(|S|, τ) = (100, 500), uniform letters, 3,000 events, seeds 0-4: the window holds five
    times what the summary can, `suse` trades rich clusters for expectations it cannot keep;
    `adaptive` (log-utility, capacity-bound look-ahead) retains 10^1.5 more at a typical
    evaluation time over the five streams and is ahead on each (the earlier quarter-share rule:
    -0.14 mean at 5,000 events, 5 seeds). It can dip below `suse` while it rebuilds: at one
    timestamp of seed 0 to 10^-1.8 of it, since loops grow at half their typical rate there."""
    means = [_adaptive_over_suse("uniform", seed) for seed in range(5)]
    assert np.mean(means) > 1.0 and min(means) > 0.0, means


@pytest.mark.parametrize("seed", [0, 3])
def test_adaptive_looks_ahead_at_a_loops_typical_growth_where_it_keeps_a_small_share(seed):
    """(|S|, τ) = (100, 500), Zipf letters, 3,000 events: a window holds five times what the
    summary can. There the look-ahead lets the sets in the query's loops (`(b*c)*`, `g*`) grow
    by 2^(p/2) a step instead of their mean 1 + p, which rare futures rich in those letters
    carry. `adaptive` then stays 10^18 above `suse` at a typical evaluation time; with the mean
    look-ahead it measured 10^9.9 (seed 0) and 10^15.7 (seed 3)."""
    assert _adaptive_over_suse("zipf", seed) > 17.0
