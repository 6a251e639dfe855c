"""MIN/MAX over the elements in at least one match, and `of=`: differential tests
against the brute-force oracle for the exact engine and summaries, under every policy."""
from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from helpers import run
from negation_strategies import negation_queries
from negation_strategies import streams as negation_streams
from oracle import query_extrema
from strategies import queries, streams

POLICIES = ["any", "next", "contiguous"]


@st.composite
def query_and_of(draw, source=queries):
    """A query, and `of`: None or a non-empty subset of the query's letters."""
    regex = draw(source)
    letters = suse.Query(regex, 0).alphabet
    of = draw(st.one_of(st.none(), st.sets(st.sampled_from(letters), min_size=1)))
    return regex, None if of is None else "".join(sorted(of))


def _oracle_at(regex, events, window, policy, of, t):
    return query_extrema(regex, [e for e in events if e[1] <= t], window, policy, of)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qo=query_and_of(), events=streams(max_size=10), window=st.integers(0, 5),
       policy=st.sampled_from(POLICIES), aggregate=st.sampled_from(["min", "max"]))
def test_exact_min_max_equal_the_oracle(qo, events, window, policy, aggregate):
    regex, of = qo
    q = suse.Query(regex, window=window, aggregate=aggregate, policy=policy, of=of)
    times = sorted({t for _, t, _ in events})
    r = suse.exact(q, events, evaluate_at=times)
    want = query_extrema(regex, events, window, policy, of)
    assert (r.count, r.min, r.max) == (want["count"], want["min"], want["max"])
    for e in r.evaluations:  # also while elements leave the window
        w = _oracle_at(regex, events, window, policy, of, e.timestamp)
        assert (e.min, e.max) == (w["min"], w["max"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(qo=query_and_of(negation_queries), events=negation_streams(max_size=9), window=st.integers(0, 5),
       policy=st.sampled_from(POLICIES))
def test_exact_min_max_with_negation_equal_the_oracle(qo, events, window, policy):
    regex, of = qo
    events = [(c, t, abs(v)) for c, t, v in events]  # these streams also test negative values
    q = suse.Query(regex, window=window, aggregate="max", policy=policy, of=of)
    r = suse.exact(q, events)
    want = query_extrema(regex, events, window, policy, of)
    assert (r.count, r.min, r.max) == (want["count"], want["min"], want["max"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qo=query_and_of(), events=streams(max_size=10), window=st.integers(0, 5), policy=st.sampled_from(POLICIES))
def test_sum_and_avg_of_letters_equal_the_oracle(qo, events, window, policy):
    regex, of = qo
    for aggregate in ("sum", "avg"):
        r = suse.exact(suse.Query(regex, window=window, aggregate=aggregate, policy=policy, of=of), events)
        want = query_extrema(regex, events, window, policy, of)
        assert (r.count, r.sum) == (want["count"], want["sum"])  # COUNT ignores `of`
        assert r.avg == (None if want["count"] == 0 else want["sum"] / want["count"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qo=query_and_of(), events=streams(max_size=11), window=st.integers(0, 5), policy=st.sampled_from(POLICIES),
       strategy=st.sampled_from(list(suse.api.STRATEGIES)))
def test_summary_larger_than_the_stream_equals_exact(qo, events, window, policy, strategy):
    regex, of = qo
    q = suse.Query(regex, window=window, aggregate="max", policy=policy, of=of)
    s = suse.Summary(q, size=len(events), strategy=strategy, seed=2)
    times = sorted({t for _, t, _ in events})
    got = s.extend(events=events, evaluate_at=times)
    want = suse.exact(q, events, evaluate_at=times).evaluations
    assert [(e.count, e.sum, e.min, e.max) for e in got] == [(e.count, e.sum, e.min, e.max) for e in want]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qo=query_and_of(), events=streams(max_size=12), window=st.integers(0, 5), policy=st.sampled_from(["any", "next"]),
       size=st.integers(1, 5), strategy=st.sampled_from(list(suse.api.STRATEGIES)),
       aggregate=st.sampled_from(["min", "max", "sum"]))
def test_summary_min_max_equal_recomputation_from_what_it_retains(qo, events, window, policy, size, strategy, aggregate):
    """After every step, including evictions of the element that held the maximum. (Not under
    contiguity: an eviction leaves a break that `elements()` does not show, so the oracle over
    the retained elements alone would join sets the summary rightly keeps apart; the kernel's
    invariant test checks contiguity with the breaks.)"""
    regex, of = qo
    q = suse.Query(regex, window=window, aggregate=aggregate, policy=policy, of=of)
    s = suse.Summary(q, size=size, strategy=strategy, seed=5)
    for ev in events:
        s.insert(*ev)
        r = s.result()
        kept = s.elements()
        want = query_extrema(regex, kept, window, policy, of)
        assert (r.count, r.sum) == (want["count"], want["sum"])
        if aggregate in ("min", "max"):
            assert (r.min, r.max) == (want["min"], want["max"])
        else:
            assert (r.min, r.max) == (None, None)


def test_maximum_of_an_expired_element_is_kept_by_the_exact_engine_only_while_it_is_in_a_match():
    q = suse.Query("AB", window=2, aggregate="max")
    # A=100 expires before any B: only {A@11, B@12} matches.
    r = suse.exact(q, [("A", 0, 100), ("B", 10, 1), ("A", 11, 5), ("B", 12, 3)], evaluate_at=[10, 12])
    assert [(e.count, e.max) for e in r.evaluations] == [(0, None), (1, 5)]
    assert (r.min, r.max) == (3, 5)
    # Once in a match, an element stays counted: results are over every match formed so far.
    r = suse.exact(q, [("A", 0, 100), ("B", 1, 1), ("A", 11, 5), ("B", 12, 3)])
    assert (r.count, r.min, r.max) == (2, 1, 100)


def test_summary_that_evicts_the_maximum_reports_what_it_retains():
    q = suse.Query("AB", window=10, aggregate="max")
    events = [("A", 0, 100), ("A", 1, 5), ("B", 2, 3)]
    s = suse.Summary(q, size=2, strategy="fifo")
    s.extend(events)
    assert [c for c, _, _ in s.elements()] == ["A", "B"]
    assert (s.result().count, s.result().max, s.result().min) == (1, 5, 3)
    assert suse.exact(q, events).max == 100


def test_of_picks_one_letters_values_as_in_aseq():
    events = [("A", 1, 5), ("B", 2, 7), ("C", 3, 9), ("C", 4, 2), ("D", 5, 1), ("C", 6, 100)]
    r = suse.exact(suse.Query("ABCD", window=10, aggregate="max", of="C"), events)
    assert (r.count, r.min, r.max) == (2, 2, 9)  # C@6 is in no match
    assert suse.exact(suse.Query("ABCD", window=10, aggregate="sum", of="C"), events).sum == 11
    assert suse.exact(suse.Query("ABCD", window=10, aggregate="sum", of={"A", "D"}), events).sum == 12
    # No element of `of` in any match: no value, although there are matches.
    r = suse.exact(suse.Query("AB|C", window=10, aggregate="max", of="C"), [("A", 1, 4), ("B", 2, 8)])
    assert (r.count, r.max) == (1, None)


@pytest.mark.parametrize("of, message", [
    ("X", "'X', which is not a letter of the query"),
    ("C", "'C', which is not a letter of the query"),  # negated, so never an element
    ("", "of names no letter"),
    (3, "of must be a letter or letters"),
    (["AB"], "of must be a letter or letters"),
])
def test_of_outside_the_query_is_a_query_error(of, message):
    with pytest.raises(suse.QueryError, match=message):
        suse.Query("A!CB", window=3, aggregate="max", of=of)


def test_min_max_survive_saving_and_loading():
    q = suse.Query("A+B", window=5, aggregate="min", of="B")
    s = suse.Summary(q, size=3, strategy="suse", seed=1)
    s.extend([("A", 1, 4), ("B", 2, 8), ("A", 3, 1), ("B", 4, 6)])
    loaded = pickle.loads(pickle.dumps(s))
    assert loaded.query == q and loaded.query.of == "B"
    want = query_extrema("A+B", loaded.elements(), 5, "any", "B")
    assert want["max"] is not None
    assert (loaded.result().min, loaded.result().max) == (s.result().min, s.result().max) == (want["min"], want["max"])
    more = [("B", 5, 2)]
    assert loaded.extend(more, evaluate_at=[5]) == s.extend(more, evaluate_at=[5])
    # A description saved without `of` (earlier versions) still loads.
    plain = suse.Summary(suse.Query("AB", window=5), size=2, seed=1)
    assert "of" not in plain._header()["query"]
    assert suse.Summary.from_bytes(plain.to_bytes()).query == plain.query


# ------------------------------------------------------------------------------------------ CLI
ASEQ_CSV = "char,timestamp,value\nA,1,5\nB,2,7\nC,3,9\nC,4,2\nD,5,1\nC,6,100\n"


def test_cli_exact_and_eval_report_min_and_max_of_a_letter():
    proc = run("exact", "ABCD", "-w", "10", "--aggregate", "max", "--of", "C", "--evaluate-at", "4,6", "--json",
                stdin=ASEQ_CSV)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    want = query_extrema("ABCD", [("A", 1, 5), ("B", 2, 7), ("C", 3, 9), ("C", 4, 2), ("D", 5, 1), ("C", 6, 100)],
                         10, "any", "C")
    assert (data["count"], data["sum"], data["min"], data["max"]) == (want["count"], want["sum"], want["min"], want["max"])
    assert [(e["min"], e["max"]) for e in data["evaluations"]] == [(None, None), (2, 9)]
    table = run("exact", "ABCD", "-w", "10", "--aggregate", "min", "--of", "C", stdin=ASEQ_CSV)
    assert table.returncode == 0 and "max" in table.stdout.splitlines()[1]
    proc = run("eval", "ABCD", "-w", "10", "-n", "10", "--strategy", "fifo", "--aggregate", "max", "--of", "C",
                "--json", stdin=ASEQ_CSV)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["count"], data["min"], data["max"]) == (want["count"], want["min"], want["max"])


def test_cli_of_outside_the_query_exits_2():
    proc = run("exact", "ABCD", "-w", "10", "--aggregate", "max", "--of", "X", stdin=ASEQ_CSV)
    assert proc.returncode == 2
    assert "'X', which is not a letter of the query" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
