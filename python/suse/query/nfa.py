"""The automaton type shared by every compilation stage, plus BFS renumbering and
Graphviz rendering."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

NfaMoves = dict[tuple[int, str], frozenset[int]]  # (state, char) -> target states


@dataclass(frozen=True, eq=False)
class NFA:
    """A nondeterministic automaton over states ``0..n_states-1`` (one pipeline stage)."""

    alphabet: str
    n_states: int
    start: int
    finals: frozenset[int]
    transitions: NfaMoves
    epsilon: Mapping[int, frozenset[int]] = field(default_factory=dict)

    @property
    def states(self) -> range:
        return range(self.n_states)

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        """All states reachable from ``states`` by epsilon moves alone."""
        seen = set(states)
        stack = list(seen)
        while stack:
            for target in self.epsilon.get(stack.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return frozenset(seen)

    def accepts(self, word: str) -> bool:
        current = self.closure([self.start])
        for ch in word:
            moved = [t for s in current for t in self.transitions.get((s, ch), ())]
            current = self.closure(moved)
        return bool(current & self.finals)

    def edges(self) -> Iterable[tuple[int, str, int]]:
        for (source, ch), targets in self.transitions.items():
            for target in targets:
                yield source, ch, target
        for source, targets in self.epsilon.items():
            for target in targets:
                yield source, "ε", target

    def to_dot(self, title: Optional[str] = None) -> str:
        return render_dot(self.n_states, self.start, self.finals, self.edges(), title)


def freeze(moves: Mapping[tuple[int, str], Iterable[int]]) -> NfaMoves:
    """Immutable target sets, dropping empty ones (a missing key means no move)."""
    return {key: frozenset(targets) for key, targets in moves.items() if targets}


def renumber(nfa: NFA, keep: Iterable[int]) -> NFA:
    """Restrict to ``keep`` and number states in BFS order from the start (targets visited
    by sorted character, epsilon moves first); kept states the BFS misses come last."""
    keep = set(keep)
    order: list[int] = []
    seen = {nfa.start}
    queue = deque([nfa.start])
    while queue:
        state = queue.popleft()
        order.append(state)
        successors = sorted(nfa.epsilon.get(state, ()))
        for ch in nfa.alphabet:
            successors += sorted(nfa.transitions.get((state, ch), ()))
        for target in successors:
            if target in keep and target not in seen:
                seen.add(target)
                queue.append(target)
    order += sorted(keep - seen)
    new = {old: i for i, old in enumerate(order)}

    def mapped(targets: Iterable[int]) -> frozenset[int]:
        return frozenset(new[t] for t in targets if t in new)

    moves = {(new[s], ch): mapped(t) for (s, ch), t in nfa.transitions.items() if s in new}
    epsilon = {new[s]: mapped(t) for s, t in nfa.epsilon.items() if s in new}
    return NFA(
        nfa.alphabet,
        len(order),
        0,
        frozenset(new[s] for s in nfa.finals if s in new),
        {key: targets for key, targets in sorted(moves.items()) if targets},
        {key: targets for key, targets in sorted(epsilon.items()) if targets},
    )


def render_dot(
    n_states: int,
    start: int,
    finals: frozenset[int],
    edges: Iterable[tuple[int, str, int]],
    title: Optional[str],
) -> str:
    """Graphviz source; parallel edges share one arrow labelled e.g. ``B,C``."""
    labels: dict[tuple[int, int], list[str]] = {}
    for source, ch, target in edges:
        labels.setdefault((source, target), []).append(ch)
    lines = ["digraph automaton {", "  rankdir=LR;"]
    if title:
        escaped = title.replace("\\", "\\\\").replace('"', '\\"')
        lines += [f'  label="{escaped}";', "  labelloc=t;"]
    lines.append('  __start [shape=point, label=""];')
    for state in range(n_states):
        shape = "doublecircle" if state in finals else "circle"
        lines.append(f"  {state} [shape={shape}];")
    lines.append(f"  __start -> {start};")
    for (source, target), chars in sorted(labels.items()):
        label = ",".join(sorted(set(chars), key=lambda c: (c == "ε", c)))
        lines.append(f'  {source} -> {target} [label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"

