"""The mapInArrow body of standard MATCH_RECOGNIZE (suse.recognize.runner) without Spark:
random patterns, partitions and Arrow batch boundaries; the output rows and measure values are
recomputed here from the oracle's matches with plain list arithmetic."""
from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recognize_oracle import oracle_matches
from suse.recognize.expressions import Agg, Classifier, MatchNumber, Nav
from suse.recognize.matcher import Skip, compile_pattern
from suse.recognize.pattern import variables
from suse.recognize.runner import ERROR, KIND, Condition, Plan, run
from test_recognize_matcher import VARS, patterns, tree

LEAVES = (Classifier(None), MatchNumber(), Agg("count", None, None), Nav("`x`", None), Nav("`x`", None, "FIRST", 0, 0, True),
          Agg("sum", "`x`", "A"), Nav("`x`", "B", "LAST", 0, -1))
TESTS = {"A": lambda x: x < 2, "B": lambda x: 1 <= x <= 3, "C": lambda x: x >= 3}


def _values(xs, start, labels, upto, number):
    """The LEAVES for the first ``upto`` rows of a match of rows ``start ..`` labelled ``labels``."""
    seen = labels[:upto]
    rows = list(range(start, start + upto))
    a_values = [xs[r] for r, v in zip(rows, seen) if v == "A"]
    b_rows = [r for r, v in zip(rows, seen) if v == "B"]
    prev_b = xs[b_rows[-1] - 1] if b_rows and b_rows[-1] >= 1 else None
    return (seen[-1], number, upto, xs[rows[-1]], xs[start], sum(a_values) if a_values else None, prev_b)


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
                out.append((start if all_rows else 0, 1, (None, number, 0, None, None, None, None)))
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
    table = pa.table({"k": pa.array(keys, pa.int64()), "x": pa.array(xs_all, pa.int64()),
                      **{c: pa.array(f, pa.bool_()) for c, f in flags.items()}})
    leaf_types = [pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64()]
    base = [pa.field("k", pa.int64()), pa.field("x", pa.int64())] if all_rows else [pa.field("k", pa.int64())]
    schema = pa.schema(base + [pa.field(f"_suse_l{i}", t) for i, t in enumerate(leaf_types)]
                       + [pa.field(KIND, pa.int32()), pa.field(ERROR, pa.string())])
    members = {v: frozenset([i]) for i, v in enumerate(names)}
    plan = Plan(keys=("k",), program=compile_pattern(node, names), members=members,
                conditions=tuple(Condition(column=f"d_{v}") for v in names), skip=Skip(), all_rows=all_rows, empty=empty,
                leaves=LEAVES, expr_columns={"`x`": "x"}, passthrough=("k", "x"), schema=schema)
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
