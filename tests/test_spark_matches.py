"""Matches per output row on Spark (`matches=n`, `sample_matches=n`): the matches among each
row's retained elements, checked against the brute-force oracle over those elements, in both
layouts and in job files; refusals where the rows cannot tell."""
from __future__ import annotations

import random

import pytest

pytest.importorskip("pyspark")

import oracle  # noqa: E402
from suse.errors import InputError  # noqa: E402
from suse.spark import aggregate  # noqa: E402
from suse.spark.jobs.load import parse_config  # noqa: E402

CHARS = {c: f"c = '{c}'" for c in "abc"}


def _frame(spark, seed: int):
    rng = random.Random(seed)
    rows = [(k, t, rng.choice("abc"), rng.randrange(4)) for k in ("x", "y") for t in range(rng.randrange(8, 20))]
    return spark.createDataFrame(rows, "k string, t long, c string, v long")


def _elements(row) -> list[tuple[str, int, int]]:
    return [(e.char, e.timestamp, e.value) for e in row.elements]


@pytest.mark.parametrize("policy", ["any", "next"])
def test_each_row_lists_the_matches_it_counts(spark, policy):
    for seed in range(2):
        df = _frame(spark, seed)
        common = dict(characters=CHARS, timestamp="t", partition_by="k", value="v", summary_size=6, policy=policy,
                      evaluate="every 5 events")
        for layout in (False, True):
            rows = aggregate(df, "a(b|c)*b", 6, **common, matches=10_000, large_partitions=layout).collect()
            assert rows
            for row in rows:
                elements = _elements(row)
                want = [[elements[i] for i in m] for m in oracle.matches("a(b|c)*b", elements, 6, policy)]
                got = [[(e.char, e.timestamp, e.value) for e in m] for m in row.matches]
                assert sorted(got) == sorted(want) and len(got) == int(row["count"])


def test_the_first_n_and_a_seeded_sample(spark):
    df = _frame(spark, 7)
    common = dict(characters=CHARS, timestamp="t", partition_by="k", summary_size=8)
    every = {r.k: r for r in aggregate(df, "a(b|c)*b", 8, **common, matches=10_000).collect()}
    first = {r.k: r for r in aggregate(df, "a(b|c)*b", 8, **common, matches=2).collect()}
    for k, row in first.items():
        assert row.matches == every[k].matches[:2]
    lean = aggregate(df, "a(b|c)*b", 8, **common, sample_matches=5, elements=False)
    assert "elements" not in lean.columns and "matches" in lean.columns
    drawn = {r.k: r.matches for r in lean.collect()}
    assert drawn == {r.k: r.matches for r in lean.collect()}  # the same rows on every run
    for k, sample in drawn.items():
        assert len(sample) == (5 if every[k].matches else 0)
        assert all(m in every[k].matches for m in sample)


def test_query_sets_list_each_querys_matches(spark):
    df = _frame(spark, 3)
    out = aggregate(df, None, 6, characters=CHARS, timestamp="t", partition_by="k", summary_size=6, matches=10_000,
                    queries={"ab": "a(b|c)*b", "ca": {"query": "c(a|b)*a", "policy": "next"}}).collect()
    for row in out:
        regex, policy = ("a(b|c)*b", "any") if row.query == "ab" else ("c(a|b)*a", "next")
        elements = _elements(row)
        assert len(row.matches) == int(row["count"]) == len(oracle.matches(regex, elements, 6, policy))


@pytest.mark.parametrize("change, message", [
    (dict(query="a!cb"), "negation"),
    (dict(policy="contiguous"), "contiguity"),
    (dict(max_missing=1), "approximate"),
    (dict(sample_matches=2), "not both"),
    (dict(matches=0), "from 1"),
])
def test_what_the_rows_cannot_tell_is_refused(spark, change, message):
    options = dict(query="a(b|c)*b", window=6, characters=CHARS, timestamp="t", partition_by="k", matches=3)
    options.update(change)
    with pytest.raises(InputError, match=message):
        aggregate(_frame(spark, 0), **options)


JOB = """
name = "matches"
[input]
path = "{path}"
timestamp = "t"
partition_by = ["k"]
[characters]
a = "c = 'a'"
b = "c = 'b'"
c = "c = 'c'"
[query]
regex = "{regex}"
window = 6
[output]
path = "{out}"
{matches}
"""


def test_job_files_take_matches_and_check_them_before_spark(spark, tmp_path):
    from suse.spark.jobs.load import load_config
    from suse.spark.jobs.run import run_job

    _frame(spark, 1).write.parquet(str(tmp_path / "in"))
    text = JOB.format(path=tmp_path / "in", out=tmp_path / "out", regex="a(b|c)*b", matches="matches = 3")
    (tmp_path / "job.toml").write_text(text)
    run_job(load_config(tmp_path / "job.toml"))
    written = spark.read.parquet(str(tmp_path / "out")).collect()
    assert written and all(len(r.matches) == min(3, int(r["count"])) for r in written)
    tomllib = __import__("tomllib")
    with pytest.raises(InputError, match="output.matches: .*negation"):
        parse_config(tomllib.loads(JOB.format(path=tmp_path / "in", out=tmp_path / "o", regex="a!cb",
                                              matches="matches = 3")))
    with pytest.raises(InputError, match="not both"):
        parse_config(tomllib.loads(JOB.format(path=tmp_path / "in", out=tmp_path / "o", regex="ab",
                                              matches="matches = 3\nsample_matches = 3")))
