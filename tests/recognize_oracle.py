"""An independent oracle for standard row pattern matching: every way the pattern can match
from a start row, enumerated by recursive generators straight over the syntax tree in order
of preference, and the skip rules applied to the first of them. No program, no memo, no
stack: slow and obviously following the rules.

- a variable consumes one row if its condition holds there;
- concatenation: the preferred ways of the first part, each followed by the rest's;
- alternation: the alternatives in the order written;
- greedy repetition prefers one more iteration, reluctant one fewer; an iteration beyond
  the minimum must consume at least one row;
- ``^`` holds at row 0, ``$`` after the last row; ``{- -}`` marks its rows excluded.
"""
from __future__ import annotations

from suse.recognize.pattern import Alt, Anchor, Exclude, Repeat, Seq, Var


def ways(node, pos, n, holds, path):
    """Yield (next position, path) for each way ``node`` matches at ``pos``, preferred first.
    ``path`` is a tuple of (row, variable, excluded); ``holds(var, row, path)`` decides a row."""
    yield from _ways(node, pos, n, holds, path, False)


def _ways(node, pos, n, holds, path, excl):
    if isinstance(node, Var):
        if pos < n:
            extended = path + ((pos, node.name, excl),)
            if holds(node.name, pos, extended):
                yield pos + 1, extended
    elif isinstance(node, Seq):
        yield from _sequence(list(node.items), pos, n, holds, path, excl)
    elif isinstance(node, Alt):
        for item in node.items:
            yield from _ways(item, pos, n, holds, path, excl)
    elif isinstance(node, Repeat):
        yield from _repeat(node, 0, pos, n, holds, path, excl)
    elif isinstance(node, Anchor):
        if (node.start and pos == 0) or (not node.start and pos == n):
            yield pos, path
    elif isinstance(node, Exclude):
        yield from _ways(node.body, pos, n, holds, path, True)


def _sequence(items, pos, n, holds, path, excl):
    if not items:
        yield pos, path
        return
    for mid, p in _ways(items[0], pos, n, holds, path, excl):
        yield from _sequence(items[1:], mid, n, holds, p, excl)


def _repeat(node, done, pos, n, holds, path, excl):
    def more():
        if node.high is not None and done >= node.high:
            return
        for mid, p in _ways(node.body, pos, n, holds, path, excl):
            if done >= node.low and mid == pos:
                continue  # an optional iteration must consume a row
            yield from _repeat(node, done + 1, mid, n, holds, p, excl)

    def stop():
        if done >= node.low:
            yield pos, path

    first, second = (more, stop) if node.greedy else (stop, more)
    yield from first()
    yield from second()


def oracle_matches(node, n, holds, skip="past", skip_vars=()):
    """[("match", start, path) | ("unmatched", row)] in order, as the standard defines them."""
    out, pos, covered = [], 0, 0
    while pos < n:
        first = next(ways(node, pos, n, holds, ()), None)
        if first is None:
            if pos >= covered:
                out.append(("unmatched", pos))
            pos += 1
            continue
        end, path = first
        out.append(("match", pos, path))
        if end == pos:
            pos += 1
            continue
        covered = max(covered, end)
        if skip == "past":
            pos = end
        elif skip == "next":
            pos += 1
        else:
            rows = [r for r, v, _ in path if v in skip_vars]
            if not rows:
                raise ValueError("no row to skip to")
            target = rows[0] if skip == "first" else rows[-1]
            if target == pos:
                raise ValueError("skip to the first row of the match")
            pos = target
    return out


# --- aggregates over a match's rows, written out plainly -------------------------------------------


def by_value(values, keys, greatest):
    """max_by (``greatest``) / min_by: the value at the row of the greatest / least non-NULL key;
    of equal keys the earliest row. Sorting by (key, position) and taking the end: no running best."""
    ranked = sorted((k if greatest else -k, -i) for i, k in enumerate(keys) if k is not None)
    return values[-ranked[-1][1]] if ranked else None


def distinct_values(values):
    """The distinct non-NULL values, in order of first occurrence."""
    out = []
    for v in values:
        if v is not None and not any(v == w for w in out):
            out.append(v)
    return out
