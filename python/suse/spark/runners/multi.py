"""A query set's plan: every query over each partition in one Python pass.

Rows are classified over the union of the queries' letters, shuffled and sorted once. A query
sees exactly the events it would see alone (its letters and negated characters; every row
under contiguity), so each query's rows equal a run of that query alone. With ``exact=True``
one `suse.ExactSet` pass over the partition answers every query's evaluation times (events of
other queries' letters change no count: skip-till-any/next-match skip them, and contiguity
is broken by them alone too, since it then sees every row).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

import suse
from suse.spark.runners.plan import Plan, Row, empty_row, evaluate_partition


@dataclasses.dataclass(frozen=True)
class MultiPlan:
    """Per query: its name, plan and the ranks (characters) of the events it is fed."""

    plans: tuple[tuple[str, Plan, tuple[int, ...]], ...]
    order: str
    exact: bool

    multi = True  # run_sorted adds the `query` column

    @property
    def extrema(self) -> bool:
        """min/max columns when any query has aggregate min/max (NULL for the others)."""
        return any(plan.extrema for _, plan, _ in self.plans)

    @property
    def max_missing(self) -> int:
        """count_by_missing column when any query is approximate (NULL for the others)."""
        return max(plan.max_missing for _, plan, _ in self.plans)

    def empty_rows(self, dropped: int, corrupt: int) -> list[Row]:
        """Per query, the row of a partition with counted rows but no usable event."""
        return [empty_row(dataclasses.replace(plan, exact=self.exact), dropped, corrupt)._replace(query=name)
                for name, plan, _ in self.plans]

    def chars(self, ranks: np.ndarray) -> bytes:
        return np.frombuffer(self.order.encode("ascii"), dtype=np.uint8)[ranks].tobytes()

    def evaluate(self, key: Sequence[Any], ranks: np.ndarray, ts: np.ndarray, values: np.ndarray | None) -> list[Row]:
        """Rows of every query for one partition's sorted events."""
        fed = []
        for name, plan, allowed in self.plans:
            mask = np.isin(ranks, allowed)
            sub_ts = ts[mask]
            fed.append((name, plan, mask, plan.trigger.times(sub_ts, key) if len(sub_ts) else np.array([], np.int64)))
        exact = None
        if self.exact:
            times = np.unique(np.concatenate([f[3] for f in fed])).astype(np.int64)
            if len(times):
                qs = suse.QuerySet({name: plan.query() for name, plan, _, _ in fed})
                ev = suse.exact(qs, chars=self.chars(ranks), timestamps=ts, values=values, evaluate_at=times)
                exact = {name: dict(zip(times.tolist(), r.evaluations)) for name, r in ev.items()}
        rows = []
        for name, plan, mask, times in fed:
            if not len(times):
                continue
            sub = evaluate_partition(plan, key, self.chars(ranks[mask]), ts[mask], None if values is None else values[mask])
            for row in sub:
                if exact is not None:
                    e = exact[name][row.evaluated_at]
                    row = row._replace(exact_count=e.count, exact_sum=e.sum)
                rows.append(row._replace(query=name))
        return rows
