"""The kernel's stretch output (suse._core.recognize_stretch, used by suse.recognize.runner when
every DEFINE is a column of flags and every MEASURES leaf one the kernel reads) against the
per-match path it replaces and against the oracle: random patterns, partitions, skips, ROWS PER
MATCH options and Arrow batch boundaries."""
from __future__ import annotations

import contextlib
from unittest import mock

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from suse.recognize import runner
from suse.recognize.expressions import Agg, Classifier, Nav
from suse.recognize.matcher import Skip, compile_pattern
from suse.recognize.pattern import variables
from suse.recognize.runner import ERROR, KIND, Condition, Plan, run
from test_recognize_matcher import VARS, patterns, tree
from test_recognize_runner import LEAVES, SUBSET, TESTS, expected

# the LEAVES of test_recognize_runner the kernel reads, by their index there (for the oracle)
SHARED = [0, 1, 2, 3, 4, 6, 14, 15]
EXTRA = (Agg("count", None, "B"), Agg("count", None, "S", True), Classifier("S"), Classifier("B", True),
         Nav("`x`", "S", "FIRST", 0, 2), Nav("`y`", None, "LAST", 2, 0, True))
KERNEL_LEAVES = tuple(LEAVES[i] for i in SHARED) + EXTRA
TYPES = {Classifier: pa.string()}

MODES = [(False, "show"), (True, "show"), (True, "omit"), (True, "unmatched")]


def plan_and_table(text, partitions, all_rows, empty, skip, leaves=KERNEL_LEAVES):
    node = tree(text)
    names = list(dict.fromkeys(variables(node) + list(VARS)))
    keys = [k for k, xs in enumerate(partitions) for _ in xs]
    xs_all = [x for xs in partitions for x in xs]
    flags = {f"d_{v}": pa.array([TESTS[v](x) for x in xs_all], pa.bool_()) for v in names}
    table = pa.table({"k": pa.array(keys, pa.int64()), "x": pa.array(xs_all, pa.int64()),
                      "y": pa.array([x * 10 + i for i, x in enumerate(xs_all)], pa.int64()), **flags})
    base = [pa.field("k", pa.int64()), pa.field("x", pa.int64())] if all_rows else [pa.field("k", pa.int64())]
    schema = pa.schema(base + [pa.field(f"_suse_l{i}", TYPES.get(type(leaf), pa.int64())) for i, leaf in enumerate(leaves)]
                       + [pa.field(KIND, pa.int32()), pa.field(ERROR, pa.string())])
    members = {v: frozenset([i]) for i, v in enumerate(names)}
    members["S"] = frozenset(names.index(v) for v in SUBSET)
    mode, var = skip
    plan = Plan(keys=("k",), program=compile_pattern(node, names), members=members,
                conditions=tuple(Condition(column=f"d_{v}") for v in names),
                skip=Skip(mode, members.get(var, frozenset()), var), all_rows=all_rows, empty=empty, leaves=leaves,
                expr_columns={"`x`": "x", "`y`": "y"}, passthrough=("k", "x"), schema=schema)
    return plan, table


def output(plan, table, chunk, per_match=False):
    """The output rows of ``run``; ``per_match``: through the per-match path."""
    with mock.patch.object(runner, "_kernel_measures", return_value=None) if per_match else contextlib.nullcontext():
        batches = list(run(plan, iter(table.to_batches(max_chunksize=chunk))))
    return pa.Table.from_batches(batches, plan.schema).to_pylist() if batches else []


@settings(max_examples=150, deadline=None)
@given(patterns(), st.lists(st.lists(st.integers(0, 4), max_size=7), min_size=1, max_size=4), st.sampled_from(MODES),
       st.sampled_from([("past", ""), ("next", ""), ("first", "C"), ("last", "B"), ("last", "S")]), st.integers(1, 9))
def test_stretch_equals_the_per_match_path(text, partitions, mode, skip, chunk):
    plan, table = plan_and_table(text, partitions, *mode, skip)
    assert runner._kernel_measures(plan) is not None  # the kernel's path is taken
    assert output(plan, table, chunk) == output(plan, table, chunk, per_match=True)


@settings(max_examples=100, deadline=None)
@given(patterns(), st.lists(st.lists(st.integers(0, 4), max_size=6), min_size=1, max_size=3), st.sampled_from(MODES),
       st.integers(1, 5))
def test_stretch_equals_oracle(text, partitions, mode, chunk):
    plan, table = plan_and_table(text, partitions, *mode, ("past", ""), tuple(LEAVES[i] for i in SHARED))
    got = [(r["k"], r.get("x"), r[KIND], tuple(r[f"_suse_l{j}"] for j in range(len(SHARED)))) for r in output(plan, table, chunk)]
    want = [(k, xs[row] if mode[0] else None, kind, tuple(vals[i] for i in SHARED))
            for k, xs in enumerate(partitions) for row, kind, vals in expected(tree(text), xs, *mode)]
    assert got == want


def test_leaves_that_need_python_values_take_the_per_match_path():
    plan, _ = plan_and_table("A B+", [[0, 1]], False, "show", ("past", ""), (Agg("sum", "`x`", None),))
    assert runner._kernel_measures(plan) is None
    plan, _ = plan_and_table("A B+", [[0, 1]], False, "show", ("past", ""), (Nav("`x`", None),))
    assert runner._kernel_measures(plan) is not None
    glue = plan.conditions[:1] + (Condition(tokens=("x",), text="x", leaves=()),) + plan.conditions[2:]
    assert runner._kernel_measures(Plan(**{**plan.__dict__, "conditions": glue})) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([None, 0, 1]), st.sampled_from([None, "a", "b"]), st.sampled_from([None, 0.0, -0.0, float("nan")])),
                min_size=1, max_size=12))
def test_partition_bounds_compare_keys_as_python_tuples(keys):
    """NULL equals NULL, -0.0 equals 0.0, NaN differs from NaN (as two floats from to_pylist do),
    on flat keys (Arrow's comparison) and nested ones (Python's)."""
    table = pa.table({"i": pa.array([k[0] for k in keys], pa.int64()), "s": pa.array([k[1] for k in keys], pa.string()),
                      "f": pa.array([k[2] for k in keys], pa.float64()),
                      "l": pa.array([None if k[0] is None else [k[0]] for k in keys], pa.list_(pa.int64()))})
    for names in (("i",), ("i", "s"), ("s", "f"), ("f",), ("l", "s"), ()):
        rows = list(zip(*(table.column(k).to_pylist() for k in names))) if names else [()] * len(keys)
        want = [0] + [i for i in range(1, len(rows)) if rows[i] != rows[i - 1]] + [len(rows)]
        assert runner._group_bounds(table, names) == want
