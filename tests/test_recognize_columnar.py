"""DEFINE conditions over neighbouring rows decided in the worker (suse.recognize.columnar)
against Spark deciding the same text with lag/lead: hundreds of random conditions over a table
with NULLs, NaN, infinities and -0.0, flag for flag; and one statement end to end against the
oracle, with Arrow batches far shorter than a partition."""
from __future__ import annotations

import math
import random

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from recognize_oracle import oracle_matches
from suse.errors import SqlError
from suse.recognize.columnar import FLOATING, INTEGRAL, Neighbours, columnar_condition
from suse.recognize.expressions import Extractor
from suse.spark.sql.standard import glue_tokens, tokenize

COLUMNS = {"i": INTEGRAL, "j": INTEGRAL, "d": FLOATING, "e": FLOATING}
DOUBLES = [float("nan"), float("inf"), float("-inf"), -0.0, 0.0, 1.0, 2.0, -1.0, 1.5, None, 2.0 ** 53, 2.0 ** 63]
BIG = [2 ** 53 + 1, 2 ** 53, 2 ** 63 - 1, -(2 ** 63)]  # where a long rounds on its way to a double


def random_table(rng: random.Random) -> list[tuple]:
    rows = []
    for k in range(6):
        for t in range(rng.randint(0, 9)):
            def ints(big):
                roll = rng.random()
                return None if roll < 0.15 else rng.choice(big) if roll < 0.25 else rng.randint(-2, 2)
            rows.append((k, t, ints(BIG), ints([2 ** 31 - 1, -(2 ** 31)]), rng.choice(DOUBLES), rng.choice(DOUBLES)))
    return rows


def operand(rng: random.Random, kind: str) -> str:
    roll = rng.random()
    if roll < 0.25:
        return str(rng.randint(-3, 3))
    name = rng.choice([c for c, k in COLUMNS.items() if k == kind] if rng.random() < 0.7 else list(COLUMNS))
    if roll < 0.55:
        return name
    nav = rng.choice(["PREV", "NEXT"])
    shift = rng.choice(["", ", 1", ", 2"])
    text = f"{nav}({name}{shift})"
    return f"({text})" if rng.random() < 0.1 else text


def condition(rng: random.Random, depth: int = 0) -> str:
    roll = rng.random()
    if depth >= 2 or roll < 0.45:
        if rng.random() < 0.15:
            return f"{operand(rng, rng.choice([INTEGRAL, FLOATING]))} IS {rng.choice(['', 'NOT '])}NULL"
        kind = rng.choice([INTEGRAL, FLOATING])
        return f"{operand(rng, kind)} {rng.choice(['=', '==', '<>', '!=', '<', '<=', '>', '>='])} {operand(rng, kind)}"
    if roll < 0.6:
        return f"NOT ({condition(rng, depth + 1)})"
    return f"({condition(rng, depth + 1)}) {rng.choice(['AND', 'OR'])} {condition(rng, depth + 1)}"


def split(text: str):
    return Extractor(tokenize(text)[:-1], text, set(COLUMNS), {"B"}, "DEFINE").split()


def test_conditions_decide_as_spark_does(spark):
    from pyspark.sql import functions as F

    rng = random.Random(29)
    rows = random_table(rng)
    df = spark.createDataFrame(rows, "k int, t int, i bigint, j int, d double, e double")
    texts = [condition(rng) for _ in range(400)]
    splits = [split(text) for text in texts]
    window = "PARTITION BY k ORDER BY t"
    flags = [F.expr(sp.render_row(window)).alias(f"c{n}") for n, sp in enumerate(splits)]
    got_spark = df.select("k", "t", *flags).orderBy("k", "t").collect()

    ordered = sorted(rows, key=lambda r: (r[0], r[1]))
    table = pa.table({name: pa.array([r[2 + n] for r in ordered], pa.int64() if COLUMNS[name] == INTEGRAL else pa.float64())
                      for n, name in enumerate(COLUMNS)})
    bounds = [0] + [n for n in range(1, len(ordered)) if ordered[n][0] != ordered[n - 1][0]] + [len(ordered)]
    neighbours = Neighbours(table, bounds)  # one for every condition, as the runner has it
    decided = 0
    for n, (text, sp) in enumerate(zip(texts, splits)):
        cond = columnar_condition(glue_tokens(sp)[1], sp.leaves, {f"`{c}`": c for c in COLUMNS}, COLUMNS)
        if cond is None:
            continue
        decided += 1
        mine = list(neighbours.decide(cond))
        theirs = [1 if r[f"c{n}"] is True else 0 for r in got_spark]
        assert mine == theirs, text
    assert decided == len(texts)


def test_what_is_left_to_spark():
    kinds = dict(COLUMNS, s=None)
    for text in ("i + 1 < PREV(i)", "d < 1.5", "s = PREV(s)", "abs(i) < PREV(i)", "i < 10000000000000000000",
                 "i <=> PREV(i)", "i < 1L", "i", "i IN (1, 2)"):
        sp = Extractor(tokenize(text)[:-1], text, set(kinds), {"B"}, "DEFINE").split()
        assert columnar_condition(glue_tokens(sp)[1], sp.leaves, {f"`{c}`": c for c in kinds}, kinds) is None, text
    for text in ("-9223372036854775808 < PREV(i)", "((i) < (PREV(i)))", "NOT NOT i >= NEXT(i, 2)", "i < PREV(d)"):
        sp = split(text)
        assert columnar_condition(glue_tokens(sp)[1], sp.leaves, {f"`{c}`": c for c in COLUMNS}, COLUMNS) is not None, text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["i", "d", "PREV(i)", "NEXT(d, 2)", "(", ")", "<", "=", ">=", "AND", "OR", "NOT", "IS",
                                 "NULL", "3", "-", "+", "1.5", ",", "TRUE"]), max_size=12))
def test_any_text_is_decided_or_left_to_spark(words):
    """The reader never fails on what the statement's parser let through: it takes it or returns None."""
    text = " ".join(words)
    try:
        sp = split(text)
    except SqlError:
        return  # the statement's own parser refuses it first
    cond = columnar_condition(glue_tokens(sp)[1], sp.leaves, {f"`{c}`": c for c in COLUMNS}, COLUMNS)
    if cond is not None:
        table = pa.table({"i": pa.array([1, None, 3], pa.int64()), "j": pa.array([0, 0, 0], pa.int64()),
                          "d": pa.array([math.nan, 1.0, None]), "e": pa.array([0.0, 0.0, 0.0])})
        assert len(Neighbours(table, [0, 2, 3]).decide(cond)) == 3


def test_statement_with_neighbours_equals_the_oracle_across_short_batches(spark):
    """PREV/NEXT conditions decided in the worker, with Arrow batches of 3 rows (every partition
    spans several), against the oracle over flags computed here."""
    from suse.spark import sql
    from suse.spark.sql.standard import parse_standard

    rng = random.Random(7)
    rows = [(k, t, None if rng.random() < 0.1 else rng.randint(0, 4)) for k in range(5) for t in range(rng.randint(0, 14))]
    spark.createDataFrame(rows, "k int, t int, x bigint").createOrReplaceTempView("neighbour_rows")
    text = """SELECT * FROM neighbour_rows MATCH_RECOGNIZE (PARTITION BY k ORDER BY t
        MEASURES CLASSIFIER() AS label, MATCH_NUMBER() AS n
        ALL ROWS PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+ C)
        DEFINE B AS x < PREV(x) OR PREV(x) IS NULL, C AS x > PREV(x) AND NOT x = NEXT(x))"""
    before = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "3")
    try:
        out = sql(spark, text)
        got = sorted(tuple(r) for r in out.select("k", "t", "label", "n").collect())
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", before)
    node = parse_standard(text).pattern

    def lt(a, b):
        return None if a is None or b is None else a < b

    want = []
    for k in range(5):
        xs = [x for kk, _, x in sorted(rows) if kk == k]

        def at(r, xs=xs):
            return xs[r] if 0 <= r < len(xs) else None

        def holds(v, r, path, at=at):
            if v == "B":
                return lt(at(r), at(r - 1)) is True or at(r - 1) is None
            if v == "C":
                up, same = lt(at(r - 1), at(r)), None if at(r) is None or at(r + 1) is None else at(r) == at(r + 1)
                return up is True and same is False
            return True

        number = 0
        for item in oracle_matches(node, len(xs), holds, "past"):
            if item[0] == "match":
                number += 1
                want += [(k, r, v, number) for r, v, _ in item[2]]
    assert got == sorted(want) and len(want) >= 6
