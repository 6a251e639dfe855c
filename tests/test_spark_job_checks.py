"""`suse run` checks everything that needs no data (query, window, evaluation times, columns,
probabilities, option types) before Spark starts, and reports warnings (letters no event can
get) and dropped rows (unreadable timestamps) of a job that does run."""
from __future__ import annotations

import time

import pytest

pytest.importorskip("pyspark")

from helpers import run  # noqa: E402
from suse.spark.jobs.config import ConfigError  # noqa: E402
from suse.spark.jobs.load import parse_config  # noqa: E402

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


JOB = """
name = "checked"
[input]
path = "{data}"
format = "csv"
schema = "k string, t long, x long, v long"
timestamp = "t"
partition_by = "k"
[characters]
A = "x < 3"
B = "x >= 3"
[[query]]
name = "first"
regex = "AB+"
window = 20
[[query]]
name = "second"
regex = "A*B"
window = 20
[evaluate]
at = "end"
[output]
path = "{out}"
"""


def _config(change: tuple[str, str] | None = None, extra: str = "", text: str = JOB) -> dict:
    text = text.format(data="in/", out="out/")
    if change:
        assert change[0] in text, change
        text = text.replace(*change)
    return tomllib.loads(text + extra)


@pytest.mark.parametrize(
    "change, extra, message",
    [
        (('regex = "A*B"', 'regex = "A(B"'), "", "query[1].regex: unclosed '(': expected ')' at position 1 of 'A(B'"),
        (('regex = "AB+"', 'regex = "AB+)"'), "", "query[0].regex:"),
        (('at = "end"', 'at = "end"\nexact = "yes"'), "", "evaluate.exact: Input should be a valid boolean"),
        (("window = 20\n[[query]]", 'window = "20"\n[[query]]'), "", None),  # digits in a string: fine
        (("window = 20\n[[query]]", 'window = "3 dayz"\n[[query]]'), "",
         "query[0].window: window '3 dayz' is a duration but timestamp column 't' holds integers"),
        (("t long", "t timestamp"), "", "query[0].window: window 20 is a plain number but timestamp column 't' holds date-times"),
        (("window = 20\n[[query]]", 'window = "3 days"\n[[query]]'), "",
         "query[0].window: window '3 days' is a duration but timestamp column 't' holds integers"),
        (('at = "end"', 'at = "hourly"'), "", "evaluate.at: evaluate: cannot read 'hourly'"),
        (('at = "end"', 'at = ["2020-01-01"]'), "", "evaluate.at: evaluation timestamp '2020-01-01' must be an integer"),
        (('timestamp = "t"', 'timestamp = "time"'), "", "input.timestamp: column 'time' is not in the input (columns: k, t, x, v)"),
        (('partition_by = "k"', 'partition_by = "key"'), "", "input.partition_by: column 'key' is not in the input"),
        (('partition_by = "k"', 'partition_by = "k"\nvalue = "k"'), "", "input.value: column 'k' has type string"),
        (('partition_by = "k"', 'partition_by = "k"\ntimestamp_format = "yyyy"'), "",
         "input.timestamp_format: timestamp column 't' holds integers"),
        (('B = "x >= 3"', 'C = "x >= 3"'), "", "query[0]: characters: query AB+ needs letter B, which has no predicate"),
        (('B = "x >= 3"', 'B = "  "'), "", "characters.B: the predicate must be a non-empty Spark SQL expression"),
        (('B = "x >= 3"', 'B = "x >= 3"\nBB = "x > 9"'), "", "characters.BB: a character is one ASCII letter or digit"),
        (("[evaluate]", "[summary]\nprobabilities = { A = 0.5, B = 0.5 }\n[evaluate]"), "", None),
        (("[evaluate]", "[summary]\nprobabilities = { A = 0.5, B = 0.5, Z = 0.0 }\n[evaluate]"), "",
         "summary.probabilities (query[0]):"),
        (('name = "second"', 'name = "second"\nreplicate = ["C"]'), "", "query[1].replicate: character 'C' is not in the query"),
        (('name = "checked"', 'name = "checked"\nmode = "streaming"'), "\n[streaming]\ncheckpoint = 'c'\n", None),

    ],
)
def test_job_checks_that_need_no_data(change, extra, message):
    if message is None:
        parse_config(_config(change, extra))
        return
    with pytest.raises(ConfigError) as err:
        parse_config(_config(change, extra))
    assert message in str(err.value)


def test_a_streaming_job_with_several_queries_takes_no_due_times():
    text = JOB.replace('name = "checked"', 'name = "checked"\nmode = "streaming"').replace('at = "end"', "at = {{ every = 10 }}")
    with pytest.raises(ConfigError, match=r"evaluate.at: due times \(\{every = ...\}\) are for a streaming job with one"):
        parse_config(_config(text=text, extra="\n[streaming]\ncheckpoint = 'c'\n"))


def test_a_derived_time_column_is_checked_by_the_form_of_its_window():
    derived = ('timestamp = "t"', 'timestamp = "t2"\ncolumns = { t2 = "timestamp_seconds(t)" }')
    parse_config(_config(derived, text=JOB.replace("window = 20", 'window = "1 hour"')))
    with pytest.raises(ConfigError, match=r"query\[0\]\.window: cannot read duration '3 dayz'"):
        parse_config(_config(derived, text=JOB.replace("window = 20\n[[query]]", 'window = "3 dayz"\n[[query]]')))


STREAM = JOB.split("[[query]]")[0] + '[query]\nregex = "AB+"\nwindow = 20\n[output]\npath = "{out}"\n[streaming]\ncheckpoint = "c"\n'


@pytest.mark.parametrize(
    "change, extra, message",
    [
        (('name = "checked"', 'name = "checked"\nmode = "streaming"'), "\nlateness = '5 minutes'\n",
         "streaming.lateness: lateness '5 minutes' is a duration but timestamp column 't' holds integers"),
        (('name = "checked"', 'name = "checked"\nmode = "streaming"'), "[evaluate]\nexact = true\n",
         "evaluate: a streaming job reports every changed partition once per micro-batch"),
        (('name = "checked"', 'name = "checked"\nmode = "streaming"'), "[evaluate]\nat = 'every 5 events'\n",
         "evaluate: a streaming job reports every changed partition once per micro-batch, or at due times"),
        (('name = "checked"', 'name = "checked"\nmode = "streaming"'), "[evaluate]\nat = { every = '1 day' }\n",
         "evaluate.at: evaluate.every '1 day' is a duration but timestamp column 't' holds integers"),
        (('A = "x < 3"', 'A = "x < percentile_approx(x, 0.5) OVER (PARTITION BY k)"'), "",
         "characters.A: a window function (OVER ...) cannot run on a stream"),
        (('name = "checked"', 'name = "checked"\nmode = "streaming"'), "on_change = 'mix'\n",
         "streaming.on_change: Input should be 'error' or 'replay'"),
    ],
)
def test_streaming_job_checks_that_need_no_data(change, extra, message):
    data = tomllib.loads(STREAM.format(data="in/", out="out/").replace(*change) + extra)
    data.setdefault("mode", "streaming")
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert message in str(err.value)


def test_streaming_job_takes_on_change():
    data = tomllib.loads(STREAM.format(data="in/", out="out/") + "on_change = 'replay'\n")
    data["mode"] = "streaming"
    assert parse_config(data).streaming.on_change == "replay"


def test_streaming_job_may_evaluate_at_due_times():
    data = tomllib.loads(STREAM.format(data="in/", out="out/").replace('name = "checked"', 'name = "checked"\nmode = "streaming"')
                         + "[evaluate]\nat = { every = 10 }\n")
    assert parse_config(data).evaluate.at == {"every": 10}


def test_suse_run_rejects_a_bad_job_before_starting_spark(tmp_path):
    """With no Java at all, Spark cannot start: the message must come from the checks, fast."""
    job = tmp_path / "job.toml"
    job.write_text(JOB.format(data=tmp_path, out=tmp_path / "out").replace('regex = "A*B"', 'regex = "A(B"'))
    started = time.perf_counter()
    proc = run("run", str(job), timeout=120, env={"JAVA_HOME": str(tmp_path / "no-java")})
    elapsed = time.perf_counter() - started
    assert proc.returncode == 2, proc.stderr
    assert "query[1].regex: unclosed '('" in proc.stderr and "Traceback" not in proc.stderr
    assert "JAVA" not in proc.stderr and elapsed < 15  # Spark alone takes 15-30 s to start here


def test_suse_run_prints_warnings_and_dropped_rows(tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    (data / "a.csv").write_text(
        "k,t,c\n"
        "p,2020-01-01 00:00,a\n"
        "p,2020-01-01 00:01,c\n"
        "p,yesterday,c\n"  # unreadable: dropped and counted
        "q,2020-01-01 00:00,a\n"
    )
    job = tmp_path / "job.toml"
    job.write_text(
        f'characters = "c"\n[input]\npath = "{data}"\nformat = "csv"\nschema = "k string, t string, c string"\n'
        f'timestamp = "t"\npartition_by = "k"\n[query]\nregex = "a(b|c)*c"\nwindow = "1 hour"\n'
        f'[output]\npath = "{tmp_path / "out"}"\nformat = "json"\n[spark.options]\n"spark.sql.shuffle.partitions" = "2"\n'
    )
    proc = run("run", str(job), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    err = " ".join(proc.stderr.split())
    assert "warning: query a(b|c)*c: character column 'c'" in err and "never holds letter b," in err
    assert "warning: 1 rows with a NULL or unreadable timestamp were dropped and 0 corrupt input records" in err
    assert "Traceback" not in proc.stderr and "largest partitions" in proc.stdout



ONE = JOB.split("[[query]]")[0] + """[query]
regex = "AB+"
window = 20
where = {{ B = "LAST(B.x, 1) IS NULL OR B.x > LAST(B.x, 1)" }}
[evaluate]
at = "end"
engine = "exact"
[output]
path = "{out}"
"""
STREAMING = ('name = "checked"\n', 'name = "checked"\nmode = "streaming"\n'), "\n[streaming]\ncheckpoint = 'c'\n"


@pytest.mark.parametrize("changes, extra, message", [
    ([], "", None),
    # batch summaries count conditions with every strategy
    ([('engine = "exact"', "")], "", None),
    ([('engine = "exact"', ""), ("[evaluate]", '[summary]\nstrategy = "adaptive"\n[evaluate]')], "", None),
    ([('engine = "exact"', ""), ("[evaluate]", '[summary]\nstrategy = "present"\n[evaluate]')], "", None),
    ([("B.x > LAST(B.x, 1)", "B.x > LAST(B.x")], "", "query.where: condition of B: expected ')' to close LAST("),
    ([('B = "LAST', 'C = "LAST')], "", "query.where: condition of C:"),
    ([('engine = "exact"', 'engine = "exact"\nexact = true')], "", "evaluate: exact = true adds"),
    ([('engine = "exact"', 'engine = "fast"')], "", "evaluate.engine: Input should be 'summary' or 'exact'"),
    ([STREAMING[0]], STREAMING[1], None),  # a streaming job counts conditions with the exact engine too
    ([STREAMING[0], ('engine = "exact"', "")], STREAMING[1], None),  # and with the summaries, of every strategy
    ([STREAMING[0], ('engine = "exact"', ""), ("[evaluate]", '[summary]\nstrategy = "random"\n[evaluate]')],
     STREAMING[1], None),
])
def test_conditions_in_a_job_file_are_checked_before_spark(changes, extra, message):
    text = ONE
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    if message is None:
        assert parse_config(_config(extra=extra, text=text)).queries[0].where
        return
    with pytest.raises(ConfigError) as err:
        parse_config(_config(extra=extra, text=text))
    assert message in " ".join(str(err.value).split())


def test_conditions_in_a_query_set_are_refused_by_name():
    text = JOB.replace('name = "second"', 'name = "second"\nwhere = {{ B = "B.x > 1" }}').replace(
        'at = "end"', 'at = "end"\nengine = "exact"')
    with pytest.raises(ConfigError, match=r"query\[1\].where: conditions are not counted in a query set yet"):
        parse_config(_config(text=text))


def test_a_trailing_negation_in_a_query_set_is_refused_before_spark():
    text = JOB.replace('regex = "A*B"', 'regex = "A B+ !A"').replace('at = "end"', 'at = "end"\nengine = "exact"')
    with pytest.raises(ConfigError, match=r"query\[1\].regex: a negation at the end of the pattern is not counted in a "
                                          r"query set yet"):
        parse_config(_config(text=text))
    alone = text.replace('[[query]]\nname = "first"\nregex = "AB+"\nwindow = 20\n', "").replace("[[query]]", "[query]")
    assert parse_config(_config(text=alone)).queries[0].regex == "A B+ !A"
