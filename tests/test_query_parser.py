"""Parser: valid syntax, precedence, and every error kind with its exact position."""
import pytest

from helpers import error_of
from suse.errors import QueryError
from suse.query import (
    MAX_REPEAT,
    Alternation,
    AnyChar,
    Char,
    Concat,
    Repeat,
    alphabet_of,
    compile_regex,
    format_query,
    parse,
)

# --- valid queries -----------------------------------------------------------------------


def test_single_character():
    assert parse("A") == Char("A")


def test_concatenation_is_flat():
    assert parse("ABC") == Concat((Char("A"), Char("B"), Char("C")))


def test_postfix_binds_tighter_than_concatenation():
    assert parse("AB*") == Concat((Char("A"), Repeat(Char("B"), 0, None)))


def test_concatenation_binds_tighter_than_alternation():
    assert parse("AB|C") == Alternation((Concat((Char("A"), Char("B"))), Char("C")))


def test_postfix_operators_and_bounds():
    assert parse("a+") == Repeat(Char("a"), 1, None)
    assert parse("a?") == Repeat(Char("a"), 0, 1)
    assert parse("a{3}") == Repeat(Char("a"), 3, 3)
    assert parse("a{2,}") == Repeat(Char("a"), 2, None)
    assert parse("a{0,4}") == Repeat(Char("a"), 0, 4)
    assert parse(f"a{{{MAX_REPEAT}}}") == Repeat(Char("a"), MAX_REPEAT, MAX_REPEAT)


def test_stacked_postfix_applies_in_turn():
    assert parse("a*{2}") == Repeat(Repeat(Char("a"), 0, None), 2, 2)
    # not lazy as in Python: "+?" is "(a+)?"
    assert parse("a+?") == Repeat(Repeat(Char("a"), 1, None), 0, 1)


def test_nested_groups():
    expected = Concat(
        (
            Char("A"),
            Repeat(Concat((Repeat(Char("B"), 0, None), Char("C"))), 0, None),
            Char("D"),
        )
    )
    assert parse("A(B*C)*D") == expected
    assert parse("((A))") == Char("A")
    assert parse("(A|(B|C)D)") == Alternation(
        (Char("A"), Concat((Alternation((Char("B"), Char("C"))), Char("D"))))
    )


def test_whitespace_is_ignored_everywhere():
    assert parse("  A ( B * C ) * D \t\n") == parse("A(B*C)*D")
    assert parse("a{ 2 , 3 }") == parse("a{2,3}")
    assert parse("a{1 0}") == parse("a{10}")  # whitespace is removed before tokenising


def test_dot_digits_and_case():
    assert parse("a.9") == Concat((Char("a"), AnyChar(), Char("9")))
    assert alphabet_of(parse("bA.a9b")) == "9Aab"


def test_positions_refer_to_the_original_query():
    tree = parse("  A  B*")
    assert tree.parts[0].pos == 2
    assert tree.parts[1].pos == 6  # the '*'
    assert tree.parts[1].node.pos == 5


@pytest.mark.parametrize(
    "query", ["A(B*C)*D", "(ab|a)b*", "a{2,}b{3}c{0,2}", "(a|b.)+?", "a*{2}", "((a|b)c)*|d"]
)
def test_format_round_trips(query):
    tree = parse(query)
    assert parse(format_query(tree)) == tree


# --- errors: one test per kind, with the exact position ----------------------------------


def test_empty_query():
    assert error_of("").position == 0
    assert "empty query" in error_of("   ").message


def test_unclosed_parenthesis_points_at_it():
    assert error_of("(ab").position == 0
    assert error_of("a(b(c)").position == 1
    assert error_of("x (a|").position == 2
    assert "unclosed '('" in error_of("(ab").message


def test_stray_closing_parenthesis():
    assert error_of("ab)").position == 2
    assert error_of(")").position == 0
    assert error_of("a|)").position == 2
    assert "unmatched ')'" in error_of("(a))").message


def test_dangling_postfix_operator():
    for query, position in [("*a", 0), ("(+a)", 1), ("a|?b", 2), ("{2}a", 0), (" * ", 1)]:
        err = error_of(query)
        assert (err.position, "dangling") == (position, err.message[:8]), query


def test_dangling_bar_at_the_ends():
    assert error_of("|*").position == 0
    assert error_of("|a").position == 0
    assert error_of("a|").position == 1
    assert error_of("ab |  ").position == 3
    assert "dangling '|'" in error_of("a|").message


def test_empty_alternative():
    assert error_of("a||b").position == 2
    assert error_of("(|a)").position == 1
    assert error_of("(a|)").position == 3
    assert error_of("()").position == 1
    assert "empty alternative" in error_of("(|a)").message
    assert "empty group" in error_of("a()").message


def test_bad_repetition_bounds():
    cases = {
        "a{3,2}": (4, "reversed"),
        "a{": (1, "unclosed '{'"),
        "a{2,": (1, "unclosed '{'"),
        "a{x}": (2, "expected a number"),
        "a{}": (2, "expected a number"),
        "a{,3}": (2, "expected a number"),
        "a{2,3,4}": (5, "expected '}'"),
        "a}": (1, "unmatched '}'"),
        f"a{{{MAX_REPEAT + 1}}}": (2, f"limit of {MAX_REPEAT}"),
        "a{1,99999999999999999999}": (4, f"limit of {MAX_REPEAT}"),
    }
    for query, (position, words) in cases.items():
        err = error_of(query)
        assert err.position == position, query
        assert words in err.message, query


def test_repetitions_expanding_too_far():
    err = error_of("(a{1000}){1000}")
    assert "too large" in err.message


def test_nesting_too_deep():
    err = error_of("(" * 150 + "a" + ")" * 150)
    assert "nests deeper" in err.message
    assert "nests deeper" in error_of("a" + "*" * 150).message


@pytest.mark.parametrize("query,position", [("a-b", 1), ("a_b", 1), ("aéb", 1), ("ab[c]", 2)])
def test_unexpected_symbol(query, position):
    err = error_of(query)
    assert err.position == position
    assert "unexpected symbol" in err.message


def test_empty_alphabet_matches_nothing():
    for query in [".", ".*", "(.|.)+"]:
        assert "matches nothing" in error_of(query).message


def test_only_the_empty_word():
    for query in ["a{0}", "a{0,0}", "(b{0})*", "a{0}|b{0}", "(a{0}b{0})+"]:
        err = error_of(query)
        assert err.position == 0
        assert "only the empty word" in err.message


def test_empty_word_alongside_others_is_fine():
    assert compile_regex("a*").accepts("")
    assert compile_regex("a{0}b").accepts("b")


def test_caret_marks_the_position():
    assert error_of("ab)").caret() == "ab)\n  ^"


def test_non_string_query():
    with pytest.raises(QueryError):
        parse(None)  # type: ignore[arg-type]
