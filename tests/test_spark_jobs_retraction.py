"""Job files with retractions (`[input] op`), batch and streaming, against the batch result
over the events that remain; a batch job refuses a [streaming] table."""
from __future__ import annotations

import pandas as pd
import pytest
import tomllib

pytest.importorskip("pyspark")

from suse.errors import InputError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.jobs.load import parse_config  # noqa: E402
from suse.spark.jobs.run import run_job  # noqa: E402

JOB = """
name = "retractions"
mode = "{mode}"
characters = "c"
[input]
path = "{src}"
format = "csv"
schema = "k string, t long, c string, v long, op string"
timestamp = "t"
partition_by = "k"
value = "v"
op = "op"
{queries}
[summary]
size = 4
[output]
path = "{out}"
format = "json"
"""
ONE = '[query]\nregex = "A(B|C)*C"\nwindow = 20\n'
TWO = ONE.replace("[query]", "[[query]]\nname = \"one\"") + '[[query]]\nname = "two"\nregex = "AB"\nwindow = 30\n'
SCHEMA = "k string, t long, c string, v long"


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["k", "t", "c", "v", "op"])


def _config(tmp_path, mode: str, queries: str, extra: str = ""):
    text = JOB.format(mode=mode, src=tmp_path / "in", out=tmp_path / "out", queries=queries) + extra
    return parse_config(tomllib.loads(text))


def _want(spark, rows: list[tuple], regex: str, window: int) -> tuple:
    (r,) = aggregate(spark.createDataFrame([x[:4] for x in rows], SCHEMA), regex, window, "c", "t", ["k"], "v",
                     summary_size=4).collect()
    return r["count"], r["sum"], r.events


@pytest.mark.parametrize("queries", [ONE, TWO])
def test_batch_job_reads_an_op_column(spark, tmp_path, queries):
    (tmp_path / "in").mkdir()
    plus = [("p", 1, "A", 1, "+"), ("p", 2, "B", 2, "+"), ("p", 3, "C", 3, "+"), ("p", 4, "C", 4, "+")]
    _frame(plus + [("p", 3, "C", 3, "-")]).to_csv(tmp_path / "in" / "a.csv", index=False)
    run_job(_config(tmp_path, "batch", queries))
    got = {(r["query"], r["k"]): (str(r["count"]), str(r["sum"]), r["events"])
           for r in spark.read.json(str(tmp_path / "out")).collect()}
    kept = [plus[0], plus[1], plus[3]]
    want = {("one" if queries == TWO else "A(B|C)*C", "p"): _want(spark, kept, "A(B|C)*C", 20)}
    if queries == TWO:
        want[("two", "p")] = _want(spark, kept, "AB", 30)
    assert got == want and want[next(iter(want))][0] == "2"  # A C@4, A B C@4


def test_streaming_job_reads_an_op_column(spark, tmp_path):
    (tmp_path / "in").mkdir()
    cfg = _config(tmp_path, "streaming", ONE, f'[streaming]\ncheckpoint = "{tmp_path / "ckpt"}"\nlateness = 15\n')
    first = [("p", 10, "A", 1, "+"), ("p", 20, "B", 1, "+"), ("p", 30, "C", 1, "+"), ("p", 40, "C", 1, "+")]
    # watermark 25 after the first file: C@30 is pending and taken back, B@20 is final (rejected)
    second = [("p", 30, "C", 1, "-"), ("p", 20, "B", 1, "-"), ("p", 35, "B", 1, "+")]
    for i, rows in enumerate([first, second]):
        _frame(rows).to_csv(tmp_path / "in" / f"part-{i}.csv", index=False)
        run_job(cfg)
    out = spark.read.json(str(tmp_path / "out")).orderBy("events").collect()
    newest = out[-1]
    kept = [first[0], first[1], second[2], first[3]]
    assert (newest["count"], newest["sum"], newest.events) == tuple(str(x) if i < 2 else x for i, x in
                                                                    enumerate(_want(spark, kept, "A(B|C)*C", 20)))
    assert newest.rejected_retractions == 1


def test_batch_job_refuses_a_streaming_table(tmp_path):
    with pytest.raises(InputError, match=r"streaming: a batch job sorts each partition by timestamp"):
        _config(tmp_path, "batch", ONE, '[streaming]\ncheckpoint = "x"\nlateness = 5\n')


def test_corrections_example(spark, tmp_path, monkeypatch):
    from pathlib import Path

    from suse.spark.jobs.load import load_config

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)  # the example's paths are relative to the repository root
    cfg = load_config(root / "examples" / "corrections.toml")
    cfg.output.path = str(tmp_path / "out")
    run_job(cfg)
    got = {r.sensor: (int(r["count"]), int(r["sum"]), int(r.exact_count)) for r in spark.read.json(cfg.output.path).collect()}
    # s1 keeps A B C@5: A C, A B C; s2 keeps A B C@7: A C, A B C (C@3 taken back)
    assert got == {"s1": (2, 3 + 7 + 3 + 5 + 7, 2), "s2": (2, 1 + 2 + 1 + 6 + 2, 2)}
