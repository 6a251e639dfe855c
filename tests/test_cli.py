"""The `suse compile | exact | eval` commands, run as a user would: in a subprocess."""
from __future__ import annotations

import json
import pathlib
import sys

import pytest

import suse
from helpers import run

EXAMPLE4 = "A 1 B 2 A 3 D 4 B 5 C 6 D 7"  # paper example 4, query A(B*C)*D
EXAMPLE4_CSV = "char,timestamp,value\nA,1,5\nB,2,3\nA,3,2\nD,4,1\nB,5,7\nC,6,3\nD,7,8\n"
FIGURE2 = "A 1 A 2 B 3 D 4 B 5 C 6 A 7 B 8 C 9 A 10"  # paper figure 2, query AB*C
def run_json(*args: str, stdin: str | None = None) -> dict:
    proc = run(*args, "--json", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def files(tmp_path: pathlib.Path) -> dict[str, str]:
    contents = {
        "ex4.txt": EXAMPLE4,
        "ex4.csv": EXAMPLE4_CSV,
        "fig2.txt": FIGURE2,
        "probs": "A 0.25 B 0.25 C 0.25 D 0.25",
        "bad_probs": "A 0.5 X 0.5",
        "decreasing.txt": "A 2 B 1",
        "bad.csv": "char,timestamp\nA,soon\n",
    }
    for name, text in contents.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in contents}


# ------------------------------------------------------------------------------------- compile
def test_compile_table():
    proc = run("compile", "A(B*C)*D")
    assert proc.returncode == 0, proc.stderr
    assert "4 states, start 0, finals 3" in proc.stdout


def test_compile_dot_of_a_stage():
    proc = run("compile", "A(B*C)*D", "--dot")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("digraph") and "doublecircle" in proc.stdout
    thompson = run("compile", "A(B*C)*D", "--dot", "--stage", "thompson").stdout
    assert "digraph" in thompson and "ε" in thompson


# --------------------------------------------------------------------------------------- exact
def test_exact_paper_example_4_from_stdin():
    proc = run("exact", "A(B*C)*D", "--window", "1000", stdin=EXAMPLE4)
    assert proc.returncode == 0, proc.stderr
    assert " 10 " in proc.stdout.splitlines()[-1]  # the "stream" row: count 10
    data = run_json("exact", "A(B*C)*D", "--window", "1000", stdin=EXAMPLE4)
    assert data["count"] == 10 and data["events"] == 7 and data["skipped"] == 0


def test_exact_values_csv_and_evaluations(files):
    data = run_json("exact", "A(B*C)*D", "-w", "1000", "--evaluate-at", "3,4,7", files["ex4.csv"])
    assert {"count", "sum", "avg", "partial_count", "skipped", "events", "evaluations"} <= data.keys()
    assert (data["count"], data["sum"], data["partial_count"]) == (10, 149, 12)
    assert data["avg"] == pytest.approx(14.9)
    q = suse.Query("A(B*C)*D", 1000)
    expected = suse.exact(q, chars="ABADBCD", timestamps=range(1, 8), values=[5, 3, 2, 1, 7, 3, 8], evaluate_at=[3, 4, 7])
    got = [(e["timestamp"], e["count"], e["sum"], e["partial_count"]) for e in data["evaluations"]]
    assert got == [(e.timestamp, e.count, e.sum, e.partial_count) for e in expected.evaluations]


def test_exact_counts_beyond_64_bits_are_json_integers():
    # A+ over 70 A's within the window: 2**70 - 1 matches.
    stream = " ".join(f"A {i}" for i in range(70))
    assert run_json("exact", "A+", "-w", "1000", stdin=stream)["count"] == 2**70 - 1


def test_console_script(files):
    script = pathlib.Path(sys.executable).parent / "suse"
    proc = run("exact", "A(B*C)*D", "-w", "1000", "--json", files["ex4.txt"], exe=[str(script)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["count"] == 10


# ---------------------------------------------------------------------------------------- eval
def test_eval_large_summary_matches_exact_everywhere(files):
    data = run_json("eval", "A(B*C)*D", "-w", "1000", "--size", "10", "--strategy", "suse", "--seed", "7",
                    "--evaluate-at", "2,4,6,7", "--compare-exact", files["ex4.csv"])
    for key in ("count", "sum", "avg", "partial_count", "detected_count", "detected_sum", "elements",
                "evaluations", "events", "skipped", "evictions", "events_per_second"):
        assert key in data
    assert len(data["evaluations"]) == 4
    for ev in data["evaluations"]:
        assert ev["count"] == ev["exact_count"] and ev["sum"] == ev["exact_sum"]
    assert (data["count"], data["sum"], data["evictions"]) == (10, 149, 0)
    assert data["elements"][0] == {"char": "A", "timestamp": 1, "value": 5}


def test_eval_fifo_on_figure_2():
    data = run_json("eval", "AB*C", "-w", "1000", "--size", "5", "--strategy", "fifo", stdin=FIGURE2)
    assert data["count"] == 2
    assert [(e["char"], e["timestamp"]) for e in data["elements"]] == [("C", 6), ("A", 7), ("B", 8), ("C", 9), ("A", 10)]
    assert data["skipped"] == 1 and data["evictions"] == 4


def test_eval_adaptive_on_figure_2():
    data = run_json("eval", "AB*C", "-w", "1000", "--size", "5", "--strategy", "adaptive", stdin=FIGURE2)
    assert data["count"] == 8  # the best any 5 elements hold; suse keeps 0 (tests/test_summary.py)
    assert [(e["char"], e["timestamp"]) for e in data["elements"]] == [("A", 1), ("A", 2), ("B", 3), ("B", 5), ("C", 6)]


def test_eval_with_probabilities_and_human_output(files):
    proc = run("eval", "A(B*C)*D", "-w", "1000", "--size", "3", "--strategy", "suse", "--seed", "1",
               "--probabilities", files["probs"], "--compare-exact", files["ex4.txt"])
    assert proc.returncode == 0, proc.stderr
    assert "retained (3):" in proc.stdout and "exact_count" in proc.stdout


# -------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "args, message",
    [
        (["compile", "A(B"], "unclosed '('"),
        (["exact", "AB", "-w", "5", "{decreasing.txt}"], "timestamps must not decrease"),
        (["exact", "AB", "-w", "5", "/no/such/file"], "/no/such/file"),
        (["exact", "AB", "-w", "5", "{bad.csv}"], "'soon' is not an integer"),
        (["exact", "AB", "-w", "-1", "{ex4.txt}"], "--window"),
        (["exact", "AB", "-w", "5", "--evaluate-at", "1,x", "{ex4.txt}"], "'x' is not an integer"),
        (["eval", "AB", "-w", "5", "--size", "0", "--strategy", "suse", "{ex4.txt}"], "--size"),
        (["eval", "AB", "-w", "5", "--size", "3", "--strategy", "lifo", "{ex4.txt}"], "'lifo' is not one of"),
        (["eval", "AB", "-w", "5", "--size", "3", "--strategy", "suse", "--probabilities", "{bad_probs}", "{ex4.txt}"],
         "not a character of the query"),
    ],
    ids=["query", "decreasing", "missing-file", "bad-csv", "negative-window", "evaluate-at", "size-0",
         "strategy", "probabilities"],
)
def test_bad_input_exits_2_with_a_message(files, args, message):
    proc = run(*[files[a[1:-1]] if a.startswith("{") else a for a in args])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    if args[1] == "A(B":
        assert "A(B\n ^" in proc.stderr  # caret under the unclosed parenthesis
