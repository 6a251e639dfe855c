"""Issue 26, item 5: queries, engines and sets pickle (Spark and multiprocessing users do), and a
round trip through pickle or another process gives the results the original gives."""
from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

import suse

EVENTS = [("A", 1, 3), ("X", 2, 0), ("B", 3, 5), ("A", 4, 1), ("B", 6, 2), ("C", 7, 4), ("B", 9, 8), ("C", 12, 6)]
MORE = [("A", 13, 2), ("B", 14, 7), ("C", 15, 1), ("B", 20, 3), ("C", 22, 9)]

QUERIES = [
    suse.Query("AB+C", 6, "sum"),
    suse.Query("A !X B", 5, policy="next"),
    suse.Query("AB*C", 8, policy="contiguous"),
    suse.Query("ABC", 6, max_missing=1),
    suse.Query("A B+ C", 7, "max", of="B"),
]


def totals(r) -> tuple:
    return (r.count, r.sum, r.partial_count, r.events, r.skipped, r.min, r.max, r.count_by_missing, r.late)


@pytest.mark.parametrize("query", QUERIES, ids=repr)
def test_a_query_round_trips(query):
    back = pickle.loads(pickle.dumps(query))
    assert back == query and repr(back) == repr(query)
    assert suse.exact(back, EVENTS).count == suse.exact(query, EVENTS).count


@pytest.mark.parametrize("query", QUERIES, ids=repr)
@pytest.mark.parametrize("lateness", [0, 3])
def test_an_exact_engine_round_trips_mid_stream(query, lateness):
    engine = suse.Exact(query, lateness=lateness)
    first = EVENTS if not lateness else sorted(EVENTS, key=lambda e: e[1] + (e[1] % 3))  # some disorder
    engine.extend(first, late="count")
    back = pickle.loads(pickle.dumps(engine))
    assert totals(back.result()) == totals(engine.result())
    assert back.pending == engine.pending
    # both go on alike: evaluations, further events, retraction of a pending event
    a = engine.extend(MORE, evaluate_at=[14, 21])
    b = back.extend(MORE, evaluate_at=[14, 21])
    assert [totals_of(e) for e in a] == [totals_of(e) for e in b]
    if lateness:
        engine.retract("B", 20, 3)
        back.retract("B", 20, 3)
    assert totals(back.result()) == totals(engine.result())
    if not lateness:
        assert back.result().count == suse.exact(query, EVENTS + MORE).count


def totals_of(ev) -> tuple:
    return (ev.timestamp, ev.count, ev.sum, ev.partial_count, ev.min, ev.max)


def test_a_big_integer_exact_engine_round_trips():
    q = suse.Query("a+b", window=10**6)
    engine = suse.Exact(q)
    engine.extend(chars="a" * 199 + "b", timestamps=np.arange(200))
    assert engine._engine.tier == "u256"
    back = pickle.loads(pickle.dumps(engine))
    assert back._engine.tier == "u256"
    back.extend([("b", 300)])
    engine.extend([("b", 300)])
    assert back.result().count == engine.result().count == 2 * (2**199 - 1)


def test_query_sets_and_set_engines_round_trip():
    qs = suse.QuerySet({"abc": QUERIES[0], "neg": QUERIES[1], "max": QUERIES[4]})
    back = pickle.loads(pickle.dumps(qs))
    assert dict(back) == dict(qs)
    fresh = pickle.loads(pickle.dumps(suse.ExactSet(qs, merge="never")))
    assert fresh.merge == "never"
    assert {k: totals(r) for k, r in (fresh.extend(EVENTS) and fresh.result()).items()} == \
        {k: totals(r) for k, r in suse.exact(qs, EVENTS).items()}
    summaries = suse.SummarySet(qs, size=4, seed=2)
    summaries.extend(EVENTS)
    copy = pickle.loads(pickle.dumps(summaries))
    for s in (summaries, copy):
        s.extend(MORE)
    assert {k: totals(r) for k, r in copy.result().items()} == {k: totals(r) for k, r in summaries.result().items()}


def test_an_exact_set_that_took_events_says_why_it_cannot_be_pickled():
    engine = suse.ExactSet(suse.QuerySet({"abc": QUERIES[0]}))
    engine.extend(EVENTS)
    with pytest.raises(suse.InputError, match="an ExactSet that has taken events cannot be pickled.*suse.Exact per"):
        pickle.dumps(engine)


def _continue(engine, events):
    """In a child process: feed the events, return the totals."""
    engine.extend(events)
    return totals(engine.result())


def test_engines_travel_to_spawned_processes():
    engines = [suse.Exact(QUERIES[0]), suse.Exact(QUERIES[4], lateness=3), suse.Summary(QUERIES[1], size=3, seed=1)]
    for e in engines:
        e.extend(EVENTS)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.starmap(_continue, [(e, MORE) for e in engines])
    for e, g in zip(engines, got):
        assert g == _continue(e, MORE)
