"""Counting with conditions between a match's events (``where=``): the query's conditions
compiled for the kernel's engine (suse_core ``WhereEngine``), and events with attributes.

Events carry attributes besides (char, timestamp, value):

* a table (pandas DataFrame): every column other than char/timestamp/value is an attribute,
  read by its exact name;
* tuples: ``(char, timestamp, attributes)`` or ``(char, timestamp, value, attributes)`` with
  ``attributes`` a mapping from names to values.

``timestamp`` is every element's timestamp. A condition reading an attribute an event of its
letter lacks is an ``InputError`` naming both; None, NaN and pandas' NA are NULL.
"""
from __future__ import annotations

import bisect
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Optional

import numpy as np

from suse import _core
from suse.api.checks import DEFAULT_MEMORY_LIMIT, show
from suse.api.events import coerce_events, eval_times, in_input_order
from suse.api.feeding import Arrivals, check_evaluation_horizon, drop_late, late_mask
from suse.api.results import Evaluation
from suse.errors import InputError, QueryError, StateError
from suse.query.conditions import (
    And,
    Arithmetic,
    Boolean,
    Comparison,
    IsNull,
    Negate,
    Not,
    Number,
    Or,
    Reference,
    String,
    Where,
    data_value,
)

#: Rough bytes of one register key of the counting state (its counts, hash entry and values).
KEY_BYTES = 160
VALUE_BYTES = 48


def refusal(query: str, why: str) -> QueryError:
    return QueryError(f"where is not supported with {why} yet; the exact engine counts it with policy 'any'", 0, query)


def check_combination(regex: str, *, policy: str, max_missing: int, negated: str) -> None:
    """Refuse, by name, what does not combine with ``where`` yet (never ignore a condition)."""
    if policy != "any":
        raise refusal(regex, f"policy {policy!r}")
    if max_missing:
        raise refusal(regex, "max_missing (approximate matching)")
    if negated:
        raise refusal(regex, "a negation in the pattern")


class _Compiler:
    """The engine's specification from a query and its checked conditions."""

    def __init__(self, automaton: Any, where: Where):
        self.automaton, self.where = automaton, where
        self.letters = {c: i for i, c in enumerate(automaton.alphabet)}
        names = {use.attribute for a in where.analyses.values() for use in a.uses}
        self.columns = sorted(names)
        self.slots: dict[tuple[str, str, bool], int] = {}
        sizes: dict[tuple[str, str, bool], int] = {}
        for analysis in where.analyses.values():
            for use in analysis.uses:
                if use.kind != "current":
                    slot = (use.letter, use.attribute, use.kind == "first")
                    sizes[slot] = max(sizes.get(slot, 0), use.n + 1 if use.kind == "first" else use.n)
        self.sizes = sizes
        self.slots = {slot: i for i, slot in enumerate(sorted(sizes))}

    def spec(self) -> tuple:
        a = self.automaton
        n_letters = len(a.alphabet)
        delta = [[a.transitions.get((s, c), -1) for c in a.alphabet] for s in a.states]
        finals = [s in a.finals for s in a.states]
        slots = [(self.letters[letter], self.columns.index(attr), first, self.sizes[(letter, attr, first)])
                 for (letter, attr, first) in sorted(self.sizes)]
        conditions: list = [None] * n_letters
        compared: list = [None] * n_letters
        reads: dict[str, set[int]] = {}
        for letter, condition in self.where.conditions.items():
            analysis = self.where.analyses[letter]
            uses = {use.reference: use for use in analysis.uses}
            conditions[self.letters[letter]] = (letter, self.program(condition.root, letter, uses))
            reads[letter] = {self.slots[(u.letter, u.attribute, u.kind == "first")] for u in analysis.uses
                             if u.kind != "current"}
            c = analysis.compared
            if c is not None and c.reference.kind == "last":
                slot = self.slots[(c.reference.letter, c.reference.attribute, False)]
                current = (letter, self.program(c.current, letter, uses))
                compared[self.letters[letter]] = (current, c.op, slot, c.reference.n, c.null_reference)
        live = self.liveness(reads)
        return (a.start, finals, delta), (len(self.columns), slots, live), conditions, compared

    def liveness(self, reads: dict[str, set[int]]) -> list[list[bool]]:
        """Per state, the slots a condition on some path from it reads."""
        a = self.automaton
        live: dict[int, set[int]] = {s: set() for s in a.states}
        changed = True
        while changed:
            changed = False
            for (s, c), t in a.transitions.items():
                before = len(live[s])
                live[s] |= reads.get(c, set()) | live[t]
                changed |= len(live[s]) != before
        return [[i in live[s] for i in range(len(self.slots))] for s in a.states]

    def program(self, node: Any, letter: str, uses: Mapping[Reference, Any]) -> list[tuple]:
        """``node`` in postfix: (opcode, value, a, b) per instruction (see conditions.rs)."""
        out: list[tuple] = []
        self.emit(node, letter, uses, out)
        return out

    def emit(self, node: Any, letter: str, uses: Mapping[Reference, Any], out: list) -> None:
        if isinstance(node, Number):
            value = node.value
            out.append(("const", value.numerator if value.denominator == 1 else value, 0, 0))
        elif isinstance(node, (String, Boolean)):
            out.append(("const", node.value, 0, 0))
        elif isinstance(node, Reference):
            use = uses[node]
            column = self.columns.index(use.attribute)
            if use.kind == "current":
                out.append(("current", None, column, 0))
            elif use.kind == "last":
                out.append(("last", None, self.slots[(use.letter, use.attribute, False)], use.n))
            else:
                current = column if use.may_be_current else None
                out.append(("first", current, self.slots[(use.letter, use.attribute, True)], use.n))
        elif isinstance(node, Negate):
            self.emit(node.operand, letter, uses, out)
            out.append(("negate", None, 0, 0))
        elif isinstance(node, (Arithmetic, Comparison)):
            self.emit(node.left, letter, uses, out)
            self.emit(node.right, letter, uses, out)
            out.append((node.op, None, 0, 0))
        elif isinstance(node, IsNull):
            self.emit(node.operand, letter, uses, out)
            out.append(("is not null" if node.negated else "is null", None, 0, 0))
        elif isinstance(node, Not):
            self.emit(node.operand, letter, uses, out)
            out.append(("not", None, 0, 0))
        elif isinstance(node, (And, Or)):
            for operand in node.operands:
                self.emit(operand, letter, uses, out)
            out.append(("and" if isinstance(node, And) else "or", None, len(node.operands), 0))
        else:  # pragma: no cover - the parser makes no other node
            raise TypeError(f"unknown condition node {node!r}")


def split_events(events: Any) -> tuple[Any, Optional[list[Mapping]], Any]:
    """(events without attributes, the attribute mappings of tuple events or None, the table
    of attribute columns when the events have one: a DataFrame, or the ``attributes``
    mapping of columnar events such as suse.io's ``Events`` read from CSV)."""
    if hasattr(events, "columns") and hasattr(events, "__getitem__"):
        return events, None, events
    if hasattr(events, "chars") and hasattr(events, "timestamps"):
        return events, None, getattr(events, "attributes", None) or {}
    if events is None or isinstance(events, (str, bytes, bytearray)) or not hasattr(events, "__iter__"):
        return events, None, None
    plain, attributes = [], []
    for i, ev in enumerate(events):
        if isinstance(ev, (tuple, list)) and len(ev) in (3, 4) and isinstance(ev[-1], Mapping):
            plain.append(tuple(ev[:-1]))
            attributes.append(ev[-1])
        elif isinstance(ev, (tuple, list)) and len(ev) in (2, 3):
            plain.append(tuple(ev))
            attributes.append({})
        else:
            raise InputError(f"expected (char, timestamp[, value][, attributes]) with attributes a mapping, got {show(ev)}",
                             event=i)
    return plain, attributes, None


class WhereCounter:
    """The exact count of a query with conditions. With ``lateness`` L > 0 events may arrive
    out of order by up to L: those newer than the horizon (largest timestamp seen - L) wait in
    ``pending``, in (timestamp, arrival) order, and enter the engine once final, so every
    result equals the sorted stream's (as ``suse.api.feeding.Arrivals`` does for the native
    engines); an evaluation at T is taken just before the first event later than T + L, or
    after the batch on a copy of the engine that also takes the pending events up to T."""

    def __init__(self, query: Any, memory_limit: Optional[int] = None, lateness: int = 0):
        self.query, self.where = query, query.where
        self.lateness = lateness
        # (timestamp, arrival number, character byte, value, attribute values): not final yet
        self.pending: list[tuple[int, int, int, int, tuple]] = []
        self.arrived = 0
        self.max_ts: Optional[int] = None
        compiler = _Compiler(query.automaton, query.where)
        self.columns = compiler.columns
        self.needed = self.where.attributes()  # letter -> attributes its elements must carry
        automaton, layout, conditions, compared = compiler.spec()
        width = sum(size + first for (_, _, first, size) in layout[1])
        max_keys = max(1, (memory_limit or DEFAULT_MEMORY_LIMIT) // (KEY_BYTES + VALUE_BYTES * width))
        # MIN/MAX: per letter, whether its values count (the `of` letters, else all)
        extrema = [query.of is None or c in query.of for c in query.automaton.alphabet] if (
            query.aggregate in ("min", "max")) else None
        self.engine = _core.WhereEngine(automaton, layout, conditions, compared, query.window, max_keys, extrema)
        self.letter_codes = letter_codes(query.automaton.alphabet)
        self.late = 0
        self.of_mask = of_mask(query)

    def extend(self, events: Any, chars: Any, timestamps: Any, values: Any, evaluate_at: Any,
               late: str) -> list[Evaluation]:
        return self.feed(*self.parse(events, chars, timestamps), evaluate_at, late)

    def parse(self, events: Any, chars: Any = None,
              timestamps: Any = None) -> tuple[bytes, np.ndarray, Optional[np.ndarray], list[list[Any]]]:
        """(raw characters, timestamps, values, ``attribute_columns``) of a batch of events with
        attributes."""
        if chars is not None or timestamps is not None:
            raise InputError("with where=, pass events (tuples with an attributes mapping, or a table with "
                             "attribute columns), not chars=/timestamps=")
        plain, attributes, table = split_events(events)
        raw, ts, vals = coerce_events(plain)
        columns = None if table is None or not len(raw) else self.table_columns(table)  # none to read when empty
        return raw, ts, vals, self.attribute_columns(raw, ts, attributes, columns)

    def feed(self, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], columns: list[list[Any]],
             evaluate_at: Any, late: str = "error") -> list[Evaluation]:
        """Events already coerced, with their ``attribute_columns``."""
        times, order = eval_times(evaluate_at, None if self.lateness else self.engine.last_timestamp)
        check_evaluation_horizon(times, self.max_ts, self.lateness)  # (max_ts stays None without lateness)
        raw, ts, vals, keep = self.without_late(raw, ts, vals, late)
        if keep is not None:
            columns = [[column[i] for i in np.flatnonzero(keep)] for column in columns]
        if vals is not None and self.of_mask is not None:
            vals = np.where(self.of_mask[np.frombuffer(raw, np.uint8)], vals, 0)
        if self.lateness:
            rows = self.reorder(raw, ts, vals, columns, times)
        else:
            codes = self.letter_codes[np.frombuffer(raw, np.uint8)]
            rows = self.engine.extend(codes.tobytes(), ts, vals, columns, times)
        return in_input_order([Evaluation(t, count, total, partial, min=extremes and extremes[0],
                                          max=extremes and extremes[1])
                               for t, count, total, partial, extremes in rows], order)

    def without_late(self, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], late: str):
        """The batch without its late events (reported, or counted with ``late="count"``) and
        which events were kept (None: all)."""
        last = self.max_ts if self.lateness else self.engine.last_timestamp
        raw, kept_ts, vals, dropped = drop_late(raw, ts, vals, last, self.lateness, late)
        self.late += dropped
        return raw, kept_ts, vals, (~late_mask(ts, last, self.lateness)[0] if dropped else None)

    def reorder(self, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], columns: list[list[Any]],
                times: Optional[np.ndarray]) -> list[tuple]:
        """Accepted events (none late) into ``pending``, the final ones on into the engine."""
        rows, asked = [], [] if times is None else [int(t) for t in times]
        for i, t in enumerate(ts.tolist()):
            while asked and t > asked[0] + self.lateness:  # no event at or before asked[0] can come any more
                self.feed_final(asked[0])
                rows.append((asked[0], *self.engine.totals()))
                asked.pop(0)
            bisect.insort(self.pending, (t, self.arrived, raw[i], 0 if vals is None else int(vals[i]),
                                         tuple(column[i] for column in columns)))
            self.arrived += 1
            self.max_ts = t if self.max_ts is None else max(self.max_ts, t)
        if self.max_ts is not None:
            self.feed_final(self.max_ts - self.lateness)
        rows.extend((t, *self.settled(t).totals()) for t in asked)
        return rows

    def feed_final(self, upto: int, engine: Any = None) -> None:
        """The pending events at or before ``upto`` into the engine (or ``engine``, a copy: then
        they stay pending)."""
        n = bisect.bisect_right(self.pending, (upto, float("inf")))
        if not n:
            return
        chosen = self.pending[:n]
        if engine is None:
            del self.pending[:n]
        chars, ts, vals, attrs = zip(*((byte, t, v, a) for t, _, byte, v, a in chosen))
        codes = self.letter_codes[np.frombuffer(bytes(chars), np.uint8)]
        (self.engine if engine is None else engine).extend(
            codes.tobytes(), np.array(ts, np.int64), np.array(vals, np.int64),
            [list(column) for column in zip(*attrs)] if self.columns else [], None)

    def settled(self, upto: Optional[int] = None) -> Any:
        """The engine as if the pending events at or before ``upto`` (all: None) were final:
        the engine itself when there are none, else a copy that took them."""
        if not self.pending or (upto is not None and self.pending[0][0] > upto):
            return self.engine
        copy = self.engine.copy()
        self.feed_final(self.pending[-1][0] if upto is None else upto, copy)
        return copy

    def retract(self, byte: int, t: int, v: int) -> str:
        """Take back the latest-arriving pending event equal to (char, t, v): "removed",
        "final" (at or before the horizon) or "missing" (as the native out-of-order layer)."""
        if self.max_ts is None or t <= self.max_ts - self.lateness:
            return "final"
        value = v if self.of_mask is None or self.of_mask[byte] else 0
        for i in reversed(range(len(self.pending))):
            pt, _, pbyte, pv, _ = self.pending[i]
            if pt == t and pbyte == byte and pv == value:
                del self.pending[i]
                return "removed"
        return "missing"

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attributes the conditions read from the data (``timestamp`` is every event's own)."""
        return self.where.attribute_names()

    def table_columns(self, table: Any) -> dict[str, list[Any]]:
        """The attribute columns of a table (a DataFrame, or a mapping from names to columns),
        each as a list; a missing one is an error."""
        names = table.columns if hasattr(table, "columns") else table
        for name in self.attributes:
            if name not in names:
                readers = sorted(c for c, letters in self.needed.items() if name in letters)
                raise InputError(f"the table has no column {name!r}, which the condition of {'/'.join(readers)} reads")
        return {name: _as_list(table[name]) for name in self.attributes}

    def attribute_columns(self, raw: bytes, ts: np.ndarray, attributes: Optional[list[Mapping]],
                          table: Optional[Mapping[str, list[Any]]]) -> list[list[Any]]:
        """One list per attribute column, one value per event (None where its letter reads
        none), from the tuples' mappings or a table's columns (``table_columns``)."""
        n = len(raw)
        chars = raw.decode("latin-1")
        out = []
        for name in self.columns:
            if name == "timestamp":
                out.append(ts.tolist())
                continue
            column: list[Any] = [None] * n
            readers = {c for c, names in self.needed.items() if name in names}
            source = table[name] if table is not None else None
            for i, c in enumerate(chars):
                if c not in readers:
                    continue
                if source is not None:
                    raw_value = source[i]
                else:
                    mapping = attributes[i] if attributes is not None else {}
                    if name not in mapping:
                        raise InputError(f"the {c} event has no attribute {name!r}, which a condition reads", event=i)
                    raw_value = mapping[name]
                column[i] = exact_value(data_value(raw_value, f"attribute {name!r} of event {i}"))
            out.append(column)
        return out

    def saved(self) -> dict:
        """What pickling keeps: the engine's snapshot (the final events) and the pending ones."""
        return {"where": self.engine._snapshot(), "late": self.late, "pending": list(self.pending),
                "arrived": self.arrived, "max_ts": self.max_ts}

    def load(self, state: dict) -> None:
        """The state ``saved`` returned, into a counter built alike; an edited one is a StateError."""
        def bad(what: str) -> StateError:
            return StateError(f"a saved conditions engine is inconsistent: {what}")

        try:
            self.engine._load(state["where"])
        except TypeError as exc:  # a part of another shape than the binding's
            raise bad(str(exc)) from None
        pending, max_ts = state.get("pending", []), state.get("max_ts")
        if not (max_ts is None or type(max_ts) is int) or not all(
                type(state.get(k, 0)) is int for k in ("late", "arrived")) or not isinstance(pending, list):
            raise bad("the pending events' header")
        horizon = None if max_ts is None else max_ts - self.lateness
        for item in pending:
            fits = isinstance(item, tuple) and len(item) == 5 and all(type(x) is int for x in item[:4]) and (
                isinstance(item[4], tuple) and len(item[4]) == len(self.columns)) and all(
                v is None or isinstance(v, (bool, int, str, Fraction)) for v in item[4])
            if not fits or horizon is None or not horizon < item[0] <= max_ts or not 0 <= item[2] < 256:
                raise bad(f"pending event {item!r}")
        self.pending, self.max_ts = sorted(pending, key=lambda item: item[:2]), max_ts
        self.late, self.arrived = state["late"], state.get("arrived", len(pending))

    def result_parts(self) -> tuple:
        """Over every accepted event, the pending ones included (as the native engines)."""
        engine = self.settled()
        count, total, partial, extremes = engine.totals()
        low, high = extremes or (None, None)
        return count, total, partial, engine.skipped, engine.events, low, high


def letter_codes(letters: Any) -> np.ndarray:
    """Per byte, the index of its letter among ``letters``, 255 for a byte of none."""
    codes = np.full(256, 255, np.uint8)
    for i, c in enumerate(letters):
        codes[ord(c)] = i
    return codes


def of_mask(query: Any) -> Optional[np.ndarray]:
    """Per byte, whether its values count (``of``); None when every letter's do."""
    return None if query.of is None else np.array([c in query.of for c in map(chr, range(256))])


def _as_list(column: Any) -> list[Any]:
    return column.tolist() if hasattr(column, "tolist") else list(column)


def exact_value(value: Any) -> Any:
    """A condition value as the kernel takes it: a whole Fraction as its int."""
    return value.numerator if isinstance(value, Fraction) and value.denominator == 1 else value


class WhereArrivals(Arrivals):
    """The retraction rules of ``Arrivals`` over a ``WhereCounter``'s pending events."""

    def __init__(self, counter: WhereCounter, retracted: int = 0):
        super().__init__(counter.lateness, None, 0, retracted)
        self.counter = counter

    @property
    def max_ts(self) -> Optional[int]:
        return self.counter.max_ts

    @property
    def pending(self) -> int:
        return len(self.counter.pending)

    def _retract(self, byte: int, t: int, v: int) -> str:
        return self.counter.retract(byte, t, v)
