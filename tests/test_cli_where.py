"""``suse exact --where 'B: condition'``: attributes from a CSV's extra columns, counted as the
brute-force oracle counts them (tests/oracle.py's ``where_aggregate``); bad conditions and
attributes are one line and exit code 2."""
from __future__ import annotations

import json

import pytest

from helpers import run
from oracle import where_aggregate
from suse.io import formats
from suse.io.formats import attribute_value, iter_stream

RISING = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p AND C.tag <> A.tag"}
# NULL prices (empty fields), ties, decimals and strings (the tag column)
ROWS = [("A", 1, 5, "1", "x"), ("B", 2, 3, "2", "x"), ("B", 2, 2, "1.5", ""), ("A", 3, 1, "", "y"),
        ("B", 4, 1, "3", "y"), ("B", 5, 4, "2.5", "x"), ("C", 6, 3, "0", "y"), ("B", 7, 2, "4", "x"),
        ("C", 8, 8, "", "x"), ("C", 9, 6, "3.5", "z")]


def csv_text(rows=ROWS) -> str:
    return "char,timestamp,value,p,tag\n" + "".join(f"{c},{t},{v},{p},{tag}\n" for c, t, v, p, tag in rows)


def oracle_events(rows=ROWS):
    return [(c, t, v, {"p": attribute_value(p), "tag": attribute_value(tag)}) for c, t, v, p, tag in rows]


def test_exact_with_conditions_equals_the_oracle(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(csv_text())
    args = [f"{letter}: {condition}" for letter, condition in RISING.items()]
    proc = run("exact", "AB+C", "-w", "6", str(path), "--evaluate-at", "6,9", "--json",
               *[x for a in args for x in ("--where", a)])
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    events = oracle_events()
    whole = where_aggregate("AB+C", events, 6, RISING)
    assert (out["count"], out["sum"]) == (whole["count"], whole["sum"]) and whole["count"] > 0
    for ev in out["evaluations"]:
        at = where_aggregate("AB+C", events, 6, RISING, at=ev["timestamp"])
        assert (ev["count"], ev["sum"]) == (at["count"], at["sum"])
    plain = json.loads(run("exact", "AB+C", "-w", "6", str(path), "--json").stdout)
    assert plain["count"] > out["count"]  # the conditions drop matches: they are not ignored


def test_attributes_go_across_the_pieces_of_a_stream(tmp_path, monkeypatch):
    path = tmp_path / "s.csv"
    path.write_text(csv_text())
    monkeypatch.setattr(formats, "BLOCK_BYTES", 16)  # a piece of one or two rows
    pieces = list(iter_stream(str(path), "csv", ["p", "tag"]))
    assert len(pieces) > 3
    whole = formats.Events.concat(pieces)
    assert whole.attributes == {"p": [attribute_value(r[3]) for r in ROWS], "tag": [attribute_value(r[4]) for r in ROWS]}
    assert whole[2:4].attributes == {"p": [attribute_value("1.5"), None], "tag": [None, "y"]}


@pytest.mark.parametrize("where, stdin, message", [
    (["B: B.p > LAST(B.p"], None, "query error: condition of B: expected ')' to close LAST("),
    (["B B.p > 1"], None, "error: --where 'B B.p > 1': expected 'LETTER: CONDITION'"),
    (["B: B.p > 1", "B: B.p < 3"], None, "error: --where: two conditions for B; join them with AND"),
    (["D: D.p > 1"], None, "query error: condition of D:"),
    (["B: B.volume > 1"], None, "error: line 1: missing column 'volume', which a condition reads"),
    (["B: B.p > 1"], "A 1 B 2 C 3\n", "error: the conditions read attributes ('p') from CSV columns"),
])
def test_bad_conditions_are_one_line_and_exit_2(tmp_path, where, stdin, message):
    path = tmp_path / "s.csv"
    path.write_text(csv_text())
    proc = run("exact", "AB+C", "-w", "6", "-" if stdin else str(path), *[x for w in where for x in ("--where", w)],
               stdin=stdin)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr
