"""Issue 26, items 3, 4 and 7: the command line reads its input in pieces (memory flat in the
stream's length, endless and binary input refused in one line), numbers are ASCII integers of at
most 64 bits, and evaluation times are answered across pieces exactly as one call would."""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import suse
from helpers import ENV, run
from suse.cli.feed import engine_feed, play
from suse.cli.multi_cmds import set_feed
from suse.io import formats
from suse.io.formats import iter_stream, read_csv_stream, read_text_stream
from test_cli_hardening import one_error_line


# ------------------------------------------------------------------ pieces equal the whole
def _text(chars: str, stamps: list[int], wrap: int) -> str:
    tokens = [t for c, s in zip(chars, stamps) for t in (c, str(s))]
    return "\n".join(" ".join(tokens[i:i + wrap]) for i in range(0, len(tokens), wrap)) + "\n"


events = st.lists(st.tuples(st.sampled_from("ABCX"), st.integers(0, 3), st.integers(0, 9)), min_size=1, max_size=60)


def _stamps(steps: list[int]) -> list[int]:
    return np.cumsum(steps).tolist()


@settings(max_examples=40, deadline=None)
@given(events, st.integers(1, 40), st.integers(1, 7))
def test_pieces_read_what_one_read_does(evs, block, wrap):
    chars = "".join(c for c, _, _ in evs)
    stamps, values = _stamps([s for _, s, _ in evs]), [v for _, _, v in evs]
    text, table = _text(chars, stamps, wrap), _csv_rows(chars, stamps, values)
    assert read_text_stream(text) == suse.io.Events(chars, stamps)
    assert read_csv_stream(table) == suse.io.Events(chars, stamps, values)
    with _blocks_of(block):
        for stream, whole in ((text, suse.io.Events(chars, stamps)), (table, suse.io.Events(chars, stamps, values))):
            assert suse.io.Events.concat(_pieces_of(stream)) == whole


def test_a_stream_comes_in_pieces():
    text = _text("AB" * 500, list(range(1000)), 6)
    with _blocks_of(100):
        pieces = _pieces_of(text)
    assert len(pieces) >= len(text) // 100 - 1 and suse.io.Events.concat(pieces) == read_text_stream(text)


def _csv_rows(chars: str, stamps: list[int], values: list[int]) -> str:
    """CSV with a quoted header name, quoted chars, a note column whose quoted fields hold
    commas, doubled quotes and newlines, and blank lines: a record does not end at every newline."""
    lines = ['char,"no""te",timestamp,value']
    for i, (c, s, v) in enumerate(zip(chars, stamps, values)):
        char = f'"{c}"' if i % 3 == 0 else c
        note = '"a,""\nb"' if i % 5 == 0 else '""">x"' if i % 5 == 1 else "x"
        lines.append(f"{char},{note},{s},{v}" + ("\n" if i % 4 == 0 else ""))
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _blocks_of(n: int):
    """Read in blocks of n bytes (the stream then comes in many small pieces)."""
    old, formats.BLOCK_BYTES = formats.BLOCK_BYTES, n
    try:
        yield
    finally:
        formats.BLOCK_BYTES = old


def _pieces_of(text: str) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stream"
        path.write_text(text)
        return list(iter_stream(path))


@settings(max_examples=60, deadline=None)
@given(events, st.integers(4, 40), st.lists(st.integers(-2, 40), max_size=6), st.integers(0, 3),
       st.sampled_from(["error", "count"]))
def test_evaluations_across_pieces_equal_one_call(evs, block, times, lateness, late):
    """Exact (in order and out of order, late events counted) and Summary fed piece by piece
    answer every evaluation time as one call over the whole stream does."""
    chars = "".join(c for c, _, _ in evs)
    # steps of -1 make some events late (dropped with late="count", an error otherwise)
    stamps = _stamps([s - (1 if late == "count" and i % 7 == 6 else 0) for i, (_, s, _) in enumerate(evs)])
    text = _text(chars, stamps, 4)
    q = suse.Query("AB*C", 6, policy="any")

    def engines():
        return [suse.Exact(q, lateness=lateness), suse.Summary(q, 5, "fifo", seed=1, lateness=lateness)]

    whole = engines()
    try:
        expected = [e.extend(events=read_text_stream(text), evaluate_at=times, late=late) for e in whole]
    except suse.InputError as exc:
        expected = exc
    fed = engines()
    try:
        with _blocks_of(block):
            answers = play(_pieces_of(text), engine_feed(fed, late, bool(times)), times, lateness)
    except suse.InputError as exc:
        assert isinstance(expected, suse.InputError), exc
        return
    assert not isinstance(expected, Exception), expected
    for k, engine in enumerate(fed):
        assert [a[k] for a in answers] == expected[k]
        assert engine.result().count == whole[k].result().count
        assert engine.result().late == whole[k].result().late


@pytest.mark.parametrize("text, message", [
    ('\ufeffchar,timestamp\r\nA,1\r\n\r\n"B\nx",2\r\nA,5\r\n', "line 5: character 'B\\nx' is not a single"),
    ("A 1\nB 2\n\nA 5 B\n3", "line 4, token 7: timestamp 3 is earlier than the previous timestamp 5"),
    ("char,timestamp\nA,1\nB,2\n\nA,3\nB,x\n", "line 6: timestamp 'x' is not an integer"),
])
def test_positions_do_not_depend_on_the_pieces(text, message):
    for block in (1, 4, 7, formats.BLOCK_BYTES):
        with _blocks_of(block), pytest.raises(suse.InputError, match=f"^{re.escape(message)}"):
            play(_pieces_of(text), engine_feed([suse.Exact(suse.Query("AB", 5))], "error", False), None)


@settings(max_examples=30, deadline=None)
@given(events, st.integers(4, 40), st.lists(st.integers(0, 40), max_size=5))
def test_query_sets_across_pieces_equal_one_call(evs, block, times):
    chars = "".join(c for c, _, _ in evs)
    text = _text(chars, _stamps([s for _, s, _ in evs]), 3)
    qs = suse.QuerySet.parse("one = AB*C\ntwo = A(B|C)\n", 6)
    expected = suse.exact(qs, read_text_stream(text), evaluate_at=times)
    summaries_whole = suse.SummarySet(qs, 4, "fifo", seed=2)
    expected_summary = summaries_whole.extend(events=read_text_stream(text), evaluate_at=times)
    exact, summaries = suse.ExactSet(qs), suse.SummarySet(qs, 4, "fifo", seed=2)
    with _blocks_of(block):
        answers = play(_pieces_of(text), set_feed([exact, summaries]), times)
    for name in qs:
        assert [a[0][name] for a in answers] == expected[name].evaluations
        assert [a[1][name] for a in answers] == expected_summary[name]
    assert {n: r.count for n, r in exact.result().items()} == {n: r.count for n, r in expected.items()}


# ------------------------------------------------------------------ memory
def _peak_rss_kib(*args: str) -> int:
    """Peak resident memory of `suse ARGS` in a fresh process (its only child)."""
    code = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
            "assert r.returncode == 0, r.stderr; print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "suse", *args], capture_output=True,
                         text=True, env=ENV, timeout=300)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def _write_stream(path: Path, n: int, csv: bool) -> None:
    """n events A/B/C at timestamps 0, 1, ..., written in slices (the test's own memory stays small)."""
    with open(path, "w") as f:
        if csv:
            f.write("char,timestamp,value\n")
        for lo in range(0, n, 1_000_000):
            t = np.arange(lo, min(n, lo + 1_000_000))
            chars = np.array(list("ABC"))[t % 3]
            f.write("".join(f"{c},{s},1\n" if csv else f"{c} {s}\n" for c, s in zip(chars.tolist(), t.tolist())))


@pytest.mark.slow
@pytest.mark.parametrize("csv", [False, True], ids=["text", "csv"])
def test_memory_stays_flat_in_the_streams_length(tmp_path, csv):
    small, large = tmp_path / "small", tmp_path / "large"
    _write_stream(small, 1_000_000, csv)
    _write_stream(large, 4_000_000, csv)
    peaks = [_peak_rss_kib("exact", "AB*C", "-w", "5", "--evaluate-at", "10,2000000", str(p)) for p in (small, large)]
    # the whole stream in memory took ~440 bytes an event: 3 M more events were 1.3 GB more
    assert peaks[1] - peaks[0] < 32 * 1024, peaks


def test_endless_and_binary_input_is_one_line(tmp_path):
    for args in (["/dev/zero"], ["--format", "csv", "/dev/zero"], ["/dev/urandom"]):
        line = one_error_line(run("exact", "AB", "-w", "5", *args, timeout=60))
        assert len(line) < 300, line
    proc = subprocess.run(f"{sys.executable} -m suse exact AB -w 5 < /dev/zero", shell=True, capture_output=True,
                          text=True, env=ENV, timeout=60)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_a_huge_token_is_quoted_by_a_short_prefix(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("A 1 B " + "7" * 5_000_000 + " C 3\n")
    line = one_error_line(run("exact", "ABC", "-w", "5", str(path)))
    assert line.startswith("error: line 1, token 4: a token of more than 65,536 characters ('7777")
    assert len(line) < 200, line
    csv_path = tmp_path / "s.csv"
    csv_path.write_text("char,timestamp\nA,1\n" + "B" * 3_000_000 + ",2\n")
    line = one_error_line(run("exact", "AB", "-w", "5", str(csv_path)))
    assert line.startswith("error: line 3: character 'BBB") and len(line) < 200


# ------------------------------------------------------------------ numbers
def _read(stream: str):
    return read_csv_stream(stream) if "," in stream else read_text_stream(stream)


@pytest.mark.parametrize("stream, where", [
    ("A 1 B " + "9" * 5000, "line 1, token 4: timestamp '9999"),
    ("char,timestamp,value\nA,1,2\nB,2," + "9" * 5000 + "\n", "line 3: value '9999"),
    ("char,timestamp\nA,1\nB,-" + "1" * 5000 + "\n", "line 3: timestamp '-111"),
])
def test_thousands_of_digits_are_bad_input_with_a_position(stream, where):
    with pytest.raises(suse.InputError) as info:
        _read(stream)
    assert str(info.value).startswith(where) and "(5,00" in str(info.value)
    assert str(info.value).endswith("does not fit in 64 bits")


@pytest.mark.parametrize("stream, where", [
    ("A ١ B ٢", "line 1, token 2: timestamp '١' is not an integer"),
    ("char,timestamp\nA,1\nB,٢\n", "line 3: timestamp '٢' is not an integer"),
    ("char,timestamp,value\nA,1,५\n", "line 2: value '५' is not an integer"),
])
def test_only_ascii_digits_are_numbers(stream, where):
    with pytest.raises(suse.InputError, match=f"^{where} \\(only the ASCII digits 0-9 are digits\\)$"):
        _read(stream)


def test_numbers_on_the_command_line():
    line = one_error_line(run("exact", "AB", "-w", "5", stdin="A 1 B " + "9" * 5000))
    assert line.startswith("error: line 1, token 4: timestamp '9999") and line.endswith("does not fit in 64 bits")
    line = one_error_line(run("exact", "AB", "-w", "5", stdin="A ١ B ٢"))
    assert line == "error: line 1, token 2: timestamp '١' is not an integer (only the ASCII digits 0-9 are digits)"
    proc = run("exact", "AB", "-w", "5", "--json", stdin="A +" + "0" * 5000 + "1 B 0002")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["count"] == 1


# ------------------------------------------------------------------ small ones
def test_a_missing_strategy_lists_the_choices_plainly():
    line = one_error_line(run("eval", "AB", "-w", "5", "-n", "3", stdin="A 1 B 2"))
    choices = ", ".join(suse.api.STRATEGIES)
    assert line == f"error: Missing option '--strategy'. Choose from: {choices} (see 'suse eval -h')"
