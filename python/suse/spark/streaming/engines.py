"""What a streaming partition counts with, kept in the state's first column: a bounded summary
(``Summary.to_bytes``, the default) or, with ``engine="exact"``, the exact engine (a pickled
``suse.Exact``; with ``where=``, its conditions engine).

The exact engine's conditions read the events' attributes, so its state column also keeps the
attribute values of the partition's pending events (a row per buffered event, in the buffer's
order; suse.spark.streaming.pending): the buffer itself holds only the numeric columns. A
summary's partitions have no attributes (an array of zero columns), so both engines share one
buffer logic. The job's configuration records the engine, so a checkpoint is never read as
the other kind (suse.spark.streaming.aggregate.reconcile)."""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np

import suse
from suse.errors import StateError
from suse.io.formats import Events
from suse.spark.runners.plan import Plan

_EXACT_STATE = "suse exact stream state v1"  # a tag: a blob of another kind is refused, not misread


def new_engine(plan: Plan) -> Any:
    """A fresh engine of the plan's kind."""
    return suse.Exact(plan.query()) if plan.engine == "exact" else plan.new_summary()


def no_attributes(plan: Plan, n: int) -> np.ndarray:
    """An empty attribute row per event (a summary's plan reads no attributes)."""
    return np.empty((n, len(plan.attributes)), dtype=object)


def load(plan: Plan, blob: bytes, pending: int) -> tuple[Any, np.ndarray]:
    """The engine saved in a state's first column and the attributes of its ``pending``
    buffered events."""
    if plan.engine != "exact":
        return suse.Summary.from_bytes(blob), no_attributes(plan, pending)
    try:
        saved = pickle.loads(blob)
    except Exception as exc:  # noqa: BLE001 - any unreadable blob is the same error
        raise StateError(f"a saved exact engine cannot be read ({type(exc).__name__}: {exc})") from None
    if not (isinstance(saved, dict) and saved.get("kind") == _EXACT_STATE and isinstance(saved.get("engine"), suse.Exact)):
        raise StateError("a partition's saved state is not an exact engine's: was the checkpoint written by another job?")
    attributes = saved["attributes"]
    if not isinstance(attributes, np.ndarray) or attributes.shape != (pending, len(plan.attributes)):
        raise StateError("a saved exact engine's pending attributes do not fit its pending events")
    return saved["engine"], attributes


def dump(plan: Plan, engine: Any, attributes: np.ndarray) -> bytes:
    """``engine`` and the pending events' ``attributes`` as the state's first column."""
    if plan.engine != "exact":
        return engine.to_bytes()
    return pickle.dumps({"kind": _EXACT_STATE, "engine": engine, "attributes": attributes},
                        protocol=pickle.HIGHEST_PROTOCOL)


def feed(plan: Plan, engine: Any, events: np.ndarray, attributes: np.ndarray, evaluate_at: Any = None,
         elements: bool = False) -> list:
    """Buffered events (suse.spark.streaming.pending.PENDING, in order) into the engine; the
    evaluations at ``evaluate_at`` (``elements``: a summary's retained elements with each)."""
    chars = plan.chars(events["rank"])
    # fields of a structured array are strided: make them contiguous
    ts, values = np.ascontiguousarray(events["ts"]), np.ascontiguousarray(events["value"])
    if plan.engine != "exact":
        return engine.extend(chars, ts, values, evaluate_at=evaluate_at, elements=elements)
    # the attribute values as Spark gave them: the conditions engine reads them as the batch
    # run does (suse.spark.runners.plan.exact_evaluations: NULL and NaN are NULL)
    table = {name: attributes[:, i].tolist() for i, name in enumerate(plan.attributes)}
    return engine.extend(Events(chars.decode("ascii"), ts, values, attributes=table), evaluate_at=evaluate_at)
