"""Approximate matching (`max_missing=k`) against the independent oracle in
tests/oracle.py (least missing letters by search over supersequences, then brute force over
index sets): the compiler's labels, the exact engine under every policy, summaries larger than
the stream, and the summary invariants after every step."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from helpers import run as _suse
from oracle import ApproxLanguage, approx_aggregate, insertions, query_letters, query_to_python_regex
from strategies import queries, streams
from suse.errors import QueryError
from suse.query import compile_regex

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
PLAIN = st.sampled_from(["ab", "abc", "a(b|c)*c", "ab+c", "a.c", "(ab)+", "a?b*c", "(ab|c){2,}"])
QUERIES = st.one_of(PLAIN, queries)
K = st.integers(0, 2)


def _events(stream):
    return [(c, t, max(v, 0)) for c, t, v in stream]


def _compiles(query: str, k: int) -> bool:
    try:
        compile_regex(query, k)
    except QueryError:
        return False
    return True


# --------------------------------------------------------------------------------- compiler
@settings(max_examples=150, **SLOW)
@given(query=QUERIES, k=K, data=st.data())
def test_labels_equal_the_least_number_of_missing_letters(query, k, data):
    if not _compiles(query, k):
        return
    letters, _ = query_letters(query)
    lang = ApproxLanguage(query_to_python_regex(query), letters, k)
    automaton = compile_regex(query, k)
    assert automaton.max_missing == k
    for word in data.draw(st.lists(st.text(letters, min_size=1, max_size=6), max_size=15)):
        assert automaton.missing_of(word) == lang.missing(word), word


def test_insertions_are_every_supersequence():
    assert insertions("ab", "ab", 1) == {"aab", "bab", "abb", "aba"}
    assert insertions("", "xy", 2) == {"xx", "xy", "yx", "yy"}


def test_paper_pattern_labels():
    a = compile_regex("ABCD", 1)
    assert [a.missing_of(w) for w in ["ABCD", "ABD", "BCD", "ABC", "AD", "D", "ABCDD"]] == [0, 1, 1, 1, None, None, None]
    # Exact compilation is unchanged by the new code path.
    assert compile_regex("ABCD", 0).table() == compile_regex("ABCD").table()
    assert compile_regex("ABCD").missing == {}


def test_empty_word_never_counts():
    # With k = 2 the empty word is "AB" missing two letters, so the start state is final
    # (labelled 2), but the empty index set is no match.
    a = compile_regex("AB", 2)
    assert a.start in a.finals and a.missing[a.start] == 2
    r = suse.exact(suse.Query("AB", 10, max_missing=2), [("A", 0), ("B", 1)])
    assert (r.count, r.count_by_missing) == (3, [1, 2, 0])


def test_refusals():
    with pytest.raises(QueryError, match="negation") as err:
        compile_regex("A!EB", 1)
    assert err.value.position == 1
    with pytest.raises(QueryError, match="exceeds 10000 states"):
        compile_regex("(a|b)*a(a|b){12}", 1)
    with pytest.raises(QueryError, match="max_missing"):
        compile_regex("AB", -1)
    with pytest.raises(suse.InputError, match="max_missing"):
        suse.Query("AB", 10, max_missing=-1)
    with pytest.raises(suse.InputError, match="max_missing"):
        suse.Query("AB", 10, max_missing=True)
    with pytest.raises(suse.InputError, match="max_missing is too large"):
        suse.Query("AB", 10, max_missing=99)
    assert suse.Query("A!EB", 10).max_missing == 0  # negation alone is fine


# --------------------------------------------------------------------------------- engines
@settings(max_examples=200, **SLOW)
@given(query=QUERIES, k=K, stream=streams(max_size=9), window=st.integers(0, 6),
       policy=st.sampled_from(["any", "next", "contiguous"]))
def test_exact_engine_equals_the_oracle(query, k, stream, window, policy):
    if not _compiles(query, k):
        return
    events = _events(stream)
    got = suse.exact(suse.Query(query, window, policy=policy, max_missing=k), events)
    want = approx_aggregate(query, events, window, k, policy)
    assert (got.count, got.sum) == (want["count"], want["sum"])
    # Exact queries (k = 0) carry no count_by_missing.
    assert got.count_by_missing == (want["count_by_missing"] if k else None)
    if policy == "any":
        assert got.partial_count == want["partial_count"]


@settings(max_examples=60, **SLOW)
@given(query=PLAIN, k=K, stream=streams(max_size=9), window=st.integers(0, 6), data=st.data())
def test_evaluations_while_processing(query, k, stream, window, data):
    events = _events(stream)
    times = sorted(data.draw(st.lists(st.integers(0, events[-1][1] + 1), min_size=1, max_size=3)))
    got = suse.exact(suse.Query(query, window, max_missing=k), events, evaluate_at=times)
    for ev in got.evaluations:
        want = approx_aggregate(query, [e for e in events if e[1] <= ev.timestamp], window, k)
        by_missing = want["count_by_missing"] if k else None
        assert (ev.count, ev.sum, ev.count_by_missing) == (want["count"], want["sum"], by_missing)


@settings(max_examples=80, **SLOW)
@given(query=QUERIES, k=K, stream=streams(), window=st.integers(0, 6),
       policy=st.sampled_from(["any", "next", "contiguous"]), strategy=st.sampled_from(suse.api.STRATEGIES))
def test_a_summary_larger_than_the_stream_is_exact(query, k, stream, window, policy, strategy):
    if not _compiles(query, k):
        return
    events = _events(stream)
    q = suse.Query(query, window, policy=policy, max_missing=k)
    s = suse.Summary(q, size=len(events) + 1, strategy=strategy, seed=1)
    evaluations = s.extend(events=events, evaluate_at=[events[-1][1]])
    exact = suse.exact(q, events)
    r = s.result()
    assert (r.count, r.sum, r.count_by_missing) == (exact.count, exact.sum, exact.count_by_missing)
    assert evaluations[0].count_by_missing == exact.count_by_missing


@settings(max_examples=80, **SLOW)
@given(query=QUERIES, k=st.integers(1, 2), stream=streams(max_size=12), window=st.integers(0, 6),
       policy=st.sampled_from(["any", "next", "contiguous"]), strategy=st.sampled_from(suse.api.STRATEGIES),
       size=st.integers(1, 4))
def test_summary_invariants_after_every_step(query, k, stream, window, policy, strategy, size):
    if not _compiles(query, k):
        return
    events = _events(stream)
    q = suse.Query(query, window, policy=policy, max_missing=k)
    s = suse.Summary(q, size=size, strategy=strategy, seed=2, time_to_live=window + 3)
    exact = suse.Exact(q)
    for e in events:
        s.extend(events=[e])
        exact.extend(events=[e])
        r = s.result()
        assert len(r.count_by_missing) == k + 1 and sum(r.count_by_missing) == r.count
        # Loading recounts every counter from the retained elements (labels from the query).
        assert suse.Summary.from_bytes(s.to_bytes()).result() == r
        if policy == "any":
            # The counters equal a recount of the retained elements by the exact engine.
            recount = suse.Exact(q)
            if s.elements():
                recount.extend(events=s.elements())
            again = recount.result()
            assert (again.count, again.sum, again.count_by_missing) == (r.count, r.sum, r.count_by_missing)
        if policy != "next":
            # A retained match is a match of the stream with the same word, so the same label.
            whole = exact.result().count_by_missing
            assert all(mine <= theirs for mine, theirs in zip(r.count_by_missing, whole))


def test_exact_queries_carry_no_count_by_missing():
    q = suse.Query("AB", 10)
    assert suse.exact(q, [("A", 0), ("B", 1)]).count_by_missing is None
    s = suse.Summary(q, 4, seed=0)
    s.extend([("A", 0), ("B", 1)])
    assert s.result().count_by_missing is None
    assert "max_missing" not in q.to_dict()


def test_acep_example():
    # docs/QUERY.md: (Sa(b|d|w|r)E){2,} with one missing letter.
    stream = list(zip("SabESdESawE", range(11)))
    r = suse.exact(suse.Query("(Sa(b|d|w|r)E){2,}", 100, max_missing=1), stream)
    want = approx_aggregate("(Sa(b|d|w|r)E){2,}", stream, 100, 1)
    assert r.count_by_missing == want["count_by_missing"] == [4, 33]


# ------------------------------------------------------------------------------------- CLI
def test_cli_compile_shows_labels():
    run = _suse("compile", "AB", "--max-missing", "1")
    assert run.returncode == 0, run.stderr
    assert "finals 1 (-1), 2 (-1), 3 (-0)" in run.stdout and "max_missing 1" in run.stdout
    dot = _suse("compile", "AB", "--max-missing", "1", "--dot")
    assert 'xlabel="-1"' in dot.stdout


def test_cli_exact_and_eval(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("A 0\nB 1\nA 2\nB 3\n")
    run = _suse("exact", "AB", str(path), "--window", "10", "--max-missing", "1", "--json")
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert (data["count"], data["count_by_missing"]) == (7, [3, 4])
    run = _suse("eval", "AB", str(path), "--window", "10", "--size", "10", "--strategy", "fifo",
                "--max-missing", "1", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["count_by_missing"] == [3, 4]
    table = _suse("exact", "AB", str(path), "--window", "10", "--max-missing", "1")
    assert "3 / 4" in table.stdout


def test_cli_refusals():
    # A query error has its one message line, then the query and a caret (the CLI's convention).
    run = _suse("compile", "A!EB", "--max-missing", "1")
    assert run.returncode == 2 and "cannot be combined with negation" in run.stderr.splitlines()[0]
    assert "Traceback" not in run.stderr
    run = _suse("exact", "AB", "-", "--window", "3", "--max-missing", "-1", stdin="A 0\n")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "--max-missing" in run.stderr
