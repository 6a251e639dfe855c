"""The condition language of ``where``: parser, checks against the query, evaluator, analysis.

The evaluator is checked against ``conditions_oracle``, a second evaluator written
independently (Python's ``ast`` over a token rewrite), on random conditions and elements with
NULLs, ties and duplicate values."""
from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conditions_oracle
from suse.errors import ConditionError, InputError, QueryError, SuseWarning
from suse.query.conditions import (
    MAX_DEPTH,
    MAX_NESTING,
    MAX_OFFSET,
    And,
    Arithmetic,
    Boolean,
    Comparison,
    IsNull,
    Negate,
    Not,
    Number,
    Or,
    Reference,
    String,
    data_value,
    evaluate,
    evaluate_expression,
    format_condition,
    parse_condition,
    parse_where,
    truth,
)


def ref(letter, attribute, navigation="last", offset=0):
    return Reference(letter, attribute, navigation, offset)


def p(text, letter="B"):
    return parse_condition(text, letter).root


# --- parsing ------------------------------------------------------------------------------


def test_precedence_follows_sql():
    assert p("B.a = 1 OR B.b = 2 AND NOT B.c = 3") == Or(
        (
            Comparison("=", ref("B", "a"), Number(Fraction(1))),
            And((Comparison("=", ref("B", "b"), Number(Fraction(2))), Not(Comparison("=", ref("B", "c"), Number(Fraction(3)))))),
        )
    )
    assert p("-B.x * 2 + 1 > 0") == Comparison(
        ">", Arithmetic("+", Arithmetic("*", Negate(ref("B", "x")), Number(Fraction(2))), Number(Fraction(1))), Number(Fraction(0))
    )
    assert p("B.x - 1 - 2 < 0").left == Arithmetic("-", Arithmetic("-", ref("B", "x"), Number(Fraction(1))), Number(Fraction(2)))


def test_navigation_forms():
    assert p("B.p = LAST(B.p)") == Comparison("=", ref("B", "p"), ref("B", "p"))
    assert p("last(B.p, 2) < first(A.q, 1)") == Comparison("<", ref("B", "p", "last", 2), ref("A", "q", "first", 1))
    assert p("FIRST(A.q) IS NOT NULL") == IsNull(ref("A", "q", "first", 0), True)


def test_literals_are_exact():
    assert p("B.p = 0.1").right == Number(Fraction(1, 10))
    assert p("B.s = 'it''s'").right == String("it's")
    assert p("B.f = true OR B.f = FALSE") == Or(
        (Comparison("=", ref("B", "f"), Boolean(True)), Comparison("=", ref("B", "f"), Boolean(False)))
    )
    assert p("B.a != 1").op == "<>"


def test_positions_on_every_node():
    root = p("B.p > LAST(B.p, 1) AND B.s IS NULL")
    assert root.position == 19  # the AND
    comparison, is_null = root.operands
    assert (comparison.position, comparison.left.position, comparison.right.position) == (4, 0, 6)
    assert (is_null.position, is_null.operand.position) == (27, 23)


@pytest.mark.parametrize(
    "text",
    [
        "B.p > LAST(B.p, 1)",
        "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)",
        "NOT (B.a = 1 OR B.b = 2) AND B.c <> 'x''y'",
        "-(-B.p) <= 2.50 * (A.q - 1) / 3",
        "(B.p > 1) = TRUE",
        "B.timestamp - LAST(B.timestamp, 1) <= 5",
    ],
)
def test_format_reads_back_the_same_tree(text):
    root = p(text)
    assert p(format_condition(root)) == root


# --- errors, with their positions ---------------------------------------------------------


@pytest.mark.parametrize(
    "text, position, says",
    [
        ("", 0, "empty condition"),
        ("B.p >", 5, "ends where a value"),
        ("B.p > > 1", 6, "expected a value"),
        ("(B.p > 1", 0, "unclosed '('"),
        ("B.p > 1)", 7, "unmatched ')'"),
        ("B.p < 1 < 2", 8, "do not chain"),
        ("B.p = NULL", 6, "IS NULL"),
        ("B.p IS 1", 7, "expected NULL"),
        ("avg(B.p) > 1", 0, "AVG() is not supported"),
        ("B.p > Sum(B.p)", 6, "without enumerating"),
        ("B.p = PREV(B.p)", 6, "PREV navigates the rows of the stream"),
        ("B.p = abs(B.p)", 6, "unknown function abs()"),
        ("LAST(B.p, 1.5) > 1", 10, "non-negative integer"),
        ("LAST(B.p, -1) > 1", 10, "non-negative integer"),
        (f"LAST(B.p, {MAX_OFFSET + 1}) > 1", 10, "exceeds the limit"),
        ("LAST(B) > 1", 5, "is not a value"),
        ("LAST(B.p > 1", 9, "expected ')'"),
        ("Bx.p > 1", 0, "is not a letter"),
        ("p > 1", 0, "is not a value"),
        ("B. > 1", 3, "attribute name"),
        ("B.p > 'abc", 6, "unclosed string"),
        ("B.p > 80%", 8, "0.8 *"),
        ("B.p > 1.2.3", 6, "malformed number"),
        ("B.p # 1", 4, "unexpected symbol"),
        ("B.p + 'a' > 1", 6, "arithmetic needs numbers"),
        ("-TRUE = B.p", 1, "arithmetic needs numbers"),
        ("'a' = 1", 4, "compares a string with a number"),
        ("B.p > 1 = TRUE", 8, "do not chain"),
        ("B.p + 1", 4, "must be true or false"),
        ("B.ok AND 'x'", 9, "must be true or false"),
        ("B.p / 0 > 1", 4, "division by zero"),
        ("B.p / (1 - 1) > 1", 4, "division by zero"),
        ("(" * (MAX_NESTING + 1) + "B.f" + ")" * (MAX_NESTING + 1), MAX_NESTING, "nests deeper"),
        ("NOT " * (MAX_NESTING + 1) + "B.f", 4 * MAX_NESTING, "nests deeper"),
        ("B.p" + " + 1" * MAX_DEPTH + " > 0", 0, "nests deeper"),
    ],
)
def test_errors_name_the_position(text, position, says):
    with pytest.raises(ConditionError) as info:
        parse_condition(text, "B")
    assert info.value.position == position, info.value
    assert says in str(info.value)
    assert info.value.letter == "B" and info.value.query == text
    assert isinstance(info.value, QueryError)


def test_not_a_string():
    with pytest.raises(QueryError):
        parse_condition(3, "B")


# --- checks against the query -------------------------------------------------------------


@pytest.mark.parametrize(
    "query, where, letter, position, says",
    [
        ("A B C", {"D": "D.p > 1"}, "D", 0, "not a letter of the query"),
        ("A B C", {"BC": "B.p > 1"}, "BC", 0, "not a letter of the query"),
        ("A !E B", {"E": "E.p > 1"}, "E", 0, "not a letter of the query"),
        ("A B C", {"B": "B.p > E.p"}, "B", 6, "E is not a letter"),
        ("A B C", {"B": "B.p > C.p"}, "B", 6, "no C comes before a B"),
        ("A B C", {"B": "B.p > LAST(B.p, 1)"}, "B", 6, "at most 1"),
        ("A B{1,3} C", {"B": "B.p > LAST(B.p, 3)"}, "B", 6, "needs 4 B elements"),
        ("A B{1,3} C", {"C": "C.p > FIRST(B.p, 3)"}, "C", 6, "at most 3"),
        ("A B{1,3} C", {"C": "C.p > LAST(B.p, 3)"}, "C", 6, "at most 3"),
        ("(A|B) C", {"B": "B.p > A.p"}, "B", 6, "no A comes before a B"),
    ],
)
def test_where_checks_against_the_query(query, where, letter, position, says):
    with pytest.raises(ConditionError) as info:
        parse_where(query, where)
    assert (info.value.letter, info.value.position) == (letter, position), info.value
    assert says in str(info.value)


@pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")  # navigation is the point here
@pytest.mark.parametrize(
    "query, where",
    [
        ("A B{1,3} C", {"B": "B.p > LAST(B.p, 2)", "C": "C.p > LAST(B.p, 2) AND C.p > FIRST(B.p, 2)"}),
        ("A B+ C", {"B": "B.p > LAST(B.p, 999)"}),
        ("A (B C)* D", {"D": "D.p > LAST(C.p, 50)"}),
        ("A B+ !C", {"B": "B.p > A.p"}),  # a negation at the end: the words are those of A B+
        ("A (B | !X C)", {"C": "C.p = A.p"}),
        ("A . B", {"B": "B.p > LAST(B.p, 1)", "A": "A.p > 0"}),  # '.' can be a B
    ],
)
def test_where_accepts_navigation_a_match_can_fill(query, where):
    assert set(parse_where(query, where).conditions) == set(where)


def test_where_must_be_a_mapping():
    with pytest.raises(QueryError):
        parse_where("A B", ["B.p > 1"])


# --- analysis -----------------------------------------------------------------------------


def uses_of(query, letter, condition):
    analysis = parse_where(query, {letter: condition}).analyses[letter]
    return analysis, [(u.letter, u.attribute, u.kind, u.n, u.always_previous) for u in analysis.uses]


def test_rising_run_is_adjacent():
    analysis, uses = uses_of("A B+ C", "B", "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)")
    assert uses == [("B", "p", "last", 1, True), ("B", "p", "current", 0, False)]
    assert analysis.adjacent and not analysis.self_only
    assert analysis.previous_letters == {"A", "B"} and not analysis.can_be_first
    compared = analysis.compared
    assert (format_condition(compared.current), compared.op, compared.null_reference) == ("B.p", ">", True)


@pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")  # navigation is the point here
def test_previous_b_is_not_adjacent_when_another_letter_can_intervene():
    analysis, uses = uses_of("A (B D)+ C", "B", "B.p > LAST(B.p, 1)")
    assert uses[1] == ("B", "p", "last", 1, False)
    assert not analysis.adjacent and analysis.compared.reference.kind == "last"


def test_other_letters_and_first():
    analysis, uses = uses_of("A B* C", "C", "C.p < A.p AND C.q = FIRST(B.q) AND C.k = 'x'")
    assert uses == [
        ("C", "p", "current", 0, False),
        ("A", "p", "last", 1, False),
        ("C", "q", "current", 0, False),
        ("B", "q", "first", 0, False),
        ("C", "k", "current", 0, False),
    ]
    assert [c.self_only for c in analysis.conjuncts] == [False, False, True]
    assert [c.compared.reference.letter for c in analysis.conjuncts[:2]] == ["A", "B"]
    assert analysis.compared is None  # a conjunction, not one comparison


def test_self_only_refines_the_letter():
    analysis, _ = uses_of("A B+", "B", "B.kind = 'x' AND B.p > 2 * B.q")
    assert analysis.self_only and not analysis.adjacent and analysis.compared is None


@pytest.mark.parametrize(
    "condition, current, op",
    [
        ("C.p < B.p", "C.p", "<"),
        ("B.p > C.p", "C.p", "<"),
        ("C.t - B.t <= 5", "C.t - 5", "<="),
        ("C.v < 0.8 * B.v", "C.v / 0.8", "<"),
        ("2 * C.v + 1 >= -B.v", "-(2 * C.v + 1)", "<="),
        ("C.from = B.to", "C.from", "="),
        ("B.p / 4 + B.p / 4 <> C.p", "C.p / 0.5", "<>"),
        ("B.p > C.p - 1", "C.p - 1", "<"),
    ],
)
def test_compared_form(condition, current, op):
    analysis = parse_where("A B+ C", {"C": condition}).analyses["C"]
    assert (format_condition(analysis.compared.current), analysis.compared.op) == (current, op)


def test_first_of_the_own_letter_may_be_the_current_element():
    analysis = parse_where("A B+", {"B": "B.p > FIRST(B.p)"}).analyses["B"]
    assert analysis.uses[1].may_be_current and analysis.compared is None
    assert not parse_where("A B+ C", {"C": "C.p > FIRST(B.p)"}).analyses["C"].uses[1].may_be_current


@pytest.mark.parametrize("condition", ["C.p < B.p * C.q", "C.p < B.p - B.p", "C.p < A.p + B.p", "C.p < B.p OR C.p > 1", "NOT C.p < B.p"])
def test_no_compared_form(condition):
    assert parse_where("A B+ C", {"C": condition}).analyses["C"].compared is None


values = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.fractions(min_value=-3, max_value=3, max_denominator=4),
    st.sampled_from([0.5, 0.1, -1.25, float("nan")]),
)


@given(
    condition=st.sampled_from(["C.t - B.t <= 5", "C.v < 0.8 * B.v", "2 * C.v + 1 >= -B.v", "B.p / 4 + B.p / 4 <> C.p", "B.v IS NULL OR C.v > B.v"]),
    current=values,
    earlier=values,
)
def test_compared_form_means_the_condition(condition, current, earlier):
    """The compared form holds exactly when the condition does, NULLs included."""
    analysis = parse_where("A B+ C", {"C": condition}).analyses["C"]
    compared = analysis.compared
    names = ("t", "v", "p")
    before = [("A", 0, {}), ("B", 1, dict.fromkeys(names, earlier))]
    element = ("C", 2, dict.fromkeys(names, current))
    cond = parse_where("A B+ C", {"C": condition}).conditions["C"]
    left = evaluate_expression(compared.current, cond, before, element)
    right = data_value(earlier, "")
    if right is None:
        expected = compared.null_reference
    elif left is None:
        expected = False
    else:
        from suse.query.conditions import compare

        expected = compare(compared.op, left, right)
    assert evaluate(cond, before, element) == expected


# --- data values and evaluation -----------------------------------------------------------


def test_data_values():
    assert data_value(0.1, "") == Fraction(1, 10)
    assert data_value(Decimal("2.50"), "") == Fraction(5, 2)
    assert data_value(float("nan"), "") is None and data_value(None, "") is None
    assert data_value(True, "") is True and data_value("x", "") == "x"
    with pytest.raises(InputError, match="infinite"):
        data_value(float("inf"), "")
    with pytest.raises(InputError, match="list"):
        data_value([1], "")


def test_numpy_and_pandas_values():
    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    assert data_value(np.int64(3), "") == 3 and data_value(np.float64(0.1), "") == Fraction(1, 10)
    assert data_value(np.float32(0.1), "") == Fraction(1, 10)
    # the same number as a float64 prints (and so reads) differently, whatever came first
    assert data_value(float(np.float32(0.1)), "") == Fraction("0.10000000149011612")
    assert data_value(np.float32(0.1), "") == Fraction(1, 10)
    assert data_value(2.0, "") == 2 and type(data_value(2.0, "")) is int
    assert data_value(np.bool_(True), "") is True and data_value(pd.NA, "") is None


def test_navigation_and_nulls():
    cond = parse_condition("LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "B")
    a = ("A", 0, {"p": 9})
    assert evaluate(cond, [a], ("B", 1, {"p": 1}))  # the first B
    assert evaluate(cond, [a, ("B", 1, {"p": 1})], ("B", 2, {"p": 2}))
    assert not evaluate(cond, [a, ("B", 1, {"p": 2})], ("B", 2, {"p": 2}))  # a tie is not a rise
    assert evaluate(cond, [a, ("B", 1, {"p": None})], ("B", 2, {"p": 0}))  # a NULL reading
    strict = parse_condition("B.p > LAST(B.p, 1)", "B")
    assert truth(strict, [a], ("B", 1, {"p": 1})) is None and not evaluate(strict, [a], ("B", 1, {"p": 1}))
    first = parse_condition("FIRST(B.p) = B.p AND FIRST(B.p, 1) IS NULL", "B")
    assert evaluate(first, [a], ("B", 1, {"p": 4}))  # FIRST at the first B is the element itself
    assert not evaluate(first, [a, ("B", 1, {"p": 4})], ("B", 2, {"p": 4}))


def test_division_by_zero_is_null():
    cond = parse_condition("B.p / B.q > 1 OR B.p / B.q IS NULL", "B")
    assert evaluate(cond, [], ("B", 0, {"p": 1, "q": 0}))
    assert evaluate(parse_condition("B.p / 3 * 3 = B.p", "B"), [], ("B", 0, {"p": 1, "q": 0}))  # exact


def test_timestamp_is_the_elements_time():
    cond = parse_condition("B.timestamp - A.timestamp <= 5", "B")
    assert evaluate(cond, [("A", 10, {})], ("B", 15, {"timestamp": 999}))
    assert not evaluate(cond, [("A", 10, {})], ("B", 16, {}))


def test_missing_attribute_is_an_input_error_naming_it():
    cond = parse_condition("B.p > A.price OR TRUE", "B")
    with pytest.raises(InputError, match="'price'"):
        evaluate(cond, [("A", 0, {"p": 1})], ("B", 1, {"p": 2}))
    # an element that does not exist is NULL, not an error
    assert evaluate(cond, [], ("B", 1, {"p": 2}))


def test_type_errors_in_the_data():
    with pytest.raises(InputError, match="compares"):
        evaluate(parse_condition("B.p > 1", "B"), [], ("B", 0, {"p": "x"}))
    with pytest.raises(InputError, match="not a number"):
        evaluate(parse_condition("B.p + 1 > 1", "B"), [], ("B", 0, {"p": True}))
    with pytest.raises(InputError, match="not true or false"):
        evaluate(parse_condition("B.flag", "B"), [], ("B", 0, {"flag": 1}))
    assert evaluate(parse_condition("B.flag AND NOT B.other", "B"), [], ("B", 0, {"flag": True, "other": False}))


# --- random conditions: round trips, malformed text, the independent evaluator ------------

LETTERS = "AB"
_names = {"number": ("p", "q", "timestamp"), "string": ("s",), "boolean": ("f",)}


def _references(kind):
    return st.builds(
        Reference,
        st.sampled_from(LETTERS),
        st.sampled_from(_names[kind]),
        st.sampled_from(["last", "first"]),
        st.integers(0, 2),
    )


_numbers = st.builds(Number, st.sampled_from([Fraction(0), Fraction(1), Fraction(2), Fraction(5, 2), Fraction(1, 10), Fraction(7)]))
_divisors = st.builds(Number, st.sampled_from([Fraction(1), Fraction(2), Fraction(1, 4)]))


def _numeric(children):
    return st.one_of(
        st.builds(Negate, children),
        st.builds(Arithmetic, st.sampled_from("+-*"), children, children),
        st.builds(Arithmetic, st.just("/"), children, st.one_of(_divisors, _references("number"))),
    )


numeric = st.recursive(st.one_of(_numbers, _references("number")), _numeric, max_leaves=5)
strings = st.one_of(st.builds(String, st.sampled_from(["", "a", "b", "it's", "A"])), _references("string"))
_comparison_op = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


def _boolean(children):
    return st.one_of(
        st.builds(Not, children),
        st.builds(And, st.lists(children, min_size=2, max_size=3).map(tuple)),
        st.builds(Or, st.lists(children, min_size=2, max_size=3).map(tuple)),
    )


atoms = st.one_of(
    st.builds(Comparison, _comparison_op, numeric, numeric),
    st.builds(Comparison, _comparison_op, strings, strings),
    st.builds(IsNull, st.one_of(numeric, strings, _references("boolean")), st.booleans()),
    st.builds(Boolean, st.booleans()),
    _references("boolean"),
)
conditions = st.recursive(atoms, _boolean, max_leaves=6)


@given(conditions)
def test_random_conditions_read_back(root):
    text = format_condition(root)
    assert parse_condition(text, "B").root == root


def test_keywords_ignore_case():
    assert p("B.p > 1 aNd NoT B.q iS nOt NuLl oR tRuE") == p("B.p > 1 AND NOT B.q IS NOT NULL OR TRUE")
    assert p("last(B.p, 1) = First(A.p)") == p("LAST(B.p, 1) = FIRST(A.p)")


_noise = st.text(alphabet="AB.pq()',<>=!+-*/ 0123456789 ANDORNOTISNULLASTFIRSTavg", max_size=40)


@given(_noise)
def test_malformed_text_only_raises_query_errors(text):
    try:
        parse_condition(text, "B")
    except QueryError as err:
        assert 0 <= err.position <= len(text)


@given(conditions, st.data())
def test_mutated_conditions_only_raise_query_errors(root, data):
    text = format_condition(root)
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, min(len(text), i + 3)))
    mutated = text[:i] + data.draw(st.sampled_from(["", "(", ")", "'", "-", " AND ", "=", "."])) + text[j:]
    try:
        parse_condition(mutated, "B")
    except QueryError as err:
        assert 0 <= err.position <= len(mutated)


_data_numbers = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from([0.5, 2.5, 0.1, float("nan")]), st.fractions(-2, 2, max_denominator=3))
_attribute_maps = st.fixed_dictionaries(
    {"p": _data_numbers, "q": _data_numbers, "s": st.one_of(st.none(), st.sampled_from(["", "a", "b", "it's"])), "f": st.one_of(st.none(), st.booleans())}
)


def _element(letter):
    return st.tuples(st.just(letter), st.integers(0, 3), _attribute_maps)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(conditions, st.sampled_from(LETTERS), st.data())
def test_evaluator_agrees_with_the_independent_oracle(root, owner, data):
    text = format_condition(root)
    before = data.draw(st.lists(st.sampled_from(LETTERS).flatmap(_element), max_size=4))
    current = data.draw(_element(owner))
    if data.draw(st.integers(0, 3)) == 0:  # sometimes an element lacks an attribute
        victim = data.draw(st.sampled_from(before + [current]))
        victim[2].pop(data.draw(st.sampled_from(sorted(victim[2]))), None)
    condition = parse_condition(text, owner)
    try:
        expected = conditions_oracle.truth(text, owner, before, current)
    except conditions_oracle.OracleError:
        with pytest.raises(InputError):
            truth(condition, before, current)
        return
    assert truth(condition, before, current) is expected


def test_the_oracle_parses_what_suse_parses():
    """Each evaluator refuses the other's blind spots: a sanity check on the oracle itself."""
    for text in ["B.a < 1 < 2", "avg(B.p) > 1", "B.p IS 1"]:
        with pytest.raises(conditions_oracle.OracleError):
            conditions_oracle.truth(text, "B", [], ("B", 0, {"p": 1, "a": 1}))
    assert conditions_oracle.truth("B.from = 'x'", "B", [], ("B", 0, {"from": "x"})) is True


# --- warnings, the columns to read, the documented example --------------------------------


@pytest.mark.parametrize(
    "condition",
    ["B.p > LAST(B.p, 1)", "B.ok AND B.p <> LAST(B.p, 2)", "NOT B.p = FIRST(B.p, 1)", "(B.p > LAST(B.p, 1) OR B.q > LAST(B.q, 1)) AND B.r > 0"],
)
def test_warns_when_no_first_element_can_pass(condition):
    with pytest.warns(SuseWarning, match="never satisfied at a match's first B"):
        parse_where("A B+ C", {"B": condition})


@pytest.mark.parametrize(
    "condition",
    ["LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "B.p > A.p", "B.p = FIRST(B.p)", "NOT (B.p > LAST(B.p, 1) AND FALSE)", "B.p > LAST(B.p, 1) OR B.q > 1"],
)
def test_no_warning_when_a_first_element_can_pass(condition, recwarn):
    parse_where("A B+ C", {"B": condition})
    assert not [w for w in recwarn if issubclass(w.category, SuseWarning)]


def test_attributes_to_read():
    w = parse_where("A B+ C", {"B": "B.p > A.q AND B.timestamp - A.timestamp < 5", "C": "C.s = FIRST(B.s)"})
    assert w.attributes() == {"A": ("q",), "B": ("p", "s"), "C": ("s",)}


def test_the_documented_example():
    w = parse_where("A B+ C", {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < 0.8 * B.p"})
    assert evaluate(w.conditions["B"], [("A", 0, {"p": 5}), ("B", 1, {"p": 3})], ("B", 2, {"p": 4}))
    c = w.analyses["C"].compared
    assert (format_condition(c.current), c.op, c.reference.letter, c.reference.always_previous) == ("C.p / 0.8", "<", "B", True)


# --- the query's shape, against every word of a finite language ---------------------------


@pytest.mark.parametrize("query", ["A B{1,3} C", "A (B|C){0,2} B", "(A B | B A) C?", "A (B C){1,2} (B|D)", "A !E B{2} C"])
def test_shape_against_every_word(query):
    import itertools
    import re

    from oracle import query_letters, query_to_python_regex
    from suse.query.conditions import _Shape

    letters, negated = query_letters(query)
    positive = re.sub(r"!\w", "", query)  # the words of a query do not depend on its negations
    pattern = re.compile(query_to_python_regex(positive))
    words = ["".join(w) for n in range(1, 9) for w in itertools.product(letters, repeat=n) if pattern.fullmatch("".join(w))]
    shape = _Shape(query)
    for x in letters:
        spots = [(w, i) for w in words for i, c in enumerate(w) if c == x]
        assert shape.can_be_first(x) == any(i == 0 for _, i in spots)
        assert shape.previous_letters(x) == {w[i - 1] for w, i in spots if i > 0}
        for z in letters:
            assert shape.most_before(x, z) == max(w[:i].count(z) for w, i in spots)
            nearest_is_previous = all(w[i - 1] == z for w, i in spots if z in w[:i])
            assert shape.nearest_is_previous(x, z) == nearest_is_previous, (x, z)


def test_unqualified_names_read_the_current_element_on_request():
    with pytest.raises(ConditionError, match="is not a value"):
        parse_condition("price > LAST(B.price, 1)", "B")
    sql = parse_condition("kind = 'B' AND price > LAST(B.price, 1)", "B", unqualified=True)
    assert sql.root == p("B.kind = 'B' AND B.price > LAST(B.price, 1)")
    assert str(sql) == "B.kind = 'B' AND B.price > LAST(B.price, 1)"
    w = parse_where("A B+", {"B": "price > A.price"}, unqualified=True)
    assert [(u.letter, u.kind) for u in w.analyses["B"].uses] == [("B", "current"), ("A", "last")]


_where_keys = st.sampled_from(["A", "B", "C", "E", "AB", "", 1])
_where_values = st.one_of(conditions.map(format_condition), _noise, st.none(), st.integers())


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["A B+ C", "A !E B* C", "(A|B){1,3} C", "A . B", "A B+ !C"]),
       st.dictionaries(_where_keys, _where_values, max_size=3), st.booleans())
def test_parse_where_only_raises_query_errors(query, where, unqualified):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuseWarning)
        try:
            parse_where(query, where, unqualified=unqualified)
        except QueryError as err:
            assert 0 <= err.position <= len(err.query)
