"""Bad input of every kind, generated: every outcome is a result or a suse error.

For the API: a result or ``suse.SuseError``, never another exception, and a result never drops
an event silently. For the command line: exit code 0, or 2 with one line on standard error
(a query error adds the query and a caret under it); never a traceback or "internal error".
Most CLI cases run in-process (``main`` with swapped standard streams: start-up costs a
second per process); a few run as real processes.
"""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import suse
from helpers import ENV, run
from suse.cli.app import main
from suse.io.formats import read_csv_stream, read_probabilities, read_stream, read_text_stream

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- pieces of input -----------------------------------------------------------------------
MARKUP = ["[/x]", "[bold]", "[/]", "[red]A[/red]", ":smile:", "[link=x]", "\\[", "]"]
HUGE = [2**63, -(2**63) - 1, 2**64, 10**30, -(10**30)]
query_text = st.one_of(
    st.text(alphabet="ABCabc()|*+?{},.0123456789 \t\\[]^$-", max_size=12),
    st.text(max_size=8),
    st.sampled_from(["", "A(B", "A{99999}", "A{3,1}", "(((A)))*", "A**", "()", "|", "A\x00B", "Ä", "A" * 500]),
)
scalars = st.one_of(
    st.integers(-5, 50), st.sampled_from(HUGE), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4), st.none(), st.booleans(), st.just(dt.datetime(2024, 1, 1)),
    st.just(np.datetime64("NaT")), st.just(np.float64(1.5)), st.just(np.int64(3)),
)
chars = st.one_of(st.sampled_from("ABCZ"), st.text(max_size=2), st.integers(0, 3), st.none())
events = st.lists(
    st.one_of(st.tuples(chars, scalars), st.tuples(chars, scalars, scalars), st.tuples(chars), scalars),
    max_size=8,
)


# --- the API ---------------------------------------------------------------------------------
@SETTINGS
@given(regex=query_text, window=scalars, aggregate=st.sampled_from(["count", "sum", "avg", "max", "", None]),
       policy=st.sampled_from(["any", "next", "first", 3]))
def test_queries_compile_or_say_why(regex, window, aggregate, policy):
    try:
        q = suse.Query(regex, window, aggregate, policy)
    except suse.SuseError as exc:
        assert str(exc)
        if isinstance(exc, suse.QueryError):
            assert 0 <= exc.position <= len(regex)
        return
    assert q.alphabet and q.window >= 0


@SETTINGS
@given(evs=events, evaluate_at=st.one_of(st.none(), scalars, st.lists(scalars, max_size=3)),
       size=st.one_of(st.integers(1, 8), scalars), probabilities=st.one_of(
           st.none(), st.dictionaries(st.text(max_size=2), st.one_of(st.floats(), st.integers(-1, 2)), max_size=3)))
def test_streams_give_a_result_or_a_suse_error(evs, evaluate_at, size, probabilities):
    q = suse.Query("A(B|C)*", window=10)
    r = None
    try:
        r = suse.exact(q, evs, evaluate_at=evaluate_at)
    except suse.SuseError:
        pass
    else:  # accepted: every event was counted, none dropped
        assert r.events == len(evs) and r.skipped == sum(1 for e in evs if e[0] not in "ABC")
        times = [evaluate_at] if not isinstance(evaluate_at, (list, type(None))) else (evaluate_at or [])
        assert len(r.evaluations) == len(times)
    try:
        s = suse.Summary(q, size, probabilities=probabilities, seed=1)
        out = s.extend(evs, evaluate_at=evaluate_at)
    except suse.SuseError:
        return
    assert s.result().events == len(evs)
    if r is None:
        return
    assert len(out) == len(r.evaluations)
    if isinstance(size, int) and size >= len(evs):  # nothing evicted: the summary is exact
        assert s.result().count == r.count


@SETTINGS
@given(chars_=st.one_of(st.text(max_size=6), st.binary(max_size=6)),
       timestamps=st.one_of(st.lists(scalars, max_size=6), st.sampled_from([
           np.array([1, 2], dtype="datetime64[ms]"), np.array([1.5, 2.0]), np.array([2**63], dtype=np.uint64),
           np.array([[1, 2]]), np.array([True, False]), np.array(["a", "b"]), np.array([1, 2], dtype="timedelta64[s]"),
       ])), values=st.one_of(st.none(), st.lists(scalars, max_size=6)))
def test_arrays_give_a_result_or_a_suse_error(chars_, timestamps, values):
    q = suse.Query("AB", window=5)
    try:
        r = suse.exact(q, chars=chars_, timestamps=timestamps, values=values)
    except suse.SuseError:
        return
    assert r.events == len(chars_)


# --- the readers ------------------------------------------------------------------------------
line_pieces = st.one_of(
    st.sampled_from(["A", "B", "1", "2", "-3", "char", "timestamp", "value", ",", " ", "\t", '"', "\ufeff", "nan",
                     "1e3", "0x10", "1_000", *MARKUP, *map(str, HUGE)]),
    st.text(max_size=3),
)
text_files = st.one_of(
    st.lists(st.lists(line_pieces, max_size=6).map("".join), max_size=6).map("\n".join),
    st.lists(st.lists(line_pieces, max_size=6).map(" ".join), max_size=6).map(lambda ls: "char,timestamp,value\n" + "\n".join(ls)),
)
raw_files = st.one_of(
    st.binary(max_size=40),
    text_files.map(lambda t: t.encode("utf-8", "surrogatepass")),
    text_files.map(lambda t: b"\xef\xbb\xbf" + t.encode("utf-8", "surrogatepass")),
)


@settings(max_examples=150, deadline=None)
@given(text=text_files)
@example(text="\x00")  # a one-line text is a path; a NUL in it is no file name (CI found it)
def test_readers_give_events_or_an_input_error(text):
    for read in (read_text_stream, read_csv_stream, read_probabilities):
        try:
            got = read(text)
        except suse.InputError as exc:
            assert "\n" not in str(exc)
            continue
        if read is read_text_stream:
            assert len(got) * 2 == len(text.lstrip("\ufeff").split())  # every pair became an event


@settings(max_examples=40, deadline=None)
@given(data=raw_files, fmt=st.sampled_from(["auto", "text", "csv"]))
def test_files_of_random_bytes(tmp_path_factory, data, fmt):
    path = tmp_path_factory.mktemp("f") / "stream"
    path.write_bytes(data)
    try:
        read_stream(path, fmt)
    except suse.InputError:
        pass


# --- the command line, in-process -------------------------------------------------------------
def cli(args: list[str], stdin: bytes = b"") -> tuple[int, str, str]:
    with CliRunner().isolation(input=stdin) as (out, err, _):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code
        else:
            code = 0
        return code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace")


def assert_clean(code: int, stdout: str, stderr: str) -> None:
    assert "Traceback" not in stderr + stdout and "internal error" not in stderr, stderr
    assert code in (0, 2), (code, stderr)
    if code == 2:
        lines = stderr.splitlines()
        if lines and lines[0].startswith("query error: "):
            assert len(lines) == 3 and lines[2].rstrip().endswith("^"), stderr
        else:
            assert len(lines) == 1 and lines[0].startswith("error: "), stderr


option_values = st.one_of(st.sampled_from(["0", "1", "5", "-1", "x", "1.5", "", "1,2", "3,1", str(2**64), "[/x]",
                                           "suse", "lifo", "csv", "text", "count", "nope"]), st.text(max_size=3))
options = st.lists(
    st.tuples(st.sampled_from(["-w", "--window", "--size", "-n", "--strategy", "--seed", "--evaluate-at",
                               "--format", "--policy", "--aggregate", "--time-to-live", "--json", "--compare-exact",
                               "--probabilities", "--bogus", "-h"]), option_values),
    max_size=4,
).map(lambda pairs: [x for p in pairs for x in (p if p[0] not in ("--json", "--compare-exact", "-h") else p[:1])])


@settings(max_examples=120, deadline=None)
@given(command=st.sampled_from(["exact", "eval", "compile", "experiment", "run", "nope"]), query=query_text,
       opts=options, stream=raw_files)
def test_cli_in_process(command, query, opts, stream):
    assume("\x00" not in query)  # the OS cannot pass NUL in an argument
    assume(not (command == "experiment" and (query == "all" or query.startswith("fig") or query in ("flights", "stocks"))))
    if command == "eval":
        opts = ["-w", "5", "-n", "3", "--strategy", "suse"] + opts
    elif command == "exact":
        opts = ["-w", "5"] + opts
    code, stdout, stderr = cli([command, query, *opts], stream)
    if command in ("experiment", "run") and code == 0 and "-h" not in opts:
        pytest.fail(f"{command} {query!r} ran: {stdout[:200]}")  # no such experiment or job file
    assert_clean(code, stdout, stderr)


@settings(max_examples=60, deadline=None)
@given(stream=raw_files)
def test_cli_streams_in_files(tmp_path_factory, stream):
    path = tmp_path_factory.mktemp("s") / "[bold]x data[old].csv"
    path.write_bytes(stream)
    code, stdout, stderr = cli(["eval", "A(B|C)*", "-w", "10", "-n", "2", "--strategy", "fifo",
                                "--compare-exact", "--json", str(path)])
    assert_clean(code, stdout, stderr)


JOB = """name = "job"
characters = {chars}
[input]
path = "{path}"
timestamp = {timestamp}
[query]
regex = {regex}
window = {window}
[summary]
size = {size}
probabilities = {probabilities}
[evaluate]
at = {at}
exact = {exact}
[output]
path = "out"
"""
toml_values = st.sampled_from(['"x"', "1", "-1", "1.5", "true", '"yes"', "[]", "{}", '"[/x]"', '"A(B"', "{ A = 1 }",
                               '{ A = "x > 1" }', '"3 days"', '"0 days"', '"-3 days"', '"1.1 hours"', str(2**63),
                               '{ A = 0.5, B = 0.6 }', '{ AB = 1.0 }', "nan", '"end"', '"every 0 events"'])


@settings(max_examples=60, deadline=None)
@given(values=st.fixed_dictionaries({k: toml_values for k in
                                     ("chars", "timestamp", "regex", "window", "size", "probabilities", "at", "exact")}),
       bom=st.booleans(), garbage=st.sampled_from(["", "[input", "= 1", "\x00", "[[query]]\nregex = 1"]))
def test_job_files(tmp_path_factory, values, bom, garbage):
    """Malformed jobs fail when read, before Spark starts; the rest is left to the Spark tests."""
    from suse.spark.jobs.load import load_config

    path = tmp_path_factory.mktemp("j") / "job.toml"
    path.write_text(("\ufeff" if bom else "") + JOB.format(path="in", **values) + garbage, encoding="utf-8")
    try:
        load_config(path)
    except suse.SuseError:
        code, stdout, stderr = cli(["run", str(path)])
        assert_clean(code, stdout, stderr)
        assert code == 2


# --- the command line, as real processes --------------------------------------------------------
@settings(max_examples=6, deadline=None)
@given(stream=raw_files, query=st.sampled_from(["A(B|C)*", "A(B", "[/x]"]))
def test_cli_subprocess(stream, query):
    proc = subprocess.run([sys.executable, "-m", "suse", "exact", query, "-w", "10"], input=stream,
                          capture_output=True, env=ENV, timeout=60)
    assert_clean(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


@pytest.mark.parametrize("args", [["exact", "AB", "-w", "5", os.devnull], ["run", os.devnull]])
def test_cli_subprocess_empty_files(args):
    proc = run(*args)
    assert_clean(proc.returncode, proc.stdout, proc.stderr)
    assert proc.returncode == 2
