"""The command line with awkward input, run in a subprocess as a user would: markup-like text,
closed pipes, directories, line numbers, byte-order marks, help texts and piped tables."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import ENV, run

BOM = "\ufeff"


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The run failed as bad input should: exit code 2, one line on stderr, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in proc.stderr + proc.stdout
    return lines[0]


# ------------------------------------------------------------------------------ 8: rich markup
@pytest.mark.parametrize("stream", ["[/x] 1 B 2", "A 1 [bold]B 2", "A 1 B [/]"])
def test_markup_in_a_stream_is_quoted_not_interpreted(stream):
    line = one_error_line(run("exact", "AB", "-w", "5", stdin=stream))
    token = stream.split()[[i for i, t in enumerate(stream.split()) if "[" in t][0]]
    assert repr(token) in line


@pytest.mark.parametrize("name", ["[/foo]x.txt", "data[old].csv", "[bold]b.txt"])
def test_markup_in_a_file_name_is_shown_as_typed(tmp_path, name):
    missing = str(tmp_path / name)
    assert repr(missing) in one_error_line(run("exact", "AB", "-w", "5", missing))


def test_markup_in_an_existing_file_name_and_its_content(tmp_path):
    path = tmp_path / "data[old].csv"
    path.write_text("char,timestamp\nA,1\n[red]B,2\n")
    assert one_error_line(run("exact", "AB", "-w", "5", str(path))) == (
        "error: line 3: character '[red]B' is not a single ASCII letter or digit"
    )


def test_markup_in_a_query_and_an_experiment_name():
    proc = run("compile", "A[/x]")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[1] == "A[/x]"  # the query under the message, as typed
    assert "'[/x]'" in one_error_line(run("experiment", "[/x]"))


# --------------------------------------------------------------------------- 9: a closed pipe
def _run_into_closed_pipe(*args: str, stdin: str) -> subprocess.CompletedProcess:
    """Like `suse ... | head -0`: the reader is gone before suse writes anything."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "suse", *args], input=stdin, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, env=ENV, timeout=60)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("n_evaluations", [1, 5000])  # flushed at exit / while writing
def test_a_closed_pipe_ends_quietly(n_evaluations):
    times = ",".join(str(i) for i in range(n_evaluations))
    proc = _run_into_closed_pipe("exact", "AB", "-w", "5", "--json", "--evaluate-at", times, stdin="A 1 B 2")
    assert proc.returncode == 141  # 128 + SIGPIPE, as a Unix tool killed by the pipe reports
    assert proc.stderr == ""


def test_head_reads_the_first_lines_and_suse_exits_quietly():
    times = ",".join(str(i) for i in range(20000))
    suse_proc = subprocess.Popen([sys.executable, "-m", "suse", "exact", "AB", "-w", "5", "--json",
                                  "--evaluate-at", times], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=ENV)
    suse_proc.stdin.write(b"A 1 B 2")
    suse_proc.stdin.close()
    first = suse_proc.stdout.readline()
    suse_proc.stdout.close()
    stderr = suse_proc.stderr.read().decode()
    suse_proc.wait(60)
    assert first == b"{\n"
    assert suse_proc.returncode in (0, 141) and stderr == ""


# ------------------------------------------------------------------- 10: directories and access
def test_a_directory_as_input(tmp_path):
    assert "Is a directory" in one_error_line(run("exact", "AB", "-w", "5", str(tmp_path)))
    assert "Is a directory" in one_error_line(run("run", str(tmp_path)))
    line = one_error_line(run("eval", "AB", "-w", "5", "-n", "3", "--strategy", "suse", "--probabilities",
                              str(tmp_path), stdin="A 1 B 2"))
    assert "Is a directory" in line


def test_a_file_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"char,timestamp\n\xe9,1\n")
    assert "cannot read" in one_error_line(run("exact", "AB", "-w", "5", str(path)))
    proc = subprocess.run([sys.executable, "-m", "suse", "exact", "AB", "-w", "5"], input=b"A 1 \xff 2",
                          capture_output=True, env=ENV, timeout=60)
    assert proc.returncode == 2 and proc.stderr.decode().startswith("error: cannot read standard input")


# ------------------------------------------------------------------ 11: 1-based lines of files
def test_positions_name_the_line_of_the_file(tmp_path):
    csv_path = tmp_path / "s.csv"
    csv_path.write_text("char,timestamp\nA,1\nB,2\n\nA,5\nB,3\n")  # the blank line 4 counts
    assert one_error_line(run("exact", "AB", "-w", "5", str(csv_path))) == (
        "error: line 6: timestamp 3 is earlier than the previous timestamp 5; timestamps must not decrease"
    )
    txt_path = tmp_path / "s.txt"
    txt_path.write_text("A 1 B 2\nA 5\nB 3\n")
    for args in (["exact", "AB", "-w", "5"], ["eval", "AB", "-w", "5", "-n", "2", "--strategy", "fifo"]):
        assert one_error_line(run(*args, str(txt_path))) == (
            "error: line 3, token 7: timestamp 3 is earlier than the previous timestamp 5; "
            "timestamps must not decrease"
        )


# --------------------------------------------------------------------- 12: a byte-order mark
def test_a_byte_order_mark_is_ignored(tmp_path):
    csv_path, txt_path, probs = tmp_path / "s.csv", tmp_path / "s.txt", tmp_path / "p.txt"
    csv_path.write_text(BOM + "char,timestamp\nA,1\nB,2\n", encoding="utf-8")
    txt_path.write_text(BOM + "A 1 B 2", encoding="utf-8")
    probs.write_text(BOM + "A 0.5 B 0.5", encoding="utf-8")
    for source in (str(csv_path), str(txt_path)):
        proc = run("exact", "AB", "-w", "5", "--json", source)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["count"] == 1
    proc = run("eval", "AB", "-w", "5", "-n", "2", "--strategy", "suse", "--probabilities", str(probs),
               "--json", stdin=BOM + "A 1 B 2")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["count"] == 1


# ---------------------------------------------------------------------------- 13: help texts
def test_help_and_usage_lines():
    short, long = run("exact", "-h"), run("exact", "--help")
    assert short.returncode == 0 and short.stdout == long.stdout
    assert "Usage: suse exact [OPTIONS] QUERY [FILE]" in short.stdout
    assert "{" not in short.stdout and "<str>" not in short.stdout
    assert "optimises" not in short.stdout  # --aggregate means nothing to the exact engine
    assert run("-h").returncode == 0 and "Commands:" in run("-h").stdout
    assert "optimises" in run("eval", "-h").stdout  # ... but it does to a summary


@pytest.mark.parametrize(
    "args, message",
    [
        (["--strategy", "lifo"], "error: Invalid value for '--strategy': 'lifo' is not one of 'suse', 'present', "
                                 "'fifo', 'random', 'adaptive' (see 'suse eval -h')"),
        (["--strategy", "suse", "--size", "abc"], "error: Invalid value for '--size' / '-n': 'abc' is not an integer "
                                                  "(see 'suse eval -h')"),
        (["--strategy", "suse", "--seed", "-1"], "error: Invalid value for '--seed': must be at least 0, got -1 "
                                                 "(see 'suse eval -h')"),
    ],
)
def test_bad_options_speak_plainly(args, message):
    base = ["eval", "AB", "-w", "5"] + (["-n", "3"] if "--size" not in args else [])
    line = one_error_line(run(*base, *args, stdin="A 1 B 2"))
    assert line == message
    assert "Value error" not in line and "Input should" not in line


def test_window_option_errors():
    assert "'1.5' is not an integer" in one_error_line(run("exact", "AB", "-w", "1.5", stdin="A 1"))
    assert "must be at least 0, got -1" in one_error_line(run("exact", "AB", "-w", "-1", stdin="A 1"))
    assert "is too large" in one_error_line(run("exact", "AB", "-w", str(2**70), stdin="A 1"))
    assert "Missing argument 'QUERY'" in one_error_line(run("exact"))


def test_a_tab_in_the_query_keeps_the_caret_under_the_problem():
    proc = run("compile", "A\tB(")
    assert proc.returncode == 2
    message, query, caret = (line.expandtabs() for line in proc.stderr.splitlines())
    assert message.startswith("query error: ") and query == "A\tB(".expandtabs()
    assert caret.index("^") == query.index("(")  # under the '(', with tabs expanded as a terminal does


def test_eval_prints_the_seed_it_drew():
    proc = run("eval", "AB", "-w", "5", "-n", "2", "--strategy", "random", stdin="A 1 B 2 A 3 B 4")
    assert proc.returncode == 0, proc.stderr
    seed = int(proc.stdout.split("seed ")[1].split()[0])
    again = run("eval", "AB", "-w", "5", "-n", "2", "--strategy", "random", "--seed", str(seed), "--json",
                stdin="A 1 B 2 A 3 B 4")
    assert json.loads(again.stdout)["seed"] == seed


def test_unknown_experiment_is_one_line():
    assert one_error_line(run("experiment", "nope")).startswith("error: unknown experiment 'nope'; choose one of")


def test_piped_tables_are_not_cut():
    # No COLUMNS: a pipe used to get 80 columns, and wide counts and headers were cut.
    env = {k: v for k, v in ENV.items() if k != "COLUMNS"}
    stream = " ".join(f"A {i}" for i in range(300))
    proc = subprocess.run([sys.executable, "-m", "suse", "exact", "A+", "-w", "1000", "--evaluate-at", "299"],
                          input=stream, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert str(2**300 - 1) in proc.stdout and "…" not in proc.stdout
    assert "partial_count" in proc.stdout


def test_json_keys_keep_a_meaningful_order():
    proc = run("exact", "AB", "-w", "5", "--json", "--evaluate-at", "2", stdin="A 1 B 2")
    data = json.loads(proc.stdout)
    assert list(data) == ["count", "sum", "avg", "partial_count", "skipped", "events", "evaluations"]
    assert list(data["evaluations"][0]) == ["timestamp", "count", "sum", "avg", "partial_count"]
    proc = run("eval", "AB", "-w", "5", "-n", "2", "--strategy", "fifo", "--json", stdin="A 1 B 2")
    assert list(json.loads(proc.stdout))[:4] == ["count", "sum", "avg", "partial_count"]


def test_evaluations_come_back_in_the_order_given():
    proc = run("exact", "AB", "-w", "5", "--json", "--evaluate-at", "4,2", stdin="A 1 B 2 A 3 B 4")
    assert [e["timestamp"] for e in json.loads(proc.stdout)["evaluations"]] == [4, 2]
