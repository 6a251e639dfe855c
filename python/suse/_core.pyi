"""Types of the native module ``suse._core`` (core/python/src/lib.rs and grouped.rs).

The binding converts and maps errors only: kernel errors arrive as ``suse.InputError``,
``StateError``, ``LimitError``, and a kernel bug as ``suse.InternalError``. Arrays must be
one-dimensional and of exactly the dtype given (no conversion happens in the binding);
``chars`` is one byte per event. Counts and sums are exact Python integers.
`make lint` checks this file against the built module (mypy's stubtest: names,
parameters, defaults); keep it in step with the binding.
"""
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypedDict, final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "per_initiator_exact", "summary_memory", "summary_groups", "summary_set_groups", "sort_groups",
    "sort_packed_groups", "Dfa", "ExactEngine", "MultiExactEngine", "OooExactEngine", "OooSummaryEngine", "SummaryEngine",
    "Evaluation", "Totals", "SummaryConfig", "STRATEGIES", "POLICIES", "AGGREGATES", "STATE_FORMAT",
    "DEFAULT_MEMORY_LIMIT", "MAX_SIZE", "MatchSet", "MatchCursor", "WhereEngine",
    "WhereRetained", "recognize_run", "recognize_stretch", "recognize_nav_position",
]

_Int64Array = NDArray[np.int64]
_Element = tuple[str, int, int]  # (character, timestamp, value)

STRATEGIES: Final[list[str]]
POLICIES: Final[list[str]]
AGGREGATES: Final[list[str]]
STATE_FORMAT: Final[int]
DEFAULT_MEMORY_LIMIT: Final[int]
MAX_SIZE: Final[int]

@final
class Dfa:
    """A validated automaton; ``final_cost`` labels final states for approximate matching."""

    def __new__(
        cls,
        n_states: int,
        alphabet: str,
        negated: str,
        start: int,
        finals: Sequence[bool],
        table: Sequence[int],
        final_cost: Sequence[int] | None = None,
        max_missing: int = 0,
    ) -> Dfa: ...
    @property
    def n_states(self) -> int: ...

@final
class Evaluation:
    """The aggregate at an evaluation time."""

    @property
    def timestamp(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def sum(self) -> int: ...
    @property
    def partial_count(self) -> int: ...
    @property
    def detected_count(self) -> int | None: ...
    @property
    def detected_sum(self) -> int | None: ...
    @property
    def elements(self) -> list[_Element] | None: ...
    @property
    def min(self) -> int | None: ...
    @property
    def max(self) -> int | None: ...
    @property
    def count_by_missing(self) -> list[int] | None: ...

@final
class Totals:
    """Counts over everything processed."""

    @property
    def count(self) -> int: ...
    @property
    def sum(self) -> int: ...
    @property
    def partial_count(self) -> int: ...
    @property
    def min(self) -> int | None: ...
    @property
    def max(self) -> int | None: ...
    @property
    def count_by_missing(self) -> list[int] | None: ...

@final
class SummaryConfig:
    """A summary's configuration as the kernel holds it."""

    @property
    def window(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def strategy(self) -> str: ...
    @property
    def aggregate(self) -> str: ...
    @property
    def policy(self) -> str: ...
    @property
    def time_to_live(self) -> int | None: ...
    @property
    def seed(self) -> int: ...
    @property
    def probabilities(self) -> list[float] | None: ...

@final
class WhereEngine:
    """The exact engine of a query with conditions between events (suse/api/where.py builds it)."""

    def __new__(
        cls,
        automaton: tuple[int, Sequence[bool], Sequence[Sequence[int]]],
        layout: tuple[int, Sequence[tuple[int, int, bool, int]], Sequence[Sequence[bool]]],
        conditions: Sequence[tuple[str, Sequence[tuple[str, Any, int, int]]] | None],
        compared: Sequence[tuple[tuple[str, Sequence[tuple[str, Any, int, int]]], str, int, int, bool] | None],
        window: int,
        max_keys: int,
        extrema: Sequence[bool] | None = None,
    ) -> WhereEngine: ...
    def extend(
        self,
        letters: bytes,
        timestamps: NDArray[np.int64],
        values: NDArray[np.int64] | None,
        columns: Sequence[Sequence[Any]],
        times: NDArray[np.int64] | None = None,
    ) -> list[tuple[int, int, int, int, tuple[int, int] | None]]: ...
    def totals(self) -> _WhereTotals: ...
    def copy(self) -> WhereEngine: ...
    def _snapshot(self) -> _WhereSnapshot: ...
    def _load(self, snapshot: _WhereSnapshot) -> None: ...
    def sizes(self) -> tuple[int, int]: ...
    @property
    def events(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def last_timestamp(self) -> int | None: ...

@final
class WhereRetained:
    """The elements a summary with conditions, or with a negation at the end of the pattern,
    retains and the exact counts over them."""

    def __new__(cls, engine: WhereEngine) -> WhereRetained: ...
    @staticmethod
    def closing(dfa: Dfa, window: int, closing: tuple[list[int], int]) -> WhereRetained: ...
    def push(self, letter: int, t: int, v: int, attrs: Sequence[Any]) -> None: ...
    def remove(self, positions: Sequence[int]) -> None: ...
    def replace(self, positions: Sequence[int], letter: int, t: int, v: int, attrs: Sequence[Any]) -> _WhereTotals: ...
    def totals(self) -> _WhereTotals: ...
    def totals_at(self, at: int | None = None) -> _WhereTotals: ...
    def totals_with(self, letter: int, t: int, v: int, attrs: Sequence[Any]) -> _WhereTotals: ...
    def through(self) -> list[tuple[int, int]]: ...
    def expect(self, probabilities: Sequence[float] | None, size: int, adaptive: bool) -> None: ...
    def observe(self, letter: int, t: int, v: int) -> None: ...
    def unobserve(self) -> None: ...
    def choose(self, letter: int, t: int, v: int, attrs: Sequence[Any], may_block: bool, sum: bool) -> int | None: ...
    def benefits(self, now: int, sum: bool) -> list[tuple[float, float]]: ...
    def outlook_state(self) -> bytes: ...
    def restore_outlook(self, state: bytes) -> None: ...
    def elements(self) -> list[tuple[int, int, int, list[Any]]]: ...
    def __len__(self) -> int: ...

# (elements as (letter, timestamp, value, attributes), (count, sum, partial count), events,
# skipped, last timestamp)
_WhereTotals = tuple[int, int, int, tuple[int, int] | None]  # count, sum, partial count, (min, max)
_WhereSnapshot = tuple[list[tuple[int, int, int, list[Any]]], _WhereTotals, int, int, int | None]

@final
class ExactEngine:
    """Exact aggregation over a whole stream (the ground truth)."""

    def __new__(
        cls,
        dfa: Dfa,
        window: int,
        policy_name: str,
        memory_limit: int | None = None,
        extrema: bool = False,
        of: Sequence[bool] | None = None,
        closing: tuple[Sequence[int], int] | None = None,
    ) -> ExactEngine: ...
    def extend(
        self,
        chars: bytes,
        timestamps: _Int64Array,
        values: _Int64Array | None = None,
        evaluate_at: _Int64Array | None = None,
    ) -> list[Evaluation]: ...
    def copy(self) -> ExactEngine: ...
    def totals(self) -> Totals: ...
    @property
    def events(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def tier(self) -> str: ...
    @property
    def is_big(self) -> bool: ...
    @property
    def last_timestamp(self) -> int | None: ...

@final
class OooExactEngine:
    """The exact engine with ``lateness``: newer events wait in order in the kernel."""

    def __new__(
        cls,
        dfa: Dfa,
        window: int,
        policy_name: str,
        lateness: int,
        memory_limit: int | None = None,
        extrema: bool = False,
        of: Sequence[bool] | None = None,
    ) -> OooExactEngine: ...
    def extend(
        self,
        chars: bytes,
        timestamps: _Int64Array,
        values: _Int64Array | None = None,
        evaluate_at: _Int64Array | None = None,
    ) -> list[Evaluation]: ...
    def retract(self, byte: int, timestamp: int, value: int) -> Literal["removed", "final", "missing"]: ...
    def totals(self) -> Totals: ...
    def counts(self) -> tuple[int, int]:
        """``(events, skipped)`` over every accepted event."""
    def copy(self) -> OooExactEngine: ...
    @property
    def max_timestamp(self) -> int | None: ...
    @property
    def horizon(self) -> int | None: ...
    @property
    def lateness(self) -> int: ...
    @property
    def pending(self) -> int: ...
    @property
    def tier(self) -> str: ...

@final
class OooSummaryEngine:
    """The summary with ``lateness`` and ``placement="buffer"``: the kernel's out-of-order layer."""

    def __new__(
        cls,
        engine: SummaryEngine,
        lateness: int,
        max_timestamp: int | None = None,
        pending: tuple[bytes, Sequence[int], Sequence[int]] | None = None,
    ) -> OooSummaryEngine: ...
    def extend(
        self,
        chars: bytes,
        timestamps: _Int64Array,
        values: _Int64Array | None = None,
        evaluate_at: _Int64Array | None = None,
        with_elements: bool = False,
    ) -> list[Evaluation]: ...
    def retract(self, byte: int, timestamp: int, value: int) -> str: ...
    def settled(self) -> SummaryEngine: ...
    def done(self) -> SummaryEngine: ...
    def pending_events(self) -> tuple[list[int], list[int], list[int]]: ...
    def copy(self) -> OooSummaryEngine: ...
    @property
    def max_timestamp(self) -> int | None: ...
    @property
    def horizon(self) -> int | None: ...
    @property
    def pending(self) -> int: ...

@final
class MultiExactEngine:
    """Several exact queries over one stream; ``queries``: ``(dfa, window, policy)`` each."""

    def __new__(
        cls,
        queries: Sequence[tuple[Dfa, int, str]],
        memory_limit: int | None = None,
        merge: Literal["never", "auto", "always"] = "auto",
    ) -> MultiExactEngine: ...
    def extend(
        self,
        chars: bytes,
        timestamps: _Int64Array,
        values: _Int64Array | None = None,
        evaluate_at: _Int64Array | None = None,
    ) -> list[list[Evaluation]]: ...
    def totals(self, i: int) -> Totals: ...
    def skipped(self, i: int) -> int: ...
    def tier(self, i: int) -> str: ...
    @property
    def engines(self) -> int: ...
    @property
    def merged(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def last_timestamp(self) -> int | None: ...

@final
class SummaryEngine:
    """The bounded state summary with summary selection."""

    def __new__(
        cls,
        dfa: Dfa,
        window: int,
        size: int,
        strategy: str,
        aggregate: str,
        policy_name: str,
        probabilities: Sequence[float] | None,
        seed: int,
        time_to_live: int | None,
        memory_limit: int | None = None,
        extrema: bool = False,
        of: Sequence[bool] | None = None,
    ) -> SummaryEngine: ...
    def extend(
        self,
        chars: bytes,
        timestamps: _Int64Array,
        values: _Int64Array | None = None,
        evaluate_at: _Int64Array | None = None,
        with_elements: bool = False,
    ) -> list[Evaluation]: ...
    def result(self) -> Evaluation: ...
    def insert_late(
        self,
        chars: bytes,
        timestamps: _Int64Array,
        values: _Int64Array | None = None,
        evaluate_at: _Int64Array | None = None,
        max_timestamp: int | None = None,
        lateness: int = 0,
        with_elements: bool = False,
    ) -> list[Evaluation]: ...
    def _set_output(self, extrema: bool = False, of: Sequence[bool] | None = None) -> None: ...
    def copy(self) -> SummaryEngine: ...
    @property
    def config(self) -> SummaryConfig: ...
    def same_automaton(self, dfa: Dfa) -> bool: ...
    def adopt_labels(self, dfa: Dfa) -> bool: ...
    def elements(self) -> list[_Element]: ...
    def match_set(self) -> MatchSet: ...
    def __len__(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def evictions(self) -> int: ...
    @property
    def tier(self) -> str: ...
    @property
    def is_big(self) -> bool: ...
    @property
    def last_timestamp(self) -> int | None: ...
    def to_bytes(self, meta: str) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes, memory_limit: int | None = None) -> tuple[SummaryEngine, str]: ...
    # Inspection hooks for tests.
    def _estimates(self) -> tuple[list[tuple[float, float]], list[list[tuple[float, float]]]]: ...
    def _exact_locals(self) -> list[tuple[int, int]]: ...
    def _active_counters(self) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]: ...
    def _active_start(self) -> int: ...

def per_initiator_exact(dfa: Dfa, window: int, chars: bytes, timestamps: _Int64Array) -> tuple[int, int, int] | None: ...
def summary_memory(dfa: Dfa, size: int, policy_name: str = "any") -> int: ...

_Text = tuple[bytes, NDArray[np.int32]]  # decimal strings back to back, and their offsets

# The columns of ``summary_groups`` (one result row per entry of ``group``).
class _GroupColumns(TypedDict):
    group: _Int64Array
    evaluated_at: _Int64Array
    events: _Int64Array
    count: _Text
    sum: _Text
    detected_count: _Text
    count_double: NDArray[np.float64]
    sum_double: NDArray[np.float64]
    avg: NDArray[np.float64]
    big: _Int64Array
    element_offsets: NDArray[np.int32]
    element_chars: _Text
    element_ts: _Int64Array
    element_values: _Int64Array

def summary_groups(
    template: SummaryEngine,
    chars: bytes,
    timestamps: _Int64Array,
    values: _Int64Array | None,
    offsets: _Int64Array,
    evaluate_at: _Int64Array,
    eval_offsets: _Int64Array,
) -> _GroupColumns: ...
def summary_set_groups(
    templates: Sequence[SummaryEngine],
    chars: bytes,
    timestamps: _Int64Array,
    values: _Int64Array | None,
    offsets: _Int64Array,
    evaluate_at: Sequence[_Int64Array],
    eval_offsets: Sequence[_Int64Array],
) -> list[_GroupColumns]: ...
def sort_packed_groups(offsets: _Int64Array, packed: _Int64Array) -> _Int64Array: ...
def recognize_run(
    program: tuple[Sequence[Sequence[int]], int, int],
    n: int,
    conditions: tuple[Sequence[bytes] | None, Callable[[int, int, int, list[int]], object] | None,
                      Callable[[int], object] | None],
    options: tuple[str, int, int, str, Sequence[int], str],
    cursor: tuple[int, int, int],
    navs: Sequence[tuple[Sequence[int] | None, bool, int, int]] = ...,
) -> tuple[list[tuple[bool, int, int, list[int], list[bool], tuple[int, int, int], list[int | None]]], object | None,
           tuple[int, int, int]]: ...
def recognize_stretch(
    program: tuple[Sequence[Sequence[int]], int, int],
    table: Sequence[bytes],
    bounds: Sequence[int],
    options: tuple[str, int, int, str, Sequence[int], str],
    shape: tuple[bool, str],
    measures: Sequence[tuple[str, Sequence[int] | None, bool, bool, int, int]],
) -> tuple[_Int64Array, NDArray[np.uint8], _Int64Array, list[_Int64Array], tuple[int, object] | None]: ...
def recognize_nav_position(labels: Sequence[int], upto: int, members: object | None, first: bool, index: int) -> int | None: ...
def sort_groups(
    offsets: _Int64Array,
    timestamps: _Int64Array,
    ranks: NDArray[np.int32],
    ties: _Int64Array | None = None,
) -> _Int64Array: ...


#: A match: its positions, and the letters it misses (approximate queries; None otherwise).
_Match = tuple[list[int], int | None]

@final
class MatchSet:
    """Every match of a query over a stream (or a summary's retained elements), each once."""

    @staticmethod
    def over_events(dfa: Dfa, window: int, policy_name: str, chars: bytes, timestamps: _Int64Array,
                    pending: list[int] | None = None) -> MatchSet: ...
    def cursor(self, containing: int | None = None) -> MatchCursor: ...
    def sample(self, k: int, seed: int) -> list[_Match]: ...
    def count(self) -> int: ...
    def __len__(self) -> int: ...

@final
class MatchCursor:
    """Matches in order, read in batches (output-linear delay)."""

    @property
    def steps(self) -> int: ...
    def next_batch(self, n: int) -> list[_Match]: ...
