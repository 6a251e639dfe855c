"""Summaries of queries with conditions (``Summary(Query(..., where=...))``): after every
event the counters equal the brute-force oracle (tests/oracle.py's ``where_aggregate``) over
exactly the retained elements, and ``present`` ranks by the oracle's matches through each."""
from __future__ import annotations

import pickle

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from oracle import where_aggregate, where_through
from suse.errors import InputError, LateEventError, LimitError, QueryError, StateError
from test_where_exact import RISING, queries, streams

pytestmark = pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")

STRATEGIES = ["fifo", "random", "present", "suse", "adaptive"]


def conditioned(query):
    """A pattern and conditions, with a condition that always holds when the draw gave none (a
    query without conditions is a native summary)."""
    pattern, where = query
    return pattern, where or {pattern.replace("(", "")[0]: f"{pattern.replace('(', '')[0]}.timestamp >= 0"}


def numbered(events):
    """The events with value = position, so that a retained (char, timestamp, value) names its event."""
    return [(c, t, i, attrs) for i, (c, t, _, attrs) in enumerate(events)]


def retained_events(summary, events):
    """The input events the summary retains, by the position its elements carry as value."""
    return [events[v] for _, _, v, _ in summary.elements()]


def check_against_the_oracle(summary, events, pattern, window, where, aggregate):
    kept = retained_events(summary, events)
    expected = where_aggregate(pattern, kept, window, where)
    result = summary.result()
    assert len(kept) == result.size <= summary.size
    assert (result.count, result.sum) == (expected["count"], expected["sum"]), (pattern, where, kept)
    if aggregate in ("min", "max"):
        assert (result.min, result.max) == (expected["min"], expected["max"])
    if kept:  # the live prefixes, as the exact engine (tested against the oracle) counts them
        assert result.partial_count == suse.exact(summary.query, kept).partial_count
    listed = list(summary.matches())  # what it counts, listed
    assert len(listed) == result.count and all(m[0] in summary.elements() for m in listed)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6), st.integers(1, 5), st.sampled_from(STRATEGIES),
       st.sampled_from(["count", "sum", "min"]), st.data())
def test_counters_equal_the_oracle_over_the_retained_elements_after_every_event(
        events, query, window, size, strategy, aggregate, data):
    pattern, where = conditioned(query)
    events = numbered(events)
    ttl = data.draw(st.none() | st.integers(0, 6))
    summary = suse.Summary(suse.Query(pattern, window, aggregate=aggregate, where=where), size, strategy, seed=7,
                           time_to_live=ttl)
    detected = 0
    for i, event in enumerate(events):
        summary.insert(*event)
        check_against_the_oracle(summary, events, pattern, window, where, aggregate)
        result = summary.result()
        assert result.detected_count >= detected and result.events == i + 1
        detected = result.detected_count
        if ttl is not None and event[0] in summary.query.alphabet:  # (as natively: elements expire on arrivals)
            assert all(event[1] - t <= ttl for _, t, _, _ in summary.elements())
        if data.draw(st.booleans()):
            summary = pickle.loads(pickle.dumps(summary))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6), st.sampled_from(STRATEGIES), st.data())
def test_a_summary_larger_than_the_stream_equals_exact(events, query, window, strategy, data):
    pattern, where = conditioned(query)
    if not events:
        return
    of = data.draw(st.none() | st.sets(st.sampled_from(sorted(set(pattern) & set("ABC"))), min_size=1))
    q = suse.Query(pattern, window, aggregate="max", of=of and "".join(sorted(of)), where=where)
    times = sorted(data.draw(st.lists(st.integers(0, 20), max_size=4)))
    summary = suse.Summary(q, len(events) + data.draw(st.integers(0, 3)), strategy)
    evaluations = summary.extend(events, evaluate_at=times, elements=True)
    for evaluation in evaluations:  # the elements retained then: every event up to that time
        assert [e[:2] for e in evaluation.elements] == [
            e[:2] for e in events if e[1] <= evaluation.timestamp and e[0] in q.alphabet]
    exact = suse.exact(q, events, evaluate_at=times)
    got, want = summary.result(), exact
    assert (got.count, got.sum, got.partial_count, got.min, got.max) == (
        want.count, want.sum, want.partial_count, want.min, want.max)
    assert (got.detected_count, got.detected_sum, got.evictions) == (want.count, want.sum, 0)
    assert [(e.count, e.sum, e.partial_count, e.max) for e in evaluations] == [
        (e.count, e.sum, e.partial_count, e.max) for e in exact.evaluations]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6), st.integers(1, 4), st.sampled_from(["count", "sum"]))
def test_present_evicts_the_element_with_fewest_matches_through_it(events, query, window, size, aggregate):
    pattern, where = conditioned(query)
    events = numbered(events)
    part = "sum" if aggregate == "sum" else "count"
    summary = suse.Summary(suse.Query(pattern, window, aggregate=aggregate, where=where), size, "present")
    for event in events:
        kept = retained_events(summary, events)
        through = [t[part] for t in where_through(pattern, kept, window, where)]
        assert summary.present_benefits() == through
        summary.insert(*event)
        after = retained_events(summary, events)
        if event[0] not in summary.query.alphabet:  # no element
            assert after == kept
            continue
        if len(kept) < size:
            assert after == kept + [event]
            continue
        gain = where_aggregate(pattern, kept + [event], window, where)[part] - where_aggregate(
            pattern, kept, window, where)[part]
        lowest = min(range(len(kept)), key=lambda i: (through[i], i))
        assert after == (kept[:lowest] + kept[lowest + 1:] + [event] if gain > through[lowest] else kept)


def test_fifo_keeps_the_newest_and_random_is_reproducible_by_its_seed():
    events = [("A", 0, {"p": 1}), ("B", 1, {"p": 2}), ("X", 2, {}), ("B", 3, {"p": 3}), ("C", 4, {"p": 0}),
              ("B", 5, {"p": 4}), ("C", 6, {"p": 1})]
    query = suse.Query("A B+ C", 10, where=RISING)
    fifo = suse.Summary(query, 3, "fifo")
    fifo.extend(events)
    assert [e[:2] for e in fifo.elements()] == [("C", 4), ("B", 5), ("C", 6)]
    assert (fifo.result().skipped, fifo.result().evictions) == (1, 3)
    runs = []
    for _ in range(2):
        s = suse.Summary(query, 3, "random", seed=11)
        s.extend(events)
        runs.append(s.elements())
    assert runs[0] == runs[1]


def test_elements_carry_the_attributes_read_and_go_back_into_exact():
    query = suse.Query("A B+ C", 10, aggregate="sum", where=RISING)
    frame = pd.DataFrame({"char": list("ABBC"), "timestamp": [0, 1, 2, 3], "value": [1, 2, 3, 4],
                          "p": [9, 1, 2, 0], "other": [0, 0, 0, 0]})
    summary = suse.Summary(query, 3, "fifo")
    summary.extend(frame)
    assert summary.elements() == [("B", 1, 2, {"p": 1}), ("B", 2, 3, {"p": 2}), ("C", 3, 4, {"p": 0})]
    assert suse.exact(query, summary.elements()).count == summary.result().count == 0


def test_what_a_summary_with_where_does_not_do_is_refused_by_name():
    query = suse.Query("A B+ C", 10, where=RISING)
    with pytest.raises(InputError, match="lateness"):
        suse.Summary(query, 5, "fifo", lateness=2)
    summary = suse.Summary(query, 5, "fifo")
    summary.insert("A", 0, attributes={"p": 1})
    for call, says in ((summary.with_query, "with_query"), (summary.to_bytes, "to_bytes")):
        with pytest.raises(QueryError, match=says):
            call()
    with pytest.raises(LateEventError, match="final"):
        summary.retract("A", 0)
    with pytest.raises(LateEventError, match="earlier"):
        summary.insert("B", -1, attributes={"p": 1})
    summary.extend([("B", -1, {"p": 1})], late="count")
    assert (summary.late, summary.result().late, len(summary)) == (1, 1, 1)
    with pytest.raises(InputError, match="'p'"):
        summary.insert("B", 1)
    with pytest.raises(InputError, match="values="):
        summary.extend([("B", 1, {"p": 1})], values=[3])
    assert len(summary) == 1


def test_an_edited_pickle_is_a_state_error():
    summary = suse.Summary(suse.Query("A B+ C", 10, where=RISING), 2, "random", seed=3)
    summary.extend([("A", 0, {"p": 1}), ("B", 1, {"p": 2}), ("C", 2, {"p": 0})])
    function, (query, options, state) = summary.__reduce__()
    assert function(query, options, state).result() == summary.result()
    for edit in ({"retained": [[9, 0, 0, [1]]]}, {"retained": state["retained"][::-1]}, {"events": -1},
                 {"detected": [1]}, {"rng": "x"}, {"last": None}):
        with pytest.raises(StateError, match="saved summary with where"):
            function(query, options, {**state, **edit})


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_limit_error_changes_nothing(strategy):
    """A counting state past memory_limit is a LimitError, and the summary is as before it."""
    query = suse.Query("A B+ C", 1000, where={"C": "C.p < B.p"})  # each B value is a register key
    summary = suse.Summary(query, 50, strategy, seed=5, memory_limit=3000, time_to_live=40)
    events = [("A", 0, {})] + [("B", i, {"p": i}) for i in range(1, 60)] + [("C", 60, {"p": 30})]
    refused = 0
    for event in events:
        before = (summary.result(), summary.elements(), pickle.dumps(summary))
        try:
            summary.extend([event])
        except LimitError:
            refused += 1
            assert (summary.result(), summary.elements(), pickle.dumps(summary)) == before
    assert refused


def test_the_retained_matches_are_listed_and_sampled_with_the_conditions():
    summary = suse.Summary(suse.Query("A B+ C", 10, where=RISING), 4, "fifo")
    summary.extend([("A", 0, {"p": 5}), ("B", 1, {"p": 3}), ("B", 2, {"p": 4}), ("B", 3, {"p": 2}), ("C", 4, {"p": 1})])
    kept = summary.elements()  # the oldest A is evicted: the B's and C remain
    assert [e[:2] for e in kept] == [("B", 1), ("B", 2), ("B", 3), ("C", 4)]
    assert list(summary.matches()) == [] == [m for m in summary.retained_matches().positions()]
    summary = suse.Summary(suse.Query("A B+ C", 10, where=RISING), 10, "fifo")
    summary.extend([("A", 0, {"p": 5}), ("B", 1, {"p": 3}), ("B", 2, {"p": 4}), ("C", 3, {"p": 1})])
    assert list(summary.retained_matches().positions()) == [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]
    assert list(summary.retained_matches().positions(containing=2)) == [(0, 1, 2, 3), (0, 2, 3)]
    assert summary.result().count == 3 and len(summary.sample_matches(5, seed=1)) == 5


def test_a_summary_with_conditions_is_a_summary():
    summary = suse.Summary(suse.Query("A B+ C", 10, where=RISING), 5, "fifo")
    assert isinstance(summary, suse.Summary) and type(summary).__name__ == "WhereSummary"
    assert not isinstance(suse.Exact(suse.Query("A B+ C", 10, where=RISING)), suse.Summary)
