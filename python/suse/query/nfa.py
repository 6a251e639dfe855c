"""The automaton type shared by every compilation stage, plus BFS renumbering and
Graphviz rendering.

Queries with negations add two things. The ``thompson`` stage has *negation moves*
(``negations``): zero-width moves like epsilon moves that forbid events of some characters
between the letters on either side. From ``epsilon_free`` on, every negated character x
has a symbol ``"!x"`` (``negated`` lists the characters): a ``!x`` transition says where a
partial match goes when an x event passes it by; no ``!x`` transition means it dies."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import AbstractSet, Iterable, Mapping, Optional, TypeVar

NfaMoves = dict[tuple[int, str], frozenset[int]]  # (state, char) -> target states
Key = TypeVar("Key")


class Symbols:
    """`states` and `symbols` of an automaton, NFA or DFA alike."""

    n_states: int
    alphabet: str
    negated: str

    @property
    def states(self) -> range:
        return range(self.n_states)

    @property
    def symbols(self) -> list[str]:
        """Table columns in order: the letters, then ``"!x"`` for each negated character x."""
        return list(self.alphabet) + ["!" + ch for ch in self.negated]


@dataclass(frozen=True, eq=False)
class NFA(Symbols):
    """A nondeterministic automaton over states ``0..n_states-1`` (one pipeline stage)."""

    alphabet: str
    n_states: int
    start: int
    finals: frozenset[int]
    transitions: NfaMoves
    epsilon: Mapping[int, AbstractSet[int]] = field(default_factory=dict)
    negated: str = ""  # sorted negated characters; each has a symbol "!x"
    negations: Mapping[tuple[int, int], str] = field(default_factory=dict)  # (from, to) -> chars

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        """All states reachable from ``states`` by epsilon moves alone (negation moves
        count as epsilon moves here, so ``accepts`` ignores what they forbid)."""
        successors: dict[int, list[int]] = {}
        for (source, target) in self.negations:
            successors.setdefault(source, []).append(target)
        seen = set(states)
        stack = list(seen)
        while stack:
            state = stack.pop()
            for target in [*self.epsilon.get(state, ()), *successors.get(state, ())]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return frozenset(seen)

    def accepts(self, word: Iterable[str]) -> bool:
        """Run a word of symbols: a str of letters, or a sequence such as ``["A", "!B"]``."""
        current = self.closure([self.start])
        for ch in word:
            moved = [t for s in current for t in self.transitions.get((s, ch), ())]
            current = self.closure(moved)
        return bool(current & self.finals)

    def edges(self) -> Iterable[tuple[int, str, int]]:
        for (source, ch), targets in self.transitions.items():
            for target in targets:
                yield source, ch, target
        for source, reached in self.epsilon.items():
            for target in reached:
                yield source, "ε", target
        for (source, target), chars in self.negations.items():
            yield source, negation_label(chars), target

    def to_dot(self, title: Optional[str] = None) -> str:
        return render_dot(self.n_states, self.start, self.finals, self.edges(), title)


def negation_label(chars: str) -> str:
    """``!B`` or ``!(B|C)``, as in the query."""
    return "!" + chars if len(chars) == 1 else "!(" + "|".join(chars) + ")"


def freeze(moves: Mapping[Key, Iterable[int]]) -> dict[Key, frozenset[int]]:
    """Immutable target sets, dropping empty ones (a missing key means no move)."""
    return {key: frozenset(targets) for key, targets in moves.items() if targets}


def renumber(nfa: NFA, keep: Iterable[int]) -> NFA:
    """Restrict to ``keep`` and number states in BFS order from the start (targets visited
    by sorted character, epsilon moves first); kept states the BFS misses come last."""
    new = bfs_numbering(nfa, keep)

    def mapped(targets: Iterable[int]) -> frozenset[int]:
        return frozenset(new[t] for t in targets if t in new)

    moves = {(new[s], ch): mapped(t) for (s, ch), t in nfa.transitions.items() if s in new}
    epsilon = {new[s]: mapped(t) for s, t in nfa.epsilon.items() if s in new}
    negations = {(new[s], new[t]): c for (s, t), c in nfa.negations.items() if s in new and t in new}
    return NFA(
        nfa.alphabet,
        len(new),
        0,
        frozenset(new[s] for s in nfa.finals if s in new),
        {key: targets for key, targets in sorted(moves.items()) if targets},
        {key: targets for key, targets in sorted(epsilon.items()) if targets},
        nfa.negated,
        dict(sorted(negations.items())),
    )


def bfs_numbering(nfa: NFA, keep: Iterable[int]) -> dict[int, int]:
    """The old -> new state numbers ``renumber`` uses."""
    keep = set(keep)
    symbols = nfa.symbols
    order: list[int] = []
    seen = {nfa.start}
    queue = deque([nfa.start])
    while queue:
        state = queue.popleft()
        order.append(state)
        successors = sorted(nfa.epsilon.get(state, ()))
        if nfa.negations:
            successors += sorted(t for (s, t) in nfa.negations if s == state)
        for ch in symbols:
            successors += sorted(nfa.transitions.get((state, ch), ()))
        for target in successors:
            if target in keep and target not in seen:
                seen.add(target)
                queue.append(target)
    order += sorted(keep - seen)
    return {old: i for i, old in enumerate(order)}


def render_dot(
    n_states: int,
    start: int,
    finals: frozenset[int],
    edges: Iterable[tuple[int, str, int]],
    title: Optional[str],
) -> str:
    """Graphviz source; parallel edges share one arrow labelled e.g. ``B,C``. Negation
    edges (labels starting with ``!``) get their own dashed arrow."""
    labels: dict[tuple[int, int, bool], list[str]] = {}
    for source, ch, target in edges:
        labels.setdefault((source, target, ch.startswith("!")), []).append(ch)
    lines = ["digraph automaton {", "  rankdir=LR;"]
    if title:
        escaped = title.replace("\\", "\\\\").replace('"', '\\"')
        lines += [f'  label="{escaped}";', "  labelloc=t;"]
    lines.append('  __start [shape=point, label=""];')
    for state in range(n_states):
        shape = "doublecircle" if state in finals else "circle"
        lines.append(f"  {state} [shape={shape}];")
    lines.append(f"  __start -> {start};")
    for (source, target, negation), chars in sorted(labels.items()):
        label = ",".join(sorted(set(chars), key=lambda c: (c == "ε", c)))
        style = ", style=dashed" if negation else ""
        lines.append(f'  {source} -> {target} [label="{label}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"

