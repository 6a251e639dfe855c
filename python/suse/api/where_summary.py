"""A bounded summary of a query with conditions between events (``where=``), or with a
negation at the end of the pattern (``"A B+ !C"``).

``suse.Summary(Query(..., where=...), size, strategy)`` (or ``Query("A B+ !C", W)``) returns a
``WhereSummary``. It retains at most ``size`` elements and counts, exactly, the matches among
them: the same definition as a summary without conditions (every windowed set of the
retained elements spelling a word of the pattern; with ``where``, also satisfying every
condition, read over the set itself; with a negation at the end, ``suse.exact``'s rule over
the retained elements: a set counts once the time has passed its first element's time plus
the window with no retained element of a negated character after its last element by then).
The counts are those of one exact engine (``suse_core.WhereRetained`` over the kernel's
``Retained``: the conditions engine, or the exact window with its closing) fed the retained
elements in time order:

* an element that is kept while there is room is fed to the engine at once (the engine's
  amortised cost per event);
* an eviction (or a ``time_to_live`` removal) of the oldest retained elements (``fifo``,
  ``time_to_live``, ``random`` when it draws the oldest) takes their share out of the engine:
  the partial matches of the oldest element all start with it, so it alone is replayed through
  the later elements of its window and subtracted (none if it starts nothing); any other
  eviction rebuilds the engine from a blank copy by replaying the retained elements: O(|S|)
  feeds. Either way the counters stay exact with no state beyond the |S| elements and the
  engine's counts over them;
* ``present`` ranks the elements by the matches through each, count(S) - count(S without e),
  in one pass of forked engines (``suse_kernel::conditions::retained``): O(|S| · |N|) feeds
  per ranking, |N| <= |S| the elements within one window after an element; an arriving
  element that forms no match is dropped without one.

With a negation at the end of the pattern, the events of a negated character are elements
too (they decide the absence), kept and evicted like the others. The counters follow
``suse.exact``: ``result()`` treats the stream as over (every pending match whose retained
elements hold no negated element after it counts), an evaluation at T counts the matches
whose window closed by T. ``present`` ranks by the same stream-over count, count(S) -
count(S without e): positive for an element of matches, 0 for one of pending sets only
blocked, negative for a negated element that blocks matches (removing it adds them), so
``present`` evicts those first: it keeps the set whose count is largest, as it always does.
A new element's gain is its change of that count (an element that only starts pending sets
gains 0: the summary full, it replaces only a negated element that refutes matches, else it is
dropped, as an initiator is without a negation).

``suse`` (the default) and ``adaptive`` rank by present + expected benefit, as the base
summary does: the present part is ``present``'s exact count, the expected part the partial
matches through the element by automaton state (exact, with the conditions, from the same
forks) dotted with the base summary's expected-matches coefficients over the letters'
probabilities (given, or estimated online as the base does; ``suse_kernel::conditions::outlook``).
The expectation knows nothing of the conditions or of the absence: it over-estimates the
future matches, while the counters stay exact over the retained elements (docs/ENGINE.md,
"Summaries with conditions"). With a negation at the end, given probabilities are the
pattern's letters'; a negated character that is no letter then has probability 0.
Refused by name: ``lateness``, ``with_query`` and ``to_bytes`` (a
summary with conditions pickles instead). ``matches``/``sample_matches`` list the retained
elements' matches with the conditions' search (``suse.api.where_matches``).
"""
from __future__ import annotations

import secrets
from typing import Any, Iterator, Mapping, Optional

import numpy as np

from suse import _core
from suse.api.checks import STRATEGIES, check_choice, check_int, check_memory_limit, check_probabilities
from suse.api.events import coerce_events, eval_times, in_input_order
from suse.api.feeding import PLACEMENTS, check_late_mode, drop_late, late_mask
from suse.api.locking import Locked, locked
from suse.api.matching import RetainedMatches, stream_set
from suse.api.query import closing_dfa
from suse.api.results import Evaluation, SummaryResult
from suse.api.where import WhereCounter, letter_codes, of_mask
from suse.api.where_matches import WhereMatchSet
from suse.errors import InputError, LateEventError, QueryError, StateError

#: The strategies that rank by benefits over the forks of ``Retained::through``.
RANKED = ("present", "suse", "adaptive")
#: The strategies that add the expected matches (the kernel's outlook) to the ranking.
EXPECTING = ("suse", "adaptive")


class WhereSummary(Locked):
    """What ``suse.Summary`` is for a query with conditions (see the module's description)."""

    def __init__(self, query: Any, size: int, strategy: str = "suse", probabilities: Optional[Mapping[str, float]] = None,
                 seed: Optional[int] = None, time_to_live: Optional[int] = None, memory_limit: Optional[int] = None,
                 lateness: int = 0, placement: str = "buffer"):
        self.query = query
        self.size = check_int("size", size, minimum=1, maximum=10_000_000)
        self.strategy = check_choice("strategy", strategy, STRATEGIES)
        #: what the summary is of, in messages
        self._kind = "with where" if query.where is not None else "with a negation at the end of the pattern"
        self.placement = check_choice("placement", placement, PLACEMENTS)
        if check_int("lateness", lateness):
            raise InputError(f"lateness is not supported by a summary {self._kind} yet: feed it events in time order")
        self.lateness = 0
        self.time_to_live = None if time_to_live is None else check_int("time_to_live", time_to_live)
        self.probabilities = check_probabilities(probabilities, query.alphabet)
        self.seed = secrets.randbits(63) if seed is None else check_int(
            "seed", seed, maximum=2**64 - 1)
        self.memory_limit = check_memory_limit(memory_limit)
        self.dropped = 0
        self._counter: WhereCounter | ClosingElements
        #: the letter codes of negated characters: elements that can only refute matches
        self._negated_codes = frozenset(i for i, c in enumerate(query._exact_letters) if c in query.negated) if (
            query._closing is not None) else frozenset()
        self._rng = np.random.Generator(np.random.PCG64(self.seed))
        # the retained elements in time order, and the exact counts over exactly them
        if query.where is not None:
            self._counter = WhereCounter(query, self.memory_limit)
            self._kept = _core.WhereRetained(self._counter.engine)
        else:
            self._counter = ClosingElements(query)
            self._kept = _core.WhereRetained.closing(closing_dfa(query.regex), query.window, query._closing)
        if self.strategy in EXPECTING:
            given = None if self.probabilities is None else [
                self.probabilities.get(c, 0.0) for c in query._exact_letters]
            self._kept.expect(given, self.size, self.strategy == "adaptive")
        self._times: list[int] = []  # their timestamps (for time_to_live)
        self._last: Optional[int] = None
        self._events = self._skipped = self._late = self._evictions = 0
        self._detected = [0, 0]  # count, sum of the matches each element formed when it was kept

    @property
    def counter(self) -> WhereCounter:
        """The conditions' compiled form: ``feed`` takes one list per ``counter.columns``."""
        if not isinstance(self._counter, WhereCounter):
            raise self._refuse("a counter of conditions (the query has none)")
        return self._counter

    # -- feeding --

    @locked
    def insert(self, char: str, timestamp: int, value: int = 0, attributes: Optional[Mapping[str, Any]] = None, *,
               late: str = "error") -> None:
        """Process one event with its attributes (with ``where``)."""
        event = (char, timestamp, value) if self.query.where is None and attributes is None else (
            char, timestamp, value, {} if attributes is None else attributes)
        self.extend([event], late=late)

    @locked
    def extend(self, events: Any = None, timestamps: Any = None, values: Any = None, evaluate_at: Any = None, *,
               chars: Any = None, elements: bool = False, late: str = "error") -> list[Evaluation]:
        """Process a batch of events (as ``suse.Exact`` takes them: with ``where``, with
        attributes); one ``Evaluation`` per time in ``evaluate_at``, taken before the first
        event later than it, in the order given (``elements=True`` adds the retained elements)."""
        if values is not None and self.query.where is not None:
            raise InputError("with where=, pass events (tuples with an attributes mapping, or a table with "
                             "attribute columns), not values=")
        if isinstance(self._counter, ClosingElements):
            parsed = self._counter.parse(events, chars, timestamps, values)
        else:
            parsed = self._counter.parse(events, chars, timestamps)
        return self.feed(*parsed, evaluate_at, elements=elements, late=late)

    @locked
    def feed(self, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], columns: list[list[Any]],
             evaluate_at: Any = None, *, elements: bool = False, late: str = "error") -> list[Evaluation]:
        """``extend`` for events already coerced: one-byte characters, timestamps, values (or
        None) and one list per column of the counter's columns (what its ``parse`` gives, or
        Spark's vectorised ``condition_columns``), a value per event."""
        late = check_late_mode(late)
        times, order = eval_times(evaluate_at, self._last)
        raw, kept_ts, vals, n_late = drop_late(raw, ts, vals, self._last, 0, late)
        if n_late:
            keep = np.flatnonzero(~late_mask(ts, self._last, 0)[0])
            columns = [[column[i] for i in keep] for column in columns]
        self._late += n_late
        codes = self._counter.letter_codes[np.frombuffer(raw, np.uint8)].tolist()
        of_mask = self._counter.of_mask
        values_of = [0] * len(raw) if vals is None else (
            np.where(of_mask[np.frombuffer(raw, np.uint8)], vals, 0) if of_mask is not None else vals).tolist()
        asked = [] if times is None else times.tolist()
        rows, next_time = [], 0
        for i, t in enumerate(kept_ts.tolist()):
            while next_time < len(asked) and asked[next_time] < t:
                rows.append(self._evaluation(asked[next_time], elements))
                next_time += 1
            self._observe(codes[i], t, values_of[i], [column[i] for column in columns])
        rows.extend(self._evaluation(at, elements) for at in asked[next_time:])
        return in_input_order(rows, order)

    def _observe(self, code: int, t: int, v: int, attrs: list) -> None:
        if code != 255:  # else a character outside the query: no element
            draws = self._rng.bit_generator.state if self.strategy == "random" else None
            expects = self.strategy in EXPECTING
            if expects:  # every element of a letter, before the decision (as the base summary learns)
                self._kept.observe(code, t, v)
            try:
                self._place(code, t, v, attrs)
            except BaseException:  # (a LimitError): the event changed nothing, the generator's draw included
                if draws is not None:
                    self._rng.bit_generator.state = draws
                if expects:
                    self._kept.unobserve()
                raise
        else:
            self._skipped += 1
        self._events += 1
        self._last = t

    def _place(self, code: int, t: int, v: int, attrs: list) -> None:
        """Keep the element, evicting one if full, or drop it."""
        expired = self._expired(t)
        full = len(self._times) - expired >= self.size
        if expired and full and self.strategy in RANKED:
            self._remove(list(range(expired)))  # the ranking is of what is left
            expired = 0
        if not full:
            self._admit(list(range(expired)), code, t, v, attrs)
            return
        victim = self._victim(code, t, v, attrs, expired)
        if victim is None:  # not kept: it forms no match among the retained elements
            return
        self._admit([*range(expired), victim], code, t, v, attrs)
        self._evictions += 1

    def _expired(self, now: int) -> int:
        """How many of the oldest elements are past ``time_to_live`` at ``now``."""
        if self.time_to_live is None:
            return 0
        n = 0
        while n < len(self._times) and now - self._times[n] > self.time_to_live:
            n += 1
        return n

    def _remove(self, positions: list[int]) -> None:
        if positions:
            self._kept.remove(positions)
            for i in sorted(positions, reverse=True):
                del self._times[i]

    def _admit(self, gone: list[int], code: int, t: int, v: int, attrs: list) -> None:
        """Remove the elements at ``gone`` and keep the new one, with one recount (nothing
        changes on an error); the matches it formed are detected."""
        if gone:
            before = self._kept.replace(gone, code, t, v, attrs)
            for i in sorted(gone, reverse=True):
                del self._times[i]
        else:
            before = self._kept.totals()
            self._kept.push(code, t, v, attrs)
        after = self._kept.totals()
        self._detected[0] += after[0] - before[0]
        self._detected[1] += after[1] - before[1]
        self._times.append(t)

    # -- selection --

    def _victim(self, code: int, t: int, v: int, attrs: list, start: int) -> Optional[int]:
        """The position of the retained element to evict for the new one, among those from
        ``start`` on (the earlier ones expire), or None to drop the new one."""
        if self.strategy == "fifo":
            return start
        if self.strategy == "random":
            return start + int(self._rng.integers(len(self._times) - start))
        if self.strategy != "present":  # suse, adaptive: in the kernel (the base's coefficients)
            return self._kept.choose(code, t, v, attrs, self._may_block(), self._ranked_part == 1)
        part = self._ranked_part
        gain = self._kept.totals_with(code, t, v, attrs)[part] - self._kept.totals_at()[part]
        if not gain and not self._may_block():  # no benefit is below 0: it replaces none
            return None
        benefits = self.present_benefits()
        lowest = min(range(len(benefits)), key=lambda i: (benefits[i], i))  # ties: the oldest
        return lowest if gain > benefits[lowest] else None

    def _may_block(self) -> bool:
        """Whether a retained element is of a negated character (a negation at the end of the
        pattern): only such an element's benefit can be below 0, its removal letting matches count."""
        return bool(self._negated_codes) and any(e[0] in self._negated_codes for e in self._kept.elements())

    @locked
    def present_benefits(self) -> list[int]:
        """Per retained element (in time order), the matches through it among the retained
        elements: their number, or with aggregate "sum" the sum of their values. Exact: the
        matches of the retained elements minus those without it, the stream over (negative for
        a negated element that blocks matches; see the module's description)."""
        return [both[self._ranked_part] for both in self._kept.through()]

    @locked
    def benefits(self) -> list[tuple[float, float]]:
        """With ``suse`` or ``adaptive``: per retained element (in time order), its (present,
        expected) benefit at the latest event's time, as the ranking scores it (floats)."""
        if self.strategy not in EXPECTING:
            raise self._refuse(f"expected benefits with strategy {self.strategy!r}")
        return self._kept.benefits(self._last if self._last is not None else 0, self._ranked_part == 1)

    @property
    def _ranked_part(self) -> int:
        """What `present` ranks by: the matches' number (0), or their values' sum (1) with "sum"."""
        return 1 if self.query.aggregate == "sum" else 0

    # -- reading --

    def _evaluation(self, at: int, with_elements: bool) -> Evaluation:
        count, total, partial, extremes = self._kept.totals_at(at)
        return Evaluation(at, count, total, partial, self._detected[0], self._detected[1],
                          self._elements() if with_elements else None,
                          min=extremes and extremes[0], max=extremes and extremes[1])

    @locked
    def result(self) -> SummaryResult:
        """The counts over the retained elements, the stream over (as ``suse.exact``'s result)."""
        count, total, partial, extremes = self._kept.totals_at()
        low, high = extremes or (None, None)
        return SummaryResult(count, total, partial, self._detected[0], self._detected[1], self._skipped, self._events,
                             len(self._times), low, high, late=self._late, evictions=self._evictions)

    def _elements(self) -> list[tuple]:
        if self.query.where is None:
            letters = self.query._exact_letters
            return [(letters[code], t, v) for code, t, v, _ in self._kept.elements()]
        alphabet, columns, needed = self.query.alphabet, self._counter.columns, self._counter.needed
        out = []
        for code, t, v, attrs in self._kept.elements():
            letter = alphabet[code]
            read = needed.get(letter, ())
            out.append((letter, t, v, {name: attrs[k] for k, name in enumerate(columns)
                                       if name != "timestamp" and name in read}))
        return out

    @locked
    def elements(self) -> list[tuple]:
        """The retained elements in time order, as (char, timestamp, value, attributes) with the
        attributes the conditions read, or (char, timestamp, value) without ``where``: events
        ``suse.exact`` takes back with this query."""
        return self._elements()

    @property
    @locked
    def late(self) -> int:
        return self._late

    @property
    def pending(self) -> int:
        return 0

    @locked
    def __len__(self) -> int:
        return len(self._times)

    @locked
    def __repr__(self) -> str:
        return f"Summary({self.query!r}, size={self.size}, strategy={self.strategy!r}, retained={len(self)})"

    # -- refused by name --

    def _refuse(self, what: str) -> QueryError:
        return QueryError(f"{what} is not supported by a summary {self._kind} yet", 0, self.query.regex)

    def retract(self, char: str, timestamp: int, value: int = 1) -> None:
        raise LateEventError(f"cannot retract the event at timestamp {timestamp}: a summary {self._kind} takes no "
                             "lateness, so every event is final")

    def retained_matches(self) -> RetainedMatches:
        """The matches among the retained elements now (what ``result()`` counts, the stream
        over): the conditions' search over them (``suse.api.where_matches``), or with a
        negation at the end the kernel's set over them, the negated elements among them."""
        elements = self.elements()
        if self.query.where is None:
            return RetainedMatches(elements, stream_set(self.query, elements, None, None))
        return RetainedMatches(elements, WhereMatchSet(self.query, elements))

    def matches(self, limit: Optional[int] = None) -> Iterator[list[tuple]]:
        """The matches among the retained elements, each as its list of elements, lazily."""
        return self.retained_matches().matches(limit)

    def sample_matches(self, k: int, seed: Optional[int] = None) -> list[list[tuple]]:
        """``k`` matches among the retained elements drawn uniformly with replacement."""
        return self.retained_matches().sample(k, seed)

    def with_query(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("with_query")

    def to_bytes(self) -> bytes:
        raise self._refuse("to_bytes (the saved form of the native summaries; pickle it instead)")

    # -- pickling: the options and the retained elements; the counts are rebuilt on loading --

    @locked
    def __reduce__(self):
        state = {"retained": [list(e) for e in self._kept.elements()], "last": self._last, "events": self._events,
                 "skipped": self._skipped, "late": self._late, "evictions": self._evictions,
                 "detected": list(self._detected), "rng": self._rng.bit_generator.state}
        if self.strategy in EXPECTING:
            state["outlook"] = self._kept.outlook_state()
        options = (self.size, self.strategy, self.probabilities, self.seed, self.time_to_live, self.memory_limit)
        return (_unpickle_where_summary, (self.query, options, state))


def _unpickle_where_summary(query: Any, options: tuple, state: dict) -> WhereSummary:
    summary = WhereSummary(query, *options)
    try:
        retained = [tuple(e[:3]) + (tuple(e[3]),) for e in state["retained"]]
        width, n_letters = len(summary._counter.columns), len(query._exact_letters)
        times = [e[1] for e in retained]
        fits = len(retained) <= summary.size and times == sorted(times) and all(
            len(e) == 4 and all(type(x) is int for x in e[:3]) and 0 <= e[0] < n_letters and e[2] >= 0
            and len(e[3]) == width for e in retained)
        last = state["last"]
        counts = [state[k] for k in ("events", "skipped", "late", "evictions")] + list(state["detected"])
        if not fits or not all(type(c) is int and c >= 0 for c in counts) or len(state["detected"]) != 2 or not (
                (last is None and not retained) or (type(last) is int and last >= max(times, default=last))):
            raise ValueError("its retained elements or counters")
        for code, t, v, attrs in retained:
            summary._kept.push(code, t, v, list(attrs))
        summary._times = times
        summary._rng.bit_generator.state = state["rng"]
        if summary.strategy in EXPECTING:
            summary._kept.restore_outlook(state["outlook"])
    except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
        raise StateError(f"a saved summary {summary._kind} is inconsistent: {exc}") from None
    summary._last = last
    summary._events, summary._skipped, summary._late, summary._evictions = counts[:4]
    summary._detected = counts[4:]
    return summary


class ClosingElements:
    """What a summary with a negation at the end of the pattern reads from events: plain
    (char, timestamp, value) events whose elements are the letters of ``closing_dfa`` (the
    pattern's letters, then the negated characters that are none)."""

    columns: list[str] = []
    needed: dict[str, Any] = {}

    def __init__(self, query: Any):
        self.letter_codes = letter_codes(query._exact_letters)
        self.of_mask = of_mask(query)

    @staticmethod
    def parse(events: Any, chars: Any = None, timestamps: Any = None,
              values: Any = None) -> tuple[bytes, np.ndarray, Optional[np.ndarray], list[list[Any]]]:
        """(raw characters, timestamps, values, no attribute columns) of a batch."""
        raw, ts, vals = coerce_events(events, chars, timestamps, values)
        return raw, ts, vals, []
