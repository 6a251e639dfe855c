"""Hypothesis strategies shared by the engine tests: random queries and small streams."""
from __future__ import annotations

from hypothesis import strategies as st

ALPHABET = "abc"


def render(tree) -> str:
    """A query's text from its tree (negations, "neg", come from negation_strategies)."""
    kind = tree[0]
    if kind == "char":
        return tree[1]
    if kind == "any":
        return "."
    if kind == "neg":
        chars = tree[1]
        return "!" + chars if len(chars) == 1 else "!(" + "|".join(chars) + ")"
    if kind == "cat":
        return "".join(_group(t, "cat") for t in tree[1])
    if kind == "alt":
        return "|".join(render(t) for t in tree[1])
    return _group(tree[1], "post") + tree[2]


def _group(tree, context: str) -> str:
    text = render(tree)
    needs = tree[0] == "alt" or (context == "post" and tree[0] in ("cat", "post"))
    return f"({text})" if needs else text


_leaf = st.one_of(st.sampled_from(ALPHABET).map(lambda c: ("char", c)), st.just(("any",)))
_trees = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: ("cat", xs)),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: ("alt", xs)),
        st.tuples(st.just("post"), inner, st.sampled_from(["*", "+", "?", "{2}", "{1,2}", "{0,2}", "{2,}"])),
    ),
    max_leaves=6,
)


def compiles(query: str) -> bool:
    from suse.errors import QueryError
    from suse.query import compile_regex

    try:
        compile_regex(query)
    except QueryError:
        return False
    return True


#: Random suse queries over "abc" that compile (some explicit character, not only the empty word).
queries = _trees.map(render).filter(lambda q: any(c in q for c in ALPHABET)).filter(compiles)


@st.composite
def streams(draw, max_size: int = 11, alphabet: str = ALPHABET + "z"):
    """(char, timestamp, value) triples with non-decreasing timestamps; 'z' is outside the queries."""
    n = draw(st.integers(1, max_size))
    chars = draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    t, out = 0, []
    for c, g, v in zip(chars, gaps, values):
        t += g
        out.append((c, t, v))
    return out


@st.composite
def query_sets(draw, max_queries: int = 5):
    """Named (regex, window, policy) triples as A-Seq draws query sets: a common prefix, then
    varied suffixes, all over "abc"; windows and policies differ per query, and a query may
    repeat another (same regex, window and policy) to exercise sharing."""
    prefix = draw(_trees)
    windows = draw(st.lists(st.integers(0, 6), min_size=1, max_size=2))  # shared windows make products
    out: dict[str, tuple[str, int, str]] = {}
    for i in range(draw(st.integers(1, max_queries))):
        if out and draw(st.booleans()) and draw(st.booleans()):
            out[f"q{i}"] = draw(st.sampled_from(sorted(out.values())))
            continue
        regex = render(("cat", [prefix, draw(_trees)])) if draw(st.integers(0, 4)) else render(prefix)
        if not compiles(regex) or not any(c in regex for c in ALPHABET):
            regex = "a" + regex if compiles("a" + regex) else "ab"
        out[f"q{i}"] = (regex, draw(st.sampled_from(windows)),
                     draw(st.sampled_from(["any", "any", "next", "contiguous"])))
    return out
