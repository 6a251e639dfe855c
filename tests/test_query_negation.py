"""Negation in the query compiler: syntax, errors with positions, the automaton contract the
kernel codes against, filters that are idempotent and commute, and counts from the
compiled DFA checked against the independent oracles in ``oracle.py``."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from helpers import error_of, run
from negation_strategies import STREAM_CHARS, negation_queries, streams
from suse.errors import QueryError
from suse.query import (
    MAX_DFA_STATES,
    MAX_GUARDS,
    Char,
    Concat,
    Negation,
    alphabet_of,
    compile_regex,
    format_query,
    negated_of,
    parse,
)

# --- syntax ------------------------------------------------------------------------------


def test_negation_is_a_zero_width_part_of_a_concatenation():
    assert parse("A!BC") == Concat((Char("A"), Negation("B"), Char("C")))
    assert parse("A!(Y|X|Y)C") == Concat((Char("A"), Negation("XY"), Char("C")))
    assert parse("A ! ( X | Y ) B+ C") == parse("A!(X|Y)B+C")
    assert parse("A!BC").parts[1].pos == 1
    assert parse("A  !(X|Y)C").parts[1].pos == 3


def test_negated_characters_are_not_in_the_alphabet():
    tree = parse("A !(X|Y) B+ C")
    assert (alphabet_of(tree), negated_of(tree)) == ("ABC", "XY")
    a = compile_regex("A !(X|Y) B+ C")
    assert (a.alphabet, a.negated) == ("ABC", "XY")
    assert compile_regex("A(B*C)*D").negated == ""


def test_a_character_can_be_a_letter_and_negated():
    a = compile_regex("A!BCB")
    assert (a.alphabet, a.negated) == ("ABC", "B")


@pytest.mark.parametrize("query", ["A!BC", "A!(B|C)D", "A(!B|C)D", "A(B!D)*C", "(A!BC|D)E", "A!B!CD"])
def test_format_round_trips(query):
    tree = parse(query)
    assert format_query(tree) == query
    assert parse(format_query(tree)) == tree


def test_consecutive_negations_add_up():
    # A!B!CD is A!(B|C)D: both forbid their characters between A and D.
    assert compile_regex("A!B!CD").transitions == compile_regex("A!(B|C)D").transitions


# --- errors: one test per kind, with the position ----------------------------------------


@pytest.mark.parametrize(
    "query, position",
    [("!AB", 0), ("  !AB", 2), ("(!A|B)C", 1), ("A*!BC", 2), ("!A", 0), ("(B!AC)*D|!AD", 9)],
)
def test_negation_cannot_come_first(query, position):
    err = error_of(query)
    assert err.position == position and "cannot come first" in err.message


@pytest.mark.parametrize(
    "query, position",
    [("A!B", 1), ("(A!B)", 2), ("A(!B|C)", 2), ("A!BC*", 1), ("A!BC?", 1), ("A(C!B)*", 3), ("A(C!B)+", 3)],
)
def test_a_negation_at_the_end_compiles_to_pending_states(query, position):
    # Once refused ("cannot come last"); now the absence at the end of issue 27: the sets whose
    # parse ends with the negation wait for their window to close (tests/test_absence.py).
    a = compile_regex(query)
    assert a.pending and a.closed in a.finals and a.closed not in a.pending
    assert query[position] == "!" or query[position:].lstrip("(").startswith("!")


@pytest.mark.parametrize(
    "query, position",
    [("A!BB", 1), ("A!B B*C", 1), ("A!B.CB", 1), ("A(!B|C)B", 2), ("A!(X|C)(B|C)", 1), ("A(B!D|C)*D", 3)],
)
def test_negated_character_cannot_be_the_next_element(query, position):
    err = error_of(query)
    assert err.position == position and "can be the very next element" in err.message


def test_a_negated_character_may_come_later_or_before():
    compile_regex("A!BCB")  # B is forbidden between A and C only
    compile_regex("B!BC")  # the element before is not between
    compile_regex("A(B!DC)*E")  # after !D comes C, never D


@pytest.mark.parametrize(
    "query, position, words",
    [
        ("!!A", 1, "nested negation"),
        ("A!!BC", 2, "nested negation"),
        ("A!B*C", 3, "cannot be repeated"),
        ("A!B{2}C", 3, "cannot be repeated"),
        ("A!(B|C)+D", 7, "cannot be repeated"),
        ("A(!B)*C", 5, "cannot be repeated"),
        ("A(!B|!C)?D", 8, "cannot be repeated"),
        ("A!.C", 2, "must be followed by a letter"),
        ("A!(C)*D", 5, "cannot be repeated"),
        ("A!|BC", 2, "must be followed by a letter"),
        ("A!*C", 2, "must be followed by a letter"),
        ("A!", 1, "dangling '!'"),
        ("A!()B", 3, "empty negation"),
        ("A!(B|)C", 5, "only single letters"),
        ("A!(BC)D", 4, "only single letters"),
        ("A!(B|(C))D", 5, "only single letters"),
        ("A!(B.)D", 4, "only single letters"),
        ("A!(B|C", 2, "unclosed '('"),
        ("A!(", 2, "unclosed '('"),
    ],
)
def test_malformed_negations(query, position, words):
    err = error_of(query)
    assert (err.position, words in err.message) == (position, True), err.message


def test_negation_only_query_names_the_negation_not_the_empty_alphabet():
    assert "cannot come first" in error_of("!A").message


def test_guard_combinations_are_limited():
    # 2^10 = 1024 minimal guards between A and Z
    query = "A" + "".join(f"(!{x}|!{y})" for x, y in zip("BDFHJLNPRT", "CEGIKMOQSU")) + "Z"
    err = error_of(query)
    assert f"more than {MAX_GUARDS}" in err.message and err.position == 0
    compile_regex("A" + "".join(f"(!{x}|!{y})" for x, y in zip("BDFHJ", "CEGIK")) + "Z")


def test_dfa_state_limit_applies_with_negations():
    with pytest.raises(QueryError, match=f"exceeds {MAX_DFA_STATES} states"):
        compile_regex("(a|b)*a!c(a|b){14}")


# --- the automaton contract --------------------------------------------------------------


def test_kill_map():
    a = compile_regex("A!BC")
    assert (a.n_states, a.start, a.finals) == (3, 0, {2})
    assert a.transitions == {(0, "A"): 1, (1, "C"): 2, (0, "!B"): 0, (2, "!B"): 2}
    # columns: A C !B
    assert a.table() == [1, -1, 0, -1, 2, -1, -1, -1, 2]
    assert a.accepts("AC") and a.accepts(["A", "C"]) and not a.accepts(["A", "!B", "C"])


def test_reroute_map():
    # After A: final (no pass) or going on with C; a B between removes the C option only.
    a = compile_regex("A(!BC)*")
    assert a.accepts("A") and a.accepts("ACC") and a.accepts(["A", "!B"])
    assert not a.accepts(["A", "!B", "C"]) and a.accepts(["A", "C", "!B"])
    after_a = a.transitions[(0, "A")]
    rerouted = a.transitions[(after_a, "!B")]
    assert rerouted != after_a and rerouted in a.finals and (rerouted, "C") not in a.transitions


def test_table_layout_letters_then_negated():
    a = compile_regex("A !(X|Y) B+ C")
    columns = a.symbols
    assert columns == ["A", "B", "C", "!X", "!Y"]
    table = a.table()
    assert len(table) == a.n_states * 5
    for state in a.states:
        for i, symbol in enumerate(columns):
            assert table[state * 5 + i] == a.transitions.get((state, symbol), -1)


def test_negation_under_repetition_applies_at_each_pass():
    a = compile_regex("A(B!D)*C")
    assert a.accepts(["A", "B", "B", "C"]) and a.accepts(["A", "!D", "C"])
    assert not a.accepts(["A", "B", "!D", "B", "C"]) and not a.accepts(["A", "B", "B", "!D", "C"])


def test_alternative_parses_need_only_one_to_hold():
    a = compile_regex("A(!B|!C)D")
    assert a.accepts(["A", "!B", "D"]) and a.accepts(["A", "!C", "D"])
    assert not a.accepts(["A", "!B", "!C", "D"]) and not a.accepts(["A", "!C", "!B", "D"])
    assert compile_regex("A(!B|C?)D").accepts(["A", "!B", "D"])  # the C? parse has no negation


def test_stages_and_dot():
    a = compile_regex("A!(B|C)D")
    assert list(a.stages) == ["thompson", "epsilon_free", "pruned", "dfa", "minimal", "trimmed"]
    assert list(a.stages["thompson"].negations.values()) == ["BC"]
    assert 'label="!(B|C)", style=dashed' in a.stages["thompson"].to_dot()
    for name in ("epsilon_free", "pruned", "dfa", "minimal", "trimmed"):
        assert a.stages[name].negated == "BC" and not a.stages[name].negations, name
    dot = a.to_dot()
    assert '0 -> 0 [label="!B,!C", style=dashed];' in dot
    assert '0 -> 1 [label="A"];' in dot


def test_cli_compile_shows_negation_at_every_stage():
    for stage in ("thompson", "epsilon_free", "pruned", "dfa", "minimal", "trimmed"):
        proc = run("compile", "A(B!D)*C", "--stage", stage)
        assert proc.returncode == 0, proc.stderr
        assert "negated D" in proc.stdout and "!D" in proc.stdout, stage
    for stage in ("thompson", "trimmed"):
        dot = run("compile", "A(B!D)*C", "--stage", stage, "--dot")
        assert "style=dashed" in dot.stdout, stage
    table = run("compile", "A!BC").stdout
    assert "alphabet AC, negated B" in table and "!B" in table


def test_cli_compile_marks_the_states_a_closing_window_counts():
    table = run("compile", "A B+ !C").stdout
    rows = [line.split("│")[0].strip() for line in table.splitlines() if "│" in line]
    assert [row for row in rows if "~" in row] == ["~2"]  # the B+ state; A's (1) cannot close
    assert "~ pending: its sets count, in state 3, once their window has closed" in table
    assert "~" not in run("compile", "A !C B").stdout


def test_cli_compile_negation_error_is_one_line():
    proc = run("compile", "A!BB")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "can be the very next element" in proc.stderr and "position 1" in proc.stderr
    assert "Traceback" not in proc.stderr


# --- filters: idempotent and commuting ---------------------------------------------------


def check_filters(a) -> None:
    def step(state, symbol):
        return None if state is None else a.transitions.get((state, symbol))

    for state in a.states:
        for x in a.negated:
            once = step(state, "!" + x)
            assert step(once, "!" + x) == once, (a.query, state, x)
            for y in a.negated:
                assert step(step(state, "!" + x), "!" + y) == step(step(state, "!" + y), "!" + x)
        # A filter never makes a state final or non-final: it only removes options.
        for x in a.negated:
            target = step(state, "!" + x)
            if target is not None:
                assert (target in a.finals) == (state in a.finals), (a.query, state, x)


@settings(max_examples=300, deadline=None)
@given(negation_queries)
def test_filters_are_idempotent_and_commute(query):
    check_filters(compile_regex(query))


def test_filters_on_hand_picked_queries():
    for query in ["A!BC", "A(!BC)*", "A(!B|!C)D", "A!(B|C)(D!E|F)*G", "a(b*c)*d!e f", "A!BCB"]:
        check_filters(compile_regex(query))


# --- counting over the compiled DFA, against the oracles ---------------------------------


def _windowed(events, window):
    for k in range(1, len(events) + 1):
        for idx in itertools.combinations(range(len(events)), k):
            if events[idx[-1]][1] - events[idx[0]][1] <= window:
                yield idx


def dfa_aggregate(a, events, window: int, policy: str = "any") -> dict:
    """COUNT, SUM, partial_count by running the DFA over each index set's projected word:
    the chosen letters and, between two of them, ``!x`` for every event of a negated
    character x in the full stream between them. Events outside the set's span are never
    seen: a set is judged where it ends (a partial match stays one, as after its window)."""
    count = total = partial = 0
    for idx in _windowed(events, window):
        if policy == "contiguous" and any(j != i + 1 for i, j in zip(idx, idx[1:])):
            continue
        symbols = []
        for k, i in enumerate(idx):
            if k:
                symbols += ["!" + e[0] for e in events[idx[k - 1] + 1 : i] if e[0] in a.negated]
            symbols.append(events[i][0])
        state = a.start
        for symbol in symbols:
            state = a.transitions.get((state, symbol))
            if state is None:
                break
        if state is None:
            continue
        if state in a.finals:
            count += 1
            total += sum(events[i][2] for i in idx)
            continue
        partial += 1  # alive where it ends: a proper prefix of a match
    return {"count": count, "sum": total, "partial_count": partial}


def dfa_stnm(a, events, window: int) -> list[tuple[int, ...]]:
    """Skip-till-next-match over the DFA: a run takes every event with a letter transition;
    otherwise an event of a negated character moves it along its filter, or kills it."""
    out = []
    for i, (c, t0, _) in enumerate(events):
        state = a.transitions.get((a.start, c))
        if state is None:
            continue
        taken = [i]
        if state in a.finals:
            out.append(tuple(taken))
        for j in range(i + 1, len(events)):
            cj, tj, _ = events[j]
            if tj - t0 > window or state is None:
                continue
            target = a.transitions.get((state, cj))
            if target is not None:
                state = target
                taken.append(j)
                if state in a.finals:
                    out.append(tuple(taken))
            elif cj in a.negated:
                state = a.transitions.get((state, "!" + cj))
    return out


WINDOWS = st.integers(0, 8)


@settings(max_examples=250, deadline=None)
@given(negation_queries, streams(), WINDOWS)
def test_dfa_counts_equal_the_oracle(query, events, window):
    a = compile_regex(query)
    assert dfa_aggregate(a, events, window) == oracle.query_aggregate(query, events, window)


@settings(max_examples=150, deadline=None)
@given(st.one_of(negation_queries, st.sampled_from(["ab", "a+b", "a.b*", "(ab)*c", "a|b"])), streams(), WINDOWS)
def test_dfa_counts_equal_the_oracle_under_contiguity(query, events, window):
    a = compile_regex(query)
    got = dfa_aggregate(a, events, window, "contiguous")
    assert got == oracle.query_aggregate(query, events, window, "contiguous")
    # Negation is vacuous under contiguity: the same query without it counts the same.
    positive = format_query(_without_negations(parse(query)))
    assert got == dfa_aggregate(compile_regex(positive), events, window, "contiguous")


def _without_negations(node):
    if isinstance(node, Concat):
        parts = tuple(_without_negations(p) for p in node.parts if not isinstance(p, Negation))
        return parts[0] if len(parts) == 1 else Concat(parts)
    if hasattr(node, "options"):
        return type(node)(tuple(_without_negations(o) for o in node.options))
    if hasattr(node, "node"):
        return type(node)(_without_negations(node.node), node.min, node.max)
    return node


@settings(max_examples=250, deadline=None)
@given(negation_queries, streams(max_size=10), WINDOWS)
def test_dfa_stnm_equals_the_guarded_position_oracle(query, events, window):
    a = compile_regex(query)
    assert dfa_stnm(a, events, window) == oracle.query_stnm_matches(query, events, window)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["A!BC", "A(B!D)*C", "A!(D|E)B+C", "A(!B|!C)D", "A!BCB"]), streams(max_size=10, chars="ABCDEZ"), WINDOWS)
def test_hand_picked_queries_against_the_oracle(query, events, window):
    a = compile_regex(query)
    assert dfa_aggregate(a, events, window) == oracle.query_aggregate(query, events, window)
    assert dfa_stnm(a, events, window) == oracle.query_stnm_matches(query, events, window)


def test_stream_alphabet_covers_every_role():
    # letters, negated-only characters and a character no query names
    assert set("abc") < set(STREAM_CHARS) and {"d", "e", "z"} < set(STREAM_CHARS)


# --- the two ways of finding minimal guards agree ----------------------------------------


def _both_guard_methods(query: str):
    from suse.query import construction as c

    thompson = compile_regex(query).stages["thompson"]
    bit = {ch: 1 << i for i, ch in enumerate(thompson.negated)}
    guarded: dict = {}
    for (source, target), chars in thompson.negations.items():
        mask = sum(bit[ch] for ch in chars)
        guarded.setdefault(source, []).append((target, mask))
    has_move: dict = {}
    for source, ch in thompson.transitions:
        has_move.setdefault(source, []).append(ch)
    (final,) = thompson.finals
    by_masks = c._GuardMasks.build(thompson, guarded)
    for q in thompson.states:
        fast, fast_final = by_masks.moves(q)
        slow, slow_final = c._moves_by_search(thompson, q, guarded, has_move, final, query)
        assert fast_final == slow_final, (query, q)
        assert {k: sorted(v) for k, v in fast.items()} == {k: sorted(v) for k, v in slow.items()}, (query, q)


@settings(max_examples=150, deadline=None)
@given(negation_queries)
def test_guard_masks_equal_path_search(query):
    _both_guard_methods(query)


def test_many_distinct_negations_fall_back_to_path_search():
    from suse.query import construction as c

    query = "A(!B|!C|!D|!E|!F|!G|!H)I"  # 2^7 unions of negations: more than the candidates limit
    assert 2**7 > c.MAX_GUARD_CANDIDATES
    a = compile_regex(query)
    assert a.accepts(["A", "!B", "!C", "I"]) and not a.accepts(["A", *[f"!{x}" for x in "BCDEFGH"], "I"])
    _both_guard_methods("A(!B|!C|!D)(!E|!F)I")
