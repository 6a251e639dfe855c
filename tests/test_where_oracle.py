"""The brute-force oracle for ``where`` and for a negation at the end, checked against the
worked examples of ``where_cases``, against the definitions written out directly, and against
suse's own evaluator of conditions."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracle import query_matches, where_aggregate, where_matches
from suse.errors import QueryError
from suse.query.conditions import evaluate, parse_where
from where_cases import CASES, REFUSED, check_counts


def oracle_count(case) -> int:
    return where_aggregate(case.query, case.events, case.window, case.where, case.policy, case.at)["count"]


def test_worked_examples():
    check_counts(oracle_count)


@pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")  # first-b-is-null is one on purpose
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_worked_examples_are_valid_suse_conditions(case):
    parsed = parse_where(case.query, case.where)
    assert set(parsed.conditions) == set(case.where)


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.name)
def test_refused_examples(case):
    with pytest.raises(QueryError) as info:
        parse_where(case.query, case.where)
    assert (info.value.letter, info.value.position) == (case.letter, case.position), info.value
    assert case.says in str(info.value)


def test_sum_adds_the_values_of_matched_elements():
    events = [("A", 0, 5, {"p": 1}), ("B", 1, 7, {"p": 2}), ("B", 2, 11, {"p": 0})]
    result = where_aggregate("A B", events, 10, {"B": "B.p > A.p"})
    assert result == {"count": 1, "sum": 12, "min": 5, "max": 7}
    assert where_aggregate("A B", events, 10, {"B": "B.p > A.p"}, of="B") == {"count": 1, "sum": 12, "min": 7, "max": 7}


# --- random streams -----------------------------------------------------------------------

_values = st.one_of(st.none(), st.integers(0, 3))  # small: ties and duplicates are common


@st.composite
def streams(draw, letters="ABC", max_size=7):
    size = draw(st.integers(0, max_size))
    chars = draw(st.lists(st.sampled_from(letters), min_size=size, max_size=size))
    gaps = draw(st.lists(st.integers(0, 2), min_size=size, max_size=size))  # equal times too
    out, t = [], 0
    for c, g in zip(chars, gaps):
        t += g
        out.append((c, t, {"p": draw(_values)}))
    return out


@settings(max_examples=60, deadline=None)
@given(streams(), st.sampled_from(["A B+ C", "A (B|C)* C", "A !C B+", "(A B)+"]), st.integers(0, 6),
       st.sampled_from(["any", "contiguous"]))
def test_no_conditions_is_the_plain_oracle(events, query, window, policy):
    assert where_matches(query, events, window, {}, policy) == query_matches(query, events, window, policy)


_POOL = {
    "A": ["A.p IS NOT NULL", "A.p > 0"],
    "B": ["LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "B.p >= A.p", "B.p = FIRST(B.p)", "NOT B.p < LAST(B.p, 1)"],
    "C": ["C.p < B.p", "C.p = A.p OR C.p IS NULL", "C.timestamp - A.timestamp <= 2"],
}


@pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")  # the pool has conditions no first B passes
@settings(max_examples=60, deadline=None)
@given(streams(), st.sampled_from(["A B+ C", "A B* C", "A (B C)+"]), st.integers(0, 6), st.data())
def test_oracle_agrees_with_suse_evaluator(events, query, window, data):
    """Judge each candidate set with suse's evaluator instead of the oracle's: same matches."""
    where = {letter: data.draw(st.sampled_from(pool)) for letter, pool in _POOL.items() if data.draw(st.booleans())}
    parsed = parse_where(query, where).conditions
    plain = set(query_matches(query, events, window))

    def holds(idx):
        chosen = [events[i] for i in idx]
        return all(evaluate(parsed[e[0]], chosen[:k], e) for k, e in enumerate(chosen) if e[0] in parsed)

    expected = sorted(idx for idx in plain if holds(idx))
    assert sorted(where_matches(query, events, window, where)) == expected


def _absence_by_definition(base: str, negated: str, events, window: int, at, where):
    """Matches of ``base`` that, closed by a negation of ``negated`` at the end, count at
    ``at``: the window has closed and no negated event lies after the last element up to
    first + window; their elements satisfy ``where`` by suse's evaluator."""
    events = [e for e in events if at is None or e[1] <= at]
    parsed = parse_where(base, where).conditions
    out = []
    for idx in query_matches(base, events, window):
        closes = events[idx[0]][1] + window
        if at is not None and at < closes:
            continue
        if any(e[0] in negated and e[1] <= closes for e in events[idx[-1] + 1 :]):
            continue
        chosen = [events[i] for i in idx]
        if all(evaluate(parsed[e[0]], chosen[:k], e) for k, e in enumerate(chosen) if e[0] in parsed):
            out.append(idx)
    return out


@settings(max_examples=80, deadline=None)
@given(streams("ABCD"), st.sampled_from([("A B+", "C"), ("A !D B", "C"), ("A B", "CD"), ("A", "B")]),
       st.integers(0, 5), st.one_of(st.none(), st.integers(0, 14)),
       st.sampled_from([{}, {"A": "A.p IS NOT NULL"}, {"B": "B.p >= A.p"}, {"B": "B.p IS NULL OR B.p < A.p"}]))
def test_absence_at_the_end_by_definition(events, form, window, at, where):
    base, negated = form
    where = {letter: condition for letter, condition in where.items() if letter in base}
    query = base + (f" !{negated}" if len(negated) == 1 else " !(" + "|".join(negated) + ")")
    expected = _absence_by_definition(base, negated, events, window, at, where)
    assert where_matches(query, events, window, where, at=at) == expected


def test_absence_only_where_the_parse_ends_with_it():
    """``A (B !C | D)``: an A D match counts at once; an A B match waits for its window."""
    events = [("A", 0, {}), ("B", 1, {}), ("D", 2, {})]
    assert where_matches("A (B !C | D)", events, 5, {}, at=3) == [(0, 2)]
    assert where_matches("A (B !C | D)", events, 5, {}, at=5) == [(0, 1), (0, 2)]
    assert where_matches("A (B !C | D)", events + [("C", 5, {})], 5, {}) == [(0, 2)]


def test_next_policy_skips_events_whose_condition_fails():
    events = [("A", 0, {"p": 5}), ("B", 1, {"p": 1}), ("B", 2, {"p": 6}), ("C", 3, {"p": 0})]
    assert where_matches("A B C", events, 10, {"B": "B.p > A.p"}, "next") == [(0, 2, 3)]
