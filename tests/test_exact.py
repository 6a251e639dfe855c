"""The exact engine against the paper's vectors and a brute-force oracle."""
from __future__ import annotations

import json
import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import suse
from oracle import query_to_python_regex, stam_aggregate, stam_aggregate_at, stnm_aggregate
from strategies import queries, streams

# A copy of shared/vectors/paper_examples.json (worked examples of the SuSe paper).
VECTORS = pathlib.Path(__file__).parent / "data" / "paper_examples.json"


def _paper_cases():
    cases = json.loads(VECTORS.read_text())["cases"]
    return [c for c in cases if "summary_size" not in c]


@pytest.mark.parametrize("case", _paper_cases(), ids=lambda c: c["name"])
def test_paper_vectors(case):
    q = suse.Query(case["regex"], window=case["window"])
    if "stream" in case:
        values = case.get("values") or [1] * len(case["stream"])
        events = [(c, t, v) for (c, t), v in zip(case["stream"], values)]
    else:  # A^8 B^8 C^8 D^8, timestamps 0..31
        events = [(c, i) for i, c in enumerate("A" * 8 + "B" * 8 + "C" * 8 + "D" * 8)]
    result = suse.exact(q, events)
    for key in ("count", "sum", "partial_count"):
        if key in case["expected"]:
            assert getattr(result, key) == case["expected"][key], key


def test_ambiguous_regex_counts_each_match_once():
    q = suse.Query("(ab|a)b*", window=10)
    assert suse.exact(q, [("a", 0), ("b", 1), ("b", 2)]).count == 4  # the paper's C++ reports 7


@settings(max_examples=150, deadline=None)
@given(query=queries, events=streams(), window=st.integers(0, 6))
def test_exact_matches_brute_force(query, events, window):
    q = suse.Query(query, window=window)
    expected = stam_aggregate(query_to_python_regex(query), events, window)
    got = suse.exact(q, events)
    assert (got.count, got.sum, got.partial_count) == (expected["count"], expected["sum"], expected["partial_count"])
    assert got.skipped == sum(1 for c, _, _ in events if c not in q.alphabet)
    assert got.avg == (None if got.count == 0 else got.sum / got.count)


@settings(max_examples=60, deadline=None)
@given(query=queries, events=streams(), window=st.integers(0, 6), data=st.data())
def test_evaluations_while_processing(query, events, window, data):
    times = data.draw(st.lists(st.integers(-1, events[-1][1] + 2), min_size=1, max_size=4))
    q = suse.Query(query, window=window)
    got = suse.exact(q, events, evaluate_at=times)
    regex = query_to_python_regex(query)
    assert [e.timestamp for e in got.evaluations] == times  # in the order given, not sorted
    for ev in got.evaluations:
        want = stam_aggregate_at(regex, events, window, ev.timestamp)
        assert (ev.count, ev.sum, ev.partial_count) == (want["count"], want["sum"], want["partial_count"])


@settings(max_examples=100, deadline=None)
@given(query=queries, events=streams(), window=st.integers(0, 6))
def test_skip_till_next_match_matches_its_definition(query, events, window):
    q = suse.Query(query, window=window, policy="next")
    known = [e for e in events if e[0] in q.alphabet]
    expected = stnm_aggregate(q.automaton, known, window)
    got = suse.exact(q, events)
    assert (got.count, got.sum) == (expected["count"], expected["sum"])


@settings(max_examples=40, deadline=None)
@given(query=queries, events=streams(max_size=14), window=st.integers(0, 6), cut=st.integers(0, 14))
def test_chunked_extend_equals_one_call(query, events, window, cut):
    q = suse.Query(query, window=window)
    whole = suse.exact(q, events)
    inc = suse.Exact(q)
    inc.extend(events[:cut])
    inc.extend(events[cut:])
    r = inc.result()
    assert (r.count, r.sum, r.partial_count, r.events) == (whole.count, whole.sum, whole.partial_count, whole.events)


def test_abcd_blocks_closed_form():
    q = suse.Query("ABCD", window=10**9)
    for i in (8, 64, 300):
        chars = "A" * i + "B" * i + "C" * i + "D" * i
        assert suse.exact(q, chars=chars, timestamps=np.arange(4 * i)).count == i**4


def test_counts_never_wrap_past_128_bits():
    q = suse.Query("a+", window=10**6, aggregate="sum")
    n = 200
    big_value = 2**63 - 1
    r = suse.exact(q, chars="a" * n, timestamps=list(range(n)), values=[big_value] * n)
    assert r.count == 2**n - 1  # every non-empty subset
    # Each element lies in 2^(n-1) subsets.
    assert r.sum == n * big_value * 2 ** (n - 1)
    assert r.count > 2**128


def test_promotion_keeps_evaluations_exact():
    q = suse.Query("a+", window=10**6)
    n = 160
    r = suse.exact(q, chars="a" * n, timestamps=list(range(n)), evaluate_at=[100, 129, 130, 200])
    assert [e.count for e in r.evaluations] == [2**101 - 1, 2**130 - 1, 2**131 - 1, 2**n - 1]


def test_window_is_inclusive_and_slides():
    q = suse.Query("ab", window=2)
    r = suse.exact(q, [("a", 0), ("b", 2), ("b", 3)])
    assert r.count == 1  # a0 b2 (gap 2 is inside), a0 b3 is not
    q0 = suse.Query("a+", window=0)
    assert suse.exact(q0, [("a", 5), ("a", 5), ("a", 6)]).count == 4  # {1},{2},{1,2},{3}


def test_huge_window_and_extreme_timestamps():
    q = suse.Query("ab", window=2**63 - 1)
    r = suse.exact(q, [("a", -(2**63)), ("b", 2**63 - 1)])
    assert r.count == 0 and r.partial_count == 1  # the span is 2^64 - 1 > window: not a match
    q2 = suse.Query("ab", window=2**63 - 1)
    assert suse.exact(q2, [("a", -5), ("b", 2**62)]).count == 1


# ------------------------------------------------------------------------------ bad input


def test_decreasing_timestamps_are_rejected_and_nothing_is_lost():
    q = suse.Query("ab", window=10)
    inc = suse.Exact(q)
    inc.extend([("a", 1), ("b", 2)])
    with pytest.raises(suse.InputError, match="timestamp 1 is earlier than the previous timestamp 3"):
        inc.extend([("a", 3), ("b", 1)])
    assert inc.result().count == 1 and inc.result().events == 2  # the failed batch changed nothing
    with pytest.raises(suse.InputError, match="earlier"):
        inc.extend([("a", 0)])  # earlier than the last accepted batch


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(chars="ab", timestamps=[1, 2], values=[1, -1]), "negative"),
        (dict(chars="ab", timestamps=[1, 2], values=[1, 1.5]), "not an integer"),
        (dict(chars="ab", timestamps=[1, 2], values=[1, float("nan")]), "not an integer"),
        (dict(chars="ab", timestamps=[1, float("nan")]), "not an integer"),
        (dict(chars="ab", timestamps=[1, 2.5]), "not an integer"),
        (dict(chars="ab", timestamps=[1, "2"]), "not an integer"),
        (dict(chars="ab", timestamps=[1, True]), "not an integer"),
        (dict(chars="ab", timestamps=[1]), "2 characters but 1 timestamps"),
        (dict(chars=["a", "bb"], timestamps=[1, 2]), "not a single character"),
        (dict(chars="ab", timestamps=[1, 2**64]), "outside the 64-bit"),
        (dict(chars="", timestamps=[]), "empty"),
        (dict(events=[("a",)]), "expected \\(char, timestamp\\)"),
        (dict(), "no events given"),
    ],
)
def test_bad_events_get_clear_errors(kwargs, message):
    q = suse.Query("ab", window=10)
    with pytest.raises(suse.InputError, match=message):
        suse.exact(q, **kwargs)


def test_unknown_characters_are_skipped_and_counted():
    q = suse.Query("ab", window=10)
    r = suse.exact(q, [("a", 1), ("x", 2), ("é", 3), ("☃", 4), ("b", 5)])
    assert (r.count, r.skipped, r.events) == (1, 3, 5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(window=-1), "at least 0"),
        (dict(window=2**63), "too large"),
        (dict(window=2.5), "must be an integer"),
        (dict(window=10, aggregate="median"), "aggregate must be one of"),
        (dict(window=10, policy="strict"), "policy must be one of"),
    ],
)
def test_bad_query_parameters(kwargs, message):
    with pytest.raises(suse.InputError, match=message):
        suse.Query("ab", **kwargs)


def test_malformed_query_reports_position():
    with pytest.raises(suse.QueryError) as info:
        suse.Query("A(B", window=1)
    assert info.value.position == 1


def test_avg_is_none_without_matches():
    r = suse.exact(suse.Query("ab", window=1), [("b", 1), ("a", 2)])
    assert r.count == 0 and r.avg is None and math.isclose(
        suse.exact(suse.Query("ab", window=5), [("a", 1, 2), ("b", 2, 4)]).avg, 6.0
    )


def test_evaluation_times_may_be_any_iterable():
    q = suse.Query("ab", window=5)
    events = [("a", 1), ("b", 2), ("b", 4)]
    want = [e.count for e in suse.exact(q, events, evaluate_at=[1, 2, 4]).evaluations]
    assert want == [0, 1, 2]
    assert [e.count for e in suse.exact(q, events, evaluate_at=(t for t in (1, 2, 4))).evaluations] == want
    assert [e.count for e in suse.exact(q, events, evaluate_at=np.array([1, 2, 4])).evaluations] == want
