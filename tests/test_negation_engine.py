"""Negation and contiguity in the engines, against the independent oracle in
tests/oracle.py: the exact engine, summaries larger than the stream, and the summary
invariants after every step (counters == a recount from the retained elements and what they
carry about the stream, checked by a save/load round trip; never more matches than the
stream has)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from negation_strategies import negation_queries, streams
from oracle import query_aggregate, query_aggregate_at, query_stnm_aggregate

PLAIN_QUERIES = st.sampled_from(["ab", "a(b|c)*c", "ab+c", "a.c", "(ab)+", "a?b*c"])
QUERIES = st.one_of(negation_queries, PLAIN_QUERIES)
POLICIES = st.sampled_from(["any", "next", "contiguous"])
SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _events(stream):
    return [(c, t, max(v, 0)) for c, t, v in stream]


def _oracle(query, events, window, policy):
    if policy == "next":
        return query_stnm_aggregate(query, events, window)
    return query_aggregate(query, events, window, policy)


@settings(max_examples=250, **SLOW)
@given(query=QUERIES, stream=streams(), window=st.integers(0, 6), policy=POLICIES)
def test_exact_engine_equals_the_oracle(query, stream, window, policy):
    events = _events(stream)
    got = suse.exact(suse.Query(query, window, policy=policy), events)
    want = _oracle(query, events, window, policy)
    assert got.count == want["count"] and got.sum == want["sum"]
    if policy != "next":
        assert got.partial_count == want["partial_count"]
    # Negated characters are events of the query, not skipped; only strangers are.
    q = suse.Query(query, window, policy=policy)
    assert got.skipped == sum(1 for c, _, _ in events if c not in q.alphabet and c not in q.negated)


@settings(max_examples=60, **SLOW)
@given(query=QUERIES, stream=streams(), window=st.integers(0, 6), policy=st.sampled_from(["any", "contiguous"]),
       data=st.data())
def test_evaluations_while_processing(query, stream, window, policy, data):
    events = _events(stream)
    times = sorted(data.draw(st.lists(st.integers(0, events[-1][1] + 1), min_size=1, max_size=3)))
    got = suse.exact(suse.Query(query, window, policy=policy), events, evaluate_at=times)
    for ev in got.evaluations:
        want = query_aggregate_at(query, events, window, ev.timestamp, policy)
        assert (ev.count, ev.sum, ev.partial_count) == (want["count"], want["sum"], want["partial_count"])


@settings(max_examples=80, **SLOW)
@given(query=QUERIES, stream=streams(), window=st.integers(0, 6), policy=POLICIES,
       strategy=st.sampled_from(suse.api.STRATEGIES))
def test_a_summary_larger_than_the_stream_is_exact(query, stream, window, policy, strategy):
    events = _events(stream)
    q = suse.Query(query, window, policy=policy)
    s = suse.Summary(q, size=len(events) + 1, strategy=strategy, seed=1)
    s.extend(events=events)
    exact = suse.exact(q, events)
    assert (s.result().count, s.result().sum) == (exact.count, exact.sum)


@settings(max_examples=80, **SLOW)
@given(query=QUERIES, stream=streams(max_size=12), window=st.integers(0, 6), policy=POLICIES,
       strategy=st.sampled_from(suse.api.STRATEGIES), size=st.integers(1, 4))
def test_summary_invariants_after_every_step(query, stream, window, policy, strategy, size):
    events = _events(stream)
    q = suse.Query(query, window, policy=policy)
    s = suse.Summary(q, size=size, strategy=strategy, seed=2, time_to_live=window + 3)
    exact = suse.Exact(q)
    for e in events:
        s.extend(events=[e])
        exact.extend(events=[e])
        kept, fresh = s._engine._active_counters()
        assert kept == fresh
        # Loading recounts every counter from the retained elements and their gaps.
        assert suse.Summary.from_bytes(s.to_bytes()).result() == s.result()
        # Judged on the full stream: evicting an element never creates a match. (Not so for
        # skip-till-next-match, whose runs over the retained elements may take an element the
        # full stream's run skipped, negation or not.)
        if policy != "next":
            assert s.result().count <= exact.result().count


def test_evicting_the_negated_event_does_not_create_a_match():
    # A E B with E negated between A and B: no match, whatever the summary keeps.
    q = suse.Query("A!EB", 100)
    for strategy in suse.api.STRATEGIES:
        s = suse.Summary(q, size=2, strategy=strategy, seed=0)
        s.extend("AEB", [1, 2, 3])
        assert s.result().count == 0, strategy
    # The same with E as a letter elsewhere (A!E B E): it is retained, then evicted.
    q = suse.Query("A!EBE", 100)
    s = suse.Summary(q, size=2, strategy="fifo")
    s.extend("AEBE", [1, 2, 3, 4])
    assert s.result().count == 0 and suse.exact(q, list(zip("AEBE", [1, 2, 3, 4]))).count == 0


def test_contiguity_counts_strangers_as_breaks():
    q = suse.Query("AB+", 10, policy="contiguous")
    r = suse.exact(q, list(zip("ABBXABAB", range(8))))
    assert (r.count, r.skipped) == (4, 1)  # AB, ABB, AB at 4-5, AB at 6-7; X breaks
    s = suse.Summary(q, size=2, strategy="fifo")
    s.extend("ABBXAB", list(range(6)))
    assert [c for c, _, _ in s.elements()] == ["A", "B"] and s.result().count == 1
    # A summary that drops an element between two others must not count them as adjacent.
    s = suse.Summary(suse.Query("ABC", 10, policy="contiguous"), size=2, strategy="present")
    s.extend("ABC", [0, 1, 2])
    assert s.result().count == 0
