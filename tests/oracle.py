"""Brute-force oracles for tiny streams, independent of the engine they check.

Nothing here imports suse. Matching is decided by Python's ``re.fullmatch``; the only
extra machinery is a small epsilon-NFA built from ``re``'s own parse tree, used to decide
whether a word is a *live prefix* (can still be extended to a word of the language).
That NFA is itself checked against ``re.fullmatch`` and against bounded extension search
in ``test_oracle.py``.

Events are tuples ``(char, timestamp, value)``; ``(char, timestamp)`` is allowed and its
value counts as 0 in sums. Cost is exponential: keep streams to roughly 16 events.
"""
from __future__ import annotations

import itertools
import re
from typing import Callable, Iterable, Mapping

import numpy as np

from conditions_oracle import holds

try:  # Python >= 3.11
    import re._parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = [
    "query_to_python_regex",
    "Language",
    "stam_matches",
    "stam_aggregate",
    "stam_aggregate_at",
    "stnm_matches",
    "stnm_aggregate",
    "where_matches",
    "absence_matches",
    "where_aggregate",
    "matches",
    "approx_matches",
]

_QUERY_META = set("()|*+?.")


# --------------------------------------------------------------------------- queries
def query_to_python_regex(query: str) -> str:
    """Translate a suse query into an equivalent Python ``re`` pattern.

    Whitespace is dropped, ``.`` becomes a class of the query's explicit characters,
    groups become non-capturing, and quantifiers (``* + ? {m} {m,} {m,n}``) and ``|``
    carry over unchanged. Every other character must be an ASCII letter or digit.
    """
    # A well-formed count {m}, {m,} or {m,n} is one token; its digits are not characters.
    tokens = re.findall(r"\{\d+(?:,\d*)?\}|.", "".join(query.split()))
    literals = sorted({t for t in tokens if t not in _QUERY_META and len(t) == 1})
    bad = [c for c in literals if not (c.isascii() and c.isalnum())]
    if bad:
        raise ValueError(f"query {query!r}: {bad[0]!r} is not a character or operator")
    if "." in tokens and not literals:
        raise ValueError(f"query {query!r} uses '.' but names no character")
    dot = "[" + "".join(re.escape(c) for c in literals) + "]"
    out = []
    for t in tokens:
        if t == "(":
            out.append("(?:")
        elif t == ".":
            out.append(dot)
        elif t in _QUERY_META or len(t) > 1:
            out.append(t)
        else:
            out.append(re.escape(t))
    return "".join(out)


# --------------------------------------------------------------------------- language
class Language:
    """Membership and live-prefix tests for a Python ``re`` pattern.

    ``accepts`` uses ``re.fullmatch``. ``is_live_prefix(w)`` is true when some ``w + u``
    (``u`` possibly empty) is accepted; it runs an epsilon-NFA built by Thompson's
    construction over ``re``'s parse tree, which supports literals, character classes
    (literals, ranges, negation), ``.``, groups, alternation and greedy/lazy repetition.
    Anything else (anchors, lookaround, backreferences, possessive repeats, IGNORECASE)
    raises ``ValueError`` rather than risk a wrong answer.
    """

    def __init__(self, regex_py: str):
        self.pattern = regex_py
        self._re = re.compile(regex_py)
        if self._re.flags & re.IGNORECASE:
            raise ValueError("oracle does not support IGNORECASE")
        self._eps: list[list[int]] = []
        self._edges: list[list[tuple[Callable[[str], bool], int]]] = []
        start = self._new()
        self._accept = self._build(_sre_parse.parse(regex_py), start)
        self._coreach = self._coreachable()
        self._start_set = self._closure({start})
        self._member: dict[str, bool] = {}
        self._live: dict[str, bool] = {}

    def accepts(self, word: str) -> bool:
        hit = self._member.get(word)
        if hit is None:
            hit = self._member[word] = self._re.fullmatch(word) is not None
        return hit

    def nfa_accepts(self, word: str) -> bool:
        """NFA membership; exists only so tests can check the NFA against ``re``."""
        return self._accept in self._run(word)

    def is_live_prefix(self, word: str) -> bool:
        hit = self._live.get(word)
        if hit is None:
            hit = self._live[word] = bool(self._run(word) & self._coreach)
        return hit

    # -- NFA construction: every construct enters from `s` and ends in a fresh state,
    # so existing edges of `s` never leak into it (the classic Thompson pitfall).
    def _new(self) -> int:
        self._eps.append([])
        self._edges.append([])
        return len(self._eps) - 1

    def _build(self, items, s: int) -> int:
        for op, arg in items:
            s = self._atom(op.name, arg, s)
        return s

    def _atom(self, op: str, arg, s: int) -> int:
        if op in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            t = self._new()
            self._edges[s].append((_char_predicate(op, arg), t))
            return t
        if op == "SUBPATTERN":  # (group, add_flags, del_flags, body)
            if arg[1] & re.IGNORECASE:
                raise ValueError("oracle does not support IGNORECASE")
            return self._build(arg[-1], s)
        if op == "BRANCH":
            end = self._new()
            for alt in arg[1]:
                a = self._new()
                self._eps[s].append(a)
                self._eps[self._build(alt, a)].append(end)
            return end
        if op in ("MAX_REPEAT", "MIN_REPEAT"):  # greediness does not change the language
            lo, hi, body = arg
            for _ in range(lo):
                s = self._build(body, s)
            if hi == _sre_parse.MAXREPEAT:
                loop = self._new()
                self._eps[s].append(loop)
                self._eps[self._build(body, loop)].append(loop)
                return loop
            end = self._new()
            self._eps[s].append(end)
            for _ in range(hi - lo):
                s = self._build(body, s)
                self._eps[s].append(end)
            return end
        raise ValueError(f"oracle does not support regex construct {op}")

    def _closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        stack = list(seen)
        while stack:
            for t in self._eps[stack.pop()]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def _run(self, word: str) -> frozenset[int]:
        cur = self._start_set
        for c in word:
            cur = self._closure(t for s in cur for pred, t in self._edges[s] if pred(c))
            if not cur:
                break
        return cur

    def _coreachable(self) -> frozenset[int]:
        # Ignores edge labels: every supported class matches at least one character.
        back: dict[int, list[int]] = {}
        for s in range(len(self._eps)):
            for t in self._eps[s] + [t for _, t in self._edges[s]]:
                back.setdefault(t, []).append(s)
        seen = {self._accept}
        stack = [self._accept]
        while stack:
            for s in back.get(stack.pop(), ()):
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        return frozenset(seen)


def _char_predicate(op: str, arg) -> Callable[[str], bool]:
    if op == "LITERAL":
        return lambda c, code=arg: ord(c) == code
    if op == "NOT_LITERAL":
        return lambda c, code=arg: ord(c) != code
    if op == "ANY":
        return lambda c: c != "\n"
    negate = False
    codes: set[int] = set()
    ranges: list[tuple[int, int]] = []
    for item_op, item in arg:
        kind = item_op.name
        if kind == "NEGATE":
            negate = True
        elif kind == "LITERAL":
            codes.add(item)
        elif kind == "RANGE":
            ranges.append(item)
        else:
            raise ValueError(f"oracle does not support class item {kind}")

    def pred(c: str) -> bool:
        o = ord(c)
        return (o in codes or any(lo <= o <= hi for lo, hi in ranges)) != negate

    return pred


def _language(regex_py: str | Language) -> Language:
    return regex_py if isinstance(regex_py, Language) else Language(regex_py)


# --------------------------------------------------------------------------- STAM
def _value(event) -> int:
    return event[2] if len(event) > 2 and event[2] is not None else 0


def _windowed_subsets(events, window: int):
    """Every index set i1 < ... < ik (k >= 1) with t[ik] - t[i1] <= window.

    Fix the first and last index; the indices between them are unconstrained, so every
    subset of them is enumerated. Timestamps need not be sorted.
    """
    ts = [e[1] for e in events]
    for first in range(len(events)):
        for last in range(first, len(events)):
            if ts[last] - ts[first] > window:
                continue
            if first == last:
                yield (first,)
                continue
            middle = range(first + 1, last)
            for r in range(len(middle) + 1):
                for mid in itertools.combinations(middle, r):
                    yield (first, *mid, last)


def stam_matches(regex_py: str | Language, events, window: int) -> list[tuple[int, ...]]:
    """All skip-till-any-match matches: windowed index sets whose word fullmatches."""
    lang = _language(regex_py)
    events = list(events)
    return [
        idx
        for idx in _windowed_subsets(events, window)
        if lang.accepts("".join(events[i][0] for i in idx))
    ]


def stam_aggregate(
    regex_py: str | Language,
    events,
    window: int,
    is_live_prefix: Callable[[str], bool] | None = None,
) -> dict:
    """COUNT, SUM and partial_count over every windowed index set, by enumeration.

    partial_count counts windowed non-empty index sets whose word is a live prefix of the
    language but not in it. ``is_live_prefix`` overrides the NFA-based test.
    """
    lang = _language(regex_py)
    live = is_live_prefix or lang.is_live_prefix
    events = list(events)
    count = total = partial = 0
    for idx in _windowed_subsets(events, window):
        word = "".join(events[i][0] for i in idx)
        if lang.accepts(word):
            count += 1
            total += sum(_value(events[i]) for i in idx)
        elif live(word):
            partial += 1
    return {"count": count, "sum": total, "partial_count": partial}


def stam_aggregate_at(
    regex_py: str | Language,
    events,
    window: int,
    t: int,
    is_live_prefix: Callable[[str], bool] | None = None,
) -> dict:
    """``stam_aggregate`` over the events with timestamp <= t (an evaluation at time t)."""
    return stam_aggregate(regex_py, [e for e in events if e[1] <= t], window, is_live_prefix)


# --------------------------------------------------------------------------- STNM
def _stepper(automaton):
    """(start, step, is_final) for a regex/Language or a deterministic automaton.

    An automaton is any object with ``start``, ``finals`` and ``transitions`` (a mapping
    ``(state, char) -> state``), or a tuple ``(start, finals, transitions)``. It must be
    trimmed (no dead state), as STNM's "has a transition" presumes. For a regex the run
    state is the word taken so far, and a transition exists iff the extended word is
    still a live prefix: the language view of any trimmed DFA.
    """
    if isinstance(automaton, (str, Language)):
        lang = _language(automaton)

        def step(word, c):
            return word + c if lang.is_live_prefix(word + c) else None

        return "", step, lang.accepts
    if isinstance(automaton, tuple):
        start, finals, transitions = automaton
    else:
        start, finals, transitions = automaton.start, automaton.finals, automaton.transitions
    return start, (lambda s, c: transitions.get((s, c))), (lambda s: s in finals)


def stnm_matches(automaton, events, window: int) -> list[tuple[int, ...]]:
    """Skip-till-next-match matches, one index tuple per yield, by the run definition.

    Each event with a transition from the start state starts one run. The run takes every
    later event within ``window`` of its initiator that has a transition from its current
    state, and yields the events taken so far each time it enters a final state.
    """
    start, step, is_final = _stepper(automaton)
    events = list(events)
    out: list[tuple[int, ...]] = []
    for i, (c, t0, *_) in enumerate(events):
        state = step(start, c)
        if state is None:
            continue
        taken = [i]
        if is_final(state):
            out.append(tuple(taken))
        for j in range(i + 1, len(events)):
            if events[j][1] - t0 > window:
                continue  # not `break`: timestamps need not be sorted
            nxt = step(state, events[j][0])
            if nxt is None:
                continue
            state = nxt
            taken.append(j)
            if is_final(state):
                out.append(tuple(taken))
    return out


def stnm_aggregate(automaton, events, window: int) -> dict:
    """COUNT and SUM over ``stnm_matches``."""
    events = list(events)
    matches = stnm_matches(automaton, events, window)
    return {
        "count": len(matches),
        "sum": sum(_value(events[i]) for m in matches for i in m),
    }


# =========================================================================== negation
# Oracles for queries with negations (``A!BC``, ``A !(X|Y) B``) and for the contiguous
# policy. They take suse query text, not a Python regex, and are built without suse's
# compiler: matches are decided by ``re.fullmatch`` on a *gap string*; partial counts and
# skip-till-next-match use a guarded position automaton built here from the query text.
#
# Definitions (the normative ones of the negation issue):
# - A negation is a zero-width condition between the match elements on either side of
#   it: an index set is a match iff some parse of its word passes only negations whose
#   characters occur in *no event of the full stream* strictly between those elements.
#   Inside a repetition it applies at each pass.
# - ``policy="contiguous"``: the chosen indices must be consecutive positions of the full
#   stream, counting events of every character (also characters the query never names).
#   Negation is then vacuous: nothing lies between adjacent elements.
# - partial_count: windowed non-empty index sets that are not matches but can still be
#   extended: some parse can continue with a next element although the negated events
#   after the last chosen element (up to the end of the stream) have already happened.
#   Under contiguity a partial match must end at the stream's last event (any later event
#   breaks it).

_NEG_TOKEN = re.compile(r"\{\d+(?:,\d*)?\}|!\([^)]*\)|![^(]|.")


def _query_tokens(query: str) -> list[str]:
    return _NEG_TOKEN.findall("".join(query.split()))


def _negated_chars(token: str) -> str:
    """``!B`` -> "B", ``!(B|C)`` -> "BC"."""
    return "".join(sorted(set(token[1:].strip("()").replace("|", ""))))


def query_letters(query: str) -> tuple[str, str]:
    """(letters, negated): the sorted characters that can be match elements, and the sorted
    characters some negation forbids."""
    letters, negated = set(), set()
    for t in _query_tokens(query):
        if t.startswith("!"):
            negated.update(_negated_chars(t))
        elif len(t) == 1 and t not in _QUERY_META:
            letters.add(t)
    return "".join(sorted(letters)), "".join(sorted(negated))


def query_to_gap_regex(query: str) -> str:
    """A Python regex over gap strings (see ``gap_string``): a letter X becomes
    ``(?:<[^>]*>X)`` (any gap, then X) and a negation ``!G`` the lookahead
    ``(?=<[^>G]*>)`` (the next gap holds no character of G)."""
    letters, _ = query_letters(query)
    gap = "<[^>]*>"
    out = []
    for t in _query_tokens(query):
        if t.startswith("!"):
            out.append("(?=<[^>" + _negated_chars(t) + "]*>)")
        elif t == "(":
            out.append("(?:")
        elif t == ".":
            out.append(f"(?:{gap}[{letters}])")
        elif t in _QUERY_META or len(t) > 1:
            out.append(t)
        else:
            if not (t.isascii() and t.isalnum()):
                raise ValueError(f"query {query!r}: {t!r} is not a character or operator")
            out.append(f"(?:{gap}{t})")
    return "".join(out)


def gap_string(events, idx, negated: str) -> str:
    """``<g>X`` per chosen element X, where g lists (sorted, distinct) the negated
    characters of the events strictly between the previous chosen element and this one;
    ``<>`` before the first. Example: A0 E1 B2 with ``!E`` negated, idx (0, 2) -> ``<>A<E>B``."""
    out, previous = [], None
    for i in idx:
        between = events[previous + 1 : i] if previous is not None else []
        g = sorted({e[0] for e in between if e[0] in negated})
        out.append("<" + "".join(g) + ">" + events[i][0])
        previous = i
    return "".join(out)


def _contiguous(idx) -> bool:
    return all(b == a + 1 for a, b in zip(idx, idx[1:]))


def _check_policy(policy: str) -> None:
    if policy not in ("any", "contiguous"):
        raise ValueError(f"policy must be 'any' or 'contiguous', got {policy!r}")


def query_matches(query: str, events, window: int, policy: str = "any") -> list[tuple[int, ...]]:
    """Every match of a suse query (negations allowed) under skip-till-any-match
    (``policy="any"``) or contiguity (``"contiguous"``), by enumeration and ``re``."""
    _check_policy(policy)
    events = list(events)
    _, negated = query_letters(query)
    pattern = re.compile(query_to_gap_regex(query))
    return [
        idx
        for idx in _windowed_subsets(events, window)
        if (policy == "any" or _contiguous(idx))
        and pattern.fullmatch(gap_string(events, idx, negated))
    ]


def query_aggregate(query: str, events, window: int, policy: str = "any") -> dict:
    """COUNT, SUM and partial_count of a suse query (negations allowed), by enumeration."""
    _check_policy(policy)
    events = list(events)
    _, negated = query_letters(query)
    pattern = re.compile(query_to_gap_regex(query))
    gpa = GuardedPositions(query)
    count = total = partial = 0
    for idx in _windowed_subsets(events, window):
        if policy == "contiguous" and not _contiguous(idx):
            continue
        if pattern.fullmatch(gap_string(events, idx, negated)):
            count += 1
            total += sum(_value(events[i]) for i in idx)
        else:
            # A partial match is judged where it ends, like a match: a set whose word (with the
            # gaps between its elements) is a proper prefix of a match counts, whatever comes
            # after it (later negated events, an expired window, a break in contiguity), just
            # as an expired prefix counts without negation.
            partial += gpa.can_continue(events, idx, "")
    return {"count": count, "sum": total, "partial_count": partial}


def query_aggregate_at(query: str, events, window: int, t: int, policy: str = "any") -> dict:
    """``query_aggregate`` over the events with timestamp <= t."""
    return query_aggregate(query, [e for e in events if e[1] <= t], window, policy)


class GuardedPositions:
    """A position (Glushkov) automaton of a suse query whose moves carry *guards*.

    Positions are the letter occurrences of the query with ``x{m,n}`` written out. A move
    ``p -> q`` carries the set of characters forbidden by the negations passed between
    the two letters (a move passing ``!B`` and ``!C`` has guard {B, C}); ``first`` and
    ``last`` are (position, guard) pairs from the start and to the end. Alternative
    parses give several moves for one pair; all are kept (a match needs one that holds).
    """

    def __init__(self, query: str):
        self.letters, self.negated = query_letters(query)
        self.labels: list[str] = []  # position -> the letters it can take
        self.follow: dict[int, set[tuple[int, frozenset]]] = {}
        tokens = _query_tokens(query)
        tree, rest = self._alternation(tokens)
        if rest:
            raise ValueError(f"query {query!r}: unexpected {rest[0]!r}")
        _, self.first, self.last = self._glushkov(tree)

    # -- a small parser of suse syntax into nested tuples
    def _alternation(self, tokens):
        options = []
        while True:
            node, tokens = self._concat(tokens)
            options.append(node)
            if not tokens or tokens[0] != "|":
                return ("alt", options), tokens
            tokens = tokens[1:]

    def _concat(self, tokens):
        parts = []
        while tokens and tokens[0] not in ("|", ")"):
            t, tokens = tokens[0], tokens[1:]
            if t == "(":
                node, tokens = self._alternation(tokens)
                if not tokens or tokens[0] != ")":
                    raise ValueError("unclosed '('")
                tokens = tokens[1:]
            elif t.startswith("!"):
                node = ("neg", frozenset(_negated_chars(t)))
            elif t == ".":
                node = ("chr", self.letters)
            elif t in "*+?" or t.startswith("{"):
                raise ValueError(f"dangling {t!r}")
            else:
                node = ("chr", t)
            while tokens and (tokens[0] in ("*", "+", "?") or tokens[0].startswith("{")):
                op, tokens = tokens[0], tokens[1:]
                if op in ("*", "+", "?"):
                    lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[op]
                else:
                    lo_s, _, hi_s = op[1:-1].partition(",")
                    lo = int(lo_s)
                    hi = lo if "," not in op else (int(hi_s) if hi_s else None)
                node = ("rep", node, lo, hi)
            parts.append(node)
        return ("cat", parts), tokens

    # -- Glushkov's construction with guards: returns (nullable guards, first, last)
    def _glushkov(self, node):
        kind = node[0]
        if kind == "chr":
            p = len(self.labels)
            self.labels.append(node[1])
            self.follow[p] = set()
            return set(), {(p, frozenset())}, {(p, frozenset())}
        if kind == "neg":
            return {node[1]}, set(), set()
        if kind == "alt":
            null, first, last = set(), set(), set()
            for option in node[1]:
                n, f, la = self._glushkov(option)
                null |= n
                first |= f
                last |= la
            return null, first, last
        if kind == "cat":
            null, first, last = {frozenset()}, set(), set()
            for part in node[1]:
                null, first, last = self._then((null, first, last), self._glushkov(part))
            return null, first, last
        _, body, lo, hi = node  # rep: lo copies, then a loop or hi - lo optional copies
        copies = [("cat", [body] * lo)]
        if hi is None:
            copies.append(("star", body))
        else:
            copies += [("opt", body)] * (hi - lo)
        null, first, last = {frozenset()}, set(), set()
        for copy in copies:
            if copy[0] == "star" or copy[0] == "opt":
                n, f, la = self._glushkov(copy[1])
                if copy[0] == "star":
                    for p, g in la:
                        for q, h in f:
                            self.follow[p].add((q, g | h))
                n = n | {frozenset()}
            else:
                n, f, la = self._glushkov(copy)
            null, first, last = self._then((null, first, last), (n, f, la))
        return null, first, last

    def _then(self, left, right):
        """(null, first, last) of `left` followed by `right`, adding the follow moves between."""
        null, first, last = left
        n, f, la = right
        for p, g in last:
            for q, h in f:
                self.follow[p].add((q, g | h))
        first = first | {(q, a | h) for a in null for q, h in f}
        last = {(p, g | b) for p, g in last for b in n} | la
        return {a | b for a in null for b in n}, first, last

    # -- runs over index sets of a stream
    def configurations(self, events, idx) -> set[int]:
        """Positions a parse of the chosen elements can be in, negations checked against
        the events strictly between consecutive chosen elements."""
        current: set[int] | None = None
        previous = None
        for i in idx:
            c = events[i][0]
            if current is None:
                current = {q for q, g in self.first if c in self.labels[q] and not g}
            else:
                seen = {e[0] for e in events[previous + 1 : i]}
                current = {
                    q
                    for p in current
                    for q, g in self.follow[p]
                    if c in self.labels[q] and not g & seen
                }
            previous = i
        return current or set()

    def accepts(self, events, idx) -> bool:
        finals = {p for p, g in self.last if not g}
        return bool(self.configurations(events, idx) & finals)

    def can_continue(self, events, idx, seen_after: str) -> bool:
        """Some parse can take a further element, given the characters seen since the
        last chosen one."""
        seen = set(seen_after)
        return any(not g & seen for p in self.configurations(events, idx) for _, g in self.follow[p])


def query_stnm_matches(query: str, events, window: int) -> list[tuple[int, ...]]:
    """Skip-till-next-match with negations, by simulating runs of ``GuardedPositions``.

    Each event that can be a first element starts one run. The run's state is a set of
    configurations (position, characters seen since the last taken element). For every
    later event within ``window`` of the initiator: if some configuration has a move to a
    position that takes the event's character and whose guard avoids the characters seen,
    the run takes the event (every such move; seen sets reset). Otherwise, if the
    character is negated, it is added to every configuration's seen set: a configuration
    all of whose moves it forbids can no longer move, and a run none of whose
    configurations can move is dead. The run yields the taken events each time one of its
    positions can end the pattern. Without negations this is ``stnm_matches``.
    """
    gpa = GuardedPositions(query)
    finals = {p for p, g in gpa.last if not g}
    events = list(events)
    out: list[tuple[int, ...]] = []
    for i, (c, t0, *_) in enumerate(events):
        configs = {(q, frozenset()) for q, g in gpa.first if c in gpa.labels[q] and not g}
        if not configs:
            continue
        taken = [i]
        if any(p in finals for p, _ in configs):
            out.append(tuple(taken))
        for j in range(i + 1, len(events)):
            if events[j][1] - t0 > window:
                continue  # not `break`: timestamps need not be sorted
            cj = events[j][0]
            moved = {
                (q, frozenset())
                for p, seen in configs
                for q, g in gpa.follow[p]
                if cj in gpa.labels[q] and not g & seen
            }
            if moved:
                configs = moved
                taken.append(j)
                if any(p in finals for p, _ in configs):
                    out.append(tuple(taken))
            elif cj in gpa.negated:
                configs = {(p, seen | {cj}) for p, seen in configs}
    return out


def query_stnm_aggregate(query: str, events, window: int) -> dict:
    """COUNT and SUM over ``query_stnm_matches``."""
    events = list(events)
    matches = query_stnm_matches(query, events, window)
    return {"count": len(matches), "sum": sum(_value(events[i]) for m in matches for i in m)}


# --------------------------------------------------------------------------- MIN / MAX, of=
def query_extrema(query: str, events, window: int, policy: str = "any", of: str | None = None) -> dict:
    """COUNT, SUM, MIN and MAX of a suse query over every match under ``policy`` ("any",
    "next", "contiguous"), by enumeration. ``of`` (letters) restricts SUM, MIN and MAX to the
    values of those letters' elements; MIN/MAX range over the elements that belong to at
    least one match (None when none does)."""
    events = list(events)
    if policy == "next":
        matches = query_stnm_matches(query, events, window)
    else:
        matches = query_matches(query, events, window, policy)

    def counted(i: int) -> bool:
        return of is None or events[i][0] in of

    in_match = sorted({i for m in matches for i in m if counted(i)})
    values = [_value(events[i]) for i in in_match]
    return {
        "count": len(matches),
        "sum": sum(_value(events[i]) for m in matches for i in m if counted(i)),
        "min": min(values, default=None),
        "max": max(values, default=None),
    }


# =========================================================================== approximate
# Approximate matching (ACEP, ``max_missing=k``): an index set matches when its word w is
# non-empty and inserting at most k letters turns it into a word of the language; it counts
# once, with the least such number. Decided here by search over the supersequences of w with
# up to |w| + k letters (each tested with ``re.fullmatch``), without suse's compiler.


def insertions(word: str, alphabet: str, j: int) -> set[str]:
    """Every word obtained by inserting exactly ``j`` letters of ``alphabet`` into ``word``."""
    words = {word}
    for _ in range(j):
        words = {w[:i] + c + w[i:] for w in words for i in range(len(w) + 1) for c in alphabet}
    return words


class ApproxLanguage(Language):
    """The words with at most ``k`` missing letters of a base ``Language``; usable wherever
    the oracles take a Language (``stam_aggregate``, ``stnm_aggregate``)."""

    def __init__(self, regex_py: str, alphabet: str, k: int):  # noqa: D107 - no NFA of its own
        self.base = Language(regex_py)
        self.pattern, self.alphabet, self.k = regex_py, alphabet, k
        self._missing: dict[str, int | None] = {}
        self._live_k: dict[str, bool] = {}

    def missing(self, word: str) -> int | None:
        """The least number of letters to insert into ``word`` to get a word of the base
        language, or None when more than k are needed."""
        if word not in self._missing:
            self._missing[word] = next(
                (j for j in range(self.k + 1) if any(self.base.accepts(u) for u in insertions(word, self.alphabet, j))),
                None,
            )
        return self._missing[word]

    def accepts(self, word: str) -> bool:
        return self.missing(word) is not None

    def is_live_prefix(self, word: str) -> bool:
        # w·v has at most k missing letters for some v iff at most k insertions into w make a
        # prefix of a word of the base language (the rest of that word can be v).
        if word not in self._live_k:
            self._live_k[word] = any(
                self.base.is_live_prefix(u) for j in range(self.k + 1) for u in insertions(word, self.alphabet, j)
            )
        return self._live_k[word]


def approx_matches(query: str, events, window: int, k: int, policy: str = "any") -> list[tuple[tuple[int, ...], int]]:
    """Every match of ``query`` with ``max_missing=k`` (no negations) and its least number of
    missing letters, by enumeration; ``policy`` "any", "contiguous" or "next"."""
    letters, negated = query_letters(query)
    if negated:
        raise ValueError("approximate matching has no negations")
    lang = ApproxLanguage(query_to_python_regex(query), letters, k)
    events = list(events)
    if policy == "next":
        found = stnm_matches(lang, events, window)
    else:
        _check_policy(policy)
        found = [idx for idx in _windowed_subsets(events, window)
                 if (policy == "any" or _contiguous(idx)) and lang.accepts("".join(events[i][0] for i in idx))]
    return [(m, lang.missing("".join(events[i][0] for i in m))) for m in found]


def matches(query: str, events, window: int, policy: str = "any", max_missing: int = 0) -> list[tuple[int, ...]]:
    """Every match of a suse query (negations allowed, or ``max_missing``) under any policy,
    as index tuples: the oracle of ``suse.matches``."""
    if max_missing:
        return [m for m, _ in approx_matches(query, events, window, max_missing, policy)]
    if policy == "next":
        return query_stnm_matches(query, events, window)
    return query_matches(query, events, window, policy)


def approx_aggregate(query: str, events, window: int, k: int, policy: str = "any") -> dict:
    """COUNT, SUM, partial_count and count_by_missing of ``query`` with ``max_missing=k``
    (no negations), by enumeration of index sets; ``policy`` "any", "contiguous" or "next"."""
    letters, negated = query_letters(query)
    if negated:
        raise ValueError("approximate matching has no negations")
    lang = ApproxLanguage(query_to_python_regex(query), letters, k)
    events = list(events)
    by_missing = [0] * (k + 1)
    if policy == "next":
        matches = stnm_matches(lang, events, window)
        for m in matches:
            by_missing[lang.missing("".join(events[i][0] for i in m))] += 1
        total = sum(_value(events[i]) for m in matches for i in m)
        return {"count": len(matches), "sum": total, "count_by_missing": by_missing}
    _check_policy(policy)
    total = partial = 0
    for idx in _windowed_subsets(events, window):
        if policy == "contiguous" and not _contiguous(idx):
            continue
        word = "".join(events[i][0] for i in idx)
        j = lang.missing(word)
        if j is not None:
            by_missing[j] += 1
            total += sum(_value(events[i]) for i in idx)
        elif lang.is_live_prefix(word):
            partial += 1
    return {"count": sum(by_missing), "sum": total, "partial_count": partial, "count_by_missing": by_missing}


# =========================================================================== where
# Conditions between a match's elements (``where={"B": "B.p > LAST(B.p, 1)"}``) and a
# negation at the end of the pattern (``A B+ !C``), by enumeration. The conditions are judged
# by ``conditions_oracle`` (an evaluator of its own, not suse's).
#
# Events are ``(char, timestamp, attributes)`` or ``(char, timestamp, value, attributes)``
# with ``attributes`` a mapping. An index set is a match when it is one for
# ``query_matches`` (negations between elements included), every element e with a letter X
# in ``where`` satisfies ``where[X]`` over the elements before it (three-valued; NULL fails),
# and, if the only parses that accept it end with a negation, that negation holds until the
# window closes:
# - a match with first element at time f and last element l needs no event of a negated
#   character after l (in arrival order) up to time f + window inclusive;
# - evaluated at time ``at`` it counts only if at >= f + window (until then it is pending);
#   ``at=None`` means the input is complete and every window has closed.


def _attributes(event):
    last = event[-1]
    return last if isinstance(last, Mapping) else {}


def _where_value(event) -> int:
    value = event[2] if len(event) > 3 or (len(event) == 3 and not isinstance(event[2], Mapping)) else None
    return 0 if value is None else value


def _closing_gap_regex(query: str) -> re.Pattern[str]:
    # Every negation also forbids "~", which only the final gap of a pending match holds;
    # the trailing "<[^>]*>" reads the final gap, so a negation at the end checks it.
    body = query_to_gap_regex(query).replace("(?=<[^>", "(?=<[^>~")
    return re.compile(body + "<[^>]*>")


def _final_gap(events, idx, window: int, at, negated: str) -> str:
    closes = events[idx[0]][1] + window
    if at is not None and at < closes:
        return "<~>"
    after = {e[0] for e in events[idx[-1] + 1 :] if e[1] <= closes and e[0] in negated}
    return "<" + "".join(sorted(after)) + ">"


def satisfies_where(events, idx, where: Mapping[str, str]) -> bool:
    """Every element of ``idx`` (in time order) satisfies its letter's condition."""
    chosen = [(events[i][0], events[i][1], _attributes(events[i])) for i in idx]
    return all(
        holds(where[element[0]], element[0], chosen[:k], element)
        for k, element in enumerate(chosen)
        if element[0] in where
    )


def where_matches(query: str, events, window: int, where: Mapping[str, str], policy: str = "any", at=None):
    """Every match of ``query`` with conditions ``where`` (see above), under
    ``policy`` "any", "contiguous" or "next" (a run takes an event when the pattern can go on
    with it and its condition holds; no negations with "next"). With ``at`` only the events
    at or before ``at`` exist."""
    events = [e for e in events if at is None or e[1] <= at]
    if policy == "next":
        if query_letters(query)[1]:
            raise ValueError("the oracle's 'next' has no negations with where")
        return _where_stnm(query, events, window, where)
    _check_policy(policy)
    _, negated = query_letters(query)
    pattern = _closing_gap_regex(query)
    out = []
    for idx in _windowed_subsets(events, window):
        if policy == "contiguous" and not _contiguous(idx):
            continue
        gaps = gap_string(events, idx, negated) + _final_gap(events, idx, window, at, negated)
        if pattern.fullmatch(gaps) and satisfies_where(events, idx, where):
            out.append(idx)
    return out


def _where_stnm(query: str, events, window: int, where):
    lang = Language(query_to_python_regex(query))
    out = []
    for i, first in enumerate(events):
        taken = [i]
        if not lang.is_live_prefix(first[0]) or not satisfies_where(events, taken, where):
            continue
        if lang.accepts(first[0]):
            out.append(tuple(taken))
        for j in range(i + 1, len(events)):
            if events[j][1] - first[1] > window:
                continue
            word = "".join(events[k][0] for k in taken) + events[j][0]
            if lang.is_live_prefix(word) and satisfies_where(events, taken + [j], where):
                taken.append(j)
                if lang.accepts(word):
                    out.append(tuple(taken))
    return out


def where_aggregate(query: str, events, window: int, where: Mapping[str, str], policy: str = "any", at=None,
                    of=None) -> dict:
    """COUNT and SUM (of the events' values) over ``where_matches``, and MIN and MAX of the
    values of the elements in at least one match whose letter is in ``of`` (all without it)."""
    kept = [e for e in events if at is None or e[1] <= at]
    matches = where_matches(query, kept, window, where, policy, at)
    counted = [_where_value(kept[i]) for m in matches for i in m if of is None or kept[i][0] in of]
    return {"count": len(matches), "sum": sum(_where_value(kept[i]) for m in matches for i in m),
            "min": min(counted, default=None), "max": max(counted, default=None)}


def where_through(query: str, events, window: int, where: Mapping[str, str]) -> list[dict]:
    """Per event, the matches of ``where_matches`` (policy "any") that contain it: their number
    and the sum of their values (a summary's present benefit with conditions)."""
    events = list(events)
    out = [{"count": 0, "sum": 0} for _ in events]
    for idx in where_matches(query, events, window, where):
        total = sum(_where_value(events[i]) for i in idx)
        for i in idx:
            out[i]["count"] += 1
            out[i]["sum"] += total
    return out


# =========================================================================== absence at the end
def absence_matches(query: str, events, window: int, at=None) -> list[tuple[int, ...]]:
    """Every match of a query that may end with a negation (``A B+ !C``) that counts at time
    ``at`` (``None``: the stream is over), by the rule of ``absence_aggregate``, as index
    tuples in enumeration order: the oracle of ``suse.matches`` for such queries."""
    return sorted(where_matches(query, events, window, {}, "any", at))


def absence_aggregate(query: str, events, window: int, at=None) -> dict:
    """COUNT, SUM and partial_count of a query that may end with a negation (``A B+ !C``), by
    enumeration, evaluated at time ``at`` (``None``: the stream is over, every window closed).

    The rule (the ``where`` section above, without conditions): a match whose only accepting
    parses end with a negation counts once ``at >= f + window`` (f its first element's time)
    and no event of a negated character comes after its last element, in arrival order (so
    also one with the last element's timestamp that arrives after it), up to time f + window
    inclusive. partial_count: windowed sets over the events up to ``at`` that do not count and
    whose word with its gaps is a proper prefix of a match, or a match of the positive part
    still pending or already refuted by a negated event (both are judged where they end, as
    every partial match is)."""
    events = [e for e in events if at is None or e[1] <= at]
    _, negated = query_letters(query)
    closing = _closing_gap_regex(query)
    gpa = GuardedPositions(query)
    count = total = partial = 0
    for idx in _windowed_subsets(events, window):
        gaps = gap_string(events, idx, negated)
        if closing.fullmatch(gaps + _final_gap(events, idx, window, at, negated)):
            count += 1
            total += sum(_value(events[i]) for i in idx)
        elif closing.fullmatch(gaps + "<>") or gpa.can_continue(events, idx, ""):
            partial += 1
    return {"count": count, "sum": total, "partial_count": partial}


# =========================================================================== expected benefit
def expected_matches(automaton, probabilities, steps: int, finals=None):
    """``h_n`` for n = 0..steps by the recurrence (numpy, count part): the expected matches one
    set in state q forms over n future elements drawn from ``probabilities`` (one per letter of
    ``automaton``, a ``compiled`` automaton), every set both skipping and taking each element."""
    letters, width = len(automaton.alphabet), len(automaton.symbols)
    table = automaton.table()
    n = automaton.n_states
    step = np.zeros((n, n))  # Q: the skip (identity) plus each letter's move, weighted
    phi = np.zeros(n)
    for q in range(n):
        for c in range(letters):
            p = probabilities[c]
            step[q, q] += p
            to = table[q * width + c]
            if to >= 0:
                step[q, to] += p
                phi[q] += p if to in (automaton.finals if finals is None else finals) else 0.0
    h = [np.zeros(n)]
    for _ in range(steps):
        h.append(phi + step @ h[-1])
    return h


def partial_sets(automaton, events, window: int, now: int, where=None, negated: str = ""):
    """Every index set of ``events`` whose letters (the negated characters left out) lead the
    automaton from its start to a state (final ones included), inside the window, whose first
    element is still in the window at ``now``, satisfying ``where``: (index set, state). A
    negated event after the set's last element moves it by its filter (a negation at the end)."""
    width, letters = len(automaton.symbols), automaton.alphabet
    table = automaton.table()
    positions = [i for i, e in enumerate(events) if e[0] not in negated or e[0] in letters]
    out = []
    for size in range(1, len(positions) + 1):
        for idx in itertools.combinations(positions, size):
            first, last = events[idx[0]][1], events[idx[-1]][1]
            if last - first > window or now - first > window:
                continue
            q, chosen = automaton.start, set(idx)
            for i in range(idx[0], len(events)):  # each element of the set moves it, a negated event filters it
                c = events[i][0]
                if i in chosen:
                    q = table[q * width + letters.index(c)]
                elif i > idx[0] and c in negated:
                    q = table[q * width + automaton.symbols.index("!" + c)]
                if q < 0:
                    break
            if q < 0 or (where and not satisfies_where(events, idx, where)):
                continue
            if q >= 0:
                out.append((idx, q))
    return out
