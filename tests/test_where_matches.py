"""suse.matches / sample_matches with conditions between events (``where``): the brute-force
oracle's matches, in order, each once; uniform samples; and samples over astronomically many
matches."""
from __future__ import annotations

import collections

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from oracle import where_matches
from suse.api.matching import count_matches
from suse.errors import InputError, LimitError
from test_where_exact import queries, streams
from where_cases import CASES

pytestmark = pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")

RISING = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6))
def test_every_match_once_in_order_as_the_oracle(events, query, window):
    pattern, where = query
    q = suse.Query(pattern, window, where=where)
    expected = sorted(where_matches(pattern, events, window, where))
    got = list(suse.matches(q, events))
    assert got == expected, (pattern, where)
    assert count_matches(q, events) == len(expected)
    if events:
        assert suse.exact(q, events).count == len(expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6), st.integers(0, 3))
def test_a_limit_stops_early_and_samples_are_matches(events, query, window, limit):
    pattern, where = query
    q = suse.Query(pattern, window, where=where)
    expected = sorted(where_matches(pattern, events, window, where))
    assert list(suse.matches(q, events, limit=limit)) == expected[:limit]
    if expected:
        drawn = suse.sample_matches(q, events, 20, seed=limit)
        assert set(drawn) <= set(expected)
        assert drawn == suse.sample_matches(q, events, 20, seed=limit)  # the seed decides


def test_the_worked_examples_list_what_they_count():
    for case in CASES:
        if case.policy != "any" or "!" in case.query or case.at is not None:
            continue
        q = suse.Query(case.query, case.window, where=case.where)
        assert sum(1 for _ in suse.matches(q, case.events)) == case.count, case.name


def test_samples_are_uniform():
    """Chi-square over the 10 matches of a small stream, 20,000 draws (df 9: 27.9 is p = 0.001)."""
    q = suse.Query("A B+ C", 10, where=RISING)
    events = [("A", 1, {"p": 0}), ("B", 2, {"p": 1}), ("B", 3, {"p": 3}), ("B", 4, {"p": 2}), ("C", 5, {"p": 1}),
              ("B", 6, {"p": 5}), ("C", 7, {"p": 4})]
    every = list(suse.matches(q, events))
    assert len(every) == 10
    n = 20_000
    seen = collections.Counter(suse.sample_matches(q, events, n, seed=7))
    assert set(seen) == set(every)
    chi2 = sum((seen[m] - n / 10) ** 2 / (n / 10) for m in every)
    assert chi2 < 27.9


def test_sampling_over_astronomically_many_matches():
    """A rising run over 400 rising B's: 2^400 - 1 runs after A; drawing is polynomial."""
    events = [("A", 0, {"p": -1})] + [("B", t, {"p": t}) for t in range(1, 401)] + [("C", 401, {"p": 0})]
    q = suse.Query("A B+ C", 1000, where={"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)"})
    assert count_matches(q, events) == 2**400 - 1 == suse.exact(q, events).count
    for m in suse.sample_matches(q, events, 3, seed=1):
        assert m[0] == 0 and m[-1] == 401 and list(m) == sorted(m)
        assert 150 < len(m) < 250  # a uniform subset of 400 elements holds about half of them


def test_a_table_with_attribute_columns():
    frame = pd.DataFrame({"char": list("ABBC"), "timestamp": [1, 2, 3, 4], "p": [0, 2, 1, 0]})
    q = suse.Query("A B+ C", 10, where=RISING)
    assert list(suse.matches(q, frame)) == [(0, 1, 3), (0, 2, 3)]


def test_bad_input_is_an_input_error():
    q = suse.Query("A B+ C", 10, where=RISING)
    with pytest.raises(InputError, match="no attribute 'p'"):
        suse.matches(q, [("A", 1, {}), ("B", 2, {})])
    with pytest.raises(InputError, match="chars="):
        suse.matches(q, chars="ABC", timestamps=[1, 2, 3])
    with pytest.raises(InputError):
        suse.matches(q, [("A", 2, {"p": 0}), ("B", 1, {"p": 1})])  # out of order
    with pytest.raises(InputError, match="no match"):
        suse.sample_matches(q, [("A", 1, {"p": 0})], 1)


def test_the_tables_are_bounded_by_a_limit_error():
    from suse.api.where_matches import WhereMatchSet

    events = [("A", 0, {"p": 0})] + [("B", t, {"p": t % 7}) for t in range(1, 200)] + [("C", 200, {"p": 9})]
    q = suse.Query("A B+ C", 1000, where={"B": "B.p >= FIRST(B.p)"})
    with pytest.raises(LimitError, match="memory_limit"):
        WhereMatchSet(q, events, memory_limit=20_000).count()
