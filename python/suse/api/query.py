"""`Query`: a pattern compiled once, with its window, aggregate, policy and output options."""
from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Optional

from suse import _core
from suse.api.checks import AGGREGATES, EXTREMA, POLICIES, check_choice, check_int, show
from suse.api.where import check_combination
from suse.errors import InputError, QueryError
from suse.query import Automaton, compile_regex
from suse.query.approximate import MAX_MISSING
from suse.query.conditions import Where, parse_where


@functools.lru_cache(maxsize=256)
def compiled(regex: str, max_missing: int = 0) -> tuple[Automaton, Any]:
    """The automaton of `regex` and its native form. Cached: saved summaries and Spark state
    rebuild their Query on every load, and compiling is the expensive part."""
    automaton = compile_regex(regex, max_missing) if max_missing else compile_regex(regex)
    labels = {"final_cost": automaton.final_cost(), "max_missing": max_missing} if max_missing else {}
    dfa = _core.Dfa(
        automaton.n_states,
        automaton.alphabet,
        getattr(automaton, "negated", ""),
        automaton.start,
        [s in automaton.finals for s in automaton.states],
        automaton.table(),
        **labels,
    )
    return automaton, dfa


@functools.lru_cache(maxsize=256)
def closing_dfa(regex: str) -> Any:
    """The native automaton the exact engine counts a negation at the end of `regex` with:
    each negated character that is no letter becomes one with no transition, so that its
    events reach the engine at their own time (and filter the sets they pass)."""
    automaton = compiled(regex)[0]
    extra = "".join(c for c in automaton.negated if c not in automaton.alphabet)
    letters, width = len(automaton.alphabet), len(automaton.symbols)
    table = automaton.table()
    widened: list[int] = []
    for s in automaton.states:
        row = table[s * width:(s + 1) * width]
        widened += row[:letters] + [-1] * len(extra) + row[letters:]
    return _core.Dfa(automaton.n_states, automaton.alphabet + extra, automaton.negated, automaton.start,
                     [s in automaton.finals for s in automaton.states], widened)


def closing_refusal(regex: str, what: str) -> QueryError:
    """The error for what a negation at the end of the pattern does not combine with yet."""
    return QueryError(f"{what} is not supported with a negation at the end of the pattern yet", regex.find("!"), regex)


class Query:
    """A regular-expression query: pattern, time window (inclusive), aggregate and policy.

    `policy="any"` is skip-till-any-match (every subsequence counts); `policy="next"` is
    skip-till-next-match (each initiator starts one run that takes every later event it can);
    `policy="contiguous"` counts only matches whose elements are consecutive events of the
    stream (any event between, also of a character outside the query, breaks them).

    `aggregate="min"`/`"max"` report the smallest/largest value among the elements that belong
    to at least one match. `of` (a letter or letters of the query, e.g. `"C"` or `"CD"`)
    restricts SUM, AVG, MIN and MAX to the values of those letters' elements; COUNT ignores it.

    `where={"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)"}` gives conditions between a
    match's elements (docs/QUERY.md): a match counts only if each element with a letter in
    `where` satisfies its condition. The exact engine (`exact`, `Exact`) and `Summary`
    (every strategy) count them, with policy "any"; everything else refuses
    a query with conditions by name.

    `max_missing=k` (approximate matching, ACEP) also counts the index sets whose word
    becomes a word of the pattern once at most k letters are inserted; results then carry
    `count_by_missing` (k + 1 counts by the least number of missing letters).
    """

    def __init__(self, regex: str, window: int, aggregate: str = "count", policy: str = "any",
                 of: Optional[Any] = None, max_missing: int = 0, where: Optional[Any] = None):
        if not isinstance(regex, str):
            raise InputError(f"the query must be a string, got {type(regex).__name__}")
        self.regex = regex
        self.window = check_int("window", window)
        self.aggregate = check_choice("aggregate", aggregate, AGGREGATES)
        self.policy = check_choice("policy", policy, POLICIES)
        self.max_missing = check_int("max_missing", max_missing, maximum=MAX_MISSING)
        self.automaton, self._native_dfa = compiled(regex, self.max_missing)
        #: A negation at the end of the pattern: (pending states, closed state), else None.
        self._closing: Optional[tuple[list[int], int]] = None
        if self.automaton.pending:
            self._closing = (sorted(self.automaton.pending), self.automaton.closed)
            if self.policy != "any":
                raise closing_refusal(regex, f"policy {self.policy!r}")
            if self.aggregate in EXTREMA:
                raise closing_refusal(regex, f"aggregate={self.aggregate!r}")
        self.of = check_of(of, regex, self.automaton.alphabet)
        #: The checked conditions (None without `where`), and the pairs as given.
        self.where: Optional[Where] = None
        self.where_pairs: tuple[tuple[str, str], ...] = ()
        if where is not None and where != {} and where != ():
            pairs = tuple(where.items()) if isinstance(where, Mapping) else where
            if not isinstance(pairs, tuple) or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
                raise QueryError(f"where must map letters to conditions, got {show(where)}", 0, regex)
            if self._closing is not None:
                raise closing_refusal(regex, "where")
            check_combination(regex, policy=self.policy, max_missing=self.max_missing, negated=self.negated)
            self.where = parse_where(regex, dict(pairs))
            self.where_pairs = pairs

    @property
    def _dfa(self) -> Any:
        """The native automaton every engine but the conditions' one runs on: refused with
        conditions, which those engines would ignore."""
        if self.where is not None:
            raise QueryError("where is not supported by this engine yet: the exact engine (suse.exact, "
                             "suse.Exact) and suse.Summary count conditions between events", 0, self.regex)
        if self._closing is not None:
            raise QueryError("a negation at the end of the pattern is not supported by this engine yet: the exact "
                             "engine (suse.exact, suse.Exact) and suse.Summary count it", self.regex.find("!"), self.regex)
        return self._native_dfa

    @property
    def _kernel_aggregate(self) -> str:
        """What the kernel's summary ranks by: MIN/MAX keep ranking by match counts."""
        return "count" if self.aggregate in EXTREMA else self.aggregate

    @property
    def _extrema(self) -> bool:
        return self.aggregate in EXTREMA

    @property
    def _of_mask(self) -> Optional[list[bool]]:
        return None if self.of is None else [c in self.of for c in self._exact_letters]

    @property
    def _exact_letters(self) -> str:
        """The letters of the exact engine's automaton (`closing_dfa` adds negated ones)."""
        if self._closing is None:
            return self.automaton.alphabet
        return self.automaton.alphabet + "".join(c for c in self.negated if c not in self.automaton.alphabet)

    @property
    def _exact_dfa(self) -> Any:
        """The native automaton of the exact engine (`_dfa`, or `closing_dfa` with a negation
        at the end of the pattern)."""
        return self._dfa if self._closing is None else closing_dfa(self.regex)

    @property
    def alphabet(self) -> str:
        """The letters that can be elements of a match."""
        return self.automaton.alphabet

    @property
    def negated(self) -> str:
        """The negated characters (`!X` in the query): events that can be no element."""
        return getattr(self.automaton, "negated", "")

    def to_dict(self) -> dict:
        d = {"regex": self.regex, "window": self.window, "aggregate": self.aggregate, "policy": self.policy}
        if self.of is not None:  # absent when unset, so descriptions saved before `of` still match
            d["of"] = self.of
        if self.max_missing:  # the same for exact queries
            d["max_missing"] = self.max_missing
        if self.where_pairs:
            d["where"] = dict(self.where_pairs)
        return d

    def __repr__(self) -> str:
        of = "" if self.of is None else f", of={self.of!r}"
        missing = f", max_missing={self.max_missing}" if self.max_missing else ""
        where = f", where={dict(self.where_pairs)!r}" if self.where_pairs else ""
        return (f"Query({self.regex!r}, window={self.window}, aggregate={self.aggregate!r}, "
                f"policy={self.policy!r}{of}{missing}{where})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Query) and self.to_dict() == other.to_dict()

    def __reduce__(self):
        """Pickled as its specification; loading compiles it again (cached per process)."""
        return (Query, (self.regex, self.window, self.aggregate, self.policy, self.of, self.max_missing,
                        self.where_pairs or None))

    def __hash__(self) -> int:
        return hash((self.regex, self.window, self.aggregate, self.policy, self.of, self.max_missing, self.where_pairs))


def check_of(of: Any, regex: str, alphabet: str) -> Optional[str]:
    """`of` as the letters it names, in alphabet order; `QueryError` for anything else."""
    if of is None:
        return None
    if isinstance(of, str):
        letters = list(of)
    elif isinstance(of, (list, tuple, set, frozenset)) and all(isinstance(c, str) and len(c) == 1 for c in of):
        letters = list(of)
    else:
        raise QueryError(f"of must be a letter or letters of the query, got {show(of)}", 0, regex)
    if not letters:
        raise QueryError("of names no letter; give at least one letter of the query", 0, regex)
    for c in letters:
        if c not in alphabet:
            at = regex.find(c)
            raise QueryError(f"of names {c!r}, which is not a letter of the query (its letters are {alphabet})",
                             max(at, 0), regex)
    return "".join(c for c in alphabet if c in letters)
