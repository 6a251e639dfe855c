"""The library's surface, one module per concept:

- `checks`: the shared validation and the kernel's lists of aggregates, policies, strategies;
- `query`: `Query`, a pattern compiled once with its options;
- `events`: what users pass becomes the kernel's arrays;
- `results`: `Evaluation`, `ExactResult`, `SummaryResult`;
- `feeding`: how batches reach a native engine (`Arrivals`, shared by `Exact` and `Summary`):
  in order, through the kernel's out-of-order layer, or inserted at their place;
- `exact`, `summary`, `queryset`: the engines users hold.
"""
from suse.api.checks import (
    AGGREGATES,
    DEFAULT_MEMORY_LIMIT,
    EXTREMA,
    POLICIES,
    STRATEGIES,
    check_probabilities,
)
from suse.api.events import coerce_events
from suse.api.exact import Exact, exact
from suse.api.query import Query
from suse.api.queryset import ExactSet, QuerySet, SummarySet, check_name, exact_set
from suse.api.results import Evaluation, ExactResult, SummaryResult
from suse.api.summary import Summary

__all__ = [
    "AGGREGATES",
    "DEFAULT_MEMORY_LIMIT",
    "EXTREMA",
    "POLICIES",
    "STRATEGIES",
    "Evaluation",
    "Exact",
    "ExactResult",
    "ExactSet",
    "Query",
    "QuerySet",
    "Summary",
    "SummaryResult",
    "SummarySet",
    "check_name",
    "check_probabilities",
    "coerce_events",
    "exact",
    "exact_set",
]
