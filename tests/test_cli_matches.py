"""`suse matches`: the matches, a sample, and bad input as one line with exit code 2."""
from __future__ import annotations

import json

import pytest

import suse
from helpers import run

STREAM = "A 1 B 2 B 3 C 4 x 5 A 6 C 7"


def test_lists_every_match_with_positions_and_events():
    r = run("matches", "AB*C", "-w", "10", stdin=STREAM)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    q = suse.Query("AB*C", 10)
    events = [(c, int(t)) for c, t in zip(STREAM.split()[::2], STREAM.split()[1::2])]
    want = list(suse.matches(q, events))
    assert [tuple(map(int, line.split("\t")[0].split())) for line in lines] == want
    assert lines[0] == "0 1 2 3\tA@1 B@2 B@3 C@4"
    assert run("matches", "AB*C", "-w", "10", "--limit", "2", stdin=STREAM).stdout.splitlines() == lines[:2]


def test_contiguity_counts_every_event_of_the_stream():
    r = run("matches", "AC", "-w", "10", "--policy", "contiguous", "--json", stdin=STREAM)
    assert [json.loads(line)["positions"] for line in r.stdout.splitlines()] == [[5, 6]]


def test_sample_is_repeatable_and_drawn_from_the_matches():
    args = ("matches", "AB*C", "-w", "10", "--sample", "20", "--seed", "5", "--json")
    first = run(*args, stdin=STREAM)
    assert first.returncode == 0, first.stderr
    assert first.stdout == run(*args, stdin=STREAM).stdout
    every = {tuple(json.loads(x)["positions"]) for x in run("matches", "AB*C", "-w", "10", "--json", stdin=STREAM).stdout.splitlines()}
    drawn = [tuple(json.loads(x)["positions"]) for x in first.stdout.splitlines()]
    assert len(drawn) == 20 and set(drawn) <= every


def test_missing_letters_are_reported():
    r = run("matches", "ABC", "-w", "10", "--max-missing", "1", stdin="A 1 C 2")
    assert r.stdout.splitlines() == ["0 1\tA@1 C@2\tmissing 1"]


@pytest.mark.parametrize("args, stdin, message", [
    (["--limit", "2", "--sample", "3"], STREAM, "give --limit or --sample, not both"),
    (["--seed", "3"], STREAM, "--seed goes with --sample"),
    (["--sample", "1"], "B 1", "there is no match to sample from"),
    ([], "A 3 B 2", "line 1, token 3: timestamp 2 is earlier"),
    (["--limit", "-1"], STREAM, "must be at least 0"),
])
def test_bad_input_exits_2_with_one_line(args, stdin, message):
    r = run("matches", "AB*C", "-w", "10", *args, stdin=stdin)
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_conditions_read_the_csv_columns():
    csv = "char,timestamp,p\nA,1,0\nB,2,2\nB,3,1\nC,4,0\n"
    rising = ("--where", "B: LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "--where", "C: C.p < B.p")
    r = run("matches", "A B+ C", "-", "-w", "10", *rising, stdin=csv)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0 1 3\tA@1 B@2 C@4", "0 2 3\tA@1 B@3 C@4"]
    bad = run("matches", "A B+ C", "-", "-w", "10", "--where", "B: B.q > 1", stdin=csv)
    assert bad.returncode == 2 and "missing column 'q'" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_a_negation_at_the_end_lists_what_exact_counts():
    # A0 B2 B4 A5 C8 B12 B13, window 10: the C refutes A0's sets; A5's close at 15.
    stdin = "A 0 B 2 B 4 A 5 C 8 B 12 B 13"
    r = run("matches", "A B+ !C", "-w", "10", stdin=stdin)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["3 5\tA@5 B@12", "3 5 6\tA@5 B@12 B@13", "3 6\tA@5 B@13"]
    counted = run("exact", "A B+ !C", "-w", "10", stdin=stdin)
    assert "│     3 │" in counted.stdout, counted.stdout
    drawn = run("matches", "A B+ !C", "-w", "10", "--sample", "5", "--seed", "2", "--json", stdin=stdin)
    assert {tuple(json.loads(x)["positions"]) for x in drawn.stdout.splitlines()} <= {(3, 5), (3, 5, 6), (3, 6)}
    refused = run("matches", "A B+ !C", "-w", "10", "--policy", "next", stdin=stdin)
    assert refused.returncode == 2 and "policy 'next' is not supported with a negation at the end" in refused.stderr
    assert "Traceback" not in refused.stderr
