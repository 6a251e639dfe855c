"""The compilation steps, each a function from one stage's automaton to the next:
Thompson construction, epsilon removal, pruning, subset construction, Hopcroft
minimisation. Sets of states are often bitmasks (bit s = state s): closures and subsets
can hold thousands of states, and OR-ing Python ints keeps that fast."""
from __future__ import annotations

from collections import deque
from typing import Callable, Hashable, Iterable, Mapping, Optional, TypeVar

from suse.errors import QueryError
from suse.query.nfa import NFA, bfs_numbering, freeze, negation_label, renumber
from suse.query.parser import Alternation, AnyChar, Char, Concat, Negation, Node, Repeat, negated_of

MAX_DFA_STATES = 10_000  # subset construction can blow up exponentially; refuse beyond this
MAX_NFA_TRANSITIONS = 100_000  # epsilon removal can square the size, e.g. (a*){1000}
MAX_GUARDS = 1_000  # distinct sets of negations between two letters, e.g. (!a|!b)(!c|!d)...

# --- Thompson construction ---------------------------------------------------------------


class _ThompsonBuilder:
    """Builds fragments with one entry and one exit state, glued by epsilon moves."""

    def __init__(self, alphabet: str):
        self.alphabet = alphabet
        self.n_states = 0
        self.moves: dict[tuple[int, str], set[int]] = {}
        self.epsilon: dict[int, set[int]] = {}
        self.negations: dict[tuple[int, int], str] = {}
        self.negation_pos: dict[tuple[int, int], int] = {}

    def new_state(self) -> int:
        self.n_states += 1
        return self.n_states - 1

    def link(self, source: int, target: int, ch: Optional[str] = None) -> None:
        if ch is None:
            self.epsilon.setdefault(source, set()).add(target)
        else:
            self.moves.setdefault((source, ch), set()).add(target)

    def build(self, node: Node) -> tuple[int, int]:
        entry, exit_ = self.new_state(), self.new_state()
        if isinstance(node, Char):
            self.link(entry, exit_, node.char)
        elif isinstance(node, AnyChar):
            for ch in self.alphabet:
                self.link(entry, exit_, ch)
        elif isinstance(node, Negation):
            self.negations[(entry, exit_)] = node.chars
            self.negation_pos[(entry, exit_)] = node.pos
        elif isinstance(node, Concat):
            self.chain(entry, exit_, [self.build(part) for part in node.parts])
        elif isinstance(node, Alternation):
            for option in node.options:
                inner_entry, inner_exit = self.build(option)
                self.link(entry, inner_entry)
                self.link(inner_exit, exit_)
        else:
            self.repeat(entry, exit_, node)
        return entry, exit_

    def chain(self, entry: int, exit_: int, fragments: list[tuple[int, int]]) -> None:
        """Connect fragments in sequence between ``entry`` and ``exit_``."""
        current = entry
        for inner_entry, inner_exit in fragments:
            self.link(current, inner_entry)
            current = inner_exit
        self.link(current, exit_)

    def repeat(self, entry: int, exit_: int, node: Repeat) -> None:
        """``x{m,n}``: m copies of x, then ``x*`` if unbounded, else up to n-m more copies."""
        fragments = [self.build(node.node) for _ in range(node.min)]
        if node.max is None:
            fragments.append(self.star(node.node))
        elif node.max > node.min:
            fragments.append(self.up_to(node.node, node.max - node.min))
        self.chain(entry, exit_, fragments)

    def star(self, node: Node) -> tuple[int, int]:
        """Thompson's loop: skip x entirely, or run it and go round again."""
        entry, exit_ = self.new_state(), self.new_state()
        inner_entry, inner_exit = self.build(node)
        self.link(entry, inner_entry)
        self.link(inner_exit, inner_entry)
        self.link(inner_exit, exit_)
        self.link(entry, exit_)
        return entry, exit_

    def up_to(self, node: Node, count: int) -> tuple[int, int]:
        """At most ``count`` copies of x: before each copy an edge may skip to the common
        exit. Unlike ``x?x?x?`` this keeps every epsilon closure small, so epsilon removal
        stays linear for large bounds such as ``a{0,1000}``."""
        exit_ = self.new_state()
        after = exit_  # where the copy built in this iteration continues
        entries = []
        for _ in range(count):
            entry = self.new_state()
            inner_entry, inner_exit = self.build(node)
            self.link(entry, inner_entry)
            self.link(entry, exit_)
            self.link(inner_exit, after)
            entries.append(entry)
            after = entry
        return entries[-1], exit_


def thompson(tree: Node, alphabet: str, query: str = "", end: str = "") -> NFA:
    """Thompson's construction; a negation becomes a zero-width negation move. Raises
    ``QueryError`` for a negation that stands where it cannot act (``check_negations``).

    ``end`` (a character outside the query) appends a move on it after the whole pattern: the
    close of a match's window, which a negation at the end of the pattern stands before.
    ``.`` still means only the letters of ``alphabet``."""
    builder = _ThompsonBuilder(alphabet)
    entry, exit_ = builder.build(Concat((tree, Char(end))) if end else tree)
    epsilon = {state: frozenset(targets) for state, targets in builder.epsilon.items()}
    nfa = NFA(
        "".join(sorted(alphabet + end)),
        builder.n_states,
        entry,
        frozenset([exit_]),
        freeze(builder.moves),
        epsilon,
        negated_of(tree),
        dict(builder.negations),
    )
    result = renumber(nfa, nfa.states)
    if builder.negations:
        new = bfs_numbering(nfa, nfa.states)
        positions = {(new[s], new[t]): pos for (s, t), pos in builder.negation_pos.items()}
        check_negations(result, positions, query)
    return result


def check_negations(nfa: NFA, positions: Mapping[tuple[int, int], int], query: str) -> None:
    """A negation is judged between the elements before and after it, so on every path
    through it both must exist, and the element after it must not be able to have a
    character it forbids (``A!BB`` would forbid its own next element). Copies made by
    ``x{m,n}`` share a position; the error names the leftmost offending negation."""
    # Closures over epsilon and negation moves, as bitmasks: BFS numbering keeps the
    # fixpoint in _closure_masks to a few rounds.
    zero_width: dict[int, set[int]] = {s: set(t) for s, t in nfa.epsilon.items()}
    for source, target in nfa.negations:
        zero_width.setdefault(source, set()).add(target)
    closures = _closure_masks(NFA("", nfa.n_states, nfa.start, nfa.finals, {}, zero_width))
    reads: dict[str, int] = {}  # letter -> bitmask of the states with a move on it
    for source, ch in nfa.transitions:
        reads[ch] = reads.get(ch, 0) | 1 << source
    (exit_,) = nfa.finals

    problems: list[tuple[int, str]] = []
    before_any_letter = closures[nfa.start]
    for (source, target), chars in nfa.negations.items():
        pos = positions[(source, target)]
        label = negation_label(chars)
        if before_any_letter >> source & 1:
            problems.append((pos, f"negation {label} cannot come first: on some path no element precedes it"))
            continue
        after = closures[target]
        if after >> exit_ & 1:
            problems.append((pos, f"negation {label} cannot come last: on some path no element follows it"))
            continue
        clash = [ch for ch in chars if reads.get(ch, 0) & after]
        if clash:
            problems.append(
                (
                    pos,
                    f"negation {label} forbids {clash[0]!r}, which can be the very next element "
                    "after it; a negated character must differ from every letter that can follow",
                )
            )
    if problems:
        pos, message = min(problems)
        raise QueryError(message, pos, query)


# --- epsilon removal and pruning ---------------------------------------------------------


def remove_epsilon(nfa: NFA, query: str = "") -> NFA:
    """Reading c from q = epsilon moves from q, then one c move; q is final if its closure is.

    Only the start and states entered by a character get moves: a run of the result can
    be in no other state, and pruning then drops those states as unreachable. Sets of
    states are bitmasks (bit s = state s) so large closures stay cheap. With negations
    see ``_remove_epsilon_guarded``."""
    if nfa.negations:
        return _remove_epsilon_guarded(nfa, query)
    closures = _closure_masks(nfa)
    targets = {key: _mask(states) for key, states in nfa.transitions.items()}
    has_move = {ch: _mask(s for (s, c) in nfa.transitions if c == ch) for ch in nfa.alphabet}
    entered = {nfa.start} | {t for states in nfa.transitions.values() for t in states}
    moves: dict[tuple[int, str], frozenset[int]] = {}
    size = 0
    for state in sorted(entered):
        for ch in nfa.alphabet:
            reached = 0
            for via in _members(closures[state] & has_move[ch]):
                reached |= targets[(via, ch)]
            if reached:
                moves[(state, ch)] = frozenset(_members(reached))
                size += len(moves[(state, ch)])
        if size > MAX_NFA_TRANSITIONS:
            raise QueryError(
                f"query too complex: without epsilon moves its automaton exceeds "
                f"{MAX_NFA_TRANSITIONS} transitions",
                0,
                query,
            )
    finals = _mask(nfa.finals)
    final_states = frozenset(s for s in nfa.states if closures[s] & finals)
    result = NFA(nfa.alphabet, nfa.n_states, nfa.start, final_states, moves)
    return renumber(result, nfa.states)


def _remove_epsilon_guarded(nfa: NFA, query: str) -> NFA:
    """Epsilon removal when negation moves exist.

    A path of zero-width moves from q to a c move has a *guard*: the union of the
    characters its negation moves forbid (a bitmask over ``nfa.negated``). Where several
    paths lead to the same c move only the minimal guards matter (a match needs one parse
    whose negations hold). Each state q is then split into one copy per distinct guard G
    of its moves: the copy q_G keeps the moves guarded by G, has a ``!x`` self-loop for
    every negated x outside G and none for x in G (an x event between the elements kills
    that parse). Entering q enters all its copies; only the unguarded copy q_0 is final
    (``check_negations`` guarantees that no path to the end passes a negation)."""
    # The guarded automaton has at least the moves of the one that ignores the guards, so
    # that cheap bitmask pass refuses a too large query before the slower guarded one.
    merged = {s: set(targets) for s, targets in nfa.epsilon.items()}
    for source, target in nfa.negations:
        merged.setdefault(source, set()).add(target)
    unguarded = NFA(nfa.alphabet, nfa.n_states, nfa.start, nfa.finals, nfa.transitions, freeze(merged))
    remove_epsilon(unguarded, query)

    bit = {ch: 1 << i for i, ch in enumerate(nfa.negated)}
    guarded: dict[int, list[tuple[int, int]]] = {}
    for (source, target), chars in nfa.negations.items():
        mask = 0
        for ch in chars:
            mask |= bit[ch]
        guarded.setdefault(source, []).append((target, mask))
    has_move: dict[int, list[str]] = {}
    for source, ch in nfa.transitions:
        has_move.setdefault(source, []).append(ch)
    (final,) = nfa.finals  # Thompson's automaton has one final state
    entered = {nfa.start} | {t for states in nfa.transitions.values() for t in states}

    by_masks = _GuardMasks.build(nfa, guarded)
    outs: dict[int, dict[int, dict[str, set[int]]]] = {}  # q -> guard -> ch -> targets
    finals: set[int] = set()
    size = 0
    for q in sorted(entered):
        if by_masks is not None:
            per_move, final_here = by_masks.moves(q)
        else:
            per_move, final_here = _moves_by_search(nfa, q, guarded, has_move, final, query)
        by_guard = outs.setdefault(q, {})
        for (ch, target), minimal in per_move.items():
            for g in minimal:
                by_guard.setdefault(g, {}).setdefault(ch, set()).add(target)
                size += 1
        if final_here:
            finals.add(q)
        if size > MAX_NFA_TRANSITIONS:
            raise QueryError(
                f"query too complex: without epsilon moves its automaton exceeds "
                f"{MAX_NFA_TRANSITIONS} transitions",
                0,
                query,
            )
    copies: dict[int, list[int]] = {}  # q -> its guards; copy ids follow this order
    for q in sorted(entered):
        guards = set(outs.get(q, {})) | ({0} if q in finals or q == nfa.start else set())
        copies[q] = sorted(guards)
    ids: dict[tuple[int, int], int] = {}
    for q, gs in copies.items():
        for g in gs:
            ids[(q, g)] = len(ids)
    moves: dict[tuple[int, str], set[int]] = {}
    for q, by_guard in outs.items():
        for g, by_char in by_guard.items():
            for ch, targets in by_char.items():
                moves[(ids[(q, g)], ch)] = {ids[(t, h)] for t in targets for h in copies[t]}
    for (_, g), copy in ids.items():
        for ch in nfa.negated:
            if not g & bit[ch]:
                moves[(copy, "!" + ch)] = {copy}
    if copies[nfa.start] != [0]:  # check_negations rules out a negation before any letter
        raise AssertionError(f"negation before the first element in {query!r}")
    result = NFA(
        nfa.alphabet,
        len(ids),
        ids[(nfa.start, 0)],
        frozenset(ids[(q, 0)] for q in finals),
        freeze(moves),
        negated=nfa.negated,
    )
    return renumber(result, result.states)


MAX_GUARD_CANDIDATES = 64  # beyond this many unions of negations, search paths instead


class _GuardMasks:
    """Minimal guards by bitmask closures: for every candidate guard S (a union of some
    negation moves' characters, so every path's guard is one), the closure over epsilon
    moves and the negation moves allowed by S. A target reached with S but with no
    smaller candidate has S as a minimal guard. Much faster than searching paths when
    the query has few distinct negations, which is the usual case."""

    def __init__(self, nfa: NFA, candidates: list[int], closures: dict[int, list[int]]):
        self.nfa = nfa
        self.candidates = candidates  # by number of characters, so subsets come first
        self.closures = closures
        self.targets = {key: _mask(states) for key, states in nfa.transitions.items()}
        self.has_move = {ch: _mask(s for (s, c) in nfa.transitions if c == ch) for ch in nfa.alphabet}
        self.final = _mask(nfa.finals)

    @classmethod
    def build(cls, nfa: NFA, guarded: Mapping[int, list[tuple[int, int]]]) -> Optional[_GuardMasks]:
        labels = {m for moves in guarded.values() for _, m in moves}
        candidates = {0}
        for label in labels:
            candidates |= {c | label for c in candidates}
            if len(candidates) > MAX_GUARD_CANDIDATES:
                return None
        ordered = sorted(candidates, key=lambda c: (bin(c).count("1"), c))
        closures = {}
        for allowed in ordered:
            zero_width = {s: set(t) for s, t in nfa.epsilon.items()}
            for source, moves in guarded.items():
                for target, m in moves:
                    if m & ~allowed == 0:
                        zero_width.setdefault(source, set()).add(target)
            closures[allowed] = _closure_masks(NFA("", nfa.n_states, nfa.start, nfa.finals, {}, zero_width))
        return cls(nfa, ordered, closures)

    def moves(self, q: int) -> tuple[dict[tuple[str, int], list[int]], bool]:
        per_move: dict[tuple[str, int], list[int]] = {}
        for ch in self.nfa.alphabet:
            reached: dict[int, int] = {}  # candidate -> targets reachable with it
            for allowed in self.candidates:
                targets = 0
                for via in _members(self.closures[allowed][q] & self.has_move[ch]):
                    targets |= self.targets[(via, ch)]
                reached[allowed] = targets
                smaller = 0
                for other, got in reached.items():
                    if other != allowed and other & ~allowed == 0:
                        smaller |= got
                for target in _members(targets & ~smaller):
                    per_move.setdefault((ch, target), []).append(allowed)
        return per_move, bool(self.closures[0][q] & self.final)


def _moves_by_search(nfa, q, guarded, has_move, final, query):
    """Minimal guards per (character, target) by searching zero-width paths from q."""
    guards = _guarded_closure(q, nfa.epsilon, guarded, query)
    per_move: dict[tuple[str, int], list[int]] = {}
    for via, via_guards in guards.items():
        for ch in has_move.get(via, ()):
            for target in nfa.transitions[(via, ch)]:
                for g in via_guards:
                    _add_minimal(per_move.setdefault((ch, target), []), g)
    return per_move, 0 in guards.get(final, ())


def _guarded_closure(
    q: int, epsilon: Mapping[int, Iterable[int]], guarded: Mapping[int, list[tuple[int, int]]], query: str
) -> dict[int, list[int]]:
    """For every state reachable from q by zero-width moves, the minimal guards (bitmasks)
    of the paths that reach it."""
    best: dict[int, list[int]] = {q: [0]}
    stack = [(q, 0)]
    while stack:
        state, g = stack.pop()
        if g not in best[state]:
            continue  # superseded by a smaller guard
        steps = [(t, g) for t in epsilon.get(state, ())] + [(t, g | m) for t, m in guarded.get(state, ())]
        for target, h in steps:
            current = best.setdefault(target, [])
            if _add_minimal(current, h):
                if len(current) > MAX_GUARDS:
                    raise QueryError(
                        f"query too complex: its negations combine in more than {MAX_GUARDS} "
                        "ways between two elements",
                        0,
                        query,
                    )
                stack.append((target, h))
    return best


def _add_minimal(antichain: list[int], g: int) -> bool:
    """Add guard g unless a subset of it is present, dropping its supersets; True if added."""
    if any(h & ~g == 0 for h in antichain):
        return False
    antichain[:] = [h for h in antichain if g & ~h] + [g]
    return True


def _closure_masks(nfa: NFA) -> list[int]:
    """Epsilon closure of every state, iterated to a fixpoint (loops need extra rounds)."""
    masks = [1 << s for s in nfa.states]
    changed = True
    while changed:
        changed = False
        for state in reversed(nfa.states):  # edges mostly point forward: few rounds
            mask = masks[state]
            for target in nfa.epsilon.get(state, ()):
                mask |= masks[target]
            if mask != masks[state]:
                masks[state] = mask
                changed = True
    return masks


def _mask(states: Iterable[int]) -> int:
    mask = 0
    for state in states:
        mask |= 1 << state
    return mask


def _members(mask: int) -> list[int]:
    """The states in a bitmask, ascending (str.find scans the binary digits in C)."""
    digits = bin(mask)[:1:-1]  # least significant first, without the "0b" prefix
    states = []
    state = digits.find("1")
    while state >= 0:
        states.append(state)
        state = digits.find("1", state + 1)
    return states


def prune(nfa: NFA) -> NFA:
    """Keep only states reachable from the start that can still reach a final state
    (and the start itself, so that the result is still an automaton)."""
    reachable = _reachable([nfa.start], nfa.transitions)
    reverse: dict[tuple[int, str], set[int]] = {}
    for source, ch, target in nfa.edges():
        reverse.setdefault((target, ch), set()).add(source)
    alive = _reachable(nfa.finals, reverse)
    return renumber(nfa, (reachable & alive) | {nfa.start})


def _reachable(starts: Iterable[int], moves: Mapping[tuple[int, str], Iterable[int]]) -> set[int]:
    successors: dict[int, list[int]] = {}
    for (source, _), targets in moves.items():
        successors.setdefault(source, []).extend(targets)
    seen = set(starts)
    stack = list(seen)
    while stack:
        for target in successors.get(stack.pop(), ()):
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


# --- determinisation and minimisation ----------------------------------------------------


State = TypeVar("State", bound=Hashable)


def explore(start: State, symbols: Iterable[str], step: Callable[[State, str], State],
            too_big: str, query: str = "") -> tuple[dict[State, int], dict[tuple[int, str], frozenset[int]]]:
    """The work list of every determinisation: the states reachable from ``start`` by ``step``
    (any hashable description of a state: a subset, a cost map), numbered in breadth-first order
    from 0, and the complete transition table over ``symbols``. More than MAX_DFA_STATES states
    is a ``QueryError`` with the message ``too_big``."""
    index = {start: 0}
    queue = deque([start])
    moves: dict[tuple[int, str], frozenset[int]] = {}
    symbols = list(symbols)
    while queue:
        current = queue.popleft()
        for ch in symbols:
            target = step(current, ch)
            if target not in index:
                if len(index) >= MAX_DFA_STATES:
                    raise QueryError(too_big, 0, query)
                index[target] = len(index)
                queue.append(target)
            moves[(index[current], ch)] = frozenset([index[target]])
    return index, moves


def determinise(nfa: NFA, query: str = "") -> NFA:
    """Subset construction; the result is complete (the empty subset is the sink).
    Subsets are bitmasks, like in ``remove_epsilon``."""
    targets = {key: _mask(states) for key, states in nfa.transitions.items()}

    def step(subset: int, ch: str) -> int:
        target = 0
        for state in _members(subset):
            target |= targets.get((state, ch), 0)
        return target

    index, moves = explore(1 << nfa.start, nfa.symbols, step,
                           f"query too complex: its deterministic automaton exceeds {MAX_DFA_STATES} states", query)
    finals = _mask(nfa.finals)
    dfa_finals = frozenset(i for subset, i in index.items() if subset & finals)
    return NFA(nfa.alphabet, len(index), 0, dfa_finals, moves, negated=nfa.negated)


def minimise(dfa: NFA, labels: Optional[Mapping[int, int]] = None) -> NFA:
    """Hopcroft's partition refinement on a complete DFA; each block becomes one state.
    With ``labels`` (final state -> label) final states of different labels never merge."""
    blocks = _hopcroft_blocks(dfa, labels)
    block_of = {state: b for b, block in enumerate(blocks) for state in block}
    moves = {
        (block_of[source], ch): {block_of[next(iter(targets))]}
        for (source, ch), targets in dfa.transitions.items()
    }
    finals = frozenset(block_of[s] for s in dfa.finals)
    quotient = NFA(
        dfa.alphabet, len(blocks), block_of[dfa.start], finals, freeze(moves), negated=dfa.negated
    )
    return renumber(quotient, quotient.states)


def _hopcroft_blocks(dfa: NFA, labels: Optional[Mapping[int, int]] = None) -> list[set[int]]:
    """Coarsest partition of the states compatible with finality (and labels) and transitions."""
    predecessors: dict[tuple[int, str], list[int]] = {}
    for (source, ch), targets in dfa.transitions.items():
        predecessors.setdefault((next(iter(targets)), ch), []).append(source)
    finals, others = set(dfa.finals), set(dfa.states) - set(dfa.finals)
    if labels:
        by_label: dict[int, set[int]] = {}
        for state in finals:
            by_label.setdefault(labels[state], set()).add(state)
        blocks = [b for b in (*by_label.values(), others) if b]
    else:
        blocks = [b for b in (finals, others) if b]
    block_of = {s: b for b, block in enumerate(blocks) for s in block}
    pending = set(range(len(blocks)))  # splitters still to process
    symbols = dfa.symbols
    while pending:
        splitter = list(blocks[pending.pop()])
        for ch in symbols:
            into = {p for s in splitter for p in predecessors.get((s, ch), ())}
            touched: dict[int, set[int]] = {}
            for state in into:
                touched.setdefault(block_of[state], set()).add(state)
            for b, inside in touched.items():
                if len(inside) == len(blocks[b]):
                    continue
                blocks[b] -= inside
                blocks.append(inside)
                new = len(blocks) - 1
                for state in inside:
                    block_of[state] = new
                # Processing the smaller half suffices unless b itself is still pending.
                if b in pending or len(inside) <= len(blocks[b]):
                    pending.add(new)
                else:
                    pending.add(b)
    return blocks
