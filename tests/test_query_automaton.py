"""Automaton: language equals Python's ``re``; the DFA is deterministic, trimmed, minimal,
and counts every subsequence match exactly once."""
import functools
import itertools
import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suse.errors import QueryError
from suse.query import (
    MAX_DFA_STATES,
    Alternation,
    AnyChar,
    Char,
    Concat,
    Repeat,
    alphabet_of,
    compile_regex,
    format_query,
)

LETTERS = "abc"
SHORT_WORDS = ["".join(w) for n in range(6) for w in itertools.product(LETTERS, repeat=n)]


# --- random syntax trees -----------------------------------------------------------------

_bounds = st.one_of(
    st.sampled_from([(0, None), (1, None), (0, 1)]),  # * + ?
    st.integers(0, 3).map(lambda m: (m, None)),  # {m,}
    st.tuples(st.integers(0, 3), st.integers(0, 2)).map(lambda p: (p[0], p[0] + p[1])),
)
_leaves = st.one_of(st.sampled_from(LETTERS).map(Char), st.just(AnyChar()))


def _trees(depth: int) -> st.SearchStrategy:
    if depth == 0:
        return _leaves
    child = _trees(depth - 1)
    return st.one_of(
        _leaves,
        st.lists(child, min_size=2, max_size=3).map(lambda xs: Concat(tuple(xs))),
        st.lists(child, min_size=2, max_size=3).map(lambda xs: Alternation(tuple(xs))),
        st.tuples(child, _bounds).map(lambda t: Repeat(t[0], *t[1])),
    )


TREES = _trees(4)


def to_python(node, alphabet: str) -> str:
    """Independent translation to Python's syntax; every operand is grouped, so stacked
    operators never read as Python's lazy/possessive forms."""
    if isinstance(node, Char):
        return node.char
    if isinstance(node, AnyChar):
        return f"[{alphabet}]"
    if isinstance(node, Concat):
        return "".join(f"(?:{to_python(p, alphabet)})" for p in node.parts)
    if isinstance(node, Alternation):
        return "(?:" + "|".join(to_python(o, alphabet) for o in node.options) + ")"
    high = "" if node.max is None else node.max
    return f"(?:{to_python(node.node, alphabet)}){{{node.min},{high}}}"


def repeat_nesting(node) -> int:
    """How deeply repetitions nest; Python's backtracking ``re`` is exponential in it."""
    if isinstance(node, (Char, AnyChar)):
        return 0
    if isinstance(node, Repeat):
        return 1 + repeat_nesting(node.node)
    children = node.parts if isinstance(node, Concat) else node.options
    return max(repeat_nesting(c) for c in children)


# A second oracle without backtracking: Brzozowski derivatives over the syntax tree.
@dataclass(frozen=True)
class _Void:  # the empty language
    pass


@dataclass(frozen=True)
class _Eps:  # the language {ε}
    pass


VOID, EPS = _Void(), _Eps()


def nullable(node) -> bool:
    if isinstance(node, (Char, AnyChar, _Void)):
        return False
    if isinstance(node, _Eps):
        return True
    if isinstance(node, Concat):
        return all(nullable(p) for p in node.parts)
    if isinstance(node, Alternation):
        return any(nullable(o) for o in node.options)
    return node.min == 0 or nullable(node.node)


def _seq(parts):
    parts = [p for p in parts if p != EPS]
    if VOID in parts:
        return VOID
    return EPS if not parts else parts[0] if len(parts) == 1 else Concat(tuple(parts))


def _alt(options):
    unique = tuple(dict.fromkeys(o for o in options if o != VOID))
    return VOID if not unique else unique[0] if len(unique) == 1 else Alternation(unique)


@functools.cache
def derivative(node, ch: str, alphabet: str):
    """The words w such that ch+w is in the node's language."""
    if isinstance(node, Char):
        return EPS if node.char == ch else VOID
    if isinstance(node, AnyChar):
        return EPS if ch in alphabet else VOID
    if isinstance(node, (_Void, _Eps)):
        return VOID
    if isinstance(node, Concat):
        head, rest = node.parts[0], _seq(node.parts[1:])
        first = _seq([derivative(head, ch, alphabet), rest])
        return _alt([first, derivative(rest, ch, alphabet)]) if nullable(head) else first
    if isinstance(node, Alternation):
        return _alt(derivative(o, ch, alphabet) for o in node.options)
    if node.max == 0:
        return VOID
    # Leading copies that match ε can be dropped, so one copy fewer remains in either case.
    rest = Repeat(node.node, max(node.min - 1, 0), None if node.max is None else node.max - 1)
    return _seq([derivative(node.node, ch, alphabet), rest])


def derivative_accepts(node, word: str, alphabet: str) -> bool:
    for ch in word:
        node = derivative(node, ch, alphabet)
    return nullable(node)


def only_empty_word(node, alphabet: str) -> bool:
    """Oracle: the language is a subset of {ε} (never empty once the alphabet is not)."""
    if isinstance(node, Char):
        return False
    if isinstance(node, AnyChar):
        return not alphabet
    if isinstance(node, (Concat, Alternation)):
        children = node.parts if isinstance(node, Concat) else node.options
        return all(only_empty_word(c, alphabet) for c in children)
    return node.max == 0 or only_empty_word(node.node, alphabet)


# --- structural checks -------------------------------------------------------------------


def check_deterministic(a) -> None:
    assert a.start == 0
    for (state, ch), target in a.transitions.items():
        assert 0 <= state < a.n_states and 0 <= target < a.n_states
        assert ch in a.alphabet
    table = a.table()
    assert len(table) == a.n_states * len(a.alphabet)
    k = len(a.alphabet)
    for state in range(a.n_states):
        for i, ch in enumerate(a.alphabet):
            assert table[state * k + i] == a.transitions.get((state, ch), -1)


def check_trimmed(a) -> None:
    """Every state is reachable and can still reach a final state (no sink)."""
    succ = {s: {t for (q, _), t in a.transitions.items() if q == s} for s in a.states}
    reachable, frontier = {a.start}, [a.start]
    while frontier:
        for t in succ[frontier.pop()] - reachable:
            reachable.add(t)
            frontier.append(t)
    assert reachable == set(a.states)
    alive = set(a.finals)
    changed = True
    while changed:
        changed = False
        for s in a.states:
            if s not in alive and succ[s] & alive:
                alive.add(s)
                changed = True
    assert alive == set(a.states)


def check_no_equivalent_states(a) -> None:
    """Two states are equivalent iff no pair reachable from them in the product automaton
    disagrees on finality (-1 stands for the removed dead state)."""

    def step(s, ch):
        return -1 if s == -1 else a.transitions.get((s, ch), -1)

    for p, q in itertools.combinations(a.states, 2):
        seen, frontier, distinguished = {(p, q)}, [(p, q)], False
        while frontier and not distinguished:
            x, y = frontier.pop()
            if (x in a.finals) != (y in a.finals):
                distinguished = True
            for ch in a.alphabet:
                pair = (step(x, ch), step(y, ch))
                if pair not in seen:
                    seen.add(pair)
                    frontier.append(pair)
        assert distinguished, f"states {p} and {q} are equivalent in {a.query!r}"


# --- property tests ----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(TREES, st.lists(st.text(LETTERS, min_size=6, max_size=10), max_size=5))
def test_language_matches_python_re_and_derivatives(tree, long_words):
    query = format_query(tree)
    alphabet = alphabet_of(tree)
    if only_empty_word(tree, alphabet):
        with pytest.raises(QueryError, match="only the empty word|matches nothing"):
            compile_regex(query)
        return
    a = compile_regex(query)
    assert a.alphabet == alphabet
    for word in SHORT_WORDS + long_words:
        assert a.accepts(word) == derivative_accepts(tree, word, alphabet), (query, word)
    if repeat_nesting(tree) <= 2:  # deeper nesting can make re take minutes
        pattern = re.compile(to_python(tree, alphabet))
        for word in SHORT_WORDS:
            assert a.accepts(word) == bool(pattern.fullmatch(word)), (query, word)
    check_deterministic(a)
    check_trimmed(a)
    check_no_equivalent_states(a)


@settings(max_examples=100, deadline=None)
@given(TREES)
def test_every_stage_accepts_the_same_language(tree):
    try:
        a = compile_regex(format_query(tree))
    except QueryError:
        return  # covered by test_language_matches_python_re_and_derivatives
    words = [w for w in SHORT_WORDS if len(w) <= 4]
    expected = [a.accepts(w) for w in words]
    for name, stage in a.stages.items():
        assert [stage.accepts(w) for w in words] == expected, name
        assert stage.start == 0
    for name in ("epsilon_free", "pruned", "dfa", "minimal", "trimmed"):
        assert not a.stages[name].epsilon, name
    for name in ("dfa", "minimal", "trimmed"):
        assert all(len(t) == 1 for t in a.stages[name].transitions.values()), name


def count_runs(automaton, stream: str) -> list[int]:
    """The paper's COUNT rules: per state, the number of (stream subset, run) pairs ending
    there. Works for the DFA (int targets) and for NFA stages (sets of targets)."""
    counts = [0] * automaton.n_states
    for ch in stream:
        added = [0] * automaton.n_states
        for state in automaton.states:
            runs = counts[state] + (1 if state == automaton.start else 0)
            targets = automaton.transitions.get((state, ch), ())
            for target in [targets] if isinstance(targets, int) else targets:
                added[target] += runs
        counts = [c + d for c, d in zip(counts, added)]
    return counts


def count_matches_brute_force(query: str, stream: str) -> int:
    a = compile_regex(query)
    return sum(
        a.accepts("".join(stream[i] for i in chosen))
        for k in range(1, len(stream) + 1)
        for chosen in itertools.combinations(range(len(stream)), k)
    )


@settings(max_examples=100, deadline=None)
@given(TREES, st.text(LETTERS, max_size=7))
def test_dfa_counts_each_match_once(tree, stream):
    try:
        a = compile_regex(format_query(tree))
    except QueryError:
        return
    counts = count_runs(a, stream)
    assert sum(counts[f] for f in a.finals) == count_matches_brute_force(a.query, stream)


# --- examples ----------------------------------------------------------------------------


def test_ambiguous_pattern_counts_once():
    a = compile_regex("(ab|a)b*")
    assert [w for w in SHORT_WORDS if a.accepts(w)] == ["a", "ab", "abb", "abbb", "abbbb"]
    assert (a.n_states, a.finals, a.transitions) == (2, {1}, {(0, "a"): 1, (1, "b"): 1})
    dfa_counts = count_runs(a, "abb")
    assert sum(dfa_counts[f] for f in a.finals) == 4  # {0},{0,1},{0,2},{0,1,2}
    # The paper counts over the NFA; its runs over-count, as in its implementation.
    nfa = a.stages["pruned"]
    assert sum(count_runs(nfa, "abb")[f] for f in nfa.finals) == 7


def test_star_star():
    a = compile_regex("a*a*")
    assert (a.n_states, a.finals, a.transitions) == (1, {0}, {(0, "a"): 0})
    assert all(a.accepts("a" * n) for n in range(6))


def test_paper_example_4_counters():
    a = compile_regex("A(B*C)*D")
    assert a.alphabet == "ABCD"
    assert a.n_states == 4 and a.finals == {3}
    assert a.table() == [1, -1, -1, -1, -1, 2, 1, 3, -1, 2, 1, -1, -1, -1, -1, -1]
    assert count_runs(a, "ABADBCD") == [0, 8, 4, 10]  # (#z0, #z1, #z2, #z3) of Fig. 3


def test_dot_wildcard_uses_the_query_alphabet():
    a = compile_regex("a.c")
    assert a.alphabet == "ac"
    assert a.accepts("aac") and a.accepts("acc") and not a.accepts("abc")


def test_characters_outside_the_alphabet_are_rejected():
    assert not compile_regex("ab").accepts("ax")


def test_bfs_numbering_is_deterministic():
    a = compile_regex("c|b(a|c)")
    assert a.transitions == {(0, "b"): 1, (0, "c"): 2, (1, "a"): 2, (1, "c"): 2}
    assert compile_regex("b(c|a)|c").transitions == a.transitions


def test_stage_names():
    stages = compile_regex("ab").stages
    assert list(stages) == ["thompson", "epsilon_free", "pruned", "dfa", "minimal", "trimmed"]
    assert stages["thompson"].epsilon  # only the first stage has epsilon moves


def test_minimal_stage_keeps_the_sink_and_trimming_removes_it():
    a = compile_regex("ab")
    assert a.stages["minimal"].n_states == 4  # start, after a, after ab, dead
    assert a.n_states == 3


def test_dot_output():
    dot = compile_regex("a(b|c)").to_dot(title='say "hi"')
    assert dot.startswith("digraph")
    assert "__start -> 0;" in dot
    assert "2 [shape=doublecircle];" in dot
    assert '1 -> 2 [label="b,c"];' in dot  # parallel edges merged into one label
    assert 'label="say \\"hi\\""' in dot
    assert 'label="ε"' in compile_regex("ab").stages["thompson"].to_dot()


def test_too_many_dfa_states():
    with pytest.raises(QueryError, match=f"exceeds {MAX_DFA_STATES} states"):
        compile_regex("(a|b)*a(a|b){14}")


def test_epsilon_removal_blow_up_is_refused():
    with pytest.raises(QueryError, match="too complex"):
        compile_regex("(a*){1000}")
