"""What the engines answer: `Evaluation`, `ExactResult`, `SummaryResult`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


class _Average:
    """`avg`: SUM / COUNT, None without a match (every result type's)."""

    @property
    def avg(self) -> Optional[float]:
        count: int = self.count  # type: ignore[attr-defined]
        return None if count == 0 else self.sum / count  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Evaluation(_Average):
    """The aggregate at an evaluation time: over all events with timestamp <= `timestamp`."""

    timestamp: int
    count: int
    sum: int
    partial_count: int
    detected_count: Optional[int] = None
    detected_sum: Optional[int] = None
    #: The retained elements at `timestamp` (summaries, when asked for with `elements=True`).
    elements: Optional[list[tuple[str, int, int]]] = None
    #: Smallest / largest value among the elements in at least one match (queries with
    #: aggregate "min" or "max"; None otherwise, and when there is no match).
    min: Optional[int] = None
    max: Optional[int] = None
    #: Approximate queries (`max_missing=k`): the count by least number of missing letters,
    #: k + 1 entries summing to `count`; None for exact queries.
    count_by_missing: Optional[list[int]] = None


@dataclass(frozen=True)
class ExactResult(_Average):
    count: int
    sum: int
    partial_count: int
    skipped: int
    events: int
    evaluations: list[Evaluation] = field(default_factory=list)
    min: Optional[int] = None
    max: Optional[int] = None
    count_by_missing: Optional[list[int]] = None
    #: Events older than the horizon, counted and never fed (`late="count"`).
    late: int = 0


@dataclass(frozen=True)
class SummaryResult(_Average):
    count: int
    sum: int
    partial_count: int
    detected_count: int
    detected_sum: int
    skipped: int
    events: int
    size: int
    min: Optional[int] = None
    max: Optional[int] = None
    count_by_missing: Optional[list[int]] = None
    #: Events older than the horizon, counted and never fed (`late="count"`).
    late: int = 0
    #: Elements the summary has evicted to make room (its selection at work).
    evictions: int = 0


def evaluation_of(row: Any) -> Evaluation:
    """An evaluation from the kernel's named fields."""
    return Evaluation(
        timestamp=row.timestamp,
        count=row.count,
        sum=row.sum,
        partial_count=row.partial_count,
        detected_count=row.detected_count,
        detected_sum=row.detected_sum,
        elements=row.elements,
        min=row.min,
        max=row.max,
        count_by_missing=row.count_by_missing,
    )
