"""What a streaming partition counts with, kept in the state's first column: a bounded summary
(``Summary.to_bytes``, the default), a summary with conditions or a negation at the end of the
pattern (a pickled ``WhereSummary``: it has no ``to_bytes``) or, with ``engine="exact"``, the
exact engine (a pickled ``suse.Exact``; with ``where=``, its conditions engine). A pickle is
tagged with its kind.

The conditions read the events' attributes, so a pickled state also keeps the attribute values
of the partition's pending events (a row per buffered event, in the buffer's order;
suse.spark.streaming.pending): the buffer itself holds only the numeric columns. Partitions
without conditions have no attributes (an array of zero columns), so every engine shares one
buffer logic. The job's configuration records the engine, so a checkpoint is never read as
the other kind (suse.spark.streaming.aggregate.reconcile)."""
from __future__ import annotations

import pickle
from typing import Any

import numpy as np

import suse
from suse.api.where_summary import WhereSummary
from suse.errors import StateError
from suse.io.formats import Events
from suse.spark.runners.plan import Plan

_EXACT_STATE = "suse exact stream state v1"  # tags: a blob of another kind is refused, not misread
_WHERE_SUMMARY_STATE = "suse where summary stream state v1"


def _pickled(plan: Plan) -> tuple[str, type, str] | None:
    """The tag, class and name of a plan's engine when its state is a pickle (None: a
    summary's ``to_bytes``)."""
    if plan.engine == "exact":
        return _EXACT_STATE, suse.Exact, "an exact engine"
    if plan.counts_with_where_summary:
        return _WHERE_SUMMARY_STATE, WhereSummary, "a summary with where or a negation at the end of the pattern"
    return None


def new_engine(plan: Plan) -> Any:
    """A fresh engine of the plan's kind."""
    return suse.Exact(plan.query()) if plan.engine == "exact" else plan.new_summary()


def no_attributes(plan: Plan, n: int) -> np.ndarray:
    """An empty attribute row per event (a plan without conditions reads no attributes)."""
    return np.empty((n, len(plan.attributes)), dtype=object)


def load(plan: Plan, blob: bytes, pending: int) -> tuple[Any, np.ndarray]:
    """The engine saved in a state's first column and the attributes of its ``pending``
    buffered events."""
    kind = _pickled(plan)
    if kind is None:
        return suse.Summary.from_bytes(blob), no_attributes(plan, pending)
    tag, engine_class, name = kind
    try:
        saved = pickle.loads(blob)
    except Exception as exc:  # noqa: BLE001 - any unreadable blob is the same error
        raise StateError(f"a partition's saved state cannot be read as {name} ({type(exc).__name__}: {exc})") from None
    if not (isinstance(saved, dict) and saved.get("kind") == tag and isinstance(saved.get("engine"), engine_class)):
        raise StateError(f"a partition's saved state is not {name}: was the checkpoint written by another job?")
    attributes = saved.get("attributes")
    if not isinstance(attributes, np.ndarray) or attributes.shape != (pending, len(plan.attributes)):
        raise StateError(f"the pending attributes saved with {name} do not fit its pending events")
    return saved["engine"], attributes


def dump(plan: Plan, engine: Any, attributes: np.ndarray) -> bytes:
    """``engine`` and the pending events' ``attributes`` as the state's first column."""
    kind = _pickled(plan)
    if kind is None:
        return engine.to_bytes()
    return pickle.dumps({"kind": kind[0], "engine": engine, "attributes": attributes}, protocol=pickle.HIGHEST_PROTOCOL)


def feed(plan: Plan, engine: Any, events: np.ndarray, attributes: np.ndarray, evaluate_at: Any = None,
         elements: bool = False) -> list:
    """Buffered events (suse.spark.streaming.pending.PENDING, in order) into the engine; the
    evaluations at ``evaluate_at`` (``elements``: a summary's retained elements with each)."""
    chars = plan.chars(events["rank"])
    # fields of a structured array are strided: make them contiguous
    ts, values = np.ascontiguousarray(events["ts"]), np.ascontiguousarray(events["value"])
    if _pickled(plan) is None:
        return engine.extend(chars, ts, values, evaluate_at=evaluate_at, elements=elements)
    # the attribute values as Spark gave them: the conditions engine reads them as the batch
    # run does (suse.spark.runners.plan.exact_evaluations: NULL and NaN are NULL)
    table = {name: attributes[:, i].tolist() for i, name in enumerate(plan.attributes)}
    columnar = Events(chars.decode("ascii"), ts, values, attributes=table)
    if plan.engine == "exact":
        return engine.extend(columnar, evaluate_at=evaluate_at)
    return engine.extend(columnar, evaluate_at=evaluate_at, elements=elements)
