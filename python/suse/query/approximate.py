"""Approximate matching (ACEP): words with up to ``k`` pattern letters missing.

A word w is accepted at cost j when inserting j letters (and no fewer) turns it into a word of
the pattern's language. Over the pruned epsilon-free NFA this is an epsilon edge beside every
letter move, which skips that letter at cost 1. Determinisation then works on *cost maps*
(NFA state -> least cost of reaching it with the word read so far, costs above k dropped), so
each DFA state knows the least cost of its words; a final DFA state is labelled with it.
Minimisation starts from the partition by label, so merged states keep one label.
"""
from __future__ import annotations

from collections import deque

from suse.query.construction import MAX_DFA_STATES, explore
from suse.query.nfa import NFA

MAX_MISSING = 8  # beyond this the cost maps explode for every realistic pattern

CostMap = tuple[tuple[int, int], ...]  # sorted (nfa state, least cost) pairs


def _skip_closure(costs: dict[int, int], skips: dict[int, set[int]], k: int) -> CostMap:
    """Follow skip edges (cost 1 each) from ``costs``, keeping the least cost per state."""
    best = dict(costs)
    queue = deque(sorted(best, key=best.__getitem__))
    # Every edge costs 1, so a breadth-first sweep by cost finds least costs.
    while queue:
        state = queue.popleft()
        cost = best[state] + 1
        if cost > k:
            continue
        for target in skips.get(state, ()):
            if cost < best.get(target, k + 1):
                best[target] = cost
                queue.append(target)
    return tuple(sorted(best.items()))


def determinise_missing(nfa: NFA, k: int, query: str = "") -> tuple[NFA, dict[int, int]]:
    """Subset construction over cost maps. Returns a complete DFA (the empty map is the sink)
    and the label of each final state: the least number of missing letters of its words."""
    skips: dict[int, set[int]] = {}
    for (source, _), targets in nfa.transitions.items():
        skips.setdefault(source, set()).update(targets)
    start = _skip_closure({nfa.start: 0}, skips, k)

    def step(current: CostMap, ch: str) -> CostMap:
        reached: dict[int, int] = {}
        for state, cost in current:
            for target in nfa.transitions.get((state, ch), ()):
                if cost < reached.get(target, k + 1):
                    reached[target] = cost
        return _skip_closure(reached, skips, k)

    index, moves = explore(start, nfa.alphabet, step, f"query too complex with max_missing={k}: its deterministic "
                           f"automaton exceeds {MAX_DFA_STATES} states", query)
    labels = {}
    for cost_map, i in index.items():
        costs = [cost for state, cost in cost_map if state in nfa.finals]
        if costs:
            labels[i] = min(costs)
    dfa = NFA(nfa.alphabet, len(index), 0, frozenset(labels), moves)
    return dfa, labels


def transfer_labels(source: NFA, labels: dict[int, int], target: NFA) -> dict[int, int]:
    """The labels of ``target``, a DFA with the same runs as the labelled DFA ``source`` (its
    minimised or trimmed form): walk both from their starts in step."""
    out: dict[int, int] = {}
    seen = {target.start}
    queue = deque([(target.start, source.start)])
    while queue:
        t, s = queue.popleft()
        if t in target.finals:
            out[t] = labels[s]
        for ch in target.alphabet:
            t_next = target.transitions.get((t, ch))
            if t_next:
                (t2,), (s2,) = t_next, source.transitions[(s, ch)]
                if t2 not in seen:
                    seen.add(t2)
                    queue.append((t2, s2))
    return out
