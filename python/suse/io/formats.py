"""Reading event streams and alphabet probabilities from text and CSV.

Formats
-------
* **Text** (the paper's reference format): whitespace-separated pairs ``CHAR TIMESTAMP``,
  e.g. ``A 0 B 1 A 2``. Pairs may wrap across lines. No values: ``Events.values`` is None.
* **CSV**: a header row naming at least ``char`` and ``timestamp`` (case and surrounding
  blanks ignored), optionally ``value``; other columns are ignored. Blank lines are skipped.
  An optional ``op`` column marks retractions: ``+`` an event, ``-`` taking back one earlier
  event with the same char, timestamp and value (``Events.retract``; only callers that take
  retractions accept a stream with ``-`` rows, see ``suse exact --lateness``).
* **Probabilities**: pairs ``CHAR PROBABILITY``, e.g. ``A 0.25 B 0.75``.

A leading UTF-8 byte-order mark is ignored in every format.

A character is one ASCII letter or digit; timestamps and values are integers that fit in
int64, and values are non-negative. Timestamp order is *not* checked here: the engine
checks it and reports late events itself. Every problem raises ``InputError`` naming the
line (1-based; and token, for the whitespace formats); ``Events.located()`` does the same for
errors the engine finds later (decreasing timestamps).
"""
from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from suse.errors import InputError

__all__ = [
    "Events",
    "read_text_stream",
    "read_csv_stream",
    "read_stream",
    "read_probabilities",
]

_INT = re.compile(r"[+-]?\d+")  # stricter than int(): no "1_000", no blanks inside
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, eq=False)
class Events:
    """A stream as columns: ``chars[i]`` happened at ``timestamps[i]`` with ``values[i]``."""

    chars: str
    timestamps: np.ndarray
    values: np.ndarray | None = None
    #: Where each event was read (e.g. "line 3" or "line 1, token 5"), when read from text.
    origin: list[str] | None = field(default=None, repr=False)
    #: True where a row is a retraction (CSV ``op`` column ``-``); None without that column.
    retract: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        # Coerce so callers may pass lists; frozen dataclasses need object.__setattr__.
        object.__setattr__(self, "timestamps", np.asarray(self.timestamps, dtype=np.int64))
        if self.values is not None:
            object.__setattr__(self, "values", np.asarray(self.values, dtype=np.int64))
        lengths = {len(self.chars), len(self.timestamps)}
        if self.values is not None:
            lengths.add(len(self.values))
        if self.retract is not None:
            object.__setattr__(self, "retract", np.asarray(self.retract, dtype=bool))
            lengths.add(len(self.retract))
        if len(lengths) != 1:
            raise InputError(
                f"column lengths differ: {len(self.chars)} chars, {len(self.timestamps)} "
                f"timestamps, {'no' if self.values is None else len(self.values)} values"
            )

    def __len__(self) -> int:
        return len(self.chars)

    @contextlib.contextmanager
    def located(self) -> Iterator[None]:
        """Re-raise an ``InputError`` about event i as one about the line it was read from."""
        try:
            yield
        except InputError as exc:
            if exc.event is None or self.origin is None or not 0 <= exc.event < len(self.origin):
                raise
            raise InputError(f"{self.origin[exc.event]}: {exc.detail}") from None

    def __iter__(self) -> Iterator[tuple[str, int, int | None]]:
        values = [None] * len(self) if self.values is None else self.values.tolist()
        return zip(self.chars, self.timestamps.tolist(), values)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Events):
            return NotImplemented
        same_values = (self.values is None and other.values is None) or (
            self.values is not None
            and other.values is not None
            and np.array_equal(self.values, other.values)
        )
        return (
            self.chars == other.chars
            and np.array_equal(self.timestamps, other.timestamps)
            and same_values
        )


# --------------------------------------------------------------------------- tokens
def _no_bom(text: str) -> str:
    return text[1:] if text.startswith("\ufeff") else text


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(token, line, token number), both 1-based."""
    text = _no_bom(text)
    out: list[tuple[str, int, int]] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        for tok in line.split():
            out.append((tok, line_no, len(out) + 1))
    return out


def _pairs(text: str, what: str):
    toks = _tokens(text)
    if not toks:
        raise InputError(f"empty {what}: no tokens")
    if len(toks) % 2:
        tok, line, n = toks[-1]
        raise InputError(
            f"odd number of tokens ({len(toks)}): {tok!r} at line {line}, token {n} has no partner"
        )
    return zip(toks[0::2], toks[1::2])


def _check_char(tok: str, where: str) -> str:
    if len(tok) != 1 or not (tok.isascii() and tok.isalnum()):
        raise InputError(f"{where}: character {tok!r} is not a single ASCII letter or digit")
    return tok


def _parse_int(tok: str, where: str, what: str) -> int:
    if tok.strip().lower() in ("nan", "+nan", "-nan"):
        raise InputError(f"{where}: {what} is NaN")
    if not _INT.fullmatch(tok.strip()):
        raise InputError(f"{where}: {what} {tok!r} is not an integer")
    n = int(tok)
    if not _INT64[0] <= n <= _INT64[1]:
        raise InputError(f"{where}: {what} {n} does not fit in 64 bits")
    return n


def _parse_value(tok: str, where: str) -> int:
    if tok.strip() == "":
        raise InputError(f"{where}: value is missing")
    v = _parse_int(tok, where, "value")
    if v < 0:
        raise InputError(f"{where}: value {v} is negative")
    return v


# --------------------------------------------------------------------------- streams
def read_text_stream(text: str) -> Events:
    """Parse the paper's format: whitespace-separated ``CHAR TIMESTAMP`` pairs."""
    chars, stamps, origin = [], [], []
    for (c, c_line, c_no), (t, t_line, t_no) in _pairs(text, "stream"):
        chars.append(_check_char(c, f"line {c_line}, token {c_no}"))
        stamps.append(_parse_int(t, f"line {t_line}, token {t_no}", "timestamp"))
        origin.append(f"line {c_line}, token {c_no}")
    return Events("".join(chars), np.array(stamps, dtype=np.int64), origin=origin)


def _looks_like_path(s: str) -> bool:
    # CSV text has a comma or a newline; a bare name like "trips.csv" is a path.
    return bool(s.strip()) and "\n" not in s and "," not in s


def _read_file(path) -> str:
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(f"cannot read {os.fspath(path)!r}: {reason}") from None


def read_csv_stream(text_or_path) -> Events:
    """Parse CSV with columns ``char``, ``timestamp`` and optionally ``value``.

    Accepts CSV text, a path-like object, or a string path (a string is a path when it
    holds neither a comma nor a newline).
    """
    if isinstance(text_or_path, os.PathLike) or (
        isinstance(text_or_path, str) and _looks_like_path(text_or_path)
    ):
        text = _read_file(text_or_path)
    else:
        text = text_or_path
    return _parse_csv(text)


def _parse_csv(text: str) -> Events:
    try:
        reader = csv.reader(io.StringIO(_no_bom(text)))
        return _parse_csv_rows(reader)
    except csv.Error as e:  # malformed quoting, NUL bytes and the like
        raise InputError(f"line {reader.line_num}: malformed CSV: {e}") from None


def _parse_csv_rows(reader) -> Events:
    header = next((row for row in reader if row), None)
    if header is None:
        raise InputError("empty CSV: no header row")
    names = [h.strip().lower() for h in header]
    where_header = f"line {reader.line_num}"
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise InputError(f"{where_header}: column {dups[0]!r} appears more than once")
    for required in ("char", "timestamp"):
        if required not in names:
            raise InputError(
                f"{where_header}: missing column {required!r} "
                f"(header has {', '.join(n if n.isprintable() else repr(n) for n in names)})"
            )
    i_char, i_ts = names.index("char"), names.index("timestamp")
    i_val = names.index("value") if "value" in names else None
    i_op = names.index("op") if "op" in names else None

    chars, stamps, values, origin, ops = [], [], [], [], []
    for row in reader:
        if not row:
            continue
        where = f"line {reader.line_num}"
        if len(row) != len(names):
            raise InputError(f"{where}: expected {len(names)} fields, found {len(row)}")
        chars.append(_check_char(row[i_char].strip(), where))
        stamps.append(_parse_int(row[i_ts], where, "timestamp"))
        if i_val is not None:
            values.append(_parse_value(row[i_val], where))
        if i_op is not None:
            op = row[i_op].strip()
            if op not in ("+", "-"):
                raise InputError(f"{where}: op must be '+' (an event) or '-' (a retraction), got {op!r}")
            ops.append(op == "-")
        origin.append(where)
    if not chars:
        raise InputError("empty stream: the CSV has a header but no rows")
    return Events(
        "".join(chars),
        np.array(stamps, dtype=np.int64),
        None if i_val is None else np.array(values, dtype=np.int64),
        origin=origin,
        retract=None if i_op is None else np.array(ops, dtype=bool),
    )


def read_stream(path_or_dash, fmt: str = "auto") -> Events:
    """Read a stream from a file, or from standard input when the path is ``-``.

    ``fmt`` is ``"text"``, ``"csv"`` or ``"auto"``: CSV when the first non-blank line
    contains a comma, text otherwise.
    """
    if fmt not in ("auto", "text", "csv"):
        raise InputError(f"unknown stream format {fmt!r}: expected 'auto', 'text' or 'csv'")
    if os.fspath(path_or_dash) == "-":
        try:  # bytes, decoded here: the same strict UTF-8 whatever the locale
            stdin = getattr(sys.stdin, "buffer", None)
            text = _no_bom(stdin.read().decode("utf-8") if stdin is not None else sys.stdin.read())
        except UnicodeDecodeError as e:
            raise InputError(f"cannot read standard input: not UTF-8 ({e.reason} at byte {e.start})") from None
    else:
        text = _read_file(path_or_dash)
    if fmt == "auto":
        first = next((line for line in text.splitlines() if line.strip()), "")
        fmt = "csv" if "," in first else "text"
    return _parse_csv(text) if fmt == "csv" else read_text_stream(text)


def read_probabilities(text: str) -> dict[str, float]:
    """Parse ``CHAR PROBABILITY`` pairs; probabilities must be finite, >= 0 and sum to 1
    (checked by ``suse.api.check_probabilities``, as for ``Summary``)."""
    probs: dict[str, float] = {}
    for (c, c_line, c_no), (p, p_line, p_no) in _pairs(text, "probabilities"):
        char = _check_char(c, f"line {c_line}, token {c_no}")
        where = f"line {p_line}, token {p_no}"
        if char in probs:
            raise InputError(f"line {c_line}, token {c_no}: character {char!r} appears twice")
        try:
            x = float(p)
        except ValueError:
            raise InputError(f"{where}: probability {p!r} is not a number") from None
        if not math.isfinite(x):
            raise InputError(f"{where}: probability {p!r} is not finite")
        if x < 0:
            raise InputError(f"{where}: probability {x} is negative")
        probs[char] = x
    from suse.api import check_probabilities

    check_probabilities(probs, None)
    return probs
