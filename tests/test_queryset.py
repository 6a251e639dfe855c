"""Query sets: many queries over one stream equal each query run alone."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import suse
from strategies import query_sets, streams
from suse.io import synthetic_stream


def _set(spec, aggregate="count"):
    return suse.QuerySet({name: suse.Query(rx, w, aggregate, policy) for name, (rx, w, policy) in spec.items()})


@settings(max_examples=200, deadline=None)
@given(query_sets(), streams(max_size=12), st.lists(st.integers(0, 40), max_size=4),
       st.sampled_from(["never", "auto", "always"]))
def test_exact_set_equals_each_query_alone(spec, events, evaluate_at, merge):
    qs = _set(spec)
    got = suse.api.queryset.exact_set(qs, events, evaluate_at=evaluate_at, merge=merge)
    assert list(got) == list(spec)
    for name, q in qs.items():
        assert got[name] == suse.exact(q, events, evaluate_at=evaluate_at)


@settings(max_examples=60, deadline=None)
@given(query_sets(), streams(max_size=12), streams(max_size=6), st.integers(0, 60))
def test_incremental_exact_set_equals_each_query_alone(spec, first, second, eval_time):
    qs = _set(spec)
    second = [(c, t + first[-1][1], v) for c, t, v in second]  # continue after the first batch
    eval_time = max(eval_time, first[-1][1])
    multi = suse.ExactSet(qs, merge="always")
    multi.extend(first)
    rows = multi.extend(second, evaluate_at=[eval_time])
    for name, q in qs.items():
        alone = suse.Exact(q)
        alone.extend(first)
        assert rows[name] == alone.extend(second, evaluate_at=[eval_time])
        assert multi.result()[name] == alone.result()


@settings(max_examples=60, deadline=None)
@given(query_sets(max_queries=4), streams(max_size=14), st.integers(1, 6), st.sampled_from(["suse", "fifo", "present"]),
       st.sampled_from(["count", "sum"]))
def test_summary_set_equals_each_summary_alone(spec, events, size, strategy, aggregate):
    qs = _set(spec, aggregate)
    multi = suse.SummarySet(qs, size, strategy, seed=7)
    half = len(events) // 2
    got = [multi.extend(events[:half], evaluate_at=[events[half][1]] if half else None, elements=True),
           multi.extend(events[half:], evaluate_at=[events[-1][1]], elements=True)]
    for name, q in qs.items():
        alone = suse.Summary(q, size, strategy, seed=7)
        want = [alone.extend(events=events[:half], evaluate_at=[events[half][1]] if half else None, elements=True),
                alone.extend(events=events[half:], evaluate_at=[events[-1][1]], elements=True)]
        assert [g[name] for g in got] == want
        assert multi.result()[name] == alone.result()


def test_prefix_sharing_queries_run_over_one_product_and_overflow_alike():
    # A-Seq's shape: a common prefix, then suffixes; long windows push counts past 2**128.
    qs = suse.QuerySet({f"q{i}": suse.Query("a(b*c)*d" + s, 600) for i, s in enumerate(["(e|f)g*", "e", "fg*", "g"])})
    events = synthetic_stream("abcdefg", 2000, "uniform", seed=3)
    multi = suse.ExactSet(qs)
    assert (multi.engines, multi.merged) == (1, 1)
    multi.extend(events)
    got = multi.result()
    assert max(r.count for r in got.values()) > 2**128
    for name, q in qs.items():
        assert got[name] == suse.exact(q, events)


def test_identical_queries_share_one_engine_whatever_their_aggregate():
    qs = suse.QuerySet({"a": suse.Query("ab*c", 5), "b": suse.Query("ab*c", 5, "sum"), "c": suse.Query("ab*c", 6),
                        "d": suse.Query("a(b)*c", 5)})
    assert suse.ExactSet(qs, merge="never").engines == 2  # a, b and d count the same sets; c has its own window
    s = suse.SummarySet(qs, 3, seed=1)
    assert s.summaries["a"] is not s.summaries["b"]  # the aggregate steers selection
    same = suse.SummarySet(suse.QuerySet({"x": suse.Query("ab", 3), "y": suse.Query("ab", 3)}), 3)
    assert same.summaries["x"] is same.summaries["y"]


def test_per_query_summary_settings():
    qs = suse.QuerySet({"a": suse.Query("ab*c", 5), "b": suse.Query("de", 5)})
    s = suse.SummarySet(qs, {"a": 2, "b": 4}, probabilities={"a": {"a": .5, "b": .25, "c": .25}}, seed=3)
    assert (s.summaries["a"].size, s.summaries["b"].size) == (2, 4)
    assert s.summaries["b"].probabilities is None
    with pytest.raises(suse.InputError, match="no size for query 'b'"):
        suse.SummarySet(qs, {"a": 2})
    with pytest.raises(suse.InputError, match="not a query of the set"):
        suse.SummarySet(qs, {"a": 2, "b": 2, "z": 1})


def test_bad_sets_and_batches_are_clear_errors():
    with pytest.raises(suse.InputError, match="at least one query"):
        suse.QuerySet({})
    with pytest.raises(suse.InputError, match="must be a suse.Query"):
        suse.QuerySet({"a": "ab"})
    for bad in ("", " a", "a\nb", 3):
        with pytest.raises(suse.InputError, match="query name"):
            suse.QuerySet({bad: suse.Query("ab", 1)})
    assert list(suse.QuerySet({"A(B|G)*A": suse.Query("A(B|G)*A", 1)})) == ["A(B|G)*A"]  # job files name by regex
    qs = suse.QuerySet({"a": suse.Query("ab", 1), "b": suse.Query("ba", 1)})
    with pytest.raises(suse.InputError, match="event 1: timestamp 1 is earlier"):
        suse.exact(qs, [("a", 2), ("b", 1)])
    multi = suse.ExactSet(qs)
    multi.extend([("a", 5)])
    with pytest.raises(suse.InputError, match="event 0"):
        multi.extend([("b", 4)])
    assert multi.result()["a"].events == 1  # the refused batch changed nothing


def test_parse_lines():
    qs = suse.QuerySet.parse("# rules\nfirst = ab*c\n\nsecond=a(b|c)\n", window=4)
    assert list(qs) == ["first", "second"] and qs["second"].regex == "a(b|c)" and qs["first"].window == 4
    with pytest.raises(suse.InputError, match="line 2: expected `name = regex`"):
        suse.QuerySet.parse("a = ab\nnonsense\n", window=1)
    with pytest.raises(suse.InputError, match="line 2: query 'a' is defined twice"):
        suse.QuerySet.parse("a = ab\na = ba\n", window=1)
    with pytest.raises(suse.QueryError, match="line 1: "):
        suse.QuerySet.parse("a = a(b\n", window=1)


@st.composite
def extended_sets(draw, max_queries: int = 4):
    """Query sets where some queries need more than count and sum: MIN/MAX, of=, max_missing=."""
    out = {}
    for name, (rx, w, policy) in draw(query_sets(max_queries=max_queries)).items():
        aggregate = draw(st.sampled_from(["count", "sum", "min", "max"]))
        try:
            letters = suse.Query(rx, w).alphabet
            of = draw(st.none() | st.sets(st.sampled_from(letters), min_size=1).map("".join))
            out[name] = suse.Query(rx, w, aggregate, policy, of=of, max_missing=draw(st.sampled_from([0, 0, 1, 2])))
        except (suse.QueryError, suse.InputError):  # a combination the query language refuses
            out[name] = suse.Query(rx, w, aggregate, policy)
    return suse.QuerySet(out)


@settings(max_examples=150, deadline=None)
@given(extended_sets(), streams(max_size=12), streams(max_size=6), st.lists(st.integers(0, 60), max_size=3),
       st.sampled_from(["never", "auto", "always"]))
def test_sets_with_min_max_of_and_max_missing_equal_each_query_alone(qs, first, second, evaluate_at, merge):
    second = [(c, t + first[-1][1], v) for c, t, v in second]
    evaluate_at = sorted(max(t, first[-1][1]) for t in evaluate_at)
    got = suse.api.queryset.exact_set(qs, first + second, evaluate_at=evaluate_at, merge=merge)
    multi = suse.ExactSet(qs, merge=merge)
    multi.extend(first)
    rows = multi.extend(second, evaluate_at=evaluate_at)
    assert multi.engines <= len(qs) and multi.own == sum(1 for q in qs.values() if not suse.api.queryset._shares(q))
    for name, q in qs.items():
        assert got[name] == suse.exact(q, first + second, evaluate_at=evaluate_at)
        alone = suse.Exact(q)
        alone.extend(first)
        assert rows[name] == alone.extend(second, evaluate_at=evaluate_at)
        assert multi.result()[name] == alone.result()


@settings(max_examples=60, deadline=None)
@given(extended_sets(), streams(max_size=14), st.integers(1, 6), st.sampled_from(["suse", "fifo", "present"]))
def test_summary_sets_with_min_max_of_and_max_missing_equal_each_summary_alone(qs, events, size, strategy):
    multi = suse.SummarySet(qs, size, strategy, seed=5)
    half = len(events) // 2
    got = [multi.extend(events[:half]), multi.extend(events[half:], evaluate_at=[events[-1][1]], elements=True)]
    for name, q in qs.items():
        alone = suse.Summary(q, size, strategy, seed=5)
        want = [alone.extend(events=events[:half]),
                alone.extend(events=events[half:], evaluate_at=[events[-1][1]], elements=True)]
        assert [g[name] for g in got] == want
        assert multi.result()[name] == alone.result()


def test_min_max_of_and_approximate_queries_run_beside_the_shared_engine():
    qs = suse.QuerySet({"n": suse.Query("ab*c", 5), "m": suse.Query("ab*c", 5, "max"),
                        "o": suse.Query("ab*c", 5, "sum", of="c"), "k": suse.Query("abc", 5, max_missing=1)})
    multi = suse.ExactSet(qs)
    assert (multi.engines, multi.own) == (4, 3)
    events = [("a", 1, 2), ("b", 2, 7), ("c", 3, 4), ("c", 4, 1)]
    got = suse.exact(qs, events)
    assert (got["m"].max, got["o"].sum, got["k"].count_by_missing) == (7, 10, [2, 5])
    assert got["n"].max is None and got["n"].count_by_missing is None
