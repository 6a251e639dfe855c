"""The oracles checked against the paper's worked examples and hand-derived cases."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

import oracle
from oracle import (
    Language,
    query_to_python_regex,
    stam_aggregate,
    stam_aggregate_at,
    stam_matches,
    stnm_aggregate,
    stnm_matches,
)

VECTORS = Path("/work/shared/vectors/paper_examples.json")
CASES = json.loads(VECTORS.read_text())["cases"]


def events_of(case):
    values = case.get("values") or [0] * len(case["stream"])
    return [(c, t, v) for (c, t), v in zip(case["stream"], values)]


def subsequence_count(pattern: str, text: str) -> int:
    """Ways to pick `pattern` as a subsequence of `text` (classic DP, no enumeration)."""
    ways = [1] + [0] * len(pattern)
    for c in text:
        for j in range(len(pattern), 0, -1):  # backwards so each char is used once per way
            if pattern[j - 1] == c:
                ways[j] += ways[j - 1]
    return ways[-1]


# ------------------------------------------------------------------ paper vectors
ENUMERABLE = [c for c in CASES if "stream" in c and "summary_size" not in c]


@pytest.mark.parametrize("case", ENUMERABLE, ids=[c["name"] for c in ENUMERABLE])
def test_paper_vectors(case):
    got = stam_aggregate(query_to_python_regex(case["regex"]), events_of(case), case["window"])
    for key in ("count", "sum", "partial_count"):
        if key in case["expected"]:
            assert got[key] == case["expected"][key], key


def test_abcd_blocks_closed_form():
    case = next(c for c in CASES if "stream_spec" in c)
    i = 8
    text = "A" * i + "B" * i + "C" * i + "D" * i
    assert subsequence_count("ABCD", text) == i**4 == case["expected"]["count"]
    for i in (1, 2, 3):  # the DP agrees with enumeration where enumeration is cheap
        small = [(c, t, 0) for t, c in enumerate("A" * i + "B" * i + "C" * i + "D" * i)]
        assert stam_aggregate("ABCD", small, 1000)["count"] == i**4


def test_ambiguous_regex_match_sets():
    ev = [("a", 0), ("b", 1), ("b", 2)]
    assert sorted(stam_matches("(?:ab|a)b*", ev, 10)) == [(0,), (0, 1), (0, 1, 2), (0, 2)]


def test_window_is_inclusive_on_first_and_last():
    ev = [("A", 0, 1), ("B", 5, 1), ("B", 6, 1)]
    assert stam_matches("AB", ev, 5) == [(0, 1)]
    assert stam_matches("AB", ev, 4) == []


def test_aggregate_at_uses_only_past_events():
    case = ENUMERABLE[0]  # ABC, example 3: at t=5 only A1 B3 C5 matches
    assert case["regex"] == "ABC"
    got = stam_aggregate_at("ABC", events_of(case), case["window"], 5)
    assert (got["count"], got["sum"]) == (1, 2 + 5 + 13)


def test_custom_live_prefix_is_used():
    ev = [("A", 0, 0), ("B", 1, 0), ("C", 2, 0)]
    got = stam_aggregate("ABC", ev, 10, is_live_prefix=lambda w: False)
    assert got == {"count": 1, "sum": 0, "partial_count": 0}
    assert stam_aggregate("ABC", ev, 10)["partial_count"] == 2  # {A0}, {A0,B1}


# ------------------------------------------------------------------ the language NFA
REGEXES = [
    "ABC",
    "A(?:B*C)*D",
    "(?:ab|a)b*",
    "a*a*",
    "a(?:b*c)*d(?:e|f)g*",
    "(?:a|bc){2,3}d?",
    "a{2,}b",
    "[a-c][^b]a+?",
    "(?:)|ab",
    "(a|b)*?c{0,1}",
]


@pytest.mark.parametrize("pattern", REGEXES)
def test_nfa_agrees_with_re_and_bounded_extension(pattern):
    lang = Language(pattern)
    # The pattern's letters plus one letter outside them (exercises negated classes).
    sigma = sorted({c for c in pattern if c.isascii() and c.isalpha()} | {"x"})

    def words(max_len):
        return ["".join(w) for n in range(max_len + 1) for w in itertools.product(sigma, repeat=n)]

    for w in words(4):
        assert lang.nfa_accepts(w) == lang.accepts(w), w
    # Every regex above completes any live prefix within 4 more characters,
    # so bounded extension search decides liveness exactly for them.
    extensions = words(4)
    for w in words(2):
        assert lang.is_live_prefix(w) == any(lang.accepts(w + u) for u in extensions), w


@pytest.mark.parametrize("pattern", ["^a", "a$", "(a)\\1", "a*+b", "(?=a)a", "(?i)a", "\\d"])
def test_unsupported_constructs_are_refused(pattern):
    with pytest.raises(ValueError):
        Language(pattern)


# ------------------------------------------------------------------ query translation
@pytest.mark.parametrize(
    "query, expected",
    [
        ("A(B*C)*D", "A(?:B*C)*D"),
        (" a ( b | c ) + ", "a(?:b|c)+"),
        ("A.B", "A[AB]B"),
        ("A{2}B{1,}C{0,3}D?", "A{2}B{1,}C{0,3}D?"),
        ("A1{2}", "A1{2}"),  # digits outside braces are characters
    ],
)
def test_query_to_python_regex(query, expected):
    assert query_to_python_regex(query) == expected


@pytest.mark.parametrize("query", [".", "A-B", "A{2", "A}"])
def test_query_to_python_regex_rejects(query):
    with pytest.raises(ValueError):
        query_to_python_regex(query)


# ------------------------------------------------------------------ STNM, hand-derived
def test_stnm_each_initiator_starts_one_run():
    # Runs from A1 and A2 each take B3: two matches (STAM would agree here).
    ev = [("A", 1, 1), ("A", 2, 10), ("B", 3, 100)]
    assert stnm_matches("AB", ev, 10) == [(0, 2), (1, 2)]
    assert stnm_aggregate("AB", ev, 10) == {"count": 2, "sum": 211}


def test_stnm_yields_on_every_final_entry():
    # One run from A1: A (final), AB2, AB2B3. B events start no run.
    ev = [("A", 1, 1), ("B", 2, 2), ("B", 3, 3)]
    assert stnm_matches("AB*", ev, 10) == [(0,), (0, 1), (0, 1, 2)]
    assert stnm_aggregate("AB*", ev, 10) == {"count": 3, "sum": 1 + 3 + 6}


def test_stnm_takes_every_relevant_event():
    # A+B over A1 A2 B3: the A1 run must take A2, so {A1,B3} is not a match (STAM has 3).
    ev = [("A", 1, 0), ("A", 2, 0), ("B", 3, 0)]
    assert stnm_matches("A+B", ev, 10) == [(0, 1, 2), (1, 2)]
    assert stam_aggregate("A+B", ev, 10)["count"] == 3
    # ABC over A1 B2 B3 C4: B3 has no transition after AB, so it is skipped.
    ev = [("A", 1, 0), ("B", 2, 0), ("B", 3, 0), ("C", 4, 0)]
    assert stnm_matches("ABC", ev, 10) == [(0, 1, 3)]


def test_stnm_window_is_measured_from_the_initiator():
    ev = [("A", 0, 0), ("B", 3, 0), ("B", 4, 0)]
    assert stnm_matches("AB*", ev, 3) == [(0,), (0, 1)]


def test_stnm_accepts_a_dfa_object_or_tuple():
    class Dfa:  # minimal trimmed DFA of AB*
        start, finals, transitions = 0, {1}, {(0, "A"): 1, (1, "B"): 1}

    ev = [("A", 1, 1), ("B", 2, 2), ("A", 3, 3), ("B", 4, 4), ("C", 5, 5)]
    by_regex = stnm_aggregate("AB*", ev, 10)
    assert stnm_aggregate(Dfa(), ev, 10) == by_regex
    assert stnm_aggregate((0, {1}, Dfa.transitions), ev, 10) == by_regex
    assert by_regex["count"] == 5  # A1, A1B2, A1B2B4, A3, A3B4


def test_missing_values_count_as_zero():
    assert stam_aggregate("AB", [("A", 0), ("B", 1)], 5) == {"count": 1, "sum": 0, "partial_count": 1}
    assert oracle.stnm_aggregate("AB", [("A", 0), ("B", 1)], 5) == {"count": 1, "sum": 0}


# ------------------------------------------------------------------ negation, hand-derived
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from negation_strategies import negation_queries, streams  # noqa: E402
from oracle import (  # noqa: E402
    GuardedPositions,
    gap_string,
    query_aggregate,
    query_aggregate_at,
    query_letters,
    query_matches,
    query_stnm_aggregate,
    query_stnm_matches,
    query_to_gap_regex,
)


def stream(text: str, values=None):
    """'A E B' -> [(A,0,v0), (E,1,v1), (B,2,v2)]."""
    chars = text.split()
    return [(c, t, (values or [0] * len(chars))[t]) for t, c in enumerate(chars)]


def test_gap_string_and_regex():
    ev = stream("A E B X B")
    assert gap_string(ev, (0, 2), "E") == "<>A<E>B"
    assert gap_string(ev, (0, 4), "EX") == "<>A<EX>B"
    assert gap_string(ev, (2, 4), "E") == "<>B<>B"  # X is not negated: not recorded
    assert query_to_gap_regex("A!EB") == "(?:<[^>]*>A)(?=<[^>E]*>)(?:<[^>]*>B)"
    assert query_letters("A !(X|Y) B+ C") == ("ABC", "XY")


def test_negation_between_two_elements():
    assert query_matches("A!EB", stream("A E B B"), 10) == []
    got = query_aggregate("A!EB", stream("A B E B", [1, 2, 4, 8]), 10)
    assert got == {"count": 1, "sum": 3, "partial_count": 1}  # {A0,B1}; {A0} was a prefix where it ended


def test_negation_inside_a_repetition_applies_at_each_pass():
    # {A0,C4} (no pass) and {A0,B3,C4}; B1 has D2 before any later element.
    assert query_matches("A(B!D)*C", stream("A B D B C"), 10) == [(0, 4), (0, 3, 4)]


def test_one_parse_whose_negations_hold_is_enough():
    # {A0,D2}: a B lies between, but the !C parse holds. {A0,D4}: both B and C lie between.
    assert query_matches("A(!B|!C)D", stream("A B D C D"), 10) == [(0, 2)]


def test_negated_events_outside_the_pair_do_not_matter():
    # E before the first and after the last element is never between them.
    assert query_matches("A!EB", stream("E A B E"), 10) == [(1, 2)]
    # A letter that is also negated: B may not lie between A and C, but can end the match.
    assert query_matches("A!BCB", stream("A C B B"), 10) == [(0, 1, 2), (0, 1, 3)]
    assert query_matches("A!BCB", stream("A B C B"), 10) == []


def test_partial_matches_are_judged_where_they_end():
    # As a prefix whose window has passed still counts, a later E does not undo {A0}.
    assert query_aggregate("A!EB", stream("A E"), 10)["partial_count"] == 1
    assert query_aggregate("A!EB", stream("A Z"), 10)["partial_count"] == 1
    assert query_aggregate("A!EB", stream("A E B"), 10) == {"count": 0, "sum": 0, "partial_count": 1}
    # A(!BC)*: {A0} is a match; {A0} can no longer take C, but that is not a partial.
    assert query_aggregate("A(!BC)*", stream("A B"), 10) == {"count": 1, "sum": 0, "partial_count": 0}
    assert query_aggregate_at("A!EB", stream("A B E"), 10, 1)["count"] == 1


def test_contiguity_counts_only_adjacent_events():
    ev = stream("A Z B A B")  # Z is named by no query, yet it breaks contiguity
    assert query_matches("AB", ev, 10) == [(0, 2), (0, 4), (3, 4)]
    assert query_matches("AB", ev, 10, "contiguous") == [(3, 4)]
    assert query_matches("A+B", stream("A A B"), 10, "contiguous") == [(0, 1, 2), (1, 2)]
    assert query_matches("A!EB", stream("A B"), 10, "contiguous") == [(0, 1)]  # vacuous


def test_contiguous_partials_are_judged_where_they_end():
    assert query_aggregate("ABC", stream("A B Z"), 10, "contiguous")["partial_count"] == 2  # {A0}, {A0,B1}
    assert query_aggregate("ABC", stream("A Z B"), 10, "contiguous")["partial_count"] == 1  # {A0}


def test_window_applies_with_negation():
    ev = [("A", 0, 0), ("B", 3, 0), ("E", 4, 0), ("B", 5, 0)]
    assert query_matches("A!EB", ev, 3) == [(0, 1)]
    assert query_matches("A!EB", ev, 2) == []


def test_stnm_with_negation():
    # Runs from A0 and A1 see E2 before any B: dead. The run from A4 takes B5.
    assert query_stnm_matches("A!EB", stream("A A E B A B"), 10) == [(4, 5)]
    # A(!BC)*: after B2 the run cannot take C3 any more, but it stays a match.
    assert query_stnm_matches("A(!BC)*", stream("A C B C"), 10) == [(0,), (0, 1)]
    assert query_stnm_aggregate("A!EB", stream("A B E B", [1, 2, 4, 8]), 10) == {"count": 1, "sum": 3}


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError):
        query_matches("AB", stream("A B"), 1, "next")


# ------------------------------------------------------------------ negation, differential
@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["ABC", "A(B*C)*D", "AB", "A+B", "(ab|a)b*", "a.b", "(a|bc){2,3}d?"]), streams(chars="abcdABCDz"), st.integers(0, 6))
def test_query_oracle_without_negation_equals_the_regex_oracle(query, events, window):
    got = query_aggregate(query, events, window)
    assert got == stam_aggregate(query_to_python_regex(query), events, window)
    assert query_stnm_matches(query, events, window) == stnm_matches(query_to_python_regex(query), events, window)


@settings(max_examples=200, deadline=None)
@given(negation_queries, streams(), st.integers(0, 8))
def test_guarded_positions_agree_with_the_gap_regex(query, events, window):
    gpa = GuardedPositions(query)
    got = [idx for idx in oracle._windowed_subsets(events, window) if gpa.accepts(events, idx)]
    assert got == query_matches(query, events, window)
