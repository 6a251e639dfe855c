"""The matches of a query with conditions between its events (``where=``): every match once,
lazily, in the order ``suse.matches`` gives, and uniform samples drawn from exact counts.

A match grows element by element, and whether a grown set still satisfies the conditions
depends on the set only through its *summary*: its automaton state, its last element, and the
elements a later condition can read (per letter, the first k and last k that a ``FIRST`` or
``LAST`` reference reaches; none for a letter no condition refers to). Two sets with the same
summary have the same extensions, so two tables are kept per summary, filled on demand:

* ``earliest``: the smallest last element of a completion, which tells whether a branch leads
  to a match inside the window of its first element (the window reaches index K: the branch
  is worth following iff its earliest completion is at most K). The depth-first search
  follows only such branches, so the time between two matches is polynomial in the window,
  never in how many matches there are;
* ``completions``: how many completions end at or before K, for unranking a uniform integer
  below the exact count (exact at 10^100 matches: Python integers).

Both are bounded: beyond ``memory_limit`` the search raises ``suse.LimitError`` before memory
runs out. The policy is ``any`` (conditions combine with no other yet; ``Query`` refuses them).
"""
from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Iterator
from typing import Any, Optional

from suse.api.checks import DEFAULT_MEMORY_LIMIT
from suse.api.events import coerce_events
from suse.api.feeding import check_order
from suse.api.where import WhereCounter, split_events
from suse.errors import InputError, LimitError
from suse.query.conditions import Reference, truth, walk

#: Rough bytes one table entry and its summary take in Python.
ENTRY_BYTES = 400

#: A partial match's summary: (state, last element, the elements later conditions may read).
Summary = tuple[int, int, tuple[int, ...]]


class WhereMatchSet:
    """The matches of ``query`` (with ``where``) over events given as ``suse.exact`` takes them
    with attributes; positions are 0-based indices of the input."""

    def __init__(self, query: Any, events: Any, chars: Any = None, timestamps: Any = None,
                 memory_limit: Optional[int] = None):
        if chars is not None or timestamps is not None:
            raise InputError("with where=, pass events (tuples with an attributes mapping, or a table with "
                             "attribute columns), not chars=/timestamps=")
        counter = WhereCounter(query)  # the engine's reading of attributes, so both report alike
        plain, attributes, table = split_events(events)
        raw, ts, _ = coerce_events(plain)
        check_order(ts, None)
        columns = None if table is None or not len(raw) else counter.table_columns(table)
        values = counter.attribute_columns(raw, ts, attributes, columns)
        names = [name for name in counter.columns if name != "timestamp"]
        picked = [values[counter.columns.index(name)] for name in names]
        self.chars = raw.decode("latin-1")
        self.times = ts.tolist()
        self.elements = [(c, t, {name: column[i] for name, column in zip(names, picked)})
                         for i, (c, t) in enumerate(zip(self.chars, self.times))]
        automaton = query.automaton
        self.start, self.finals, self.moves = automaton.start, automaton.finals, automaton.transitions
        self.conditions = query.where.conditions
        self.window = query.window
        self.keep_first, self.keep_last = _reach(query.where.conditions.values())
        self.max_entries = max(1, (memory_limit or DEFAULT_MEMORY_LIMIT) // ENTRY_BYTES)
        self._earliest: dict[Summary, tuple[Optional[int], int]] = {}
        self._completions: dict[tuple[Summary, int], int] = {}

    # --- one step ---------------------------------------------------------------------------

    def reach(self, i: int) -> int:
        """The last index inside the window of a match whose first element is ``i``."""
        return bisect.bisect_right(self.times, self.times[i] + self.window) - 1

    def first(self, i: int) -> Optional[Summary]:
        """The summary of the set {i}, or None when i cannot start a match."""
        return self.child((self.start, -1, ()), i)

    def child(self, node: Summary, j: int) -> Optional[Summary]:
        """The summary of ``node``'s set grown by element j, or None when it cannot take j."""
        state, _, kept = node
        element = self.elements[j]
        target = self.moves.get((state, element[0]))
        if target is None:
            return None
        condition = self.conditions.get(element[0])
        if condition is not None and truth(condition, [self.elements[k] for k in kept], element) is not True:
            return None
        return (target, j, self.trim(kept + (j,)))

    def trim(self, kept: tuple[int, ...]) -> tuple[int, ...]:
        """The elements a later condition may read: per letter, the first and last few."""
        by_letter: dict[str, list[int]] = {}
        for k in kept:
            by_letter.setdefault(self.chars[k], []).append(k)
        out: set[int] = set()
        for letter, ks in by_letter.items():
            first, last = self.keep_first.get(letter, 0), self.keep_last.get(letter, 0)
            out.update(ks[:first])
            out.update(ks[len(ks) - last:] if last else ())
        return tuple(sorted(out))

    def accepts(self, node: Summary) -> bool:
        return node[0] in self.finals

    def children(self, node: Summary, upto: int) -> Iterator[tuple[int, Summary]]:
        for j in range(node[1] + 1, upto + 1):
            grown = self.child(node, j)
            if grown is not None:
                yield j, grown

    def _room(self) -> None:
        if len(self._earliest) + len(self._completions) >= self.max_entries:
            raise LimitError(f"the matches' tables would exceed {self.max_entries} entries (memory_limit); "
                             "a shorter window or fewer conditions reading earlier elements need fewer")

    # --- whether a branch leads to a match --------------------------------------------------

    def earliest(self, root: Summary, bound: int) -> Optional[int]:
        """The smallest last element of a non-empty extension of ``root`` that is a match, if
        one is at most ``bound``; else None. An explicit stack: chains are as long as a match."""
        known = self._known(root, bound)
        if known is not False:
            return known  # type: ignore[return-value]
        frames: list[list[Any]] = [[root, root[1] + 1, None]]  # (summary, next index, best so far)
        while frames:
            frame = frames[-1]
            node, j, best = frame
            descended = False
            while j <= bound and (best is None or j < best):
                grown = self.child(node, j)
                j += 1
                if grown is None:
                    continue
                if self.accepts(grown):
                    best = j - 1  # the first accepting child ends before any later completion
                    break
                result = self._known(grown, bound)
                if result is False:
                    frame[1], frame[2] = j, best
                    frames.append([grown, grown[1] + 1, None])
                    descended = True
                    break
                if result is not None and (best is None or result < best):
                    best = result
            if descended:
                continue
            frames.pop()
            self._room()
            self._earliest[node] = (best, bound)
            if frames:
                parent = frames[-1]
                if best is not None and (parent[2] is None or best < parent[2]):
                    parent[2] = best
        return self._known(root, bound)  # type: ignore[no-any-return]

    def _known(self, node: Summary, bound: int) -> Any:
        """The table's answer for ``node`` within ``bound``, or False when it must be computed
        (it was computed for a smaller bound and found nothing there)."""
        entry = self._earliest.get(node)
        if entry is None:
            return False
        best, scanned = entry
        if best is not None or scanned >= bound:
            return best if best is None or best <= bound else None
        return False

    def leads(self, node: Summary, bound: int) -> bool:
        return self.accepts(node) or self.earliest(node, bound) is not None

    # --- every match ------------------------------------------------------------------------

    def iterate(self) -> Iterator[tuple[int, ...]]:
        """Every match once, by first element, then second, and so on (a match before its
        extensions), following only branches that lead to a match inside the window."""
        for i in range(len(self.elements)):
            root = self.first(i)
            if root is None:
                continue
            bound = self.reach(i)
            if not self.leads(root, bound):
                continue
            path = [i]
            if self.accepts(root):
                yield (i,)
            stack = [(root, root[1] + 1)]
            while stack:
                node, j = stack[-1]
                step = self._next_branch(node, j, bound)
                if step is None:
                    stack.pop()
                    path.pop()
                    continue
                k, grown = step
                stack[-1] = (node, k + 1)
                stack.append((grown, k + 1))
                path.append(k)
                if self.accepts(grown):
                    yield tuple(path)

    def cursor(self, containing: Optional[int] = None) -> MatchCursor:
        """The matches in order as the kernel's sets hand them out (``suse.api.matching``);
        with ``containing``, those through that element (the others are passed over)."""
        found = self.iterate()
        return MatchCursor(found if containing is None else (m for m in found if containing in m))

    def _next_branch(self, node: Summary, j: int, bound: int) -> Optional[tuple[int, Summary]]:
        for k in range(j, bound + 1):
            grown = self.child(node, k)
            if grown is not None and self.leads(grown, bound):
                return k, grown
        return None

    # --- how many, and uniform draws --------------------------------------------------------

    def completions(self, root: Summary, bound: int) -> int:
        """The number of non-empty extensions of ``root`` within ``bound`` that are matches."""
        key = (root, bound)
        if key in self._completions:
            return self._completions[key]
        frames: list[list[Any]] = [[root, self.children(root, bound), 0]]
        while frames:
            frame = frames[-1]
            descended = False
            for _, grown in frame[1]:
                frame[2] += self.accepts(grown)
                known = self._completions.get((grown, bound))
                if known is None:
                    frames.append([grown, self.children(grown, bound), 0])
                    descended = True
                    break
                frame[2] += known
            if descended:
                continue
            frames.pop()
            self._room()
            self._completions[(frame[0], bound)] = frame[2]
            if frames:
                frames[-1][2] += frame[2]
        return self._completions[key]

    def starts(self) -> list[tuple[int, Summary, int]]:
        """Per first element that starts a match: (index, summary, its number of matches)."""
        out = []
        for i in range(len(self.elements)):
            root = self.first(i)
            if root is not None:
                total = self.accepts(root) + self.completions(root, self.reach(i))
                if total:
                    out.append((i, root, total))
        return out

    def count(self) -> int:
        return sum(total for _, _, total in self.starts())

    def sample(self, k: int, seed: int) -> list[tuple[tuple[int, ...], int]]:
        """``k`` matches uniformly at random with replacement (an integer below the exact count,
        unranked: first element by its share, then each next element by its branch's), each
        with its number of missing letters (0: as the kernel's set gives them)."""
        starts = self.starts()
        total = sum(t for _, _, t in starts)
        if not total:
            raise InputError("there is no match to sample from")
        cumulative, running = [], 0
        for _, _, t in starts:
            running += t
            cumulative.append(running)
        draw = random.Random(seed)
        out = []
        for _ in range(k):
            r = draw.randrange(total)
            s = bisect.bisect_right(cumulative, r)
            i, node, _ = starts[s]
            out.append((self._unrank(i, node, r - (cumulative[s - 1] if s else 0)), 0))
        return out

    def _unrank(self, i: int, node: Summary, r: int) -> tuple[int, ...]:
        """The r-th match (in the order of ``iterate``) among those starting with ``node``."""
        bound, path = self.reach(i), [i]
        while True:
            if self.accepts(node):
                if r == 0:
                    return tuple(path)
                r -= 1
            for j, grown in self.children(node, bound):
                size = self.accepts(grown) + self.completions(grown, bound)
                if r < size:
                    path.append(j)
                    node = grown
                    break
                r -= size
            else:  # pragma: no cover - r is below the node's count by construction
                raise AssertionError("a rank beyond its branch's count")


class MatchCursor:
    """Matches handed out in batches of (positions, missing letters), as the kernel's cursor."""

    def __init__(self, found: Iterator[tuple[int, ...]]):
        self.found = found

    def next_batch(self, n: int) -> list[tuple[tuple[int, ...], int]]:
        return [(m, 0) for m in itertools.islice(self.found, n)]


def _reach(conditions: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Per letter Y, how many of its first and of its last elements some condition can read:
    ``FIRST(Y.c, n)`` the first n + 1; ``LAST(Y.c, n)`` (``Y.c`` is n = 0) the last n + 1 from
    an element of another letter, the last n from a Y element (it is itself the latest)."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for condition in conditions:
        for node in walk(condition.root):
            if isinstance(node, Reference):
                if node.navigation == "first":
                    first[node.letter] = max(first.get(node.letter, 0), node.offset + 1)
                else:
                    own = node.letter == condition.letter
                    last[node.letter] = max(last.get(node.letter, 0), node.offset + (0 if own else 1))
    return first, last
