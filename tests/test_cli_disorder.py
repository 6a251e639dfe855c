"""`suse exact` / `suse eval` with --lateness, --late and a CSV `op` column, run in
a subprocess and checked against the oracle on the sorted, retraction-free stream."""
from __future__ import annotations

import random

import pytest

from helpers import run
from oracle import query_aggregate
from test_cli import run_json

# arrival order (file order): a@3 arrives after b@5; b@6 (value 4) is taken back
DISORDERED = "char,timestamp,value,op\na,1,2,+\nb,5,1,+\na,3,1,+\nb,6,4,+\nb,6,4,-\nb,7,1,+\n"
SORTED_KEPT = [("a", 1, 2), ("a", 3, 1), ("b", 5, 1), ("b", 7, 1)]


@pytest.fixture
def disordered(tmp_path):
    path = tmp_path / "late.csv"
    path.write_text(DISORDERED)
    return str(path)


def test_exact_with_lateness_and_retractions_equals_the_sorted_stream(disordered):
    out = run_json("exact", "a(b|c)*", disordered, "-w", "10", "--lateness", "3")
    want = query_aggregate("a(b|c)*", SORTED_KEPT, 10)
    assert (out["count"], out["sum"], out["partial_count"]) == (want["count"], want["sum"], want["partial_count"])
    assert (out["events"], out["late"]) == (4, 0)


def test_random_disordered_files_equal_the_oracle(tmp_path):
    rng = random.Random(11)
    for case in range(6):
        L = rng.randint(1, 4)
        t, events = 0, []
        for _ in range(12):
            t += rng.randint(0, 2)
            events.append((rng.choice("abcz"), t, rng.randint(0, 5)))
        arrival = sorted(range(len(events)), key=lambda i: (events[i][1] + rng.randint(0, L), i))
        rows, live, top = [], [], None
        for seq, i in enumerate(arrival):
            c, ts, v = events[i]
            rows.append(f"{c},{ts},{v},+")
            live.append((ts, seq, events[i]))
            top = ts if top is None else max(top, ts)
            if rng.random() < 0.3:
                newer = [x for x in live if x[0] > top - L]
                if newer:
                    victim = rng.choice(newer)[2]
                    rows.append(f"{victim[0]},{victim[1]},{victim[2]},-")
                    live.remove(max((x for x in live if x[2] == victim), key=lambda x: x[1]))
        path = tmp_path / f"case{case}.csv"
        path.write_text("char,timestamp,value,op\n" + "\n".join(rows) + "\n")
        kept = [x[2] for x in sorted(live, key=lambda x: (x[0], x[1]))]
        for policy in ("any", "contiguous"):
            out = run_json("exact", "a(b|c)*", str(path), "-w", "4", "--lateness", str(L), "--policy", policy)
            want = query_aggregate("a(b|c)*", kept, 4, policy)
            assert (out["count"], out["sum"], out["partial_count"]) == (want["count"], want["sum"], want["partial_count"])


def test_eval_takes_lateness_and_retractions(disordered):
    out = run_json("eval", "a(b|c)*", disordered, "-w", "10", "--lateness", "3", "-n", "10", "--strategy", "suse",
                   "--seed", "1", "--compare-exact")
    want = query_aggregate("a(b|c)*", SORTED_KEPT, 10)
    # a summary larger than the stream is exact
    assert (out["count"], out["sum"], out["exact_count"], out["exact_sum"]) == (want["count"], want["sum"]) * 2
    assert [(e["char"], e["timestamp"], e["value"]) for e in out["elements"]] == SORTED_KEPT


def test_late_count_and_errors(tmp_path, disordered):
    late = tmp_path / "later.csv"
    late.write_text("char,timestamp\na,10\nb,4\nb,11\n")
    proc = run("exact", "ab", str(late), "-w", "10", "--lateness", "3")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr == ("error: line 3: timestamp 4 is earlier than the horizon 7 (largest timestamp seen 10 - "
                           "lateness 3); --late count counts such events instead\n")
    out = run_json("exact", "ab", str(late), "-w", "10", "--lateness", "3", "--late", "count")
    assert (out["count"], out["late"], out["events"]) == (1, 1, 2)
    # retractions without --lateness, or with --evaluate-at; a bad op; an absent event
    for args, message in [
        ((), "error: line 6: a retraction (op '-') needs --lateness"),
        (("--lateness", "3", "--evaluate-at", "5"), "error: --evaluate-at is not supported with retractions"),
    ]:
        proc = run("exact", "ab", disordered, "-w", "10", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and proc.stderr.startswith(message), proc.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("char,timestamp,op\na,1,+\nb,2,x\n")
    proc = run("exact", "ab", str(bad), "-w", "10", "--lateness", "3")
    assert proc.returncode == 2 and proc.stderr == "error: line 3: op must be '+' (an event) or '-' (a retraction), got 'x'\n"
    absent = tmp_path / "absent.csv"
    absent.write_text("char,timestamp,op\na,1,+\nb,2,+\nb,3,-\n")
    proc = run("eval", "ab", str(absent), "-w", "10", "--lateness", "3", "-n", "2", "--strategy", "fifo")
    assert proc.returncode == 2 and proc.stderr == "error: line 4: cannot retract ('b', 3, 1): no such event was seen\n"
    final = tmp_path / "final.csv"
    final.write_text("char,timestamp,op\na,1,+\nb,9,+\na,1,-\n")
    proc = run("exact", "ab", str(final), "-w", "10", "--lateness", "3")
    assert proc.returncode == 2 and proc.stderr.startswith("error: line 4: cannot retract the event at timestamp 1: the horizon is 6")
    proc = run("exact", "--queries", str(bad), str(late), "-w", "10", "--lateness", "3")
    assert proc.returncode == 2 and "--lateness and --late apply to one query" in proc.stderr


def test_in_order_files_with_an_op_column_of_plus_rows_still_work(tmp_path):
    path = tmp_path / "plus.csv"
    path.write_text("char,timestamp,op\na,1,+\nb,2,+\n")
    assert run_json("exact", "ab", str(path), "-w", "10")["count"] == 1


def test_eval_inserts_late_events_at_their_place(tmp_path):
    """--placement insert: no buffer; a summary larger than the stream still ends exact, a
    small one stays within its size; '-' rows and other policies are refused in one line."""
    path = tmp_path / "late.csv"
    path.write_text("char,timestamp,value\na,1,2\nb,5,1\na,3,1\nb,7,1\na,6,3\nb,9,1\n")
    kept = [("a", 1, 2), ("a", 3, 1), ("b", 5, 1), ("a", 6, 3), ("b", 7, 1), ("b", 9, 1)]
    common = ("eval", "a(b|c)*", str(path), "-w", "10", "--lateness", "3", "--strategy", "suse", "--seed", "1",
              "--placement", "insert")
    out = run_json(*common, "-n", "10")
    want = query_aggregate("a(b|c)*", kept, 10)
    assert (out["count"], out["sum"]) == (want["count"], want["sum"])
    assert [(e["char"], e["timestamp"], e["value"]) for e in out["elements"]] == kept
    small = run_json(*common, "-n", "3")
    assert len(small["elements"]) == 3 and small["events"] == 6
    for bad, words in ((("-n", "3", "--policy", "next"), "placement"), (("-n", "3", "--placement", "sorted"), "sorted")):
        proc = run(*common, *bad)
        assert proc.returncode == 2 and words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    with_op = tmp_path / "op.csv"
    with_op.write_text("char,timestamp,op\na,1,+\nb,5,+\nb,5,-\n")
    proc = run("eval", "a(b|c)*", str(with_op), "-w", "10", "--lateness", "3", "-n", "3", "--strategy", "suse",
               "--placement", "insert")
    assert proc.returncode == 2 and "retract needs placement" in proc.stderr, proc.stderr
