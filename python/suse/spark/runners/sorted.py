"""The engine over one partition's sorted events: one native ``extend`` call per partition
(evaluations and the retained elements at each come back from that call), never a Python call
per event. Shared by the batch job (inside
``mapInArrow``), the streaming state function and the benchmark's direct run."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import suse
from suse.spark.events.rows import CORRUPT, DROPPED
from suse.spark.events.triggers import Trigger


@dataclass(frozen=True)
class Plan:
    """Everything an executor needs to run one partition; small and picklable."""

    regex: str
    window: int
    aggregate: str = "count"
    policy: str = "any"
    size: int = 500
    strategy: str = "suse"
    probabilities: tuple[tuple[str, float], ...] | None = None
    seed: int = 0
    trigger: Trigger = field(default_factory=lambda: Trigger("end"))
    exact: bool = False
    order: str = ""  # order[rank] is an event's character (predicate order)
    of: str | None = None  # letters whose values SUM/AVG/MIN/MAX aggregate (None: all)
    max_missing: int = 0  # approximate matching: adds the count_by_missing column when > 0

    def query(self) -> suse.Query:
        return _query(self.regex, self.window, self.aggregate, self.policy, self.of, self.max_missing)

    @property
    def extrema(self) -> bool:
        """Whether the output carries ``min``/``max`` columns."""
        return self.aggregate in suse.api.EXTREMA

    def new_summary(self) -> suse.Summary:
        probs = None if self.probabilities is None else dict(self.probabilities)
        return suse.Summary(self.query(), self.size, self.strategy, probs, seed=self.seed)

    def chars(self, ranks: np.ndarray) -> bytes:
        """Ranks -> the engine's one-byte-per-event characters, vectorised."""
        return np.frombuffer(self.order.encode("ascii"), dtype=np.uint8)[ranks].tobytes()


@functools.lru_cache(maxsize=16)
def _query(regex: str, window: int, aggregate: str, policy: str, of: str | None = None,
           max_missing: int = 0) -> suse.Query:
    return suse.Query(regex, window, aggregate=aggregate, policy=policy, of=of, max_missing=max_missing)


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
    plan: Plan, key: Sequence[Any], chars: bytes, ts: np.ndarray, values: np.ndarray | None
) -> list[Row]:
    """Rows for every evaluation timestamp of one partition whose events are sorted."""
    times = plan.trigger.times(ts, key)
    if len(times) == 0:
        return []
    exact = None
    if plan.exact:
        exact = suse.exact(plan.query(), chars=chars, timestamps=ts, values=values, evaluate_at=times).evaluations
    summary = plan.new_summary()
    # Spark sorted the events and the trigger gives sorted distinct times, so the checks and
    # conversions of Summary.extend are skipped: one native call, its rows read as they are.
    evaluations = summary._engine.extend(chars, ts, values, np.asarray(times, dtype=np.int64), True)
    counts = np.searchsorted(ts, times, side="right").tolist()
    pairs = [(None, None)] * len(evaluations) if exact is None else [(ex.count, ex.sum) for ex in exact]
    return [Row(ev.timestamp, ev.count, ev.sum, ev.detected_count, cut, ev.elements, *ex,
                min=ev.min, max=ev.max, count_by_missing=ev.count_by_missing)
            for ev, cut, ex in zip(evaluations, counts, pairs)]


# --- output columns ------------------------------------------------------------------------

ELEMENT = pa.struct([("char", pa.string()), ("timestamp", pa.int64()), ("value", pa.int64())])
RESULT_DDL = (
    "evaluated_at long, count string, sum string, avg double, count_double double, "
    "sum_double double, detected_count string, events long, dropped_events long, corrupt_records long, "
    "elements array<struct<char:string,timestamp:long,value:long>>"
)
EXACT_DDL = "exact_count string, exact_sum string"
EXTREMA_DDL = "min long, max long"  # after EXACT_DDL, for aggregate "min"/"max"
APPROX_DDL = "count_by_missing array<string>"  # only when max_missing > 0, after EXTREMA_DDL


def as_float(n: int) -> float:
    try:
        return float(n)
    except OverflowError:  # beyond 1.8e308: the string column still holds the exact value
        return math.inf


def result_columns(rows: Sequence[Row], exact: bool, extrema: bool = False, approx: bool = False) -> dict[str, list]:
    """Python column lists in RESULT_DDL (+ EXACT_DDL) order. Counts and sums are exact
    decimal strings because they outgrow every numeric Spark type; ``*_double`` copies are
    for sorting and plotting."""
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


# --- batch: sorted Arrow batches in, result batches out --------------------------------------


def run_sorted(
    plan: Plan, keys: Sequence[str], batches: Iterator[pa.RecordBatch], ts_col: str, rank_col: str,
    value_col: str | None, grouped: bool = True,
) -> Iterator[pa.RecordBatch]:
    """The body of ``mapInArrow`` over one Spark partition sorted by (keys, ts, rank, tie).

    A partition key's events are contiguous but may span Arrow batches, so pieces are
    collected until the key changes; then the partition is evaluated as a whole. Plans with
    the plain output take the grouped path (suse.spark.runners.gathered: one native call per batch)
    unless ``grouped`` is False (tests and benchmarks compare the two)."""
    from suse.spark.runners import gathered as by_batch

    if grouped and by_batch.serves(plan):
        yield from by_batch.run_grouped(plan, keys, batches, ts_col, rank_col, value_col)
        return
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
    counted = [0, 0]  # the current partition's dropped and corrupt rows
    current: tuple | None = None
    out_keys: list[tuple] = []
    out_rows: list[Row] = []
    key_types = [pa.null()] * len(keys)

    def flush() -> None:
        if not pieces:
            return
        ts, ranks, values = (
            pieces[0] if len(pieces) == 1
            else [None if p[0] is None else np.concatenate(p) for p in zip(*pieces)]
        )
        multi = getattr(plan, "multi", False)  # a query set: every query in this one pass
        if not len(ts):
            rows = []
        elif multi:
            rows = plan.evaluate(current or (), ranks, ts, values)
        else:
            rows = evaluate_partition(plan, current or (), plan.chars(ranks), ts, values)
        if not rows and any(counted):
            rows = plan.empty_rows(*counted) if multi else [empty_row(plan, *counted)]
        for row in rows:
            out_keys.append(current or ())
            out_rows.append(row._replace(dropped=counted[0], corrupt=counted[1]))
        pieces.clear()
        counted[:] = [0, 0]

    def emit() -> pa.RecordBatch:
        cols = [pa.array([k[i] for k in out_keys], type=key_types[i]) for i in range(len(keys))]
        data = result_columns(out_rows, plan.exact, getattr(plan, "extrema", False), getattr(plan, "max_missing", 0) > 0)
        if getattr(plan, "multi", False):
            data = {"query": [r.query for r in out_rows], **data}
        cols += [pa.array(v, type=ARROW_TYPES.get(name, pa.string())) for name, v in data.items()]
        out_keys.clear()
        out_rows.clear()
        return pa.RecordBatch.from_arrays(cols, names=[*keys, *data])

    for batch in batches:
        if batch.num_rows == 0:
            continue
        key_types = [batch.schema.field(k).type for k in keys]
        # Rows with a negative rank (NULL timestamp, corrupt record) are counted, not fed.
        ranks = batch.column(rank_col).to_numpy()
        usable = ranks >= 0
        ts = batch.column(ts_col).fill_null(0).to_numpy()
        values = None
        if value_col:
            values = batch.column(value_col).fill_null(-1).to_numpy()  # Spark checked usable rows
        starts, stops = _runs(batch, keys)
        run_keys = zip(*[batch.column(k).take(starts).to_pylist() for k in keys]) if keys else [()] * len(starts)
        for start, stop, key in zip(starts.tolist(), stops.tolist(), run_keys):
            if key != current:
                flush()
                current = key
            ok = usable[start:stop]
            r = ranks[start:stop]
            counted[0] += int((r == DROPPED).sum())
            counted[1] += int((r == CORRUPT).sum())
            pieces.append((ts[start:stop][ok], r[ok], None if values is None else values[start:stop][ok]))
        if len(out_rows) >= 4096:
            yield emit()
    flush()
    if out_rows:
        yield emit()


def _runs(batch: pa.RecordBatch, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Start and stop of each stretch of equal keys in a batch sorted by the keys."""
    n = batch.num_rows
    if not keys:
        return np.array([0]), np.array([n])
    if n > 1 and not any(pa.types.is_floating(batch.schema.field(k).type) for k in keys):
        # Vectorised: a row starts a run where any key differs from the row before (a NULL
        # equals a NULL, as in Spark's grouping). Floats (NaN) take the pandas path below.
        changed = np.zeros(n - 1, dtype=bool)
        for k in keys:
            col = batch.column(k)
            a, b = col.slice(1), col.slice(0, n - 1)
            differ = pc.fill_null(pc.not_equal(a, b), False)
            differ = pc.or_(differ, pc.xor(pc.is_null(a), pc.is_null(b)))
            changed |= differ.to_numpy(zero_copy_only=False)
        edges = np.concatenate([[0], np.flatnonzero(changed) + 1, [n]])
        return edges[:-1], edges[1:]
    frame = batch.select(list(keys)).to_pandas()
    ids = frame.groupby(list(keys), sort=False, dropna=False).ngroup().to_numpy()
    edges = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1, [n]])
    return edges[:-1], edges[1:]


ELEMENT_LIST = pa.list_(ELEMENT)
ARROW_TYPES = {  # explicit: a column of only NULLs (avg with no matches) must not become type null
    "evaluated_at": pa.int64(), "count": pa.string(), "sum": pa.string(), "avg": pa.float64(),
    "count_double": pa.float64(), "sum_double": pa.float64(), "detected_count": pa.string(),
    "events": pa.int64(), "dropped_events": pa.int64(), "corrupt_records": pa.int64(), "elements": ELEMENT_LIST, "exact_count": pa.string(), "exact_sum": pa.string(),
    "min": pa.int64(), "max": pa.int64(),
    "count_by_missing": pa.list_(pa.string()),
}
