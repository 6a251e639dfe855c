"""The standard row-pattern matcher (suse.recognize) against the oracle in recognize_oracle.py,
and the standard's rules written out as cases: preferment, alternation order, reluctance,
PERMUTE, anchors, exclusion, empty matches, skips."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recognize_oracle import oracle_matches
from suse.errors import LimitError, SqlError
from suse.recognize.matcher import RecognizeError, Skip, Unmatched, compile_pattern, matches
from suse.recognize.pattern import parse_pattern, variables
from suse.spark.sql.statement import tokenize

VARS = ("A", "B", "C")


def tree(text: str):
    toks = tokenize(text)[:-1]
    return parse_pattern(toks, text, len(text))


def run(text, rows, skip="past", skip_vars=(), accept=None, memo="partition"):
    """Rows: a list of sets of the variables whose condition holds on that row."""
    node = tree(text)
    names = list(dict.fromkeys(variables(node) + list(VARS)))
    program = compile_pattern(node, names)
    if accept is None:
        def accept(v, row, start, labels):
            return names[v] in rows[row]
    targets = frozenset(names.index(v) for v in skip_vars)
    out = []
    for m in matches(program, len(rows), accept, Skip(skip, targets, "X"), memo):
        if isinstance(m, Unmatched):
            out.append(("unmatched", m.row))
        else:
            out.append(("match", m.start, tuple((m.start + i, names[v], x) for i, (v, x) in enumerate(zip(m.labels, m.excluded)))))
    return out


def oracle(text, rows, skip="past", skip_vars=(), holds=None):
    if holds is None:
        def holds(v, row, path):
            return v in rows[row]
    return oracle_matches(tree(text), len(rows), holds, skip, skip_vars)


def shape(result):
    """Matches as strings of variables, e.g. ['AB', 'unmatched 3']."""
    return ["".join(v.lower() if x else v for _, v, x in item[2]) if item[0] == "match" else f"unmatched {item[1]}"
            for item in result]


# --- random patterns and tables --------------------------------------------------------------

def patterns():
    leaf = st.sampled_from(VARS + ("^", "$"))
    quant = st.sampled_from(["", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,2}", "{0,2}?", "{2,}", "{,1}"])

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda p: f"{p[0]} {p[1]}"),
            st.tuples(inner, inner).map(lambda p: f"{p[0]} | {p[1]}"),
            st.tuples(inner, quant).map(lambda p: f"({p[0]}){p[1]}"),
            inner.map(lambda p: "{- " + p + " -}"),
            st.tuples(inner, inner).map(lambda p: f"PERMUTE({p[0]}, {p[1]})"),
            st.just("()"),
        )
    return st.recursive(st.tuples(leaf, quant).map(lambda p: p[0] + (p[1] if p[0] in VARS else "")), extend, max_leaves=6)


tables = st.lists(st.frozensets(st.sampled_from(VARS)), max_size=7)


@settings(max_examples=300, deadline=None)
@given(patterns(), tables, st.sampled_from(["past", "next", "first", "last"]), st.sampled_from(VARS))
def test_matcher_equals_oracle(text, rows, skip, var):
    try:
        want = oracle(text, rows, skip, (var,))
    except ValueError:
        with pytest.raises(RecognizeError):
            run(text, rows, skip, (var,))
        return
    assert run(text, rows, skip, (var,)) == want


@settings(max_examples=200, deadline=None)
@given(patterns(), st.lists(st.integers(0, 3), max_size=7))
def test_matcher_equals_oracle_with_conditions_on_the_match(text, values):
    """B holds where the value exceeds the last A's of the match so far: the memo is off."""
    def holds(v, row, path):
        if v == "A":
            return values[row] <= 2
        if v == "B":
            last_a = [r for r, w, _ in path[:-1] if w == "A"]
            return bool(last_a) and values[row] > values[last_a[-1]]
        return values[row] % 2 == 0

    node = tree(text)
    names = list(dict.fromkeys(variables(node) + list(VARS)))

    def accept(v, row, start, labels):
        path = tuple((start + i, names[w], False) for i, w in enumerate(labels))
        return holds(names[v], row, path)

    got = [(k[0], k[1], tuple((r, v) for r, v, _ in k[2])) if k[0] == "match" else k
           for k in run(text, [set()] * len(values), accept=accept, memo=None)]
    want = [(k[0], k[1], tuple((r, v) for r, v, _ in k[2])) if k[0] == "match" else k
            for k in oracle(text, [set()] * len(values), holds=holds)]
    assert got == want


# --- the standard's rules, one by one ------------------------------------------------------------

ALL_A = [{"A"}] * 4
A_AND_B = [{"A", "B"}] * 3


@pytest.mark.parametrize("pattern, rows, want", [
    ("A+", ALL_A, ["AAAA"]),                          # greedy: as many as possible
    ("A+?", ALL_A, ["A", "A", "A", "A"]),             # reluctant: as few as possible
    ("A*?", ALL_A[:2], ["", "" ]),                    # reluctant star: the empty match at each row
    ("A*", ALL_A[:2], ["AA"]),
    ("A{2,3}", ALL_A, ["AAA", "unmatched 3"]),
    ("A{2,3}?", ALL_A, ["AA", "AA"]),
    ("A | B", A_AND_B, ["A", "A", "A"]),              # alternation: the first alternative wins
    ("B | A", A_AND_B, ["B", "B", "B"]),
    ("(A | B)+ B", A_AND_B, ["AAB"]),                 # backtracking gives the last row to B
    ("PERMUTE(B, A)", A_AND_B, ["BA", "unmatched 2"]),  # PERMUTE prefers the order written
    ("^ A", ALL_A, ["A", "unmatched 1", "unmatched 2", "unmatched 3"]),
    ("A $", ALL_A, ["unmatched 0", "unmatched 1", "unmatched 2", "A"]),
    ("A {- A -} A", ALL_A[:3], ["AaA"]),              # lower case: excluded from ALL ROWS output
    ("()", ALL_A[:2], ["", ""]),                      # the empty pattern: an empty match per row
    ("(A?)*", [set(), {"A"}], ["", "A"]),             # no endless empty iterations
    ("(A?){2}", [set()], [""]),                       # empty iterations count towards the minimum
    ("A B", [{"A"}, {"C"}, {"A"}, {"B"}], ["unmatched 0", "unmatched 1", "AB"]),  # contiguous rows only
])
def test_preferment(pattern, rows, want):
    got = run(pattern, rows)
    assert shape(got) == want
    assert got == oracle(pattern, rows)


@pytest.mark.parametrize("skip, var, want", [
    ("past", "B", ["ABBB"]),
    ("next", "B", ["ABBB", "ABB", "AB"]),          # rows 1-3 are covered by match 1: not unmatched
    ("first", "B", ["ABBB", "ABB", "AB"]),
    ("last", "B", ["ABBB"]),                      # resumes at row 3, where no match starts
])
def test_skips(skip, var, want):
    rows = [{"A"}, {"A", "B"}, {"A", "B"}, {"B"}]
    got = run("A B+", rows, skip, (var,))
    assert shape(got) == want and got == oracle("A B+", rows, skip, (var,))


def test_skip_to_the_first_row_of_the_match_is_an_error():
    with pytest.raises(RecognizeError, match="its own first row"):
        run("A B", [{"A"}, {"B"}], "first", ("A",))
    with pytest.raises(RecognizeError, match="has no row of"):
        run("A B?", [{"A"}, {"A"}], "last", ("B",))


def test_without_memo_the_step_cap_raises():
    rows = [{"A"}] * 18
    with pytest.raises(LimitError, match="backtracking steps"):
        node = tree("(A | A)* B")
        program = compile_pattern(node, ["A", "B"])
        list(matches(program, len(rows), lambda v, row, start, labels: v == 0, memo_scope=None, max_steps=100_000))
    # with the memo the same pattern is linear
    assert shape(run("(A | A)* B", [{"A"}] * 300)) == [f"unmatched {i}" for i in range(300)]


@pytest.mark.parametrize("text, message", [
    ("A B)", "unexpected ')'"), ("(A B", "unclosed '('"), ("A{3,1}", "below"), ("A**", "cannot follow"),
    ("A{5000}", "limit"), ("{- A", "unclosed exclusion"), ("A{}", "empty quantifier"),
])
def test_pattern_errors(text, message):
    with pytest.raises(SqlError, match=re.escape(message)):
        tree(text)
