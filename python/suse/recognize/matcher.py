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

from suse import _core
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
    the variable index of row ``start + i``; ``excluded[i]`` whether it sits in ``{- -}``;
    ``reads[k]`` the partition row the ``k``-th navigation asked of :func:`matches` reads over
    the whole match (None: no row of the partition)."""

    number: int
    start: int
    labels: list[int]
    excluded: list[bool]
    reads: Sequence[Optional[int]] = ()

    @property
    def end(self) -> int:
        return self.start + len(self.labels)


# accept(variable, row, start, labels): labels holds the rows start..row, row labelled variable.
# An accept whose answer depends on (variable, row) alone may carry ``table``: one bytes object
# per variable, table[variable][row] == 1 where it holds, read by the kernel without a call.
Accept = Callable[[int, int, int, list], bool]


# beyond(start): whether a row after the last known one could still be accepted by a match
# starting at ``start`` (streaming: the partition goes on); None: the partition ends there.
Beyond = Optional[Callable[[int], bool]]


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
            beyond: Beyond = None, navs: Sequence[tuple] = ()) -> Iterator[Match | Unmatched]:
    """Every match of the partition of ``n`` rows in order, and between them the rows that
    no match covers (:class:`Unmatched`). ``memo_scope``: ``"partition"`` when ``accept``
    depends on the row only, ``"start"`` when it depends on the row and the start row (WITHIN),
    None otherwise. The kernel's matcher (``suse_kernel::recognize``) finds them; an accept
    with a ``table`` is read there without a call back into Python.

    Streaming: matching goes on from ``cursor``, which moves past an item only once the caller
    asks for the next one (so a caller that stops early resumes at the item it did not take);
    with ``beyond(start)`` (whether a row after the known ones could still be accepted by a
    match starting there) it stops at the first start that is not decided yet: every step
    before it is what the run over the whole partition takes too. ``base``: the partition row
    that row 0 is (``^`` holds at partition row 0). ``navs``: navigation measures, as
    :func:`suse.recognize.evaluate.nav_spec` gives them, whose rows each match carries in ``reads``."""
    cur = cursor if cursor is not None else Cursor()
    table = getattr(accept, "table", None)  # bytes per variable, 1 where a row may carry it
    items, end, last = _core.recognize_run(
        (program.code, program.registers, len(program.variables)), n,
        (table, None if table is not None else accept, beyond), (memo_scope or "none", max_steps, base, skip.mode, sorted(skip.targets), skip.name),
        (cur.pos, cur.covered, cur.number), list(navs))
    for is_match, at, number, labels, excluded, after, reads in items:
        yield Match(number, at, labels, excluded, reads) if is_match else Unmatched(at)
        cur.pos, cur.covered, cur.number = after
    cur.pos, cur.covered, cur.number = last  # an undecided start, or the end
    if isinstance(end, BaseException) and not isinstance(end, Undecided):
        raise end
