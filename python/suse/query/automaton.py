"""Compile a query into the minimal trimmed DFA that the counting core runs.

Pipeline (each step's result is kept in ``Automaton.stages`` for inspection):
``thompson`` -> ``epsilon_free`` -> ``pruned`` (paper §5.1) -> ``dfa`` (subset
construction) -> ``minimal`` (Hopcroft) -> ``trimmed`` (the dead state removed).

We go beyond the paper and determinise because the counting rules add up automaton
*runs*: over an ambiguous NFA one match reached by two runs counts twice. In a DFA every
word has exactly one run, so every match counts once.

Negations (``A!BC``) compile to *filter* symbols ``!x``: between two match elements, every
event of a negated character x moves the partial match along its ``!x`` transition, or
kills it where there is none. Each ``!x`` map is idempotent and the maps of different
characters commute, so only the set of negated characters between two elements matters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from suse.errors import QueryError
from suse.query.approximate import MAX_MISSING, determinise_missing, transfer_labels
from suse.query.construction import determinise, minimise, prune, remove_epsilon, thompson
from suse.query.nfa import NFA, Symbols, render_dot
from suse.query.parser import alphabet_of, has_negation, negated_of, parse

#: The symbol that closes a match's window in the automaton of a pattern that ends with a
#: negation (never a query character: those are ASCII letters and digits).
WINDOW_CLOSE = "$"


@dataclass(frozen=True, eq=False)
class Automaton(Symbols):
    """A deterministic automaton; a missing transition means "dead" (no match possible).

    ``alphabet`` holds the letters a match element can have; ``negated`` the characters
    some negation forbids (a character can be in both, as in ``A!BCB``). Transitions are
    keyed ``(state, letter)`` and ``(state, "!" + negated character)``."""

    alphabet: str
    n_states: int
    start: int
    finals: frozenset[int]
    transitions: dict[tuple[int, str], int]
    stages: dict[str, NFA] = field(default_factory=dict, repr=False)
    query: str = ""
    negated: str = ""
    #: Approximate matching: the most missing pattern letters allowed (0: exact matching).
    max_missing: int = 0
    #: Per final state, the least number of missing letters of the words ending there
    #: (all 0 when ``max_missing`` is 0).
    missing: dict[int, int] = field(default_factory=dict)
    #: A negation at the end of the pattern (``A B+ !C``): the states whose sets are matches
    #: only once their window has closed with no negated event after the last element
    #: (empty without such a negation) ...
    pending: frozenset[int] = frozenset()
    #: ... and the final state those sets move to when it closes (None without pending states).
    closed: Optional[int] = None

    def table(self) -> list[int]:
        """Row-major transition table, -1 for dead: ``len(alphabet) + len(negated)``
        columns per state, ``table[s*k + alphabet.index(c)]`` for a letter c and
        ``table[s*k + len(alphabet) + negated.index(x)]`` for the symbol ``!x``."""
        column = {symbol: i for i, symbol in enumerate(self.symbols)}
        k = len(column)
        flat = [-1] * (self.n_states * k)
        for (source, ch), target in self.transitions.items():
            flat[source * k + column[ch]] = target
        return flat

    def accepts(self, word: Sequence[str]) -> bool:
        """Run a word: a str of letters, or a sequence of symbols such as ``["A", "!B", "C"]``."""
        state = self.start
        for ch in word:
            moved = self.transitions.get((state, ch))
            if moved is None:
                return False
            state = moved
        return state in self.finals

    def edges(self) -> Iterable[tuple[int, str, int]]:
        for (source, ch), target in self.transitions.items():
            yield source, ch, target

    def final_cost(self) -> list[int]:
        """Per state, the missing letters its final label says (0 for non-final states)."""
        return [self.missing.get(s, 0) for s in self.states]

    def missing_of(self, word: Sequence[str]) -> Optional[int]:
        """The least number of missing letters of ``word`` (letters only), or None if more
        than ``max_missing`` letters would be missing."""
        state = self.start
        for ch in word:
            moved = self.transitions.get((state, ch))
            if moved is None:
                return None
            state = moved
        return self.missing.get(state, 0) if state in self.finals else None

    def to_dot(self, title: Optional[str] = None) -> str:
        return render_dot(self.n_states, self.start, self.finals, self.edges(), title)


def compile_regex(query: str, max_missing: int = 0) -> Automaton:
    """Parse ``query`` and build its minimal trimmed DFA; raise ``QueryError`` if invalid.

    With ``max_missing=k`` the automaton accepts the words that become words of the query
    once at most k letters are inserted, and labels each final state with that least number
    (``Automaton.missing``); see ``suse.query.approximate``."""
    if isinstance(max_missing, bool) or not isinstance(max_missing, int) or not 0 <= max_missing <= MAX_MISSING:
        raise QueryError(f"max_missing must be an integer from 0 to {MAX_MISSING}, got {max_missing!r}", 0, query)
    tree = parse(query)
    if max_missing and has_negation(tree):
        raise QueryError(
            "approximate matching (max_missing > 0) cannot be combined with negation: a negation "
            "constrains the events between two pattern letters, and with a letter missing that "
            "'between' has no defined meaning",
            query.index("!"),
            query,
        )
    alphabet = alphabet_of(tree)
    stages: dict[str, NFA] = {}
    end = ""
    if has_negation(tree):  # a misplaced negation is the better message for e.g. "!A"
        try:
            stages["thompson"] = thompson(tree, alphabet, query)
        except QueryError as err:
            if "cannot come last" not in err.message:
                raise
            # A negation at the end: the pattern is followed by the close of the window.
            end = WINDOW_CLOSE
            stages["thompson"] = thompson(tree, alphabet, query, end)
    if not alphabet:
        raise QueryError(
            "query matches nothing: it has no explicit characters, so its alphabet is empty "
            "and '.' has nothing to match",
            0,
            query,
        )
    if "thompson" not in stages:
        stages["thompson"] = thompson(tree, alphabet, query)
    stages["epsilon_free"] = remove_epsilon(stages["thompson"], query)
    stages["pruned"] = prune(stages["epsilon_free"])
    labels: dict[int, int] = {}
    if max_missing:
        stages["dfa"], dfa_labels = determinise_missing(stages["pruned"], max_missing, query)
        stages["minimal"] = minimise(stages["dfa"], dfa_labels)
        stages["trimmed"] = prune(stages["minimal"])
        labels = transfer_labels(stages["dfa"], dfa_labels, stages["trimmed"])
    else:
        stages["dfa"] = determinise(stages["pruned"], query)
        stages["minimal"] = minimise(stages["dfa"])
        stages["trimmed"] = prune(stages["minimal"])
    trimmed = stages["trimmed"]
    if not trimmed.transitions:
        # With a non-empty alphabet the language is never empty, so this is {ε}.
        reason = "only the empty word, which never counts" if trimmed.finals else "nothing"
        raise QueryError(f"query matches {reason}", 0, query)
    transitions = {key: next(iter(targets)) for key, targets in trimmed.transitions.items()}
    pending: frozenset[int] = frozenset()
    finals, closed = trimmed.finals, None
    if end:
        transitions, finals, pending, closed = _close_at_window_end(transitions, negated_of(tree))
    return Automaton(
        alphabet,
        trimmed.n_states,
        trimmed.start,
        finals,
        transitions,
        stages,
        query,
        negated_of(tree),
        max_missing,
        labels,
        pending,
        closed,
    )


def _close_at_window_end(transitions: dict[tuple[int, str], int], negated: str):
    """Turn the automaton of ``pattern`` followed by the window's close (``WINDOW_CLOSE``)
    into ``(transitions, finals, pending, closed)`` without that symbol.

    A set in state q can be closed when q has a move on the close. If every state the
    negation filters can move q to (q included) can be closed too, no later event can undo
    the match: q is final and counts at once, as without a trailing negation. Otherwise q is
    *pending*: its sets count when their window closes, if they are still in a state that
    can be closed. ``closed`` (the target of the close, final) holds the counted ones."""
    closable = {q for (q, ch) in transitions if ch == WINDOW_CLOSE}
    targets = {t for (q, ch), t in transitions.items() if ch == WINDOW_CLOSE}
    (closed,) = targets  # after the close nothing follows, so minimisation leaves one state
    filters = ["!" + x for x in negated]

    def survives_every_filter(q: int) -> bool:
        seen, todo = {q}, [q]
        while todo:
            p = todo.pop()
            if p not in closable:
                return False
            for f in filters:
                r = transitions.get((p, f))
                if r is None:
                    return False
                if r not in seen:
                    seen.add(r)
                    todo.append(r)
        return True

    at_once = frozenset(q for q in closable if survives_every_filter(q))
    kept = {key: t for key, t in transitions.items() if key[1] != WINDOW_CLOSE}
    return kept, at_once | {closed}, frozenset(closable - at_once), closed
