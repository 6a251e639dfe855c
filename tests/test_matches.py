"""The matches themselves (`suse.matches`, `suse.sample_matches`, `Summary.matches`) against
the brute-force oracle: every policy, negation, windows, `max_missing`; sampling uniformity."""
from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle
import suse
from negation_strategies import absence_queries, negation_queries
from negation_strategies import streams as negation_streams
from strategies import queries, streams
from suse.api.matching import count_matches
from suse.errors import InputError, QueryError
from suse.query import compile_regex

POLICIES = st.sampled_from(["any", "next", "contiguous"])
SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _events(stream):
    return [(c, t, max(v, 0)) for c, t, v in stream]


def _check(query: str, events, window: int, policy: str, max_missing: int = 0) -> None:
    q = suse.Query(query, window, policy=policy, max_missing=max_missing)
    got = list(suse.matches(q, events))
    want = oracle.matches(query, events, window, policy, max_missing)
    assert got == sorted(want)  # each once, in order: by first position, then second, ...
    assert count_matches(q, events) == len(want) == suse.exact(q, events).count


@settings(max_examples=200, **SLOW)
@given(query=queries, events=streams(max_size=9), window=st.integers(0, 6), policy=POLICIES)
def test_matches_are_the_oracles(query, events, window, policy):
    _check(query, _events(events), window, policy)


@settings(max_examples=150, **SLOW)
@given(query=negation_queries, events=negation_streams(max_size=8), window=st.integers(0, 6), policy=POLICIES)
def test_matches_with_negation_are_the_oracles(query, events, window, policy):
    _check(query, _events(events), window, policy)


@settings(max_examples=100, **SLOW)
@given(query=st.sampled_from(["ab", "abc", "a(b|c)*c", "ab+c", "(ab)+", "a?b*c"]), k=st.integers(1, 2),
       events=streams(max_size=8), window=st.integers(0, 6), policy=POLICIES)
def test_approximate_matches_say_how_many_letters_are_missing(query, k, events, window, policy):
    events = _events(events)
    try:
        compile_regex(query, k)
    except QueryError:
        return
    q = suse.Query(query, window, policy=policy, max_missing=k)
    got = list(suse.matches(q, events, with_missing=True))
    assert got == sorted(oracle.approx_matches(query, events, window, k, policy))
    _check(query, events, window, policy, k)


def test_limit_stops_early_and_arguments_are_checked():
    q = suse.Query("AB*", 100)
    events = [("A", 0)] + [("B", t) for t in range(1, 200)]  # 2^199 matches
    first = list(suse.matches(q, events, limit=4))
    assert first == [(0,), (0, 1), (0, 1, 2), (0, 1, 2, 3)]
    assert list(suse.matches(q, events, limit=0)) == []
    with pytest.raises(InputError, match="limit"):
        suse.matches(q, events, limit=-1)
    with pytest.raises(InputError, match="expected a suse.Query"):
        suse.matches("AB*", events)
    with pytest.raises(InputError, match="event 1"):
        suse.matches(q, [("A", 5), ("B", 4)])
    with pytest.raises(InputError, match="k must be"):
        suse.sample_matches(q, events, "3")
    with pytest.raises(InputError, match="seed"):
        suse.sample_matches(q, events, 3, seed=-1)
    with pytest.raises(InputError, match="no match"):
        suse.sample_matches(q, [("B", 1)], 1)
    assert suse.sample_matches(q, [("B", 1)], 0) == []
    assert list(suse.matches(q, [])) == []


def _chi_square(draws: list, n: int) -> float:
    """Pearson's statistic of `draws` against n equally likely matches."""
    seen: dict = {}
    for m in draws:
        seen[m] = seen.get(m, 0) + 1
    expected = len(draws) / n
    never = (n - len(seen)) * expected  # (0 − e)² / e for each match never drawn
    return sum((o - expected) ** 2 / expected for o in seen.values()) + never


# A stream whose first elements start very different numbers of matches, so that any sampler
# that is not uniform over matches (e.g. uniform over first elements) is visibly off.
UNIFORMITY_QUERY = suse.Query("A(B|C)*D", 12)
UNIFORMITY_EVENTS = [(c, t) for t, c in enumerate("ABCBCBCABCBDBCDAD")]  # 512, 72 and 1 matches by first A


def _threshold(n: int) -> float:
    """Five standard deviations above the mean of a chi-square with n − 1 degrees of freedom."""
    return (n - 1) + 5 * (2 * (n - 1)) ** 0.5


def test_samples_are_uniform():
    everything = list(suse.matches(UNIFORMITY_QUERY, UNIFORMITY_EVENTS))
    n = len(everything)
    assert 200 <= n <= 1000, n
    draws = suse.sample_matches(UNIFORMITY_QUERY, UNIFORMITY_EVENTS, 40 * n, seed=2026)
    assert set(draws) <= set(everything)
    assert _chi_square(draws, n) < _threshold(n)


def test_the_uniformity_test_fails_a_biased_sampler():
    # Uniform over first elements, then uniform among that element's matches: every draw a
    # match, but not uniform over matches. The same threshold must reject it.
    everything = list(suse.matches(UNIFORMITY_QUERY, UNIFORMITY_EVENTS))
    n = len(everything)
    by_first: dict = {}
    for m in everything:
        by_first.setdefault(m[0], []).append(m)
    rng = random.Random(2026)
    firsts = sorted(by_first)
    draws = [rng.choice(by_first[rng.choice(firsts)]) for _ in range(40 * n)]
    assert _chi_square(draws, n) > _threshold(n)


# A negation at the end (issue 27, "Absence at the end"): a match counts once its window has
# closed with no negated event after its last element; the stream is over for `matches`.
@settings(max_examples=200, **SLOW)
@given(query=absence_queries, events=negation_streams(max_size=9, chars="abcde"), window=st.integers(0, 6))
def test_matches_with_a_negation_at_the_end_are_the_oracles(query, events, window):
    query, events = query.upper(), [(c.upper(), t, v) for c, t, v in _events(events)]
    q = suse.Query(query, window)
    got = list(suse.matches(q, events))
    want = oracle.absence_matches(query, events, window)
    assert got == want  # each once, in order
    assert count_matches(q, events) == len(want) == suse.exact(q, events).count
    assert list(suse.matches(q, events, with_missing=True)) == [(m, 0) for m in want]
    if want:
        assert set(suse.sample_matches(q, events, 20, seed=window)) <= set(want)
    else:
        with pytest.raises(InputError, match="no match"):
            suse.sample_matches(q, events, 1)


def test_a_negation_at_the_end_worked_example():
    # A0 B2 B4 A5 C8 B12, window 10: C8 follows every set of A0 (closing at 10); {A5, B12}
    # closes at 15 with no C after B12. A C at 15 = f + W refutes it; one at 16 does not.
    q = suse.Query("A B+ !C", 10)
    events = [("A", 0), ("B", 2), ("B", 4), ("A", 5), ("C", 8), ("B", 12)]
    assert list(suse.matches(q, events)) == [(3, 5)]
    assert list(suse.matches(q, events + [("C", 15)])) == []
    assert list(suse.matches(q, events + [("C", 16)])) == [(3, 5)]
    # ties: a C with B's timestamp after it refutes, one before it does not
    assert list(suse.matches(q, [("A", 0), ("B", 3), ("C", 3)])) == []
    assert list(suse.matches(q, [("A", 0), ("C", 3), ("B", 3)])) == [(0, 2)]
    # a C between two B's is no absence at the end: only the last element is judged
    assert list(suse.matches(q, chars="ABCB", timestamps=[0, 3, 3, 4])) == [(0, 1, 3), (0, 3)]


# First elements with 248, 120 and 3 matches once the C's have refuted the others.
ABSENCE_QUERY = suse.Query("A(B|D)+!C", 10)
ABSENCE_EVENTS = [(c, t) for t, c in enumerate("ABBDCBBDBBABDBCDBABB")]


def test_samples_with_a_negation_at_the_end_are_uniform():
    everything = list(suse.matches(ABSENCE_QUERY, ABSENCE_EVENTS))
    n = len(everything)
    assert n == count_matches(ABSENCE_QUERY, ABSENCE_EVENTS) == suse.exact(ABSENCE_QUERY, ABSENCE_EVENTS).count
    assert n == len(oracle.absence_matches(ABSENCE_QUERY.regex, ABSENCE_EVENTS, 10))
    draws = suse.sample_matches(ABSENCE_QUERY, ABSENCE_EVENTS, 40 * n, seed=2027)
    assert set(draws) <= set(everything)
    assert _chi_square(draws, n) < _threshold(n)
    # A sampler that ignored the refuted matches' absence from the counts (uniform over the
    # matches of the pattern without its negation, rejecting refuted draws per first element)
    # would not be uniform; the same threshold rejects one uniform over first elements.
    rng = random.Random(2027)
    by_first: dict = {}
    for m in everything:
        by_first.setdefault(m[0], []).append(m)
    biased = [rng.choice(by_first[rng.choice(sorted(by_first))]) for _ in range(40 * n)]
    assert _chi_square(biased, n) > _threshold(n)


def test_sampling_astronomically_many_matches_with_a_negation_at_the_end():
    # A then 400 B's and a C inside the window of A: only the sets ending after the C count.
    events = [("A", 0)] + [("B", t) for t in range(1, 201)] + [("C", 201)] + [("B", t) for t in range(202, 402)]
    q = suse.Query("A B+ !C", 1000)
    assert count_matches(q, events) == 2**200 * (2**200 - 1) == suse.exact(q, events).count
    drawn = suse.sample_matches(q, events, 20, seed=1)
    assert all(m[0] == 0 and m[-1] > 201 for m in drawn)
    first = tuple(range(201)) + (202,)  # every B before the C, then the first after it
    assert list(suse.matches(q, events, limit=2)) == [first, first + (203,)]


@pytest.mark.parametrize("make, what", [
    (lambda: suse.Query("A B+ !C", 10, policy="next"), "policy 'next'"),
    (lambda: suse.Query("A B+ !C", 10, where={"B": "B.p > 1"}), "where"),
    (lambda: suse.api.matching.RetainedMatches.of_elements(suse.Query("A B+ !C", 10), [("A", 1, 1), ("B", 2, 1)]),
     "listing a summary's retained matches"),
])
def test_what_a_negation_at_the_end_does_not_combine_with_is_refused_by_name(make, what):
    with pytest.raises(QueryError, match="negation at the end of the pattern") as err:
        make()
    assert what in err.value.message


def test_the_same_seed_draws_the_same_matches():
    a = suse.sample_matches(UNIFORMITY_QUERY, UNIFORMITY_EVENTS, 50, seed=7)
    assert a == suse.sample_matches(UNIFORMITY_QUERY, UNIFORMITY_EVENTS, 50, seed=7)
    assert a != suse.sample_matches(UNIFORMITY_QUERY, UNIFORMITY_EVENTS, 50, seed=8)


def test_sampling_over_more_than_a_googol_of_matches_is_quick():
    q = suse.Query("A(B|C)*D", 1000)
    events = [("A", 0)] + [("BC"[t % 2], t) for t in range(1, 400)] + [("D", 400)]  # 2^399 ≈ 10^120
    assert count_matches(q, events) == 2**399 > 10**100
    start = time.perf_counter()
    draws = suse.sample_matches(q, events, 100, seed=1)
    assert time.perf_counter() - start < 10
    for m in draws:
        assert m[0] == 0 and m[-1] == 400 and list(m) == sorted(set(m))
    # Each middle element is in half of the matches: about 199.5 per draw.
    mean = sum(len(m) - 2 for m in draws) / len(draws)
    assert 180 < mean < 220


# --- a summary's retained elements -------------------------------------------------------------


@settings(max_examples=150, **SLOW)
@given(query=st.one_of(queries, negation_queries), events=negation_streams(max_size=9), window=st.integers(0, 6),
       policy=POLICIES, size=st.integers(1, 10))
def test_a_summarys_matches_are_what_it_counts(query, events, window, policy, size):
    events = _events(events)
    q = suse.Query(query, window, policy=policy)
    s = suse.Summary(q, size, "fifo" if size % 2 else "suse", seed=1)
    s.extend(events)
    retained = s.retained_matches()
    found = list(s.matches())
    assert len(found) == s.result().count == retained.count()
    elements = s.elements()
    for m in found:
        assert all(e in elements for e in m)
    if s.result().count:
        assert all(m in found for m in s.sample_matches(5, seed=3))
    if size >= len(events):  # everything retained: the stream's own matches
        letters = [i for i, (c, _, _) in enumerate(events) if c in q.alphabet]
        want = sorted(oracle.matches(query, events, window, policy))
        assert found == [[elements[letters.index(i)] for i in m] for m in want]


def test_contiguity_is_judged_on_the_stream_not_the_retained_elements():
    # The dashboard's old explorer offered [A, C] here, which the summary does not count.
    q = suse.Query("AC", 10, policy="contiguous")
    s = suse.Summary(q, 5, seed=1)
    s.extend([("A", 1), ("B", 2), ("C", 3)])
    assert s.result().count == 0
    assert list(s.matches()) == [] and len(s.elements()) == 2
    with pytest.raises(InputError, match="no match"):
        s.sample_matches(1)
