"""The standard's row-pattern matcher: the preferred match at each start, and the skip rules.

The pattern is compiled to a small program (``VAR``, ``SPLIT``, ``JMP``, anchors, exclusion
marks, progress checks) run by a backtracking interpreter that tries the alternatives of each
``SPLIT`` in order of preference (greedy: one more iteration first; reluctant: one fewer;
alternation: in the order written), so the first accepting path *is* the preferred match
(SQL:2016, "preferment"). Bounded repetition is unrolled ({2,4}: two copies, then two nested
optional ones); an iteration beyond the minimum that matches no row is not taken (the progress
check), which also keeps ``(A?)*`` from looping.

When every DEFINE condition depends on its own row only, whether a state (instruction, row,
progress registers) can still reach an accepting end does not depend on the path that led to
it, so a state reached a second time has already failed and is dropped (``memo``): the work per
start is then bounded by program size times rows. Conditions that look at other rows of the
match disable that; ``max_steps`` then bounds the work and raises :class:`RecognizeError`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

from suse.errors import LimitError, SuseError
from suse.recognize.pattern import Alt, Anchor, Exclude, Node, Repeat, Seq, Var, nullable

VAR, SPLIT, JMP, START, END, EXCL_ON, EXCL_OFF, MARK, PROGRESS, MATCH = range(10)
MAX_PROGRAM = 200_000  # instructions after unrolling
MAX_STEPS = 5_000_000  # interpreter steps for one start row when the memo is off


class RecognizeError(SuseError, ValueError):
    """A match could not be computed: too much backtracking, or an impossible AFTER MATCH SKIP."""


class BacktrackingLimitError(RecognizeError, LimitError):
    """More backtracking steps for one start row than ``max_steps`` (or a pattern too large)."""


class Undecided(Exception):
    """Streaming: the match at a start row depends on a row that has not arrived (or is not yet
    in its final place): decide it again once more rows are final."""


@dataclass(frozen=True)
class Program:
    code: tuple[tuple[int, ...], ...]  # (op, a, b)
    registers: int
    variables: tuple[str, ...]


def compile_pattern(node: Node, variables: Sequence[str]) -> Program:
    """The program of ``node``; ``variables`` fixes the index of each variable."""
    index = {name: i for i, name in enumerate(variables)}
    code: list[list[int]] = []
    registers = [0]

    def emit(op: int, a: int = 0, b: int = 0) -> int:
        code.append([op, a, b])
        if len(code) > MAX_PROGRAM:
            raise BacktrackingLimitError(f"the pattern unrolls to more than {MAX_PROGRAM} instructions: use smaller bounds in {{n,m}}")
        return len(code) - 1

    def iteration(body: Node) -> None:
        """One optional iteration: must consume a row if the body could match none."""
        if nullable(body):
            r = registers[0]
            registers[0] += 1
            emit(MARK, r)
            walk(body)
            emit(PROGRESS, r)
        else:
            walk(body)

    def patch(at: int, take: int, skip: int, greedy: bool) -> None:
        code[at][1], code[at][2] = (take, skip) if greedy else (skip, take)

    def walk(n: Node) -> None:
        if isinstance(n, Var):
            emit(VAR, index[n.name])
        elif isinstance(n, Seq):
            for item in n.items:
                walk(item)
        elif isinstance(n, Alt):
            jumps = []
            for k, item in enumerate(n.items):
                if k < len(n.items) - 1:
                    at = emit(SPLIT)
                    code[at][1] = at + 1
                    walk(item)
                    jumps.append(emit(JMP))
                    code[at][2] = len(code)
                else:
                    walk(item)
            for j in jumps:
                code[j][1] = len(code)
        elif isinstance(n, Repeat):
            for _ in range(n.low):
                walk(n.body)
            if n.high is None:
                head = emit(SPLIT)
                iteration(n.body)
                emit(JMP, head)
                patch(head, head + 1, len(code), n.greedy)
            else:
                heads = []
                for _ in range(n.high - n.low):
                    heads.append(emit(SPLIT))
                    iteration(n.body)
                for h in heads:
                    patch(h, h + 1, len(code), n.greedy)
        elif isinstance(n, Anchor):
            emit(START if n.start else END)
        elif isinstance(n, Exclude):
            emit(EXCL_ON)
            walk(n.body)
            emit(EXCL_OFF)
        else:  # pragma: no cover - the parser builds only the nodes above
            raise TypeError(n)

    walk(node)
    emit(MATCH)
    return Program(tuple(tuple(c) for c in code), registers[0], tuple(variables))


@dataclass
class Match:
    """A match: rows ``start .. start + len(labels) - 1`` of the partition; ``labels[i]`` is
    the variable index of row ``start + i``; ``excluded[i]`` whether it sits in ``{- -}``."""

    number: int
    start: int
    labels: list[int]
    excluded: list[bool]

    @property
    def end(self) -> int:
        return self.start + len(self.labels)


# accept(variable, row, start, labels): labels holds the rows start..row, row labelled variable.
# An accept whose answer depends on (variable, row) alone may carry ``table``: table[variable][row]
# is True where it holds, read by the interpreter without a call.
Accept = Callable[[int, int, int, list], bool]


# beyond(start): whether a row after the last known one could still be accepted by a match
# starting at ``start`` (streaming: the partition goes on); None: the partition ends there.
Beyond = Optional[Callable[[int], bool]]


def match_at(program: Program, start: int, n: int, accept: Accept, memo: Optional[set] = None,
             max_steps: int = MAX_STEPS, base: int = 0, beyond: Beyond = None) -> Optional[tuple[list[int], list[bool]]]:
    """The preferred match starting at row ``start`` of ``n`` rows: (labels, excluded), or None.
    ``base``: the partition row that row 0 is (``^`` holds at partition row 0). With ``beyond``,
    a step that needs a row after the known ones raises :class:`Undecided`: every step before it
    is what the run over the whole partition takes too, so a result found without it is final."""
    code = program.code
    pc, pos, depth = 0, start, 0
    regs = (-1,) * program.registers
    labels: list[int] = []
    excluded: list[bool] = []
    stack: list[tuple] = []
    steps = 0
    plain, stride = program.registers == 0, n + 1  # without registers a state is one integer
    table = getattr(accept, "table", None)  # row-local conditions: read the flags directly
    while True:
        op, a, b = code[pc]
        steps += 1
        if memo is None and steps > max_steps:
            raise BacktrackingLimitError(f"more than {max_steps} backtracking steps for the match starting at row {start + 1} of the partition: "
                                 "simplify the pattern or the DEFINE conditions that look at other rows of the match")
        ok = True
        if memo is not None and op <= SPLIT:  # VAR or SPLIT: every cycle passes one
            key = pc * stride + pos if plain else (pc, pos, regs)
            if key in memo:
                ok = False
            else:
                memo.add(key)
        if ok:
            if op == VAR:
                if pos >= n and beyond is not None and beyond(start):
                    raise Undecided(start)
                if pos < n:
                    labels.append(a)
                    excluded.append(depth > 0)
                    if (table[a][pos] is True) if table is not None else accept(a, pos, start, labels):
                        pos += 1
                        pc += 1
                        continue
                    labels.pop()
                    excluded.pop()
                ok = False
            elif op == SPLIT:
                stack.append((b, pos, regs, depth))
                pc = a
                continue
            elif op == JMP:
                pc = a
                continue
            elif op == START:
                ok = pos + base == 0
            elif op == END:
                if pos == n and beyond is not None:
                    raise Undecided(start)
                ok = pos == n
            elif op == EXCL_ON:
                depth += 1
            elif op == EXCL_OFF:
                depth -= 1
            elif op == MARK:
                regs = regs[:a] + (pos,) + regs[a + 1:]
            elif op == PROGRESS:
                ok = regs[a] != pos
            else:  # MATCH
                return labels, excluded
            if ok:
                pc += 1
                continue
        if not stack:
            return None
        pc, pos, regs, depth = stack.pop()
        del labels[pos - start:]
        del excluded[pos - start:]


@dataclass(frozen=True)
class Skip:
    """AFTER MATCH SKIP: ``"past"`` (PAST LAST ROW), ``"next"`` (TO NEXT ROW), ``"first"`` /
    ``"last"`` (TO FIRST / LAST var) with the variable indices the target row may carry."""

    mode: str = "past"
    targets: frozenset = frozenset()
    name: str = ""


@dataclass(frozen=True)
class Unmatched:
    row: int


@dataclass
class Cursor:
    """Where matching of a partition stands: the next start row, the end of the rows covered
    by matches so far, and the number of matches so far (rows counted from row 0 given)."""

    pos: int = 0
    covered: int = 0
    number: int = 0


def matches(program: Program, n: int, accept: Accept, skip: Skip = Skip(), memo_scope: Optional[str] = "partition",
            max_steps: int = MAX_STEPS, cursor: Optional[Cursor] = None, base: int = 0,
            beyond: Beyond = None) -> Iterator[Match | Unmatched]:
    """Every match of the partition of ``n`` rows in order, and between them the rows that
    no match covers (:class:`Unmatched`). ``memo_scope``: ``"partition"`` when ``accept``
    depends on the row only, ``"start"`` when it depends on the row and the start row (WITHIN),
    None otherwise.

    Streaming: matching goes on from ``cursor``, which moves past an item only once the caller
    asks for the next one (so a caller that stops early resumes at the item it did not take);
    with ``beyond`` (see :func:`match_at`) it stops at the first start that is not decided yet.
    ``base`` as in :func:`match_at`."""
    cur = cursor if cursor is not None else Cursor()
    memo: Optional[set] = set() if memo_scope else None
    while cur.pos < n:
        if memo_scope == "start":
            memo = set()
        pos = cur.pos
        try:
            found = match_at(program, pos, n, accept, memo, max_steps, base, beyond)
        except Undecided:
            return
        if found is None:
            if pos >= cur.covered:
                yield Unmatched(pos)
            cur.pos = pos + 1
            continue
        labels, excluded = found
        number = cur.number + 1
        target = _skip_target(skip, pos, labels, number) if labels else pos + 1
        yield Match(number, pos, labels, excluded)
        if memo_scope == "partition":
            memo = set()  # states on the accepting path did not fail
        cur.number, cur.pos = number, target
        if labels:
            cur.covered = max(cur.covered, pos + len(labels))


def _skip_target(skip: Skip, start: int, labels: list[int], number: int) -> int:
    if skip.mode == "past":
        return start + len(labels)
    if skip.mode == "next":
        return start + 1
    rows = [start + i for i, v in enumerate(labels) if v in skip.targets]
    if not rows:
        raise RecognizeError(f"AFTER MATCH SKIP TO {skip.mode.upper()} {skip.name}: match {number} (starting at row {start + 1} "
                             f"of the partition) has no row of {skip.name}")
    target = rows[0] if skip.mode == "first" else rows[-1]
    if target == start:
        raise RecognizeError(f"AFTER MATCH SKIP TO {skip.mode.upper()} {skip.name}: match {number} would resume at its own "
                             f"first row (row {start + 1} of the partition), which would find the same match again")
    return target
