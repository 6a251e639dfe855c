"""One match among a summary's retained elements, to show why the count is what it is.

The count can be 10^40, so matches are never listed: they are enumerated lazily, in a
fixed order (by first element, then second, ...), and the page asks for the k-th one, or
for the first one that contains a chosen element.
"""
from __future__ import annotations

from typing import Iterator, Optional, Sequence

from suse.api import Query

Element = tuple[str, int, int]  # (char, timestamp, value), as Summary.elements() returns them

# A search over a summary of 500 elements whose characters rarely reach a final state could
# wander for a long time; past this many steps it gives up (the page then says so).
MAX_STEPS = 200_000


class SearchLimit(Exception):
    """The search took more than MAX_STEPS steps."""


def iter_matches(query: Query, elements: Sequence[Element], containing: Optional[int] = None) -> Iterator[list[int]]:
    """Index lists of the matches among ``elements`` (sorted by time), under the query's
    policy and window; with ``containing``, only matches that include that index."""
    a = query.automaton
    k = len(a.alphabet)
    table = a.table()
    col = [a.alphabet.find(c) for c, _, _ in elements]
    ts = [t for _, t, _ in elements]
    n = len(elements)
    steps = 0

    def step(state: int, i: int) -> int:
        nonlocal steps
        steps += 1
        if steps > MAX_STEPS:
            raise SearchLimit
        return -1 if col[i] < 0 else table[state * k + col[i]]

    last_start = n - 1 if containing is None else containing
    for first in range(last_start + 1):
        s0 = step(a.start, first)
        if s0 < 0:
            continue
        horizon = ts[first] + query.window
        if query.policy == "next":
            # One run per initiator: it takes every later element it can and yields a match
            # each time it is in a final state.
            taken, state = [first], s0
            if state in a.finals and (containing is None or containing == first):
                yield list(taken)
            for j in range(first + 1, n):
                if ts[j] > horizon:
                    break
                nxt = step(state, j)
                if nxt < 0:
                    continue
                taken.append(j)
                state = nxt
                if state in a.finals and (containing is None or containing in taken):
                    yield list(taken)
            continue
        # Skip-till-any-match: every subset, depth first.
        stack: list[tuple[list[int], int]] = [([first], s0)]
        while stack:
            taken, state = stack.pop()
            has = containing is None or containing in taken
            if state in a.finals and has:
                yield taken
            # Children in reverse so that the smallest next index comes out first.
            stop = n if has else containing + 1  # must not jump past the required element
            children = []
            for j in range(taken[-1] + 1, stop):
                if ts[j] > horizon:
                    break
                nxt = step(state, j)
                if nxt >= 0:
                    children.append((taken + [j], nxt))
            stack.extend(reversed(children))


def nth_match(query: Query, elements: Sequence[Element], n: int, containing: Optional[int] = None) -> Optional[list[int]]:
    """The n-th (0-based) match, or None when there are fewer; SearchLimit if too costly."""
    for i, match in enumerate(iter_matches(query, elements, containing)):
        if i == n:
            return match
    return None
