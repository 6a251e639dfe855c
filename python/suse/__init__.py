"""suse: aggregate regular-expression subsequence matches over event streams with bounded summaries.

>>> import suse
>>> q = suse.Query("AB*C", window=1000)
>>> suse.exact(q, [("A", 1), ("B", 2), ("C", 3)]).count
2
"""
from suse.api import (
    Evaluation,
    Exact,
    ExactResult,
    ExactSet,
    Query,
    QuerySet,
    Summary,
    SummaryResult,
    SummarySet,
    exact,
)
from suse.api.matching import matches, sample_matches
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
