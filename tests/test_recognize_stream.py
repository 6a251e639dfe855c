"""Streaming standard MATCH_RECOGNIZE without Spark (suse.recognize.runner.advance): a partition's
rows become final a few at a time, each step matches what is decided and drops the rows no
later step needs; once every row is final, the rows emitted over all steps equal the batch run
(suse.recognize.runner.run, itself checked against the oracle) over the whole partition.

Each partition ends with a row on which no variable holds: the stream goes on after it in
principle, so without it a greedy match at the end would wait for the next row for ever."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suse.recognize.expressions import Agg, Classifier, MatchNumber, Nav
from suse.recognize.matcher import Cursor, Skip, compile_pattern
from suse.recognize.pattern import variables
from suse.recognize.runner import ERROR, KIND, Condition, Plan, Resume, advance, lookback, run
from test_recognize_matcher import VARS, patterns, tree

# CLASSIFIER, MATCH_NUMBER, count(*), x, FINAL FIRST(x), sum(A.x), PREV(B.x), NEXT(x), PREV(x, 2)
LEAVES = (Classifier(None), MatchNumber(), Agg("count", None, None), Nav("`x`", None), Nav("`x`", None, "FIRST", 0, 0, True),
          Agg("sum", "`x`", "A"), Nav("`x`", "B", "LAST", 0, -1), Nav("`x`", None, "LAST", 0, 1), Nav("`x`", None, "LAST", 0, -2))
TESTS = {"A": lambda x: x < 2, "B": lambda x: 1 <= x <= 3, "C": lambda x: 3 <= x <= 4}
END = 9  # no variable holds


def make_plan(node, all_rows: bool, empty: str, skip: Skip, within=None, glue: bool = False) -> Plan:
    names = list(dict.fromkeys(variables(node) + list(VARS)))
    passed = [pa.field("id", pa.int64()), pa.field("x", pa.int64())] if all_rows else []  # ONE ROW: no keys here
    schema = pa.schema(passed + [pa.field(f"_suse_l{i}", pa.string() if i == 0 else pa.int64()) for i in range(len(LEAVES))]
                       + [pa.field(KIND, pa.int32()), pa.field(ERROR, pa.string())])
    members = {v: frozenset([i]) for i, v in enumerate(names)}
    if glue:  # B by the evaluator, reading PREV(x): "x >= 1 AND x <= 3 AND PREV(x) IS NOT NULL OR x = 2"
        from suse.spark.sql.statement import tokenize

        text = " _suse_leaf0 >= 1 AND _suse_leaf0 <= 3 AND _suse_leaf1 IS NOT NULL OR _suse_leaf0 = 2"
        leaves = (Nav("`x`", None), Nav("`x`", None, "LAST", 0, -1))
        b = Condition(leaves=leaves, tokens=tuple(tokenize(text)[:-1]), text=text, row_local=True)
        conditions = tuple(b if v == "B" else Condition(column=f"d_{v}") for v in names)
    else:
        conditions = tuple(Condition(column=f"d_{v}") for v in names)
    targets = frozenset(names.index(v) for v in VARS if v in skip.name)
    return Plan(keys=(), program=compile_pattern(node, names), members=members, conditions=conditions,
                skip=Skip(skip.mode, targets, skip.name), all_rows=all_rows, empty=empty, leaves=LEAVES,
                expr_columns={"`x`": "x"}, passthrough=("id", "x"), schema=schema, within=within)


def table_of(xs: list[int], start: int = 0) -> pa.Table:
    cols = {"id": pa.array(range(start, start + len(xs)), pa.int64()), "x": pa.array(xs, pa.int64()),
            "t": pa.array(range(start, start + len(xs)), pa.int64())}
    cols.update({f"d_{v}": pa.array([TESTS[v](x) for x in xs], pa.bool_()) for v in VARS})
    return pa.table(cols)


def rows_of(batches) -> list[tuple]:
    out = []
    for b in batches:
        d = b.to_pydict()
        if any(e is not None for e in d[ERROR]):
            raise RuntimeError(next(e for e in d[ERROR] if e is not None))
        out += [tuple(d[f.name][i] for f in b.schema if f.name != ERROR) for i in range(b.num_rows)]
    return out


def stream(plan: Plan, xs: list[int], steps: list[int], chunk_rows: bool = True) -> tuple[list[tuple], int]:
    """Feed ``xs`` final ``steps[i]`` rows at a time; the emitted rows and the largest buffer."""
    buffer, base, cursor, emitted, largest, done = table_of([]), 0, Cursor(), [], 0, 0
    for k in steps + [len(xs)]:
        k = min(len(xs), max(k, done))
        arrived = min(len(xs), k + 2)  # rows arrive a little before they are final
        buffer = pa.concat_tables([buffer, table_of(xs[base + buffer.num_rows:arrived], base + buffer.num_rows)])
        largest = max(largest, buffer.num_rows)
        local = Cursor(cursor.pos - base, cursor.covered - base, cursor.number)
        batches, drop = advance(plan, buffer, k - base, Resume(local, base), k if plan.within else None)
        emitted += rows_of(batches)
        cursor = Cursor(base + local.pos, base + local.covered, local.number)
        buffer, base, done = buffer.slice(drop), base + drop, k
    return emitted, largest


def batch(plan: Plan, xs: list[int]) -> list[tuple]:
    return rows_of(run(plan, iter(table_of(xs).to_batches())))


@settings(max_examples=200, deadline=None)
@given(patterns().filter(lambda p: "$" not in p), st.lists(st.integers(0, 4), max_size=12),
       st.sampled_from([(False, "show"), (True, "show"), (True, "omit"), (True, "unmatched")]),
       st.sampled_from(["past", "next", "first", "last"]), st.sampled_from(VARS), st.randoms(use_true_random=False),
       st.sampled_from([None, 2, 4]), st.booleans())
def test_streaming_equals_batch(text, xs, mode, skip, var, rnd, within, glue):
    xs = xs + [END]
    node = tree(text)
    if mode[1] == "unmatched" and "{-" in text:
        return  # refused by the statement's check
    plan = make_plan(node, *mode, Skip(skip, name=var), ("t", within) if within else None, glue)
    try:
        want = batch(plan, xs)
    except RuntimeError:  # an impossible skip: the streaming run fails as well, at the same match
        with pytest.raises(RuntimeError):
            stream(plan, xs, sorted(rnd.randint(0, len(xs)) for _ in range(4)))
        return
    got, _ = stream(plan, xs, sorted(rnd.randint(0, len(xs)) for _ in range(4)))
    assert got == want


def test_rows_no_match_needs_are_dropped():
    """A long partition matched one row at a time keeps a bounded buffer: the pending match's
    rows and the two rows PREV(x, 2) looks back to; with WITHIN a long greedy run is cut."""
    rng = random.Random(3)
    xs = [rng.choice([0, 2, 3]) for _ in range(300)] + [END]
    plan = make_plan(tree("A B+? C"), True, "show", Skip())
    got, largest = stream(plan, xs, list(range(len(xs))))
    assert got == batch(plan, xs) and len(got) > 20
    assert largest <= 2 + lookback(plan) + max(len([1 for _ in g]) for g in _runs(xs)) + 2
    plan = make_plan(tree("B+"), False, "show", Skip(), within=("t", 5))
    xs = [2] * 200 + [END]
    got, largest = stream(plan, xs, list(range(len(xs))))
    assert got == batch(plan, xs) and len(got) == 40 and largest <= 5 + lookback(plan) + 3


def _runs(xs):
    """Stretches a match of A B+? C can span: from an A over B rows to the next C."""
    run_, out = [], []
    for x in xs:
        run_.append(x)
        if x >= 3 or x == END:
            out.append(run_)
            run_ = []
    return out + [run_]


def test_a_match_waits_for_the_row_that_could_extend_it():
    plan = make_plan(tree("A B*"), False, "show", Skip())
    xs = [0, 2, 2, 2, END]
    for k in range(1, 5):  # rows 0..k-1 final: B* could still take row k
        buffer = table_of(xs)
        batches, drop = advance(plan, buffer, k, Resume(), None)
        assert rows_of(batches) == [] and drop == 0
    batches, _ = advance(plan, table_of(xs), 5, Resume(), None)
    assert [r[:3] for r in rows_of(batches)] == [("B", 1, 4)]
