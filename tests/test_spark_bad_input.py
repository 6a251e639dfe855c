"""Bad input on the Spark path: letters no event can get, bad values,
unreadable timestamps, corrupt records, the wrong kind of DataFrame, and the documented
character order. Nothing may vanish silently or fail with a worker traceback."""
from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from pyspark.errors import PySparkException  # noqa: E402

from suse.errors import InputError, SuseWarning  # noqa: E402
from suse.spark import aggregate, aggregate_stream, latest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHARS = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"}


@pytest.fixture(scope="module")
def frame(spark):
    pdf = pd.DataFrame({"k": list("ppppqq"), "t": [1, 2, 3, 4, 1, 2], "x": [0, 4, 7, 8, 1, 9], "v": [1, 2, 3, 4, 5, 6]})
    return spark.createDataFrame(pdf)


def _warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught if issubclass(w.category, SuseWarning)]


# --- item 2: letters that can never fire -------------------------------------------------------


def test_letters_without_predicate_that_make_every_count_zero_are_an_error(frame):
    with pytest.raises(InputError, match=r"needs letters B, C, which have no predicate: no match is possible"):
        aggregate(frame, "A(B|C)*C", 10, {"A": "x < 3"}, "t", ["k"])


def test_a_letter_without_predicate_that_some_matches_need_is_a_warning(frame):
    out, found = _warnings(lambda: aggregate(frame, "A(B|C)*C", 10, {"A": "x < 3", "C": "x >= 6"}, "t", ["k"]))
    assert found == ["query A(B|C)*C: characters has no predicate for letter B, so no event gets it; "
                     "matches that need it are never counted"]
    assert {r.k: r["count"] for r in out.collect()} == {"p": "3", "q": "1"}  # AC, AC, ACC; AC


def test_streams_warn_about_letters_without_predicate_too(spark):
    src = spark.readStream.format("rate").load()
    _, found = _warnings(lambda: aggregate_stream(src, "A(B|C)*C", 10, {"A": "value < 3", "C": "value > 5"}, "value"))
    assert len(found) == 1 and "no predicate for letter B" in found[0]


def test_a_character_column_in_the_wrong_case_is_named(spark):
    df = spark.createDataFrame(pd.DataFrame({"t": [1, 2, 3], "c": ["a", "b", "c"]}))
    out, found = _warnings(lambda: aggregate(df, "A(B|C)*C", 10, "c", "t"))
    assert out.count() == 0
    assert len(found) == 1 and "character column 'c'" in found[0] and "never holds letters A, B, C" in found[0]
    assert re.search(r"holds '[abc]', '[abc]', '[abc]'; characters are case-sensitive", found[0])


def test_a_letter_missing_from_a_character_column_is_named_and_present_ones_are_not(spark):
    df = spark.createDataFrame(pd.DataFrame({"t": [1, 2, 3], "c": ["A", "C", "x"]}))
    _, found = _warnings(lambda: aggregate(df, "A(B|C)*C", 10, "c", "t").collect())
    assert len(found) == 1 and "never holds letter B," in found[0]


def test_estimated_probabilities_name_a_predicate_no_row_satisfies(frame):
    chars = {**CHARS, "B": "x > 100"}
    _, found = _warnings(lambda: aggregate(frame, "A(B|C)*C", 10, chars, "t", ["k"], probabilities="estimate"))
    assert len(found) == 1 and "no row satisfies the predicate of letter B" in found[0]


# --- item 3: values -----------------------------------------------------------------------------


@pytest.mark.parametrize("bad, message", [(-10, r"is negative \(-10\)"), (None, "is NULL")])
def test_a_bad_value_names_column_partition_and_row_without_a_worker_traceback(spark, bad, message):
    pdf = pd.DataFrame({"k": ["p", "p", "q"], "t": [1, 2, 1], "x": [0, 4, 0], "v": [1, 1, 1]}, dtype=object)
    pdf.loc[1, "v"] = bad
    df = spark.createDataFrame(pdf, "k string, t long, x long, v long")
    with pytest.raises(PySparkException) as err:
        aggregate(df, "AB", 10, CHARS, "t", ["k"], value="v").collect()
    text = str(err.value)
    assert re.search(rf"suse: value column 'v' {message} in partition k=p, row \{{\"k\":\"p\",\"t\":2,\"x\":4,", text)
    assert "Traceback" not in text and "PythonException" not in text


def test_bad_values_of_rows_that_are_not_events_do_not_matter(spark):
    # x = 9 has no character in this map, and a NULL timestamp makes a row unusable.
    pdf = pd.DataFrame({"t": [1, 2, 3, None], "x": [0, 9, 4, 4], "v": [1, -5, 2, -7]})
    df = spark.createDataFrame(pdf, "t long, x long, v long")
    (row,) = aggregate(df, "AB", 10, {"A": "x < 3", "B": "x >= 3 AND x < 6"}, "t", value="v",
                       aggregate="sum").collect()
    assert (row["count"], row["sum"], row.dropped_events) == ("1", "3", 1)


# --- item 4: unreadable timestamps --------------------------------------------------------------


def test_unreadable_string_timestamps_are_dropped_and_counted_per_partition(spark):
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # where to_timestamp fails the job
    pdf = pd.DataFrame({
        "k": ["p", "p", "p", "p", "q", "q", "r"],
        "t": ["2020-01-01 00:00", "garbage", "2020-01-01 00:02", None, "2020-01-01 00:01", "31/12/2020", "nope"],
        "x": [0, 4, 7, 1, 0, 8, 0],
    })
    out = aggregate(spark.createDataFrame(pdf), "A(B|C)*C", "1 day", CHARS, "t", ["k"]).collect()
    got = {r.k: (r.evaluated_at is not None, r["count"], r.events, r.dropped_events) for r in out}
    # p: A, C kept (AC), the garbage B and the NULL A dropped; r: no usable event, still reported
    assert got == {"p": (True, "1", 2, 2), "q": (True, "0", 1, 1), "r": (False, "0", 0, 1)}


def test_timestamp_format_parses_safely_too(spark):
    pdf = pd.DataFrame({"t": ["01.01.2020", "02.01.2020", "2020-01-03"], "x": [0, 7, 7]})
    (row,) = aggregate(spark.createDataFrame(pdf), "AC", "3 days", CHARS, "t", timestamp_format="dd.MM.yyyy",
                       exact=True).collect()
    assert (row["count"], row.exact_count, row.events, row.dropped_events) == ("1", "1", 2, 1)


# --- item 5: corrupt records, the wrong kind of DataFrame --------------------------------------


def test_corrupt_json_lines_of_a_stream_are_counted_like_late_events(spark, tmp_path):
    src, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    src.mkdir()
    (src / "a.json").write_text(
        '{"k": "p", "t": 1, "x": 0}\n'
        '{"k": "p", "t": 2, "x": 7\n'  # unterminated: the reader cannot parse it
        '{"k": "p", "t": 3, "x": 8}\n'
        'not json at all\n'
        '{"k": "q", "t": 1, "x": 0}\n'
    )
    stream = spark.readStream.schema("k string, t long, x long, _corrupt_record string").json(str(src))
    query = (aggregate_stream(stream, "AC+", 10, CHARS, "t", ["k"]).writeStream.format("parquet")
             .option("path", str(out)).option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = {r.k: r for r in latest(spark.read.parquet(str(out)), ["k"]).collect()}
    assert rows["p"]["count"] == "1" and rows["p"].events == 2 and rows["q"].events == 1
    assert sum(r.corrupt_records for r in rows.values()) == 2  # neither line has a readable key
    assert rows[None].corrupt_records == 2 and rows[None].evaluated_at is None


def test_corrupt_records_in_batch_are_counted(spark, tmp_path):
    path = tmp_path / "a.json"
    path.write_text('{"t": 1, "x": 0}\n{"t": 2, "x": \n{"t": 3, "x": 7}\n')
    df = spark.read.schema("t long, x long, _corrupt_record string").json(str(path))
    (row,) = aggregate(df, "AC", 10, CHARS, "t").collect()
    assert (row["count"], row.events, row.corrupt_records, row.dropped_events) == ("1", 2, 1, 0)


def test_aggregate_on_a_stream_points_to_aggregate_stream_at_call_time(spark):
    stream = spark.readStream.format("rate").load()
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"this one is streaming .*use suse.spark.aggregate_stream"):
        aggregate(stream, "AB", 10, {"A": "value < 3", "B": "value >= 3"}, "value")
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("call", [aggregate, aggregate_stream])
def test_a_pandas_frame_says_what_is_expected(call):
    pdf = pd.DataFrame({"t": [1, 2], "x": [0, 5]})
    with pytest.raises(InputError, match=r"needs a Spark DataFrame, got a pandas\..*spark.createDataFrame"):
        call(pdf, "AB", 10, {"A": "x < 3", "B": "x >= 3"}, "t")


# --- item 6: one documented character order ------------------------------------------------------


def _stock_characters(path: Path) -> list[tuple[str, str]]:
    """The characters of the first `A(B|G)*A` Python example in a Markdown file, in order."""
    text = path.read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "A(B|G)*A" in b)
    body = re.search(r"characters=\{(.*?)\}", block, re.S).group(1)
    return re.findall(r'"([A-Z])":\s*"([^"]+)"', body)


def test_readme_and_spark_docs_give_the_stock_characters_in_one_order():
    readme, docs = _stock_characters(ROOT / "README.md"), _stock_characters(ROOT / "docs" / "SPARK.md")
    example = re.findall(r'^([A-Z]) = "([^"]+)"', (ROOT / "examples" / "stocks.toml").read_text(), re.M)
    assert readme == docs == example and [c for c, _ in readme] == ["G", "A", "B"]
    for path in (ROOT / "README.md", ROOT / "docs" / "SPARK.md"):
        assert re.search(r"\*\*(The order of `characters` matters|Order matters)", path.read_text())


def test_the_readme_spark_example_runs_and_order_changes_the_count(spark):
    text = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "A(B|G)*A" in b)
    scope: dict = {}
    exec(block.replace(".show()", ".collect()"), scope)  # noqa: S102  (our own README)
    fb = {r.ticker: r["count"] for r in scope["out"].collect()}["FB"]
    assert fb == re.search(r"FB: count (\d+)", block).group(1)
    chars = dict(_stock_characters(ROOT / "README.md"))
    reordered = {c: chars[c] for c in "ABG"}  # A, B before G: a heavy-volume rise becomes an A
    out = aggregate(scope["df"].where("ticker = 'FB'"), "A(B|G)*A", "3 days", reordered, "date", ["ticker"])
    other = out.collect()[0]["count"]
    assert other != fb and re.search(rf"becomes {other} instead of {fb}", text)


def test_a_streaming_job_file_counts_corrupt_json_lines(spark, tmp_path):
    """`suse run` adds the corrupt-record column to a JSON/CSV schema by itself."""
    from suse.spark.jobs.load import parse_config
    from suse.spark.jobs.run import run_job

    src = tmp_path / "in"
    src.mkdir()
    (src / "a.json").write_text('{"k": "p", "t": 1, "x": 0}\n{"k": "p", "t": 2, "x": 7}\n{"k": "p", "t": 3, "x": \n')
    cfg = parse_config({
        "mode": "streaming", "characters": {"A": "x < 3", "C": "x >= 6"},
        "input": {"path": str(src), "format": "json", "schema": "k string, t long, x long", "timestamp": "t",
                  "partition_by": "k"},
        "query": {"regex": "AC+", "window": 10},
        "output": {"path": str(tmp_path / "out"), "format": "parquet"},
        "streaming": {"checkpoint": str(tmp_path / "ckpt")},
    })
    report = run_job(cfg)
    assert report.corrupt == 1 and report.dropped == 0
    # the corrupt line has no readable key: it is reported in the partition whose key is NULL
    assert {(r["k"], r["count"], r["events"], r["corrupt_records"]) for r in report.top} == {
        ("p", "1", 2, 0), (None, "0", 0, 1)}
