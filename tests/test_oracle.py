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
