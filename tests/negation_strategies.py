"""Hypothesis strategies for queries with negations and for streams that mix in negated and
out-of-alphabet characters. Shared by the compiler, oracle and (later) engine tests."""
from __future__ import annotations

from hypothesis import strategies as st

from strategies import compiles, render

LETTERS = "abc"  # characters queries match
STREAM_CHARS = "abcdez"  # 'z' is named by no query


# Mostly characters no query letter can clash with; sometimes a query letter too.
_neg = st.sampled_from(["d", "e", "de", "d", "e", "a", "ad", "b", "be"]).map(lambda cs: ("neg", cs))
_leaf = st.one_of(
    st.sampled_from(LETTERS).map(lambda c: ("char", c)),
    st.sampled_from(LETTERS).map(lambda c: ("char", c)),
    st.just(("any",)),
)


def _cat_with_negations(inner):
    """A concatenation with a negation between some of its parts."""
    return st.lists(st.tuples(inner, st.one_of(st.none(), _neg)), min_size=2, max_size=3).map(
        lambda pairs: ("cat", [x for part, neg in pairs for x in ([part, neg] if neg else [part])])
    )


_trees = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        _cat_with_negations(inner),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: ("alt", xs)),
        st.tuples(st.just("post"), inner, st.sampled_from(["*", "+", "+", "?", "{2}", "{1,2}"])),
    ),
    max_leaves=6,
)


# X !G Y, sometimes inside a repetition followed by Z (the negation then acts at each pass).
_x_neg_y = st.tuples(_trees, _neg, _trees).map(lambda t: ("cat", list(t)))
_looped = st.tuples(_x_neg_y, st.sampled_from(["*", "+", "{2}"]), _leaf).map(
    lambda t: ("cat", [("post", t[0], t[1]), t[2]])
)

def _ends_with_negation(query: str) -> bool:
    from suse.query import compile_regex

    return bool(compile_regex(query).pending)


#: Queries over "abc" with at least one negation, that compile, none ending with a negation
#: (those count only in the exact engine: `absence_queries`).
negation_queries = (
    st.one_of(_trees, _x_neg_y, _looped).map(render).filter(lambda q: "!" in q).filter(compiles)
    .filter(lambda q: not _ends_with_negation(q))
)

#: Queries over "abc" that end with a negation on some path (`A B+ !C`), that compile.
absence_queries = (
    st.one_of(
        st.tuples(_trees, _neg).map(lambda t: ("cat", list(t))),
        st.tuples(_x_neg_y, _neg).map(lambda t: ("cat", list(t))),
        st.tuples(_leaf, st.lists(st.tuples(_trees, _neg), min_size=2, max_size=2)).map(
            lambda t: ("cat", [t[0], ("alt", [("cat", list(p)) for p in t[1]])])),
    ).map(render).filter(compiles).filter(_ends_with_negation)
)


@st.composite
def streams(draw, max_size: int = 9, chars: str = STREAM_CHARS):
    """(char, timestamp, value) with non-decreasing timestamps (ties allowed)."""
    n = draw(st.integers(1, max_size))
    cs = draw(st.lists(st.sampled_from(chars), min_size=n, max_size=n))
    steps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-5, 20), min_size=n, max_size=n))
    ts, t = [], 0
    for step in steps:
        t += step
        ts.append(t)
    return list(zip(cs, ts, values))
