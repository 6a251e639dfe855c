"""A negation at the end of the pattern (`A B+ !C`, issue 27 "Absence at the end"): the exact
engine against the brute-force oracle (`oracle.absence_aggregate`), hand-worked ties, incremental
feeding, pickling, and the refusals of everything that does not count it yet."""
from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from negation_strategies import absence_queries, streams
from oracle import absence_aggregate
from suse.errors import QueryError

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

# A0 B2 B4 A5 C8 B12, window 10: the matches from A0 meet C8; {A5, B12} closes at 15.
STREAM = [("A", 0, 1), ("B", 2, 1), ("B", 4, 1), ("A", 5, 1), ("C", 8, 1), ("B", 12, 1)]


def _triple(result) -> tuple[int, int, int]:
    return result.count, result.sum, result.partial_count


def _want(query, events, window, at=None) -> tuple[int, int, int]:
    w = absence_aggregate(query, events, window, at)
    return w["count"], w["sum"], w["partial_count"]


def _events(stream):
    return [(c.upper(), t, max(v, 0)) for c, t, v in stream]


@pytest.mark.parametrize(
    "events, at, count",
    [
        (STREAM, None, 1),
        (STREAM, 14, 0),  # {A5, B12} is pending until 5 + 10
        (STREAM, 15, 1),
        (STREAM + [("C", 15, 1)], None, 0),  # a C exactly at f + W refutes it (the window is inclusive)
        (STREAM + [("C", 16, 1)], None, 1),  # one after f + W does not
        ([("A", 0, 1), ("B", 3, 1), ("C", 3, 1)], None, 0),  # a tie with l, arriving after it: after l
        ([("A", 0, 1), ("C", 3, 1), ("B", 3, 1)], None, 1),  # a tie with l, arriving before it: before l
        ([("A", 0, 1), ("B", 3, 1), ("B", 11, 1)], 10, 1),  # {A0,B3} counts at 10 = f + W; B11 comes later
    ],
)
def test_worked_examples(events, at, count):
    q = suse.Query("A B+ !C", window=10)
    assert absence_aggregate("A B+ !C", events, 10, at)["count"] == count
    if at is None:
        got = suse.exact(q, events)
    else:
        (got,) = suse.exact(q, events, evaluate_at=[at]).evaluations
    assert _triple(got) == _want("A B+ !C", events, 10, at)


def test_a_match_that_does_not_end_with_the_negation_counts_at_once():
    q = suse.Query("A (B !C | D)", window=10)
    events = [("A", 0, 1), ("D", 1, 1), ("B", 2, 1)]
    (at_two,) = suse.exact(q, events, evaluate_at=[2]).evaluations
    assert at_two.count == 1  # {A0, D1}; {A0, B2} waits for time 10
    assert suse.exact(q, events).count == 2 == absence_aggregate("A (B !C | D)", events, 10)["count"]


@settings(max_examples=200, **SLOW)
@given(query=absence_queries, stream=streams(chars="abcde"), window=st.integers(0, 6), data=st.data())
def test_exact_engine_equals_the_oracle(query, stream, window, data):
    events = _events(stream)
    query = query.upper()
    last = events[-1][1]
    times = sorted(set(data.draw(st.lists(st.integers(0, last + window + 1), max_size=3))))
    got = suse.exact(suse.Query(query, window), events, evaluate_at=times)
    assert _triple(got) == _want(query, events, window)
    for ev in got.evaluations:
        assert _triple(ev) == _want(query, events, window, ev.timestamp), ev.timestamp


@settings(max_examples=80, **SLOW)
@given(query=absence_queries, stream=streams(chars="abcde"), window=st.integers(0, 6), data=st.data())
def test_incremental_feeding_and_pickling_equal_one_pass(query, stream, window, data):
    events = _events(stream)
    query = query.upper()
    q = suse.Query(query, window)
    cut = data.draw(st.integers(0, len(events)))
    engine = suse.Exact(q)
    engine.extend(events[:cut])
    if data.draw(st.booleans()):
        engine = pickle.loads(pickle.dumps(engine))
    engine.extend(events[cut:])
    assert _triple(engine.result()) == _want(query, events, window)


def test_counts_past_128_bits_close_exactly():
    # A+ !C over 200 A's in one window: every non-empty subset is pending, then all close.
    events = [("A", t, 1) for t in range(200)]
    got = suse.exact(suse.Query("A+ !C", 1000), events, evaluate_at=[999, 1099, 1199])
    assert got.count == 2**200 - 1
    # At 1099 the sets whose first A is at 0..99 have closed: all but the 2^100 - 1 others.
    assert [e.count for e in got.evaluations] == [0, 2**200 - 2**100, 2**200 - 1]


@pytest.mark.parametrize(
    "make, what",
    [
        (lambda: suse.Query("A B+ !C", 10, policy="next"), "policy 'next'"),
        (lambda: suse.Query("A B+ !C", 10, policy="contiguous"), "policy 'contiguous'"),
        (lambda: suse.Query("A B+ !C", 10, aggregate="max"), "aggregate='max'"),
        (lambda: suse.Query("A B+ !C", 10, where={"B": "B.p > 1"}), "where"),
        (lambda: suse.Exact(suse.Query("A B+ !C", 10), lateness=2), "lateness"),
    ],
)
def test_what_does_not_combine_yet_is_refused_by_name(make, what):
    with pytest.raises(QueryError, match="negation at the end of the pattern") as err:
        make()
    assert what in err.value.message


@pytest.mark.parametrize(
    "use",
    [
        lambda q: suse.exact(suse.QuerySet({"x": q}), STREAM),
    ],
)
def test_other_engines_refuse_it_by_name(use):
    with pytest.raises(QueryError, match="negation at the end of the pattern is not supported by this engine"):
        use(suse.Query("A B+ !C", 10))


def test_the_command_line_counts_it_and_refuses_what_does_not_combine(tmp_path):
    from helpers import run

    path = tmp_path / "events.csv"
    path.write_text("char,timestamp\n" + "".join(f"{c},{t}\n" for c, t, _ in STREAM))
    out = run("exact", "A B+ !C", "--window", "10", "--evaluate-at", "14,15", str(path))
    assert out.returncode == 0, out.stderr
    rows = {line.split("│")[0].strip(): line.split("│")[1].strip() for line in out.stdout.splitlines() if "│" in line}
    assert rows == {"t ≤ 14": "0", "t ≤ 15": "1", "stream": "1"}
    summary = run("eval", "A B+ !C", "--window", "10", "-n", str(len(STREAM)), "--strategy", "suse", str(path))
    assert summary.returncode == 0, summary.stderr  # every strategy: a summary larger than the stream is exact
    assert re.search(rf"summary │\s+{suse.exact(suse.Query('A B+ !C', 10), STREAM).count}\s+│", summary.stdout)
    refused = run("eval", "A B+ !C", "--window", "10", "-n", "5", "--strategy", "suse", "--policy", "next", str(path))
    assert refused.returncode == 2 and "policy 'next' is not supported with a negation at the end" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) <= 3 and "Traceback" not in refused.stderr
