"""The API's input checks in the Spark pipeline (shared local session): probabilities,
`timestamp_format`, durations, and how `suse run` shows its table and job name."""
from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

pytest.importorskip("pyspark")

from helpers import synthetic_input  # noqa: E402
from suse.errors import InputError  # noqa: E402
from suse.spark import aggregate  # noqa: E402

CHARS = {"A": "x < 3", "B": "x >= 3 AND x < 6", "C": "x >= 6"}


@pytest.fixture(scope="module")
def frames(spark):
    times = pd.to_datetime(["2024-01-01 00:00", "2024-01-01 00:30", "2024-01-01 01:06"])
    pdf = pd.DataFrame({"t": [1, 2, 3], "when": times, "x": [0, 4, 7]})
    return spark.createDataFrame(pdf)


def test_timestamp_format_is_refused_for_every_non_string_column(frames):
    # It was an error for integer columns but silently ignored for timestamp columns.
    for column, kind in (("t", "bigint"), ("when", "timestamp")):
        with pytest.raises(InputError, match=f"timestamp_format applies to string columns, but timestamp column "
                                             f"'{column}' has type {kind}"):
            aggregate(frames, "AB", 10 if column == "t" else "1 hour", CHARS, column, timestamp_format="yyyy")


def test_probabilities_are_checked_like_the_api(frames):
    for probabilities, message in (({"A": 1.0}, "no probability for 'B'"),
                                   ({"AB": 1.0}, "not a character of the query"),
                                   ({"A": 0.5, "B": 0.6}, "must sum to 1")):
        with pytest.raises(InputError, match=message):
            aggregate(frames, "AB", 10, CHARS, "t", probabilities=probabilities)


def test_estimated_probabilities_give_absent_letters_zero(frames):
    # 'D' has no predicate, so no event ever gets it: the estimate must still name it.
    out = aggregate(frames, "A(B|D)", 10, CHARS, "t", probabilities="estimate").collect()
    assert [r["count"] for r in out] == ["1"]


def test_exact_and_zero_durations(frames):
    # "1.1 hours" is 3960 s exactly (was refused: summed as floats); "0 days" is a window of 0.
    rows = aggregate(frames, "AB*C", "1.1 hours", CHARS, "when").collect()
    assert rows[0]["count"] == "2"  # A at 0:00, C at 1:06 = 3960 s: inside, with or without B
    assert aggregate(frames, "AB*C", dt.timedelta(seconds=3959), CHARS, "when").collect()[0]["count"] == "0"
    assert aggregate(frames, "A", "0 days", CHARS, "when").collect()[0]["count"] == "1"
    with pytest.raises(InputError, match="must be positive"):
        aggregate(frames, "AB", "-3 days", CHARS, "when")


JOB = synthetic_input(200, 2, name="a job whose table is wider than 80 columns", values=False) + """[[query]]
name = "the first query, with a long name"
regex = "a(b*c)*d"
window = 40
[[query]]
name = "the second query, with a long name"
regex = "ab*"
window = 40
[summary]
size = 10
[evaluate]
exact = true
[output]
path = "{out}"
"""


def test_run_table_is_not_cut_when_piped(spark, tmp_path):
    # Piped output used to get 80 columns, so cells read 'que…' and 'exact_cou…'.
    from typer.testing import CliRunner

    from suse.cli import commands  # noqa: F401  (registers `run`)
    from suse.cli.app import app

    path = tmp_path / "job.toml"
    path.write_text(JOB.format(out=tmp_path / "out"))
    result = CliRunner().invoke(app, ["run", str(path)], env={"COLUMNS": None})  # output is not a terminal
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert "the second query, with a long name" in result.stdout and "exact_count" in result.stdout


def test_progress_shows_a_job_name_as_text(spark):
    # The job name used to go into rich markup, so a name like '[/x]' crashed `suse run` in a terminal.
    import io

    from rich.console import Console

    from suse.spark.jobs.run import spark_progress

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100)
    with spark_progress(spark, console, "[/x] data[old]: running"):
        spark.range(10).count()
    assert "[/x] data[old]: running" in screen.getvalue()
