"""The matches themselves: every match of a query once, lazily, and uniform samples.

Both run in the kernel over the counting structures (docs/ENGINE.md, "Matches as output"):
the enumeration follows only branches that lead to a match inside the window, so the time
between two matches is bounded by the window, never by how many matches there are; a sample
is drawn by unranking a uniform integer below the exact count, so it is exactly uniform even
over 10^100 matches.

>>> import suse
>>> q = suse.Query("AB*C", window=10)
>>> list(suse.matches(q, [("A", 1), ("B", 2), ("C", 3)]))
[(0, 1, 2), (0, 2)]
"""
from __future__ import annotations

import itertools
import secrets
from typing import Any, Iterator, Optional, Union

from suse import _core
from suse.api.checks import check_int
from suse.api.events import coerce_events
from suse.api.feeding import check_order
from suse.api.query import Query, closing_refusal
from suse.api.where_matches import WhereMatchSet
from suse.errors import InputError

#: The most matches one `sample_matches` call draws (they are returned as a list).
MAX_SAMPLE = 10_000_000

Positions = tuple[int, ...]
Element = tuple[str, int, int]  # (char, timestamp, value), as Summary.elements() returns them


def _check_query(query: Any) -> Query:
    if not isinstance(query, Query):
        raise InputError(f"expected a suse.Query, got {type(query).__name__}")
    return query


def _check_limit(limit: Any) -> Optional[int]:
    return None if limit is None else check_int("limit", limit)


def _check_seed(seed: Any) -> int:
    return secrets.randbits(64) if seed is None else check_int("seed", seed, maximum=2**64 - 1)


def stream_set(query: Query, events: Any, chars: Any, timestamps: Any) -> Any:
    """The matches over the events: the kernel's set, or with conditions their own search
    (``suse.api.where_matches``), which answers ``iterate``/``sample``/``count`` alike."""
    if query.where is not None:
        return WhereMatchSet(query, events, chars, timestamps)
    raw, ts, _ = coerce_events(events, chars, timestamps)
    check_order(ts, None)  # here, for an error that names the event
    # A negation at the end of the pattern: the exact engine's automaton and pending states,
    # so that a match counts exactly when `exact` counts it (its window closed with no
    # negated event after its last element).
    pending = None if query._closing is None else query._closing[0]
    return _core.MatchSet.over_events(query._exact_dfa, query.window, query.policy, raw, ts, pending)


def _iterate(match_set: Any, limit: Optional[int], containing: Optional[int] = None) -> Iterator[tuple]:
    """The kernel's matches in order, fetched in growing batches (the first one at once)."""
    cursor = match_set.cursor(containing)
    left, batch = limit, 1
    while left is None or left > 0:
        want = batch if left is None else min(batch, left)
        found = cursor.next_batch(want)
        yield from found
        if len(found) < want:
            return
        if left is not None:
            left -= len(found)
        batch = min(batch * 2, 1024)


def _shape(with_missing: bool) -> Any:
    if with_missing:
        return lambda m: (tuple(m[0]), m[1] or 0)
    return lambda m: tuple(m[0])


def matches(query: Query, events: Any = None, limit: Optional[int] = None, *, chars: Any = None,
            timestamps: Any = None, with_missing: bool = False) -> Iterator[Union[Positions, tuple[Positions, int]]]:
    """Every match of `query` over the events, each once, as a tuple of 0-based positions of
    the input (events as `suse.exact` takes them), lazily, in order: by first element, then
    second, and so on. `limit` stops after that many.

    The policy, negations, the window, `max_missing` and the conditions (`where`, over
    events with attributes as `suse.exact` takes them) are the query's. With a negation at
    the end of the pattern (`A B+ !C`) the stream is over, as for `suse.exact`: a match is
    listed iff no event of a negated character follows its last element up to its first
    element's time plus the window. With
    `with_missing=True` each match comes as `(positions, missing letters)` (0 for an exact
    match; approximate queries only differ there). Arguments are checked at the call; the
    matches are then computed as they are read."""
    query = _check_query(query)
    limit = _check_limit(limit)
    shape = _shape(with_missing)
    match_set = stream_set(query, events, chars, timestamps)
    return (shape(m) for m in _iterate(match_set, limit))


def sample_matches(query: Query, events: Any = None, k: int = 1, seed: Optional[int] = None, *, chars: Any = None,
                   timestamps: Any = None, with_missing: bool = False) -> list:
    """`k` matches drawn uniformly at random with replacement from all matches of `query`
    over the events (positions as in `matches`), in the order drawn; the same `seed` draws
    the same matches. Exact at any count (the draw is an integer below the exact count).
    `suse.InputError` if there is no match to draw from."""
    query = _check_query(query)
    k = check_int("k", k, maximum=MAX_SAMPLE)
    seed = _check_seed(seed)
    shape = _shape(with_missing)
    return [shape(m) for m in stream_set(query, events, chars, timestamps).sample(k, seed)]


def count_matches(query: Query, events: Any = None, *, chars: Any = None, timestamps: Any = None) -> int:
    """The number of matches `matches` lists (equal to `suse.exact(query, events).count`)."""
    return stream_set(_check_query(query), events, chars, timestamps).count()


class RetainedMatches:
    """The matches among a summary's retained elements at one moment, judged as the summary
    counts them (with what lay between the elements: negated events, breaks of contiguity).
    Positions index `elements`."""

    def __init__(self, elements: list[Element], match_set: Any):
        self.elements = elements
        self._set = match_set

    @staticmethod
    def told_by_elements(query: Query) -> bool:
        """Whether `of_elements` gives exactly the matches a summary counts: the query has no
        negation, no contiguity and no missing letters, so no event between two retained
        elements changes whether they match."""
        return query.policy != "contiguous" and not query.negated and not query.max_missing

    @classmethod
    def of_elements(cls, query: Query, elements: list[Element]) -> RetainedMatches:
        """From a list of elements alone, when the summary is not at hand: nothing is known
        to lie between them, so negations never fire and consecutive elements count as
        contiguous (exact for the policies any and next without negation)."""
        query = _check_query(query)
        if query._closing is not None:  # what follows the last retained element is unknown
            raise closing_refusal(query.regex, "listing a summary's retained matches")
        chars = "".join(c for c, _, _ in elements)
        match_set = stream_set(query, None, chars, [t for _, t, _ in elements])
        return cls(list(elements), match_set)

    def positions(self, limit: Optional[int] = None, containing: Optional[int] = None) -> Iterator[Positions]:
        """Index tuples of the matches in order; with `containing`, only those through it."""
        limit = _check_limit(limit)
        if containing is not None:
            containing = check_int("containing", containing)
            if containing >= len(self.elements):
                raise InputError(f"containing: no element {containing}; the summary retains {len(self.elements)}")
        return (tuple(m[0]) for m in _iterate(self._set, limit, containing))

    def nth(self, n: int, containing: Optional[int] = None) -> Optional[Positions]:
        """The n-th match (0-based) in that order, or None when there are fewer."""
        n = check_int("n", n)
        return next(itertools.islice(self.positions(n + 1, containing), n, None), None)

    def __iter__(self) -> Iterator[list[Element]]:
        return self.matches()

    def matches(self, limit: Optional[int] = None) -> Iterator[list[Element]]:
        return ([self.elements[i] for i in m] for m in self.positions(limit))

    def sample(self, k: int, seed: Optional[int] = None) -> list[list[Element]]:
        k = check_int("k", k, maximum=MAX_SAMPLE)
        return [[self.elements[i] for i in m[0]] for m in self._set.sample(k, _check_seed(seed))]

    def count(self) -> int:
        return self._set.count()
