"""The exact engine with conditions between events (``where=``) against the brute-force
oracle (tests/oracle.py's ``where_aggregate``) and the worked examples of where_cases."""
from __future__ import annotations

import pickle
import warnings
from fractions import Fraction

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from oracle import where_aggregate
from suse.errors import ConditionError, InputError, LateEventError, LimitError, QueryError, StateError, SuseWarning
from suse.query.conditions import parse_where
from where_cases import CASES, check_counts

pytestmark = pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")


def engine_count(case) -> int:
    query = suse.Query(case.query, case.window, policy=case.policy, where=case.where)
    if case.at is None:
        return suse.exact(query, case.events).count
    return suse.exact(query, case.events, evaluate_at=case.at).evaluations[0].count


def _refused(case) -> bool:
    """Conditions with another policy or with a negation; a case without conditions that ends
    with a negation is counted by the exact engine (tests/test_absence.py)."""
    return case.policy != "any" or ("!" in case.query and bool(case.where))


def test_worked_examples():
    check_counts(lambda case: case.count if _refused(case) else engine_count(case))


@pytest.mark.parametrize("case", [c for c in CASES if _refused(c)], ids=lambda c: c.name)
def test_what_does_not_combine_yet_is_refused_by_name(case):
    with pytest.raises(QueryError) as info:
        engine_count(case)
    said = str(info.value)
    assert ("policy" in said and case.policy in said) or "negation" in said or "!C" in said


# --- random streams, patterns and conditions ------------------------------------------------

_numbers = st.one_of(st.none(), st.integers(0, 3), st.sampled_from([0.5, 1.5]))  # ties, NULLs, exact floats


@st.composite
def streams(draw, letters="ABC", max_size=8):
    size = draw(st.integers(0, max_size))
    out, t = [], 0
    for _ in range(size):
        t += draw(st.integers(0, 2))  # equal timestamps too
        attributes = {"p": draw(_numbers), "s": draw(st.sampled_from(["x", "y", None]))}
        out.append((draw(st.sampled_from(letters)), t, draw(st.integers(0, 9)), attributes))
    return out


def references(letter: str, attribute: str):
    return st.sampled_from([f"{letter}.{attribute}", f"LAST({letter}.{attribute}, 1)", f"LAST({letter}.{attribute}, 2)",
                            f"FIRST({letter}.{attribute})", f"FIRST({letter}.{attribute}, 1)"])


@st.composite
def conditions(draw, letter: str, depth: int = 2):
    """A condition of ``letter`` from a small grammar: comparisons of references, constants and
    sums, IS [NOT] NULL, AND/OR/NOT, and the adjacent forms the index serves."""
    other = draw(st.sampled_from("ABC"))
    kind = draw(st.integers(0, 6 if depth else 3))
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
    if kind == 0:  # current op an earlier element: the compared (indexed) form
        return f"{letter}.p {op} {draw(references(other, 'p'))}"
    if kind == 1:
        return f"LAST({letter}.p, 1) IS NULL OR {letter}.p {op} LAST({letter}.p, 1)"
    if kind == 2:
        left = draw(st.sampled_from([f"{letter}.p", f"{letter}.p + 1", f"{letter}.timestamp - {other}.timestamp",
                                     f"2 * {letter}.p - 0.5", f"{letter}.p / {other}.p"]))
        return f"{left} {op} {draw(st.sampled_from(['1', '0.5', draw(references(other, 'p'))]))}"
    if kind == 3:
        if draw(st.booleans()):
            return f"{letter}.s {draw(st.sampled_from(['=', '<>', '<']))} {draw(references(other, 's'))}"
        return f"{draw(references(other, 'p'))} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == 4:
        return f"NOT ({draw(conditions(letter, depth - 1))})"
    word = "AND" if kind == 5 else "OR"
    return f"({draw(conditions(letter, depth - 1))}) {word} ({draw(conditions(letter, depth - 1))})"


PATTERNS = ["A B+ C", "A B* C", "A (B C)+", "(A|B)+ C", "A B+", "B+", "A C* B{1,3}"]


@st.composite
def queries(draw):
    pattern = draw(st.sampled_from(PATTERNS))
    where = {}
    for letter in "ABC":
        if letter in pattern and draw(st.integers(0, 3)):
            text = draw(conditions(letter))
            try:  # a reference no match can fill is refused: leave that letter unconditioned
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", SuseWarning)
                    parse_where(pattern, {letter: text})
            except ConditionError:
                continue
            where[letter] = text
    return pattern, where


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6), st.sampled_from(["sum", "min", "max"]), st.data())
def test_exact_equals_the_oracle(events, query, window, aggregate, data):
    pattern, where = query
    of = data.draw(st.none() | st.sets(st.sampled_from(sorted(set(pattern) & set("ABC"))), min_size=1))
    expected = where_aggregate(pattern, events, window, where, of=of)
    if not events:
        return
    result = suse.exact(suse.Query(pattern, window, aggregate=aggregate, of=of and "".join(sorted(of)), where=where),
                        events)
    assert (result.count, result.min, result.max) == (
        expected["count"], *((expected["min"], expected["max"]) if aggregate != "sum" else (None, None))), (pattern, where)
    if of is None:
        assert result.sum == expected["sum"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6), st.data())
def test_incremental_feeding_and_evaluations_equal_the_oracle(events, query, window, data):
    """Fed in batches, with evaluations between them, and pickled between batches at random."""
    pattern, where = query
    engine = suse.Exact(suse.Query(pattern, window, aggregate="sum", where=where))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(events)), max_size=3)))
    times = sorted(data.draw(st.lists(st.integers(0, 20), max_size=4)))
    last = None
    for start, end in zip([0, *cuts], [*cuts, len(events)]):
        batch = events[start:end]
        # evaluations between this batch's first event and the next batch's first
        upto = events[end][1] if end < len(events) else None
        asked = [t for t in times if (last is None or t >= last) and (upto is None or t < upto)]
        times = [t for t in times if t not in asked]
        for evaluation, t in zip(engine.extend(batch, evaluate_at=asked), asked):
            assert evaluation.count == where_aggregate(pattern, events, window, where, at=t)["count"]
        if batch:
            last = batch[-1][1]
        if data.draw(st.booleans()):
            engine = pickle.loads(pickle.dumps(engine))
    expected = where_aggregate(pattern, events, window, where)
    assert (engine.result().count, engine.result().sum) == (expected["count"], expected["sum"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), queries(), st.integers(0, 6), st.integers(1, 4), st.data())
def test_out_of_order_feeding_equals_the_sorted_stream(events, query, window, lateness, data):
    """Events arrive up to ``lateness`` out of order, in batches, pickled between batches at
    random, with evaluations and a retraction of a pending event: every answer equals the
    oracle's over the sorted stream (ties in arrival order)."""
    pattern, where = query
    jitter = [data.draw(st.integers(0, lateness)) for _ in events]
    arrivals = [e for _, e in sorted(zip([e[1] + j for e, j in zip(events, jitter)], events), key=lambda p: p[0])]
    engine = suse.Exact(suse.Query(pattern, window, aggregate="sum", where=where), lateness=lateness)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(arrivals)), max_size=3)))
    seen: list = []
    for start, end in zip([0, *cuts], [*cuts, len(arrivals)]):
        batch = arrivals[start:end]
        top = max((e[1] for e in seen + batch), default=None)
        horizon = None if top is None or not seen else max(e[1] for e in seen) - lateness
        asked = data.draw(st.lists(st.integers(-1 if horizon is None else horizon, 20), max_size=2))
        rows = engine.extend(batch, evaluate_at=asked)
        seen += batch
        for t, row in zip(asked, rows):
            # taken when the first event later than t + lateness came, or after the batch
            upto = next((i for i, e in enumerate(seen) if i >= len(seen) - len(batch) and e[1] > t + lateness), len(seen))
            known = sorted(seen[:upto], key=lambda e: e[1])
            assert row.count == where_aggregate(pattern, known, window, where, at=t)["count"]
        if data.draw(st.booleans()):
            engine = pickle.loads(pickle.dumps(engine))
    top = max((e[1] for e in seen), default=None)
    open_events = [e for e in seen if top is not None and e[1] > top - lateness]
    if open_events and data.draw(st.booleans()):  # take back the latest-arriving equal one
        taken = data.draw(st.sampled_from(open_events))
        engine.retract(taken[0], taken[1], taken[2])
        i = max(i for i, e in enumerate(seen) if e[:3] == taken[:3])
        seen = seen[:i] + seen[i + 1:]
    assert engine.pending == sum(1 for e in seen if top is not None and e[1] > top - lateness)
    expected = where_aggregate(pattern, sorted(seen, key=lambda e: e[1]), window, where)
    assert (engine.result().count, engine.result().sum) == (expected["count"], expected["sum"])


def test_an_evaluation_waits_for_the_events_that_can_still_come():
    # lateness 3: the evaluation at 1 is taken just before C@6 (the first event later than
    # 1 + 3), so it counts B@1, which arrives after B@4
    query = suse.Query("A B+", 10, where={"B": "B.p > 0"})
    engine = suse.Exact(query, lateness=3)
    rows = engine.extend([("A", 0, {"p": 1}), ("B", 4, {"p": 1}), ("B", 1, {"p": 1}), ("C", 6, {})],
                         evaluate_at=[1, 4])
    assert [r.count for r in rows] == [1, 3] and engine.pending == 2  # B@4 and C@6: newer than the horizon 3
    # every accepted event is in the result, the pending ones too (as without conditions)
    assert (engine.result().events, engine.result().skipped) == (4, 1)
    assert suse.exact(query, [("A", 0, {"p": 1}), ("B", 1, {"p": 1})], lateness=5).count == 1  # all pending


# --- inputs and refusals ---------------------------------------------------------------------

RISING = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p"}


def test_a_table_carries_attributes_as_columns():
    frame = pd.DataFrame({"char": list("ABBBC"), "timestamp": range(5), "p": [0, 1, 3, 2, 2.5]})
    query = suse.Query("A B+ C", 10, where=RISING)
    tuples = [(c, t, {"p": p}) for c, t, p in zip(frame.char, frame.timestamp, frame.p)]
    assert suse.exact(query, frame).count == suse.exact(query, tuples).count == where_aggregate(
        "A B+ C", tuples, 10, RISING)["count"] == 2


def test_a_missing_attribute_is_an_input_error_naming_it():
    query = suse.Query("A B+ C", 10, where=RISING)
    with pytest.raises(InputError, match="'p'"):
        suse.exact(query, [("A", 0, {}), ("B", 1, {"q": 1})])
    with pytest.raises(InputError, match="'p'"):
        suse.exact(query, pd.DataFrame({"char": ["A"], "timestamp": [0]}))


def test_nan_and_none_are_null():
    query = suse.Query("A B", 10, where={"B": "B.p IS NULL"})
    assert suse.exact(query, [("A", 0, {}), ("B", 1, {"p": float("nan")}), ("B", 2, {"p": None}),
                              ("B", 3, {"p": 1})]).count == 2


@pytest.mark.parametrize("options, says", [
    ({"policy": "next"}, "policy 'next'"), ({"policy": "contiguous"}, "policy 'contiguous'"),
    ({"max_missing": 1}, "max_missing"),
])
def test_options_that_do_not_combine_yet_are_refused(options, says):
    with pytest.raises(QueryError, match=says):
        suse.Query("A B+ C", 10, where=RISING, **options)


def test_negation_is_refused():
    with pytest.raises(QueryError, match="negation"):
        suse.Query("A !D B+ C", 10, where=RISING)


def test_other_engines_refuse_conditions_instead_of_ignoring_them():
    query = suse.Query("A B+ C", 10, where=RISING)
    assert suse.Summary(query, 10).strategy == "suse"  # the default strategy counts them (with a ranking of its own)
    with pytest.raises(QueryError, match="to_bytes .* summary with where"):
        suse.Summary(query, 10).to_bytes()
    with pytest.raises(LateEventError, match="lateness=0"):
        suse.Exact(query).retract("A", 0)


def test_a_pickled_engine_goes_on_where_it_stopped_and_an_edited_one_is_refused():
    query = suse.Query("A B+ C", 3, aggregate="sum", where=RISING)
    events = [("A", 0, 2, {"p": 5}), ("B", 1, 1, {"p": Fraction(1, 3)}), ("X", 2, 1, {}),
              ("B", 2, 1, {"p": 10**30}), ("C", 3, 1, {"p": 0})]
    engine = suse.Exact(query)
    engine.extend(events[:4], late="count")
    engine.extend([("A", 1, 1, {"p": 0})], late="count")  # late: counted, kept across the pickle
    copy = pickle.loads(pickle.dumps(engine))
    assert copy.late == 1 and copy.result() == engine.result()
    for one in (engine, copy):
        one.extend(events[4:])
    expected = where_aggregate("A B+ C", events, 3, RISING)
    assert copy.result() == engine.result() and (copy.result().count, copy.result().sum) == (
        expected["count"], expected["sum"]) == (3, 13)
    function, (q, limit, lateness, state) = copy.__reduce__()
    held, totals, count, skipped, last = state["where"]
    edited = {**state, "where": ([(held[0][0], 99, *held[0][2:]), *held[1:]], totals, count, skipped, last)}
    with pytest.raises(StateError, match="saved conditions engine"):
        function(q, limit, lateness, edited)
    for other in ({"where": None}, {"max_ts": "x"}, {"pending": "garbage"}, {"late": 1.5}):
        with pytest.raises(StateError, match="saved conditions engine"):
            function(q, limit, lateness, {**state, **other})


def test_the_counting_state_is_bounded_by_a_limit_error():
    # every B value is a different register key: a tiny budget runs out, by name
    query = suse.Query("A B+ C", 1000, where={"C": "C.p < B.p"})
    events = [("A", 0, {"p": 0})] + [("B", t, {"p": t}) for t in range(1, 200)]
    with pytest.raises(LimitError, match="register keys"):
        suse.Exact(query, memory_limit=10_000).extend(events)
    assert suse.Exact(query).extend(events) == []


def test_the_query_describes_its_conditions():
    query = suse.Query("A B+ C", 10, where=RISING)
    assert query.to_dict()["where"] == RISING
    assert query == pickle.loads(pickle.dumps(query)) and hash(query) == hash(suse.Query("A B+ C", 10, where=RISING))
    assert query != suse.Query("A B+ C", 10)


def test_the_job_spec_carries_conditions_as_one_hashable_field():
    from suse.spec import QuerySpec

    spec = QuerySpec("A B+ C", 10, where=RISING)
    assert spec.where == tuple(RISING.items()) and hash(spec) == hash(QuerySpec("A B+ C", 10, where=dict(RISING)))
    assert spec.compile() == suse.Query("A B+ C", 10, where=RISING)
    assert QuerySpec("A B+ C", 10, where={}).where is None


def test_of_restricts_the_sum_to_its_letters():
    from oracle import where_matches

    events = [("A", 0, 2, {"p": 0}), ("B", 1, 3, {"p": 1}), ("B", 2, 5, {"p": 2}), ("C", 3, 7, {"p": 0}),
              ("C", 4, 11, {"p": 3})]
    expected = sum(events[i][2] for m in where_matches("A B+ C", events, 10, RISING) for i in m if events[i][0] == "C")
    result = suse.exact(suse.Query("A B+ C", 10, aggregate="sum", of="C", where=RISING), events)
    assert result.count == 3 and result.sum == expected == 21


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(max_size=7), queries(), st.integers(0, 6))
def test_partial_count_is_the_live_prefixes_that_satisfy_the_conditions(events, query, window):
    from oracle import Language, _windowed_subsets, query_to_python_regex, satisfies_where

    pattern, where = query
    if not events:
        return
    language = Language(query_to_python_regex(pattern))
    expected = 0
    for idx in _windowed_subsets(events, window):
        word = "".join(events[i][0] for i in idx)
        if not language.accepts(word) and language.is_live_prefix(word) and satisfies_where(events, idx, where):
            expected += 1
    assert suse.exact(suse.Query(pattern, window, where=where), events).partial_count == expected
