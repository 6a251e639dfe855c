"""suse: aggregate regular-expression subsequence matches over event streams with bounded summaries.

>>> import suse
>>> q = suse.Query("AB*C", window=1000)
>>> suse.exact(q, [("A", 1), ("B", 2), ("C", 3)]).count
2
"""
from suse.api import Evaluation, Exact, ExactResult, Query, Summary, SummaryResult, exact
from suse.errors import (
    InputError,
    InternalError,
    LateEventError,
    LimitError,
    QueryError,
    SparkSetupError,
    SqlError,
    StateError,
    SuseError,
    SuseWarning,
)
from suse.queryset import ExactSet, QuerySet, SummarySet
from suse.matches import matches, sample_matches  # noqa: E402 (after the API it builds on)

__all__ = [
    "Evaluation",
    "Exact",
    "ExactResult",
    "InputError",
    "InternalError",
    "LateEventError",
    "LimitError",
    "Query",
    "StateError",
    "QueryError",
    "SparkSetupError",
    "SqlError",
    "Summary",
    "SummaryResult",
    "SuseError",
    "SuseWarning",
    "exact",
    "matches",
    "sample_matches",
    "ExactSet",
    "QuerySet",
    "SummarySet",
]
__version__ = "0.1.0"
