"""Reading event streams and alphabet probabilities from text and CSV.

Formats
-------
* **Text** (the paper's reference format): whitespace-separated pairs ``CHAR TIMESTAMP``,
  e.g. ``A 0 B 1 A 2``. Pairs may wrap across lines. No values: ``Events.values`` is None.
* **CSV** (RFC 4180: a quote inside a quoted field is doubled): a header row naming at least
  ``char`` and ``timestamp`` (case and surrounding blanks ignored), optionally ``value``; other
  columns are ignored. Blank lines are skipped. An optional ``op`` column marks retractions:
  ``+`` an event, ``-`` taking back one earlier event with the same char, timestamp and value
  (``Events.retract``; only callers that take retractions accept a stream with ``-`` rows, see
  ``suse exact --lateness``). Columns a query's conditions read (``where``) are read as
  attributes (``Events.attributes``), by their exact name: an empty field is NULL, a field
  that reads as a decimal number (``3``, ``-2.5``, ``1e3``) is that number, exactly, and any
  other field is a string.
* **Probabilities**: pairs ``CHAR PROBABILITY``, e.g. ``A 0.25 B 0.75``.

Input is UTF-8; a leading byte-order mark is ignored in every format. Lines end with ``\\n``
(or ``\\r\\n``).

A character is one ASCII letter or digit; timestamps and values are integers that fit in
int64 written with the ASCII digits 0-9, and values are non-negative. Timestamp order is *not*
checked here: the engine checks it and reports late events itself. Every problem raises
``InputError`` naming the line (1-based; and token, for the whitespace formats);
``Events.located()`` does the same for errors the engine finds later (decreasing timestamps).

``iter_stream`` reads a stream in pieces of about ``BLOCK_BYTES`` (memory does not grow with
the stream's length): CSV is split at record boundaries and each piece parsed by pyarrow; where
an event was read is worked out only when an error asks for it.
"""
from __future__ import annotations

import bisect
import codecs
import contextlib
import csv
import io
import math
import os
import re
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import BinaryIO, Callable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from suse.errors import InputError

__all__ = [
    "Events",
    "iter_stream",
    "read_text_stream",
    "read_csv_stream",
    "read_stream",
    "read_probabilities",
]

BLOCK_BYTES = 1 << 20  # read size: a stream is parsed and fed in pieces of about this much
_LONGEST_TOKEN = 1 << 16  # far above any valid token; a longer one is an error, not carried on
_LONGEST_RECORD = 16 << 20  # a CSV record longer than this is an error (an unclosed quote, binary input)
_FIRST_LINE = 1 << 20  # how much of the first line --format auto looks at for a comma
_SHOWN = 40  # characters of an offending token quoted in a message

_INT = re.compile(r"[+-]?[0-9]+")  # stricter than int(): ASCII digits only, no "1_000", no blanks inside
_INT64 = (-(2**63), 2**63 - 1)
# A quoted CSV field: a quote at a field's start up to its closing quote ("" inside is a quote);
# an unclosed one runs to the end. Newlines inside such a field do not end a record.
_QUOTED = re.compile(rb'(?:(?<=[,\n])|\A)"[^"]*(?:""[^"]*)*"?')

Locate = Callable[[int], str]
NEWLINE = b"\n"


@dataclass(frozen=True, eq=False)
class Events:
    """A stream as columns: ``chars[i]`` happened at ``timestamps[i]`` with ``values[i]``."""

    chars: str
    timestamps: np.ndarray
    values: np.ndarray | None = None
    #: Where event i was read ("line 3" or "line 1, token 5"), when read from text; worked
    #: out when asked (an error), not stored per event.
    locate: Locate | None = field(default=None, repr=False)
    #: True where a row is a retraction (CSV ``op`` column ``-``); None without that column.
    retract: np.ndarray | None = field(default=None, repr=False)
    #: Attribute name -> one value per event (CSV columns a query's conditions read), or None.
    attributes: Mapping[str, list] | None = field(default=None, repr=False)

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

    def where(self, i: int) -> str:
        """Where event i was read, or "event i" when not read from text."""
        return self.locate(i) if self.locate is not None else f"event {i}"

    @contextlib.contextmanager
    def located(self) -> Iterator[None]:
        """Re-raise an ``InputError`` about event i as one about the line it was read from."""
        try:
            yield
        except InputError as exc:
            if exc.event is None or self.locate is None or not 0 <= exc.event < len(self):
                raise
            raise type(exc)(f"{self.locate(exc.event)}: {exc.detail}") from None

    def __getitem__(self, part: slice) -> Events:
        """Events ``part`` (a slice with step 1), still knowing where each was read."""
        start, stop, _ = part.indices(len(self))
        return Events(
            self.chars[start:stop], self.timestamps[start:stop],
            None if self.values is None else self.values[start:stop],
            None if self.locate is None else _shifted(self.locate, start),
            None if self.retract is None else self.retract[start:stop],
            None if self.attributes is None else {k: v[start:stop] for k, v in self.attributes.items()},
        )


    @staticmethod
    def concat(parts: list[Events]) -> Events:
        """One stream of the events of ``parts``, in order (each read the same way)."""
        if len(parts) == 1:
            return parts[0]
        starts = np.cumsum([0] + [len(p) for p in parts[:-1]]).tolist()

        def locate(i: int) -> str:
            k = bisect.bisect_right(starts, i) - 1
            return parts[k].where(i - starts[k])

        first = parts[0]
        return Events(
            "".join(p.chars for p in parts),
            np.concatenate([p.timestamps for p in parts]),
            None if first.values is None else np.concatenate([p.values for p in parts]),
            locate,
            None if first.retract is None else np.concatenate([p.retract for p in parts]),
            None if first.attributes is None else {k: [x for p in parts for x in p.attributes[k]]  # type: ignore[index]
                                                   for k in first.attributes},
        )

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


def _shifted(locate: Locate, offset: int) -> Locate:
    """Where event i of a part starting at `offset` was read."""
    return lambda i: locate(offset + i)


def _spaced(where: Callable[[int], str], step: int, first: int) -> Locate:
    """Where item i is, for items every `step` tokens from token `first` of `where`."""
    return lambda i: where(step * i + first)


# --------------------------------------------------------------------------- fields
def shown(token: str) -> str:
    """A token as quoted in a message: at most a short prefix of a long one."""
    if len(token) <= _SHOWN:
        return repr(token)
    prefix = token[:_SHOWN]
    while len(repr(prefix)) > _SHOWN + 2:  # escapes (\x00) are four characters each
        prefix = prefix[: len(prefix) // 2]
    return f"{prefix!r}… ({len(token):,} characters)"


def _char_error(token: str, where: str) -> InputError:
    return InputError(f"{where}: character {shown(token)} is not a single ASCII letter or digit")


def _check_char(tok: str, where: str) -> str:
    if len(tok) != 1 or not (tok.isascii() and tok.isalnum()):
        raise _char_error(tok, where)
    return tok


def _chars(tokens: list[str], where: Locate) -> str:
    """The characters of a column (one token each), checked all at once."""
    joined = "".join(tokens)
    if len(joined) == len(tokens) and joined.isascii() and (joined.isalnum() or not joined):
        return joined
    for i, tok in enumerate(tokens):
        _check_char(tok, where(i))
    raise AssertionError("a column failed the check but no token did")  # pragma: no cover


def _parse_int(tok: str, where: str, what: str) -> int:
    text = tok.strip()
    if text == "":
        raise InputError(f"{where}: {what} is missing")
    if text.lower() in ("nan", "+nan", "-nan"):
        raise InputError(f"{where}: {what} is NaN")
    if not _INT.fullmatch(text):
        digits = " (only the ASCII digits 0-9 are digits)" if any(c.isdigit() and not c.isascii() for c in text) else ""
        raise InputError(f"{where}: {what} {shown(tok)} is not an integer{digits}")
    # The length first: int() of thousands of digits is slow, and refused past 4,300.
    significant = text.lstrip("+-").lstrip("0")
    n = int(text[0] + significant if text[0] in "+-" else significant or "0") if len(significant) <= 19 else None
    if n is None or not _INT64[0] <= n <= _INT64[1]:
        raise InputError(f"{where}: {what} {shown(text)} does not fit in 64 bits")
    return n


def _integers(column: pa.Array | pa.ChunkedArray, what: str, where: Locate) -> np.ndarray:
    """A column of integer texts (blanks around allowed) as int64, checked all at once; the
    first bad one is an error naming where it was read."""
    if len(column) == 0:
        return np.zeros(0, dtype=np.int64)
    trimmed = pc.utf8_trim_whitespace(column)
    if pc.all(pc.match_substring_regex(trimmed, r"^[+-]?[0-9]+$")).as_py():
        with contextlib.suppress(pa.ArrowInvalid):  # out of range: found below
            return pc.cast(pc.replace_substring_regex(trimmed, r"^\+", ""), pa.int64()).to_numpy()
    return np.array([_parse_int(tok, where(i), what) for i, tok in enumerate(column.to_pylist())], dtype=np.int64)


def _values(column: pa.Array | pa.ChunkedArray, where: Locate) -> np.ndarray:
    values = _integers(column, "value", where)
    negative = np.flatnonzero(values < 0)
    if len(negative):
        i = int(negative[0])
        raise InputError(f"{where(i)}: value {values[i]} is negative")
    return values


# --------------------------------------------------------------------------- input
class _Input:
    """The bytes of a file, of standard input or of a string, read in blocks and checked to be
    UTF-8 as they go; the first block without a byte-order mark."""

    def __init__(self, file: BinaryIO, name: str, close: bool):
        self.name, self._file, self._close = name, file, close
        self._peeked = b""
        self._offset = 0  # bytes checked so far, for the position of a UTF-8 error
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._first = True

    @classmethod
    def open(cls, path_or_dash) -> _Input:
        if os.fspath(path_or_dash) == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is None:  # a text stream put in its place (tests)
                return cls(io.BytesIO(sys.stdin.read().encode("utf-8")), "standard input", False)
            return cls(stdin, "standard input", False)
        try:
            return cls(open(path_or_dash, "rb"), repr(os.fspath(path_or_dash)), True)
        except (OSError, ValueError) as e:  # (ValueError: a NUL in the name, which no file has)
            raise InputError(f"cannot read {os.fspath(path_or_dash)!r}: {getattr(e, 'strerror', None) or e}") from None

    @classmethod
    def of_text(cls, text: str) -> _Input:
        return cls(io.BytesIO(text.encode("utf-8", errors="surrogatepass")), "the text", False)

    def close(self) -> None:
        if self._close:
            self._file.close()

    def _read(self) -> bytes:
        try:
            return self._file.read(BLOCK_BYTES)
        except OSError as e:
            raise InputError(f"cannot read {self.name}: {e.strerror or e}") from None

    def peek_line(self) -> str:
        """The first non-blank line (at most its first _FIRST_LINE bytes), without consuming it."""
        while True:
            lines = [line for line in self._peeked.split(b"\n") if line.strip()]
            if len(lines) > 1 or (lines and b"\n" in self._peeked) or len(self._peeked) >= _FIRST_LINE:
                break
            block = self._read()
            if not block:
                break
            self._peeked += block
        first = lines[0][:_FIRST_LINE] if lines else b""
        return first.decode("utf-8", errors="replace")

    def blocks(self, as_text: bool = False) -> Iterator:
        """The input in blocks of bytes (or decoded, ``as_text``); every byte checked to be UTF-8."""
        while True:
            block, self._peeked = (self._peeked, b"") if self._peeked else (self._read(), b"")
            if self._first and block:
                while len(block) < len(codecs.BOM_UTF8):  # a byte-order mark split across reads (a pipe)
                    more = self._read()
                    if not more:
                        break
                    block += more
                block = block.removeprefix(codecs.BOM_UTF8)
                self._first = False
            try:
                text = self._decoder.decode(block, final=not block)
            except UnicodeDecodeError as e:
                raise InputError(f"cannot read {self.name}: not UTF-8 ({e.reason} at byte "
                                 f"{self._offset + e.start})") from None
            if not block:
                return
            self._offset += len(block)
            yield text if as_text else block


# --------------------------------------------------------------------------- text format
def _token_line(text: str, k: int, first_line: int) -> int:
    """The line of the k-th (0-based) whitespace-separated token of ``text``, which starts on
    line ``first_line``."""
    seen = 0
    for n, line in enumerate(text.split("\n")):
        seen += len(line.split())
        if seen > k:
            return first_line + n
    return first_line + text.count("\n")


def _carried_from(text: str, tokens: list[str], keep: int) -> int:
    """Where in ``text`` token ``keep`` starts (the tokens from there on wait for the next block)."""
    end = len(text)
    for tok in reversed(tokens[keep:]):
        end = len(text[:end].rstrip()) - len(tok)
    return end


def _text_pairs(source: _Input, what: str) -> Iterator[tuple[list[str], list[str], Callable[[int], str]]]:
    """``(chars, numbers, where)`` per block of whitespace-separated pairs: ``where(k)`` names
    the line and token of the block's k-th token."""
    line, token, pending = 1, 1, ""
    for block, final in _then_end(source.blocks(as_text=True), ""):
        text = pending + block
        tokens = text.split()
        keep = len(tokens) - (1 if tokens and not final and not text[-1].isspace() else 0)
        keep -= keep % 2
        if final and len(tokens) % 2:
            where = _text_where(text, line, token)
            raise InputError(f"odd number of tokens ({token - 1 + len(tokens)}): {shown(tokens[-1])} at "
                             f"{where(len(tokens) - 1)} has no partner")
        cut = _carried_from(text, tokens, keep)
        head = text[:cut]
        if keep:
            yield tokens[0:keep:2], tokens[1:keep:2], _text_where(head, line, token)
        line, token, pending = line + head.count("\n"), token + keep, text[cut:]
        carried = tokens[keep:]
        if carried and len(carried[-1]) > _LONGEST_TOKEN:
            raise InputError(f"{_text_where(pending, line, token)(len(carried) - 1)}: a token of more "
                             f"than {_LONGEST_TOKEN:,} characters ({shown(carried[-1])}); {what} in the text "
                             "format is whitespace-separated pairs")
        if len(pending) > _LONGEST_TOKEN:  # a char, then a long run of blanks: keep only its line breaks
            blanks = pending[len(pending.rstrip()):]
            pending = pending.rstrip() + "\n" * blanks.count("\n") + " "
    if token == 1:
        raise InputError(f"empty {what}: no tokens")


def _text_where(text: str, line: int, token: int) -> Callable[[int], str]:
    return lambda k: f"line {_token_line(text, k, line)}, token {token + k}"


def _text_chunks(source: _Input) -> Iterator[Events]:
    for chars, stamps, where in _text_pairs(source, "stream"):
        yield Events(
            _chars(chars, _spaced(where, 2, 0)),
            _integers(pa.array(stamps, pa.string()), "timestamp", _spaced(where, 2, 1)),
            locate=_spaced(where, 2, 0),
        )


# --------------------------------------------------------------------------- CSV
def _records_end(buf: bytes) -> int:
    """Where the last complete CSV record of ``buf`` ends (after its newline), 0 if none does."""
    end = buf.rfind(b"\n") + 1
    if b'"' not in buf:
        return end
    for start, stop in reversed([m.span() for m in _QUOTED.finditer(buf)]):
        if end > stop:  # that newline lies after this quoted field
            return end
        if end > start:  # inside it: look before the field
            end = buf.rfind(b"\n", 0, start) + 1
    return end


def _first_record_end(buf: bytes) -> int:
    """Where the first CSV record of ``buf`` ends (after its newline), 0 if it does not yet."""
    spans = [m.span() for m in _QUOTED.finditer(buf)] if b'"' in buf else []
    end = buf.find(b"\n")
    for start, stop in spans:
        if end < start:
            break
        if end < stop:
            end = buf.find(b"\n", stop)
    return end + 1


def _csv_rows(part: bytes) -> Iterator[tuple[int, list[str]]]:
    """(line within ``part``, 0-based, where the row ends; fields) of its non-empty rows, read
    with Python's csv module (the error path: positions and wording)."""
    old = csv.field_size_limit(sys.maxsize)
    try:
        reader = csv.reader(io.StringIO(part.decode("utf-8")))
        for row in reader:
            if row:
                yield reader.line_num - 1, row
    finally:
        csv.field_size_limit(old)


def _csv_header(blocks: Iterator[bytes]) -> tuple[list[str], int, bytes]:
    """The header's fields, the line after it, and the input read past it."""
    buf, line = b"", 1
    for block in blocks:
        buf += block
        while buf.startswith((b"\n", b"\r\n")):  # blank lines before the header
            buf, line = buf[buf.index(b"\n") + 1:], line + 1
        end = _first_record_end(buf) if buf else 0
        if end:
            break
        if len(buf) > _LONGEST_RECORD:
            raise InputError(f"line {line}: a header row longer than {_LONGEST_RECORD:,} bytes: is this CSV?")
    else:
        end = len(buf)
        if not buf.strip(b"\r\n"):
            raise InputError("empty CSV: no header row")
    try:
        (_, header), *_ = _csv_rows(buf[:end])
    except csv.Error as e:
        raise InputError(f"line {line}: malformed CSV: {e}") from None
    return header, line + buf[:end].count(b"\n"), buf[end:]


def _header_columns(header: list[str], line: int) -> dict[str, int]:
    """Position of char, timestamp and (when present) value and op."""
    names = [h.strip().lower() for h in header]
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:
        raise InputError(f"line {line}: column {shown(dups[0])} appears more than once")
    for required in ("char", "timestamp"):
        if required not in names:
            have = ", ".join(n if n.isprintable() and len(n) <= _SHOWN else shown(n) for n in names[:20])
            raise InputError(f"line {line}: missing column {required!r} (header has {have}"
                             f"{', …' if len(names) > 20 else ''})")
    return {name: names.index(name) for name in ("char", "timestamp", "value", "op") if name in names}


def _attribute_columns(header: list[str], attributes: Sequence[str], line: int) -> dict[str, int]:
    """Position of each attribute column (its exact name, blanks around it ignored)."""
    names = [h.strip() for h in header]
    for name in attributes:
        if name not in names:
            raise InputError(f"line {line}: missing column {name!r}, which a condition reads (header has "
                             f"{', '.join(shown(n) for n in names[:20])}{', …' if len(names) > 20 else ''})")
    return {name: names.index(name) for name in attributes}


_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def attribute_value(field_text: str) -> int | Fraction | str | None:
    """A CSV field as an attribute: empty is NULL, a decimal number is that number (exactly),
    anything else is the string itself."""
    text = field_text.strip()
    if not text:
        return None
    if _INT.fullmatch(text):
        return int(text)
    if _NUMBER.fullmatch(text):
        return Fraction(text)
    return field_text


def _csv_problem(part: bytes, line: int, n_fields: int, exc: Exception) -> InputError:
    """A piece pyarrow refused, said as the csv module sees it: the line and what is wrong."""
    try:
        for at, row in _csv_rows(part):
            if len(row) != n_fields:
                return InputError(f"line {line + at}: expected {n_fields} fields, found {len(row)}")
    except csv.Error as e:
        return InputError(f"line {line}: malformed CSV: {e}")
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return InputError(f"{_lines(part, line)}: malformed CSV ({shown(reason)})")


def _lines(part: bytes, line: int) -> str:
    return f"lines {line}-{line + part.count(NEWLINE)}"


def _csv_table(part: bytes, line: int, n_fields: int, wanted: list[int]) -> pa.Table:
    names = [f"f{i}" for i in range(n_fields)]
    try:
        # An in-memory reader and no threads: Arrow's readers of a Python file object take the
        # GIL from their own threads, and one still running at interpreter exit aborts the process.
        return pa_csv.read_csv(
            pa.BufferReader(part),
            read_options=pa_csv.ReadOptions(column_names=names, block_size=len(part) + 1, use_threads=False),
            parse_options=pa_csv.ParseOptions(newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                include_columns=[names[i] for i in wanted], column_types={names[i]: pa.string() for i in wanted},
                strings_can_be_null=False, quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowException as exc:
        raise _csv_problem(part, line, n_fields, exc) from None


def _csv_chunks(source: _Input, attributes: Sequence[str] = ()) -> Iterator[Events]:
    blocks = source.blocks()
    header, line, pending = _csv_header(blocks)
    columns = _header_columns(header, line - 1)
    extra = _attribute_columns(header, attributes, line - 1)
    n_fields = len(header)
    rows = 0
    for block, final in _then_end(blocks, b""):
        buf = pending + block
        end = len(buf) if final else _records_end(buf)
        if not end:
            if len(buf) > _LONGEST_RECORD:
                raise InputError(f"line {line}: a record longer than {_LONGEST_RECORD:,} bytes (an unclosed quote?)")
            pending = buf
            continue
        part, pending = buf[:end], buf[end:]
        if part.strip(b"\r\n"):
            events = _csv_events(part, line, n_fields, columns, extra)
            rows += len(events)
            if len(events):
                yield events
        line += part.count(b"\n")
    if not rows:
        raise InputError("empty stream: the CSV has a header but no rows")


def _then_end(blocks: Iterator, empty: str | bytes) -> Iterator[tuple]:
    """Each block with False, then an empty one with True: the end of the input."""
    for block in blocks:
        yield block, False
    yield empty, True


def _csv_events(part: bytes, line: int, n_fields: int, columns: dict[str, int],
                extra: Mapping[str, int] | None = None) -> Events:
    extra = extra or {}
    table = _csv_table(part, line, n_fields, sorted({*columns.values(), *extra.values()}))
    row_lines: list[int] = []

    def where(i: int) -> str:  # the line a row ends on, found by reading the piece again
        if not row_lines:
            with contextlib.suppress(csv.Error):  # the csv module refuses what pyarrow read: name the lines
                row_lines.extend(line + at for at, _ in _csv_rows(part))
        return f"line {row_lines[i]}" if i < len(row_lines) else _lines(part, line)

    def column(name: str) -> pa.ChunkedArray:
        return table.column(f"f{columns[name]}")

    chars = _chars(pc.utf8_trim_whitespace(column("char")).to_pylist(), where)
    stamps = _integers(column("timestamp"), "timestamp", where)
    values = _values(column("value"), where) if "value" in columns else None
    retract = None
    if "op" in columns:
        ops = pc.utf8_trim_whitespace(column("op"))
        bad = pc.invert(pc.is_in(ops, pa.array(["+", "-"])))
        if pc.any(bad).as_py():
            i = pc.index(bad, True).as_py()
            raise InputError(f"{where(i)}: op must be '+' (an event) or '-' (a retraction), got "
                             f"{shown(ops[i].as_py())}")
        retract = pc.equal(ops, "-").to_numpy()
    attributes = {name: [attribute_value(x) for x in table.column(f"f{i}").to_pylist()] for name, i in extra.items()}
    return Events(chars, stamps, values, where, retract, attributes if extra else None)


# --------------------------------------------------------------------------- streams
def iter_stream(path_or_dash, fmt: str = "auto", attributes: Sequence[str] = ()) -> Iterator[Events]:
    """A stream from a file, or from standard input when the path is ``-``, in pieces of
    about ``BLOCK_BYTES``: memory does not grow with its length.

    ``fmt`` is ``"text"``, ``"csv"`` or ``"auto"``: CSV when the first non-blank line
    contains a comma, text otherwise. ``attributes``: CSV columns read as the events'
    attributes (``Events.attributes``; the text format has none).
    """
    if fmt not in ("auto", "text", "csv"):
        raise InputError(f"unknown stream format {fmt!r}: expected 'auto', 'text' or 'csv'")
    return _pieces(_Input.open(path_or_dash), fmt, tuple(attributes))


def _pieces(source: _Input, fmt: str, attributes: tuple[str, ...] = ()) -> Iterator[Events]:
    try:
        if fmt == "auto":
            fmt = "csv" if "," in source.peek_line() else "text"
        if attributes and fmt != "csv":
            raise InputError(f"the conditions read attributes ({', '.join(map(repr, attributes))}) from CSV columns; "
                             "the text format has none")
        chunks = _csv_chunks(source, attributes) if fmt == "csv" else _text_chunks(source)
        for piece in chunks:
            yield piece
            # the arrow buffers of pieces done with are free: give them back, or the pool grows
            pa.default_memory_pool().release_unused()
    finally:
        source.close()


def read_stream(path_or_dash, fmt: str = "auto", attributes: Sequence[str] = ()) -> Events:
    """The whole stream of ``iter_stream`` as one ``Events``."""
    return Events.concat(list(iter_stream(path_or_dash, fmt, attributes)))


def read_text_stream(text: str) -> Events:
    """Parse the paper's format: whitespace-separated ``CHAR TIMESTAMP`` pairs."""
    return Events.concat(list(_pieces(_Input.of_text(text), "text")))


def _looks_like_path(s: str) -> bool:
    # CSV text has a comma or a newline; a bare name like "trips.csv" is a path.
    return bool(s.strip()) and "\n" not in s and "," not in s


def read_csv_stream(text_or_path) -> Events:
    """Parse CSV with columns ``char``, ``timestamp`` and optionally ``value``.

    Accepts CSV text, a path-like object, or a string path (a string is a path when it
    holds neither a comma nor a newline).
    """
    if isinstance(text_or_path, os.PathLike) or (
        isinstance(text_or_path, str) and _looks_like_path(text_or_path)
    ):
        source = _Input.open(text_or_path)
    else:
        source = _Input.of_text(text_or_path)
    return Events.concat(list(_pieces(source, "csv")))


def read_probabilities(text: str) -> dict[str, float]:
    """Parse ``CHAR PROBABILITY`` pairs; probabilities must be finite, >= 0 and sum to 1
    (checked by ``suse.api.check_probabilities``, as for ``Summary``)."""
    probs: dict[str, float] = {}
    for chars, numbers, where in _text_pairs(_Input.of_text(text), "probabilities"):
        for i, (c, p) in enumerate(zip(chars, numbers)):
            char = _check_char(c, where(2 * i))
            at = where(2 * i + 1)
            if char in probs:
                raise InputError(f"{where(2 * i)}: character {char!r} appears twice")
            try:
                x = float(p)
            except ValueError:
                raise InputError(f"{at}: probability {shown(p)} is not a number") from None
            if not math.isfinite(x):
                raise InputError(f"{at}: probability {shown(p)} is not finite")
            if x < 0:
                raise InputError(f"{at}: probability {x} is negative")
            probs[char] = x
    from suse.api import check_probabilities

    check_probabilities(probs, None)
    return probs
