"""The runner over sorted rows: each partition's events arrive contiguous and in order, however
many there are, and go to the engine in one native call per partition (or per Arrow batch,
through the gathered runner's grouped path), never a Python call per event."""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from suse.spark.events.rows import ATTRIBUTE, CORRUPT, DROPPED
from suse.spark.runners import gathered as by_batch
from suse.spark.runners.gathered import key_runs
from suse.spark.runners.plan import ARROW_TYPES, PartitionPlan, Row, empty_row, evaluate_partition, result_columns

# --- batch: sorted Arrow batches in, result batches out --------------------------------------


def run_sorted(
    plan: PartitionPlan, keys: Sequence[str], batches: Iterator[pa.RecordBatch], ts_col: str, rank_col: str,
    value_col: str | None, grouped: bool = True,
) -> Iterator[pa.RecordBatch]:
    """The body of ``mapInArrow`` over one Spark partition sorted by (keys, ts, rank, tie).

    A partition key's events are contiguous but may span Arrow batches, so pieces are
    collected until the key changes; then the partition is evaluated as a whole. Plans with
    the plain output take the grouped path (suse.spark.runners.gathered: one native call per batch)
    unless ``grouped`` is False (tests and benchmarks compare the two)."""
    if grouped and by_batch.serves(plan):
        yield from by_batch.run_grouped(plan, keys, batches, ts_col, rank_col, value_col)
        return
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
    # the conditions' attribute columns (where): per column its Arrow pieces, kept beside the pieces
    attribute_names = [ATTRIBUTE.format(i) for i in range(len(getattr(plan, "attributes", ())))]
    attributes: list[list[pa.Array]] = [[] for _ in attribute_names]
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
            rows = evaluate_partition(plan, current or (), plan.chars(ranks), ts, values,
                                      [pa.concat_arrays(column) for column in attributes])
        if not rows and any(counted):
            rows = plan.empty_rows(*counted) if multi else [empty_row(plan, *counted)]
        for row in rows:
            out_keys.append(current or ())
            out_rows.append(row._replace(dropped=counted[0], corrupt=counted[1]))
        pieces.clear()
        for column in attributes:
            column.clear()
        counted[:] = [0, 0]

    def emit() -> pa.RecordBatch:
        cols = [pa.array([k[i] for k in out_keys], type=key_types[i]) for i in range(len(keys))]
        data = result_columns(out_rows, plan.exact, getattr(plan, "extrema", False), getattr(plan, "max_missing", 0) > 0,
                              getattr(plan, "summarised", True))
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
        starts, stops = key_runs(batch, keys)
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
            for column, name in zip(attributes, attribute_names):
                column.append(batch.column(name).slice(start, stop - start).filter(pa.array(ok)))
        if len(out_rows) >= 4096:
            yield emit()
    flush()
    if out_rows:
        yield emit()
