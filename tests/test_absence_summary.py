"""Summaries of a query ending with a negation (``Summary(Query("A B+ !C", W), size, strategy)``,
issue 27 "Absence at the end"): after every event the counters, and evaluations, equal the
brute-force oracle (tests/oracle.py's ``absence_aggregate``) over exactly the retained
elements, negated ones included; ``present`` ranks by the oracle's count(S) - count(S without e)."""
from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from negation_strategies import absence_queries, streams
from oracle import absence_aggregate, absence_matches
from suse.errors import InputError, QueryError

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
STRATEGIES = ["fifo", "random", "present", "suse", "adaptive"]


def numbered(stream):
    """Upper-case events with value = position, so that a retained element names its event."""
    return [(c.upper(), t, i) for i, (c, t, _) in enumerate(stream)]


def retained_events(summary, events):
    return [events[v] for _, _, v in summary.elements()]


def oracle(query, events, window, at=None):
    want = absence_aggregate(query, events, window, at)
    return want["count"], want["sum"], want["partial_count"]


def triple(result):
    return result.count, result.sum, result.partial_count


@settings(max_examples=100, **SLOW)
@given(absence_queries, streams(chars="abcde"), st.integers(0, 6), st.integers(1, 5), st.sampled_from(STRATEGIES),
       st.data())
def test_counters_equal_the_oracle_over_the_retained_elements_after_every_event(
        query, stream, window, size, strategy, data):
    query, events = query.upper(), numbered(stream)
    ttl = data.draw(st.none() | st.integers(0, 6))
    summary = suse.Summary(suse.Query(query, window), size, strategy, seed=7, time_to_live=ttl)
    for i, event in enumerate(events):
        at = event[1] + data.draw(st.integers(0, window + 1))
        (evaluation,) = summary.extend([event], evaluate_at=[at])
        kept = retained_events(summary, events)
        assert len(kept) == summary.result().size <= size
        assert all(e[0] in summary.query._exact_letters for e in kept)
        assert triple(summary.result()) == oracle(query, kept, window), (query, kept)
        assert triple(evaluation) == oracle(query, kept, window, at), (query, kept, at)
        assert summary.result().events == i + 1
        if data.draw(st.booleans()):
            summary = pickle.loads(pickle.dumps(summary))


@settings(max_examples=60, **SLOW)
@given(absence_queries, streams(chars="abcde"), st.integers(0, 6), st.sampled_from(STRATEGIES), st.data())
def test_a_summary_larger_than_the_stream_equals_exact(query, stream, window, strategy, data):
    q = suse.Query(query.upper(), window)
    events = [(c.upper(), t, max(v, 0)) for c, t, v in stream]
    times = sorted(data.draw(st.lists(st.integers(0, events[-1][1] + window + 1), max_size=4)))
    summary = suse.Summary(q, len(events) + data.draw(st.integers(0, 3)), strategy)
    evaluations = summary.extend(events, evaluate_at=times, elements=True)
    exact = suse.exact(q, events, evaluate_at=times)
    assert triple(summary.result()) == triple(exact)
    assert [triple(e) for e in evaluations] == [triple(e) for e in exact.evaluations]
    for evaluation in evaluations:  # every event of a letter or a negated character up to then
        assert evaluation.elements == [e for e in events if e[1] <= evaluation.timestamp and e[0] in q._exact_letters]
    assert summary.result().evictions == 0 and summary.elements() == [e for e in events if e[0] in q._exact_letters]


@settings(max_examples=80, **SLOW)
@given(absence_queries, streams(chars="abcde"), st.integers(0, 6), st.integers(1, 4), st.sampled_from(["count", "sum"]))
def test_present_evicts_the_element_with_the_lowest_count_through_it(query, stream, window, size, aggregate):
    query, events = query.upper(), numbered(stream)
    part = 1 if aggregate == "sum" else 0
    summary = suse.Summary(suse.Query(query, window, aggregate=aggregate), size, "present")

    def value(kept):
        return oracle(query, kept, window)[part]

    for event in events:
        kept = retained_events(summary, events)
        through = [value(kept) - value(kept[:i] + kept[i + 1:]) for i in range(len(kept))]
        assert summary.present_benefits() == through
        summary.insert(*event)
        after = retained_events(summary, events)
        if event[0] not in summary.query._exact_letters:  # no element
            assert after == kept
        elif len(kept) < size:
            assert after == kept + [event]
        else:
            gain = value(kept + [event]) - value(kept)
            lowest = min(range(len(kept)), key=lambda i: (through[i], i))
            assert after == (kept[:lowest] + kept[lowest + 1:] + [event] if gain > through[lowest] else kept)


def test_a_negated_element_blocks_and_present_evicts_it_first():
    q = suse.Query("A B+ !C", 10)
    events = [("A", 0, 1), ("B", 2, 1), ("C", 5, 1), ("B", 6, 1)]
    summary = suse.Summary(q, 4, "present")
    summary.extend(events)
    assert summary.result().count == suse.exact(q, events).count == 2  # {A0,B6}, {A0,B2,B6}; C5 refutes {A0,B2}
    assert summary.present_benefits() == [2, 1, -1, 2]  # without C5, {A0,B2} counts too
    (evaluation,) = summary.extend([("B", 7, 1)], evaluate_at=[9])
    assert evaluation.count == 0  # nothing closed by 9 (A0 closes at 10)
    assert [e[0] for e in summary.elements()] == ["A", "B", "B", "B"]  # C5 evicted for B7
    assert summary.result().count == 7 == suse.exact(q, summary.elements()).count


def test_an_element_that_forms_nothing_yet_replaces_a_blocking_one_under_present():
    q = suse.Query("A B+ !C", 10)
    summary = suse.Summary(q, 3, "present")
    summary.extend([("A", 0, 1), ("B", 2, 1), ("C", 3, 1)])
    assert summary.result().count == 0 and summary.present_benefits() == [0, 0, -1]
    summary.insert("A", 4, 1)  # gains 0, more than C3's -1
    assert summary.elements() == [("A", 0, 1), ("B", 2, 1), ("A", 4, 1)] and summary.result().count == 1


def test_fifo_and_random_keep_negated_events_as_elements():
    q = suse.Query("A B+ !C", 10)
    events = [("A", 0, 1), ("B", 2, 1), ("C", 5, 1), ("x", 6, 1), ("B", 6, 1)]
    for strategy in ("fifo", "random"):
        summary = suse.Summary(q, 3, strategy, seed=3)
        summary.extend(events)
        kept = summary.elements()
        assert len(kept) == 3 and summary.result().skipped == 1
        assert summary.result().count == suse.exact(q, kept).count
    assert suse.Summary(q, 3, "fifo").extend(events) == [] and [e[0] for e in summary.elements()] != []


def test_what_it_does_not_do_is_refused_by_name():
    q = suse.Query("A B+ !C", 10)
    summary = suse.Summary(q, 5, "fifo")
    with pytest.raises(QueryError, match="negation at the end of the pattern"):
        suse.Query("A B+ !C", 10, where={"B": "B.p > 1"})
    for refused in (lambda: summary.to_bytes(), lambda: summary.with_query(q)):
        with pytest.raises(QueryError, match="not supported by a summary with a negation at the end"):
            refused()
    with pytest.raises(InputError, match="lateness"):
        suse.Summary(q, 5, "fifo", lateness=2)
    assert isinstance(summary, suse.Summary) and len(summary) == 0


@settings(max_examples=60, **SLOW)
@given(absence_queries, streams(chars="abcde"), st.integers(0, 6), st.integers(1, 5), st.sampled_from(STRATEGIES))
def test_its_matches_are_the_oracles_over_the_retained_elements(query, stream, window, size, strategy):
    """What the live page lists: the matches ``result()`` counts, each once, in order."""
    query, events = query.upper(), numbered(stream)
    summary = suse.Summary(suse.Query(query, window), size, strategy, seed=3)
    summary.extend(events)
    kept = retained_events(summary, events)
    want = absence_matches(query, kept, window)
    listed = summary.retained_matches()
    assert [list(m) for m in listed.positions()] == [list(m) for m in want]
    assert listed.count() == len(want) == summary.result().count
    assert list(summary.matches()) == [[summary.elements()[i] for i in m] for m in want]
    for drawn in summary.sample_matches(5, seed=1) if want else []:
        assert tuple(summary.elements().index(e) for e in drawn) in set(map(tuple, want))
