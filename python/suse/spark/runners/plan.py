"""What the Python workers run per partition: the plan of one query (`Plan`), the rows it
answers (`Row`) and the output columns they become. `Plan` and the query set's `MultiPlan`
(runners.multi) are the two `PartitionPlan`s every runner takes."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Protocol, Sequence

import numpy as np
import pyarrow as pa

import suse
from suse.api import EXTREMA
from suse.api.where import WhereCounter, exact_value
from suse.api.where_summary import WhereSummary
from suse.errors import InputError
from suse.query.conditions import data_value
from suse.spark.events.triggers import Trigger
from suse.spec import QUERY_SETTINGS, QuerySpec, SummarySpec


class PartitionPlan(Protocol):
    """What a runner needs of a plan: its output's shape and, per partition, its rows."""

    @property
    def exact(self) -> bool: ...

    @property
    def extrema(self) -> bool: ...

    @property
    def max_missing(self) -> int: ...


@dataclass(frozen=True)
class Plan:
    """Everything an executor needs to run one query over one partition; small and picklable.

    The query and summary travel as their specifications (suse.spec), so an option added there
    reaches the executors without another field here."""

    spec: QuerySpec  # its window in the timestamps' unit
    summary: SummarySpec = field(default_factory=SummarySpec)  # probabilities given or estimated
    trigger: Trigger = field(default_factory=lambda: Trigger("end"))
    exact: bool = False
    order: str = ""  # order[rank] is an event's character (predicate order)
    engine: str = "summary"  # "exact": the exact engine alone computes the rows (OutputSpec.engine)
    attributes: tuple[str, ...] = ()  # the columns the conditions read, in Events.attributes order

    @property
    def summarised(self) -> bool:
        """Whether the rows carry a summary's columns (detected_count, elements)."""
        return self.engine == "summary"

    @property
    def window(self) -> int:
        return int(self.spec.window)  # type: ignore[arg-type]  # resolved by prepare

    @property
    def policy(self) -> str:
        return self.spec.policy

    @property
    def aggregate(self) -> str:
        return self.spec.aggregate

    @property
    def max_missing(self) -> int:
        """Approximate matching: adds the count_by_missing column when > 0."""
        return self.spec.max_missing

    def query(self) -> suse.Query:
        return self.spec.compile()

    @property
    def counts_with_where_summary(self) -> bool:
        """Whether its summary is a ``WhereSummary`` (conditions, or a negation at the end of
        the pattern): fed with attribute columns by the sorted layout, kept pickled on a stream."""
        return self.summarised and (self.spec.where is not None or self.query()._closing is not None)

    @property
    def extrema(self) -> bool:
        """Whether the output carries ``min``/``max`` columns."""
        return self.spec.aggregate in EXTREMA

    def new_summary(self) -> suse.Summary:
        return self.summary.new_summary(self.query())

    def chars(self, ranks: np.ndarray) -> bytes:
        """Ranks -> the engine's one-byte-per-event characters, vectorised."""
        return np.frombuffer(self.order.encode("ascii"), dtype=np.uint8)[ranks].tobytes()


_QUERY_FIELDS = set(QUERY_SETTINGS)


def plan_of(regex: str, window: int, *, order: str, trigger: Trigger | None = None, exact: bool = False,
            **settings: Any) -> Plan:
    """A plan from flat settings (the query's aggregate, policy, of, max_missing; the summary's
    size, strategy, probabilities, seed): what tests and benchmarks build by hand."""
    query = {k: v for k, v in settings.items() if k in _QUERY_FIELDS}
    summary = SummarySpec(**{k: v for k, v in settings.items() if k not in _QUERY_FIELDS})
    return Plan(QuerySpec(regex, window, **query), summary, trigger or Trigger("end"), exact, order)


class Row(NamedTuple):
    evaluated_at: int
    count: int
    sum: int
    detected_count: int
    events: int  # events of the partition with timestamp <= evaluated_at
    elements: list
    exact_count: int | None = None
    exact_sum: int | None = None
    dropped: int = 0  # rows of the partition with a NULL or unreadable timestamp
    corrupt: int = 0  # records of the partition the reader could not parse
    min: int | None = None  # MIN/MAX (aggregate "min"/"max" only)
    max: int | None = None
    count_by_missing: list | None = None  # approximate matching (max_missing > 0)
    query: str | None = None  # the query's name when a query set runs (suse.spark.runners.multi)


def empty_row(plan: Plan, dropped: int, corrupt: int) -> Row:
    """The row of a partition that has counted rows but no usable event (so no evaluation
    time): without it those counts would vanish."""
    ex = (0, 0) if plan.exact else (None, None)
    by_missing = [0] * (plan.max_missing + 1) if plan.max_missing else None
    return Row(None, 0, 0, 0, 0, [], *ex, dropped, corrupt, by_missing)  # type: ignore[arg-type]


def evaluate_partition(
    plan: Plan, key: Sequence[Any], chars: bytes, ts: np.ndarray, values: np.ndarray | None,
    attributes: Sequence[pa.Array] = (),
) -> list[Row]:
    """Rows for every evaluation timestamp of one partition whose events are sorted
    (``attributes``: an Arrow column per column of ``plan.attributes``, a value per event)."""
    times = plan.trigger.times(ts, key)
    if len(times) == 0:
        return []
    counts = np.searchsorted(ts, times, side="right").tolist()
    if not plan.summarised:
        return [Row(ex.timestamp, ex.count, ex.sum, ex.count, cut, [], min=ex.min, max=ex.max,
                    count_by_missing=ex.count_by_missing)
                for ex, cut in zip(exact_evaluations(plan, chars, ts, values, attributes, times), counts)]
    exact = None
    if plan.exact:
        exact = exact_evaluations(plan, chars, ts, values, attributes, times)
    summary = plan.new_summary()
    if isinstance(summary, WhereSummary):
        evaluations = where_summary_evaluations(plan, summary, chars, ts, values, attributes, times)
    else:
        # Spark sorted the events and the trigger gives sorted distinct times, so the checks and
        # conversions of Summary.extend are skipped: one native call, its rows read as they are.
        evaluations = summary._engine.extend(chars, ts, values, np.asarray(times, dtype=np.int64), True)
    pairs = [(None, None)] * len(evaluations) if exact is None else [(ex.count, ex.sum) for ex in exact]
    return [Row(ev.timestamp, ev.count, ev.sum, ev.detected_count, cut, ev.elements, *ex,
                min=ev.min, max=ev.max, count_by_missing=ev.count_by_missing)
            for ev, cut, ex in zip(evaluations, counts, pairs)]


def exact_evaluations(plan: Plan, chars: bytes, ts: np.ndarray, values: np.ndarray | None,
                      attributes: Sequence[pa.Array], times: Sequence[int]) -> list[suse.Evaluation]:
    """The exact engine over one partition's sorted events, evaluated at ``times``; a query
    with conditions reads its attributes from ``attributes``."""
    query = plan.query()
    if query.where is None:
        return suse.exact(query, chars=chars, timestamps=ts, values=values, evaluate_at=times).evaluations
    counter = WhereCounter(query)
    columns = condition_columns(counter, chars, ts, dict(zip(plan.attributes, attributes)))
    return counter.feed(chars, ts, values, columns, times)


def where_summary_evaluations(plan: Plan, summary: WhereSummary, chars: bytes, ts: np.ndarray,
                              values: np.ndarray | None, attributes: Sequence[pa.Array],
                              times: Sequence[int]) -> list[suse.Evaluation]:
    """A summary with conditions (or a negation at the end of the pattern) fed one partition's
    sorted events with their attributes, evaluated at ``times``; its elements as the
    ``elements`` column holds them (char, timestamp, value: the attributes the conditions read
    stay out of the fixed column type)."""
    columns = [] if plan.spec.where is None else (  # (a negation at the end: no attributes)
        condition_columns(summary.counter, chars, ts, dict(zip(plan.attributes, attributes))))
    evaluations = summary.feed(chars, ts, values, columns, times, elements=True)
    return [dataclasses.replace(ev, elements=[element[:3] for element in ev.elements or ()]) for ev in evaluations]


def condition_columns(counter: WhereCounter, chars: bytes, ts: np.ndarray,
                      arrays: Mapping[str, pa.Array]) -> list[list]:
    """What ``WhereCounter.attribute_columns`` makes of a table, from Arrow columns without a
    Python call per value: one list per column the conditions read, a value per event (None
    where the event's letter reads none of it)."""
    codes = np.frombuffer(chars, np.uint8)
    out = []
    for name in counter.columns:
        if name == "timestamp":
            out.append(ts.tolist())
            continue
        values = condition_values(arrays[name], name)
        readers = [ord(c) for c, names in counter.needed.items() if name in names]
        values[~np.isin(codes, readers)] = None
        out.append(values.tolist())
    return out


def condition_values(array: pa.Array, name: str) -> np.ndarray:
    """An Arrow column as condition values (suse.query.conditions.data_value), an object array:
    integers, booleans and strings are already what the conditions compare; other types
    (floats, decimals) are converted once per distinct value."""
    kind = array.type
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_string(kind) or (
            pa.types.is_large_string(kind)):
        out = np.empty(len(array), dtype=object)
        out[:] = array.to_pylist()
        return out
    encoded = array.dictionary_encode()
    indices = encoded.indices.fill_null(len(encoded.dictionary)).to_numpy(zero_copy_only=False)
    lookup = np.empty(len(encoded.dictionary) + 1, dtype=object)  # the last entry: NULL
    for j, raw in enumerate(encoded.dictionary.to_pylist()):
        try:
            lookup[j] = exact_value(data_value(raw, f"attribute {name!r}"))
        except InputError:  # say which event, as a conversion per event would
            data_value(raw, f"attribute {name!r} of event {int(np.flatnonzero(indices == j)[0])}")
            raise
    return lookup[indices]


# --- output columns ------------------------------------------------------------------------

ELEMENT = pa.struct([("char", pa.string()), ("timestamp", pa.int64()), ("value", pa.int64())])
RESULT_DDL = (
    "evaluated_at long, count string, sum string, avg double, count_double double, "
    "sum_double double, detected_count string, events long, dropped_events long, corrupt_records long, "
    "elements array<struct<char:string,timestamp:long,value:long>>"
)
#: The columns of RESULT_DDL only a summary fills (left out with engine="exact").
SUMMARY_COLUMNS = ("detected_count", "elements")
EXACT_DDL = "exact_count string, exact_sum string"
EXTREMA_DDL = "min long, max long"  # after EXACT_DDL, for aggregate "min"/"max"
APPROX_DDL = "count_by_missing array<string>"  # only when max_missing > 0, after EXTREMA_DDL


def as_float(n: int) -> float:
    try:
        return float(n)
    except OverflowError:  # beyond 1.8e308: the string column still holds the exact value
        return math.inf


def result_columns(rows: Sequence[Row], exact: bool, extrema: bool = False, approx: bool = False,
                   summarised: bool = True) -> dict[str, list]:
    """Python column lists in RESULT_DDL (+ EXACT_DDL) order, without SUMMARY_COLUMNS when
    the rows are not a summary's. Counts and sums are exact decimal strings because they
    outgrow every numeric Spark type; ``*_double`` copies are for sorting and plotting."""
    cols: dict[str, list] = {
        "evaluated_at": [r.evaluated_at for r in rows],
        "count": [str(r.count) for r in rows],
        "sum": [str(r.sum) for r in rows],
        "avg": [r.sum / r.count if r.count else None for r in rows],
        "count_double": [as_float(r.count) for r in rows],
        "sum_double": [as_float(r.sum) for r in rows],
        "detected_count": [str(r.detected_count) for r in rows],
        "events": [r.events for r in rows],
        "dropped_events": [r.dropped for r in rows],
        "corrupt_records": [r.corrupt for r in rows],
        "elements": [r.elements for r in rows],
    }
    if not summarised:
        for name in SUMMARY_COLUMNS:
            del cols[name]
    if exact:
        cols["exact_count"] = [str(r.exact_count) for r in rows]
        cols["exact_sum"] = [str(r.exact_sum) for r in rows]
    if extrema:
        cols["min"] = [r.min for r in rows]
        cols["max"] = [r.max for r in rows]
    if approx:
        # NULL for the exact queries of a query set that has approximate ones
        cols["count_by_missing"] = [None if r.count_by_missing is None else [str(c) for c in r.count_by_missing]
                                    for r in rows]
    return cols


ELEMENT_LIST = pa.list_(ELEMENT)
ARROW_TYPES = {  # explicit: a column of only NULLs (avg with no matches) must not become type null
    "evaluated_at": pa.int64(), "count": pa.string(), "sum": pa.string(), "avg": pa.float64(),
    "count_double": pa.float64(), "sum_double": pa.float64(), "detected_count": pa.string(),
    "events": pa.int64(), "dropped_events": pa.int64(), "corrupt_records": pa.int64(), "elements": ELEMENT_LIST, "exact_count": pa.string(), "exact_sum": pa.string(),
    "min": pa.int64(), "max": pa.int64(),
    "count_by_missing": pa.list_(pa.string()),
}
