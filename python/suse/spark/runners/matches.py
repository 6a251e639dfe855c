"""Each output row's matches (``matches=n`` / ``sample_matches=n``): the first n, or n drawn
uniformly, among the retained elements the row reports, as the summary counts them.

The rows of both layouts pass through `add_matches` in the Python worker, after the native
runs: the elements the row carries are all it needs, because the row's count is the number
of matches among them, and under skip-till-any and skip-till-next without negation nothing
else decides which sets of elements match. Negation and contiguity depend
on the events between the retained elements, conditions between events (``where``) on their
attributes, which the rows do not carry: `check_matches` refuses them on the driver, by name.
"""
from __future__ import annotations

import zlib
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa

import suse
from suse.api.matching import RetainedMatches
from suse.errors import InputError
from suse.spark.runners.multi import MultiPlan
from suse.spark.runners.plan import ELEMENT_LIST, PartitionPlan, Plan
from suse.spec import JobSpec, MatchesSpec

MATCH_LIST = pa.list_(ELEMENT_LIST)
MATCHES_DDL = "matches array<array<struct<char:string,timestamp:long,value:long>>>"


def check_matches(job: JobSpec) -> None:
    """Refuse, before any Spark work, a matches column the rows cannot give exactly."""
    if job.output.matches is None:
        return
    for query in job.queries:
        if query.where is None and RetainedMatches.told_by_elements(query.compile()):
            continue
        what = ("conditions between events (where: their attributes)" if query.where is not None else "contiguity"
                if query.policy == "contiguous" else "approximate matching (max_missing)"
                if query.max_missing else "negation")
        raise InputError(
            f"matches per row are not available for {query.regex!r} with {what}: the rows carry the retained "
            "elements, not what else decides which sets of them match; list them in Python with "
            "suse.Summary(...).retained_matches()")


def row_matches(query: suse.Query, row: Mapping[str, Any], spec: MatchesSpec, seed: int) -> list:
    """The matches of one output row, each as its elements (dicts of char, timestamp, value)."""
    at = row["evaluated_at"]
    if at is None:  # a partition with counted rows but no event
        return []
    elements = [(e["char"], e["timestamp"], e["value"]) for e in row["elements"]]
    retained = RetainedMatches.of_elements(query, elements)
    if spec.sample:
        if retained.count() == 0:
            return []
        # one seed per row, stable across workers and runs (Python's hash of a str is not)
        row_seed = zlib.crc32(repr((seed, at, elements[:1])).encode()) & 0x7FFF_FFFF
        found = retained.sample(spec.n, row_seed)
    else:
        found = list(retained.matches(spec.n))
    return [[{"char": c, "timestamp": t, "value": v} for c, t, v in match] for match in found]


def add_matches(batches: Iterable[pa.RecordBatch], plan: PartitionPlan, spec: MatchesSpec) -> Iterator[pa.RecordBatch]:
    """The batches with a ``matches`` column after ``elements`` (a query set's rows name
    their query in the ``query`` column)."""
    multi = isinstance(plan, MultiPlan)
    plans: dict[Any, Plan] = {name: p for name, p, _ in plan.plans} if multi else {None: plan}  # type: ignore[attr-defined,dict-item]
    # per query name (None: the one query): the compiled query and the seed of its samples
    by_name = {name: (p.query(), p.summary.seed or 0) for name, p in plans.items()}
    for batch in batches:
        listed = []
        for row in batch.to_pylist():
            query, seed = by_name[row["query"] if multi else None]
            listed.append(row_matches(query, row, spec, seed))
        at = batch.schema.get_field_index("elements") + 1
        yield batch.add_column(at, pa.field("matches", MATCH_LIST), pa.array(listed, MATCH_LIST))
