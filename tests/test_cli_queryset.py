"""`suse exact --queries FILE` and `suse eval --queries FILE`, in a subprocess."""
from __future__ import annotations

import pathlib

import pytest

from helpers import run
from test_cli import EXAMPLE4, FIGURE2, run_json

RULES = "# paper queries\nfour = A(B*C)*D\nfig2 = AB*C\n\nboth = A(B|C)*\n"


@pytest.fixture
def rules(tmp_path: pathlib.Path) -> str:
    path = tmp_path / "rules.txt"
    path.write_text(RULES)
    return str(path)


def _alone(command: str, query: str, *args: str, stdin: str) -> dict:
    return run_json(command, query, *args, stdin=stdin)


def test_exact_prints_one_row_per_query_equal_to_single_runs(rules):
    got = run_json("exact", "--queries", rules, "-", "-w", "5", "--evaluate-at", "4,9", stdin=FIGURE2)
    assert list(got["queries"]) == ["four", "fig2", "both"] and got["events"] == 10
    for name, regex in [("four", "A(B*C)*D"), ("fig2", "AB*C"), ("both", "A(B|C)*")]:
        alone = _alone("exact", regex, "-w", "5", "--evaluate-at", "4,9", stdin=FIGURE2)
        row = got["queries"][name]
        assert row["regex"] == regex
        assert {k: row[k] for k in ("count", "sum", "avg", "partial_count", "skipped")} == \
            {k: alone[k] for k in ("count", "sum", "avg", "partial_count", "skipped")}
        assert row["evaluations"] == alone["evaluations"]
    table = run("exact", "--queries", rules, "-", "-w", "5", stdin=FIGURE2)
    assert table.returncode == 0, table.stderr
    assert [line.split()[0] for line in table.stdout.splitlines()[3:]] == ["four", "fig2", "both"]


def test_exact_reads_the_stream_file_as_the_one_positional(rules, tmp_path):
    stream = tmp_path / "ex4.txt"
    stream.write_text(EXAMPLE4)
    got = run_json("exact", "--queries", rules, str(stream), "-w", "10")
    assert got["queries"]["four"]["count"] == _alone("exact", "A(B*C)*D", "-w", "10", stdin=EXAMPLE4)["count"]


def test_eval_runs_one_summary_per_query(rules):
    got = run_json("eval", "--queries", rules, "-", "-w", "6", "-n", "3", "--strategy", "suse", "--seed", "4",
                   "--compare-exact", stdin=FIGURE2)
    for name, regex in [("four", "A(B*C)*D"), ("fig2", "AB*C"), ("both", "A(B|C)*")]:
        alone = _alone("eval", regex, "-w", "6", "-n", "3", "--strategy", "suse", "--seed", "4", "--compare-exact",
                       stdin=FIGURE2)
        row = got["queries"][name]
        for key in ("count", "sum", "detected_count", "elements", "exact_count", "exact_sum"):
            assert row[key] == alone[key], key
    assert got["seed"] == 4


@pytest.mark.parametrize("text, message", [
    ("four = A(B*C)*D\nnot a rule\n", "rules.txt: line 2: expected `name = regex`"),
    ("x = A(B\n", "rules.txt: line 1: "),
    ("x = AB\nx = BA\n", "line 2: query 'x' is defined twice"),
    ("", "no queries"),
])
def test_bad_query_files_are_one_line_and_exit_2(tmp_path, text, message):
    path = tmp_path / "rules.txt"
    path.write_text(text)
    proc = run("exact", "--queries", str(path), "-", "-w", "3", stdin=FIGURE2)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_query_and_stream_with_queries_or_neither_are_refused(rules, tmp_path):
    proc = run("exact", "--queries", rules, "AB", "stream.txt", "-w", "3")
    assert proc.returncode == 2 and "give only the stream FILE" in proc.stderr
    proc = run("exact", "--queries", rules, "-w", "3", stdin=FIGURE2)  # the stream argument is required
    assert proc.returncode == 2 and "Missing argument 'QUERY'" in proc.stderr
    proc = run("exact", "--queries", str(tmp_path / "nope.txt"), "-", "-w", "3", stdin=FIGURE2)
    assert proc.returncode == 2 and "cannot read queries" in proc.stderr
    proc = run("eval", "--queries", rules, "-", "-w", "3", "-n", "2", "--strategy", "fifo", "--probabilities", rules,
               stdin=FIGURE2)
    assert proc.returncode == 2 and "--probabilities" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_stream_line_is_named(rules):
    proc = run("exact", "--queries", rules, "-", "-w", "3", stdin="A 2 B 1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "timestamp" in proc.stderr


@pytest.mark.parametrize("command, extra", [("exact", []), ("eval", ["-n", "3", "--strategy", "suse", "--seed", "2"])])
def test_aggregate_of_and_max_missing_apply_to_every_query_of_the_file(rules, command, extra):
    flags = ["-w", "5", "--aggregate", "max", "--of", "AC", "--max-missing", "1", *extra]
    got = run_json(command, "--queries", rules, "-", *flags, stdin=FIGURE2)
    fields = ("count", "sum", "min", "max", "count_by_missing")
    for name, regex in [("four", "A(B*C)*D"), ("fig2", "AB*C"), ("both", "A(B|C)*")]:
        alone = _alone(command, regex, *flags, stdin=FIGURE2)
        assert {k: got["queries"][name][k] for k in fields} == {k: alone[k] for k in fields}, name
    table = run(command, "--queries", rules, "-", *flags, stdin=FIGURE2)
    assert table.returncode == 0, table.stderr
    assert "count_by_missing" in table.stdout and "max" in table.stdout
    # --of names letters every query must have: the line of the one that lacks them (a query error)
    proc = run(command, "--queries", rules, "-", "-w", "5", "--of", "D", *extra, stdin=FIGURE2)
    assert proc.returncode == 2 and "line 3: of names 'D'" in proc.stderr and "Traceback" not in proc.stderr
