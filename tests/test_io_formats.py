"""Readers for the text, CSV and probability formats, and every error they report."""
from __future__ import annotations

import io

import numpy as np
import pytest

from suse.errors import InputError
from suse.io.formats import (
    Events,
    read_csv_stream,
    read_probabilities,
    read_stream,
    read_text_stream,
)


# ------------------------------------------------------------------ Events
def test_events_columns_and_iteration():
    ev = Events("AB", [1, 2], [5, 6])
    assert ev.timestamps.dtype == np.int64 and ev.values.dtype == np.int64
    assert len(ev) == 2
    assert list(ev) == [("A", 1, 5), ("B", 2, 6)]
    assert list(Events("A", [3])) == [("A", 3, None)]
    assert Events("AB", [1, 2]) == Events("AB", np.array([1, 2]))
    assert Events("AB", [1, 2]) != Events("AB", [1, 2], [0, 0])


def test_events_length_mismatch():
    with pytest.raises(InputError, match="lengths differ"):
        Events("AB", [1])


# ------------------------------------------------------------------ text
def test_text_stream_pairs_may_wrap_lines():
    ev = read_text_stream("A 0 B 1\n  A\n2\n")
    assert ev.chars == "ABA"
    assert ev.timestamps.tolist() == [0, 1, 2]
    assert ev.values is None


def test_text_stream_negative_and_unsorted_timestamps_are_allowed():
    # Ordering is the engine's job; the reader keeps what it is given.
    assert read_text_stream("A 5 B -3").timestamps.tolist() == [5, -3]


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("", "empty stream"),
        ("  \n\n", "empty stream"),
        ("A 0 B", r"odd number of tokens \(3\): 'B' at line 1, token 3"),
        ("A 0\nAB 1", r"line 2, token 3: character 'AB' is not a single ASCII"),
        ("A 0 - 1", r"line 1, token 3: character '-'"),
        ("A 0 é 1", r"token 3: character 'é'"),
        ("A 0 B x", r"line 1, token 4: timestamp 'x' is not an integer"),
        ("A 1.5", r"token 2: timestamp '1.5' is not an integer"),
        ("A 1_000", r"timestamp '1_000' is not an integer"),
        ("A nan", r"token 2: timestamp is NaN"),
        ("A 99999999999999999999", r"does not fit in 64 bits"),
    ],
)
def test_text_stream_errors(text, pattern):
    with pytest.raises(InputError, match=pattern):
        read_text_stream(text)


# ------------------------------------------------------------------ CSV
def test_csv_with_values_and_extra_columns():
    ev = read_csv_stream(" Char , timestamp,value,note\nA,1,5,x\n\nB, 2 ,0,y\n")
    assert ev == Events("AB", [1, 2], [5, 0])


def test_csv_without_value_column():
    ev = read_csv_stream("timestamp,char\n7,Z\n")
    assert ev == Events("Z", [7])


def test_csv_from_path(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("char,timestamp,value\nA,0,1\nB,1,2\n")
    expected = Events("AB", [0, 1], [1, 2])
    assert read_csv_stream(p) == expected
    assert read_csv_stream(str(p)) == expected


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("", "no header row"),
        ("char,timestamp\n", "header but no rows"),
        ("char,time\nA,1\n", r"line 1: missing column 'timestamp' \(header has char, time\)"),
        ("timestamp\n1\n", r"missing column 'char'"),
        ("char,char,timestamp\nA,A,1\n", r"column 'char' appears more than once"),
        ("char,timestamp\nA,1\nB\n", r"line 3: expected 2 fields, found 1"),
        ("char,timestamp\nA,1\nBB,2\n", r"line 3: character 'BB'"),
        ("char,timestamp\n,1\n", r"line 2: character ''"),
        ("char,timestamp\nA,soon\n", r"line 2: timestamp 'soon' is not an integer"),
        ("char,timestamp,value\nA,1,2.5\n", r"line 2: value '2.5' is not an integer"),
        ("char,timestamp,value\nA,1,-4\n", r"line 2: value -4 is negative"),
        ("char,timestamp,value\nA,1,NaN\n", r"line 2: value is NaN"),
        ("char,timestamp,value\nA,1,\n", r"line 2: value is missing"),
        ("char,timestamp\nA,NaN\n", r"line 2: timestamp is NaN"),
        ('char,timestamp\n"A,1\n', r"line 2: expected 2 fields, found 1"),  # open quote
        # a long field is quoted by a short prefix and its length
        ("char,timestamp\n" + "A" * 200_000 + ",1\n", r"line 2: character 'A{40}'… \(200,000 characters\) is not"),
    ],
)
def test_csv_errors(text, pattern):
    with pytest.raises(InputError, match=pattern):
        read_csv_stream(text)


def test_csv_missing_file_names_the_path(tmp_path):
    with pytest.raises(InputError, match="cannot read .*nope.csv"):
        read_csv_stream(str(tmp_path / "nope.csv"))


# ------------------------------------------------------------------ read_stream
def test_read_stream_auto_detects(tmp_path):
    csv_file = tmp_path / "a.csv"
    csv_file.write_text("\nchar,timestamp\nA,3\n")
    txt_file = tmp_path / "a.txt"
    txt_file.write_text("A 3\n")
    assert read_stream(csv_file) == read_stream(txt_file) == Events("A", [3])
    assert read_stream(txt_file, fmt="text") == Events("A", [3])
    with pytest.raises(InputError, match="token 1: character 'char,timestamp'"):
        read_stream(csv_file, fmt="text")


def test_read_stream_from_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("B 1 C 2"))
    assert read_stream("-") == Events("BC", [1, 2])


def test_read_stream_bad_format_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="unknown stream format 'json'"):
        read_stream("-", fmt="json")
    with pytest.raises(InputError, match="cannot read"):
        read_stream(tmp_path / "missing.txt")


# ------------------------------------------------------------------ probabilities
def test_probabilities():
    assert read_probabilities("A 0.25 B 0.75") == {"A": 0.25, "B": 0.75}
    assert read_probabilities("A 1\nB 0") == {"A": 1.0, "B": 0.0}
    assert read_probabilities("A 0.3333333 B 0.6666667")["A"] == 0.3333333


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("", "empty probabilities"),
        ("A 0.5 B", "odd number of tokens"),
        ("A 0.5 B 0.6", r"must sum to 1 \(within 1e-6\), they sum to 1\.1"),
        ("A 0.5 B 0.4", r"sum to 0\.9"),
        ("A 1 A 0", r"token 3: character 'A' appears twice"),
        ("A half", r"token 2: probability 'half' is not a number"),
        ("A nan", r"probability 'nan' is not finite"),
        ("A inf", r"probability 'inf' is not finite"),
        ("A 1.5 B -0.5", r"token 4: probability -0.5 is negative"),
        ("AB 1", r"character 'AB'"),
    ],
)
def test_probability_errors(text, pattern):
    with pytest.raises(InputError, match=pattern):
        read_probabilities(text)
