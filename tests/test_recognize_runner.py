"""The mapInArrow body of standard MATCH_RECOGNIZE (suse.recognize.runner) without Spark:
random patterns, partitions and Arrow batch boundaries; the output rows and measure values are
recomputed here from the oracle's matches with plain list arithmetic."""
from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recognize_oracle import by_value, distinct_values, oracle_matches
from suse.recognize.expressions import CLASSIFIER_VALUE, Agg, Classifier, MatchNumber, Nav
from suse.recognize.matcher import Skip, compile_pattern
from suse.recognize.pattern import variables
from suse.recognize.runner import ERROR, KIND, Condition, Plan, run
from test_recognize_matcher import VARS, patterns, tree

LEAVES = (Classifier(None), MatchNumber(), Agg("count", None, None), Nav("`x`", None), Nav("`x`", None, "FIRST", 0, 0, True),
          Agg("sum", "`x`", "A"), Nav("`x`", "B", "LAST", 0, -1),
          Agg("max_by", "`x`", None, key="`y`"), Agg("min_by", "`x`", "B", True, key="`y`"),
          Agg("count", "`y`", None, distinct=True), Agg("sum", "`x`", "C", distinct=True),
          Agg("array_agg", "`y`", None, True, distinct=True),
          Agg("array_agg", CLASSIFIER_VALUE, None), Agg("min_by", CLASSIFIER_VALUE, None, True, key="`y`"),
          Nav("`x`", "B", "FIRST", 1, 1), Nav("`x`", "S", "LAST", 1, 0, True))  # NEXT(FIRST(B.x, 1)), FINAL LAST(S.x, 1)
LEAF_TYPES = [pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(),
              pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.list_(pa.int64()), pa.list_(pa.string()), pa.string(),
              pa.int64(), pa.int64()]


def key_of(xs):
    """The max_by / min_by key column: few distinct values, so ties are common."""
    return [(x + i) % 3 for i, x in enumerate(xs)]
SUBSET = ("A", "C")  # the leaf qualified S
TESTS = {"A": lambda x: x < 2, "B": lambda x: 1 <= x <= 3, "C": lambda x: x >= 3}


def _values(xs, start, labels, upto, number):
    """The LEAVES for the first ``upto`` rows of a match of rows ``start ..`` labelled ``labels``."""
    ys = key_of(xs)
    seen = labels[:upto]
    rows = list(range(start, start + upto))
    a_values = [xs[r] for r, v in zip(rows, seen) if v == "A"]
    b_rows = [r for r, v in zip(rows, seen) if v == "B"]
    all_b = [start + i for i, v in enumerate(labels) if v == "B"]  # FINAL: the whole match
    c_values = [xs[r] for r, v in zip(rows, seen) if v == "C"]
    prev_b = xs[b_rows[-1] - 1] if b_rows and b_rows[-1] >= 1 else None
    every = range(start, start + len(labels))
    next_b = b_rows[1] + 1 if len(b_rows) > 1 and b_rows[1] + 1 < len(xs) else None  # NEXT may leave the match
    all_s = [start + i for i, v in enumerate(labels) if v in SUBSET]
    return (seen[-1], number, upto, xs[rows[-1]], xs[start], sum(a_values) if a_values else None, prev_b,
            by_value([xs[r] for r in rows], [ys[r] for r in rows], True),
            by_value([xs[r] for r in all_b], [ys[r] for r in all_b], False),
            len(distinct_values([ys[r] for r in rows])),
            sum(distinct_values(c_values)) if c_values else None,
            distinct_values([ys[r] for r in every]),
            list(seen), by_value(list(labels), [ys[r] for r in every], False),
            None if next_b is None else xs[next_b], xs[all_s[-2]] if len(all_s) > 1 else None)


def expected(node, xs, all_rows, empty):
    """(row, kind, leaf values) per output row of one partition, from the oracle's matches."""
    out, number = [], 0
    for item in oracle_matches(node, len(xs), lambda v, r, path: TESTS[v](xs[r])):
        if item[0] == "unmatched":
            if all_rows and empty == "unmatched":
                out.append((item[1], 2, (None,) * len(LEAVES)))
            continue
        number += 1
        _, start, path = item
        if not path:
            if not all_rows or empty != "omit":
                out.append((start if all_rows else 0, 1, (None, number, 0, None, None, None, None, None, None, 0, None, [], [], None, None, None)))
            continue
        labels = [v for _, v, _ in path]
        if not all_rows:
            out.append((0, 0, _values(xs, start, labels, len(labels), number)))
        else:
            out += [(start + i, 0, _values(xs, start, labels, i + 1, number)) for i, (_, _, excl) in enumerate(path) if not excl]
    return out


@settings(max_examples=120, deadline=None)
@given(patterns(), st.lists(st.lists(st.integers(0, 4), max_size=6), min_size=1, max_size=3),
       st.sampled_from([(False, "show"), (True, "show"), (True, "omit"), (True, "unmatched")]), st.integers(1, 5))
def test_runner_equals_oracle(text, partitions, mode, chunk):
    all_rows, empty = mode
    node = tree(text)
    names = list(dict.fromkeys(variables(node) + list(VARS)))
    keys, xs_all = [], []
    for k, xs in enumerate(partitions):
        keys += [k] * len(xs)
        xs_all += xs
    flags = {f"d_{v}": [TESTS[v](x) for x in xs_all] for v in names}
    ys_all = [y for xs in partitions for y in key_of(xs)]
    table = pa.table({"k": pa.array(keys, pa.int64()), "x": pa.array(xs_all, pa.int64()), "y": pa.array(ys_all, pa.int64()),
                      **{c: pa.array(f, pa.bool_()) for c, f in flags.items()}})
    leaf_types = LEAF_TYPES
    base = [pa.field("k", pa.int64()), pa.field("x", pa.int64())] if all_rows else [pa.field("k", pa.int64())]
    schema = pa.schema(base + [pa.field(f"_suse_l{i}", t) for i, t in enumerate(leaf_types)]
                       + [pa.field(KIND, pa.int32()), pa.field(ERROR, pa.string())])
    members = {v: frozenset([i]) for i, v in enumerate(names)}
    members["S"] = frozenset(names.index(v) for v in SUBSET)
    plan = Plan(keys=("k",), program=compile_pattern(node, names), members=members,
                conditions=tuple(Condition(column=f"d_{v}") for v in names), skip=Skip(), all_rows=all_rows, empty=empty,
                leaves=LEAVES, expr_columns={"`x`": "x", "`y`": "y"}, passthrough=("k", "x"), schema=schema)
    got = []
    for batch in run(plan, iter(table.to_batches(max_chunksize=chunk))):
        d = batch.to_pydict()
        for i in range(batch.num_rows):
            got.append((d["k"][i], d["x"][i] if all_rows else None, d[KIND][i],
                        tuple(d[f"_suse_l{j}"][i] for j in range(len(LEAVES)))))
    want = []
    for k, xs in enumerate(partitions):
        for row, kind, vals in expected(node, xs, all_rows, empty):
            want.append((k, xs[row] if all_rows else None, kind, vals))
    assert got == want


# --- DEFINE conditions with functions over other rows of the match --------------------------------

DEFINES = {
    "A": "coalesce(LAST(B.x), 9) >= x AND x IN (0, 1, 2)",
    "B": "abs(x - coalesce(LAST(A.x), 2)) <= 1 AND greatest(x, FIRST(x)) BETWEEN 1 AND 3",
    "C": "CASE WHEN count(B.*) > 0 THEN x >= least(3, max_by(x, y)) ELSE nullif(x, coalesce(LAST(A.x), 0)) IS NULL OR x = 4 END",
}


def oracle_holds(xs):
    """The DEFINES above, by hand over the oracle's path (the current row is its last step)."""
    ys = key_of(xs)

    def holds(v, row, path):
        x = xs[row]
        before = path[:-1]
        if v == "A":
            last_b = [xs[r] for r, w, _ in before if w == "B"]
            return (last_b[-1] if last_b else 9) >= x and x in (0, 1, 2)
        if v == "B":
            last_a = [xs[r] for r, w, _ in before if w == "A"]
            return abs(x - (last_a[-1] if last_a else 2)) <= 1 and 1 <= max(x, xs[path[0][0]]) <= 3
        if any(w == "B" for _, w, _ in path):
            rows = [r for r, _, _ in path]
            return x >= min(3, by_value([xs[r] for r in rows], [ys[r] for r in rows], True))
        last_a = [xs[r] for r, w, _ in before if w == "A"]
        return x == (last_a[-1] if last_a else 0) or x == 4
    return holds


# patterns in which each condition is reached after the others' rows, besides random ones
REACHING = ("A B+ C+", "(A | B | C)+", "A* B C{1,2} A", "B+? C", "PERMUTE(A, B, C)+")


@settings(max_examples=150, deadline=None)
@given(st.one_of(patterns(), st.sampled_from(REACHING)), st.lists(st.integers(0, 4), max_size=8))
def test_define_functions_equal_oracle(text, xs):
    """Conditions that apply abs, coalesce, greatest, least, nullif, CASE, BETWEEN, IN and max_by
    to other rows of the match, run by the evaluator, against the oracle's hand-written ones."""
    from suse.recognize.expressions import Extractor
    from suse.spark.sql.standard import evaluated_condition
    from suse.spark.sql.statement import tokenize

    node = tree(text)
    names = list(dict.fromkeys(variables(node) + list(VARS)))
    members = {v: frozenset([i]) for i, v in enumerate(names)}
    conditions = []
    for v in names:
        sp = Extractor(tokenize(DEFINES[v])[:-1], DEFINES[v], {"x", "y"}, set(names), "DEFINE").split()
        conditions.append(evaluated_condition(sp, sp.row_local(v, members)))
    table = pa.table({"x": pa.array(xs, pa.int64()), "y": pa.array(key_of(xs), pa.int64())})
    schema = pa.schema([pa.field("x", pa.int64()), pa.field("_suse_l0", pa.string()), pa.field("_suse_l1", pa.int64()),
                        pa.field(KIND, pa.int32()), pa.field(ERROR, pa.string())])
    plan = Plan(keys=(), program=compile_pattern(node, names), members=members, conditions=tuple(conditions),
                skip=Skip(), all_rows=True, empty="show", leaves=(Classifier(None), MatchNumber()),
                expr_columns={"`x`": "x", "`y`": "y"}, passthrough=("x",), schema=schema)
    got = []
    for batch in run(plan, iter(table.to_batches())):
        d = batch.to_pydict()
        assert d[ERROR] == [None] * batch.num_rows
        got += list(zip(d[KIND], d["_suse_l0"], d["_suse_l1"]))
    want, number = [], 0
    for item in oracle_matches(node, len(xs), oracle_holds(xs)):
        if item[0] == "unmatched":
            continue
        number += 1
        path = item[2]
        want += [(0, v, number) for _, v, excl in path if not excl] if path else [(1, None, number)]
    assert got == want
