"""The vectorised split of a sorted Arrow batch into runs of equal partition keys must give
the same runs as grouping with pandas (NULL keys included), for any key types but floats,
which keep the pandas path."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

from suse.spark.runners.gathered import key_runs as _runs  # noqa: E402


def pandas_runs(batch, keys):
    frame = batch.select(keys).to_pandas()
    ids = frame.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    edges = np.concatenate([[0], np.flatnonzero(np.diff(ids)) + 1, [batch.num_rows]])
    return edges[:-1].tolist(), edges[1:].tolist()


@pytest.mark.parametrize("seed", range(20))
def test_runs_equal_a_pandas_grouping(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    a = sorted(rng.choice([None, "x", "y", "zz"], n).tolist(), key=lambda v: (v is not None, v or ""))
    b = rng.choice([None, 1, 2], n).tolist()
    rows = sorted(zip(a, b), key=lambda r: (r[0] is not None, r[0] or "", r[1] is not None, r[1] or 0))
    batch = pa.RecordBatch.from_arrays([pa.array([r[0] for r in rows], pa.string()),
                                        pa.array([r[1] for r in rows], pa.int64())], names=["a", "b"])
    for keys in (["a"], ["a", "b"]):
        starts, stops = _runs(batch, keys)
        assert (starts.tolist(), stops.tolist()) == pandas_runs(batch, keys)


def test_float_keys_in_spark_order_keep_nan_together():
    # Spark sorts NULL first and NaN last
    batch = pa.RecordBatch.from_arrays([pa.array([None, None, 1.0, float("nan"), float("nan")])], names=["f"])
    starts, stops = _runs(batch, ["f"])
    assert (starts.tolist(), stops.tolist()) == ([0, 2, 3], [2, 3, 5]) == pandas_runs(batch, ["f"])
