"""Feeding a batch into a native engine: in order (late events reported or dropped) or through
the kernel's out-of-order layer, and retraction."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from suse.api.checks import check_int, show
from suse.api.disorder import Reorder, late_error, late_mask
from suse.api.events import chars_to_bytes, eval_times
from suse.errors import InputError, LateEventError


def extend_in_order(engine: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], evaluate_at: Any,
                     late: str, *extra: Any) -> tuple[list, Optional[np.ndarray], int]:
    """One batch straight into a native engine (lateness 0): events older than its last one
    reported or dropped, evaluation times checked against it. Returns the evaluation rows, their
    input order (as `eval_times`) and the number of late events dropped."""
    last = engine.last_timestamp
    raw, ts, vals, n_late = drop_late(raw, ts, vals, last, late)
    times, order = eval_times(evaluate_at, last)
    return engine.extend(raw, ts, vals, times, *extra), order, n_late


def ooo_extend(ooo: Any, raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], times: Optional[np.ndarray],
                late: str) -> list:
    """One batch into the kernel's out-of-order layer (`_core.OooExactEngine`): the late events
    are reported or dropped here, with the messages of disorder.py. Returns the evaluation rows
    followed by the number of late events dropped."""
    top_before, horizon = ooo.max_timestamp, ooo.horizon
    if times is not None and len(times) and horizon is not None and int(times[0]) < horizon:
        raise InputError(f"evaluation time {int(times[0])} is earlier than the horizon {horizon} (largest "
                         f"timestamp seen {top_before} - lateness {ooo.lateness}): the events "
                         "before it are final and the result at that time is no longer kept")
    lateness = ooo.lateness
    is_late, top = late_mask(ts, top_before, lateness)
    n_late = 0
    if is_late.any():
        if late != "count":
            raise late_error(ts, is_late, top, top_before, lateness)
        keep = ~is_late
        n_late = int(is_late.sum())
        raw = np.frombuffer(raw, np.uint8)[keep].tobytes()
        ts, vals = ts[keep], None if vals is None else vals[keep]
    rows = ooo.extend(raw, ts, vals, times)
    rows.append(n_late)
    return rows


def ooo_retract(ooo: Any, char: Any, timestamp: Any, value: Any) -> None:
    if not isinstance(char, str) or len(char) != 1:
        raise InputError(f"character {show(char)} is not a single character")
    t = check_int("timestamp", timestamp, minimum=-(2**63))
    v = check_int("value", value)
    byte = chars_to_bytes(char)[0]
    done = ooo.retract(byte, t, v)
    if done == "final":
        h = ooo.horizon
        where = "no event has been seen yet" if h is None else (
            f"the horizon is {h} (largest timestamp seen {ooo.max_timestamp} - lateness {ooo.lateness}) and events at "
            "or before it are final")
        raise LateEventError(f"cannot retract the event at timestamp {t}: {where}")
    if done == "missing":
        raise InputError(f"cannot retract ({chr(byte)!r}, {t}, {v}): no such event was seen")


def check_order(ts: np.ndarray, last: Optional[int]) -> None:
    """Timestamps must not decrease, also across batches (`last`: the latest already processed);
    the error carries the event index (query sets, which take events in order)."""
    is_late, top = late_mask(ts, last, 0)
    if is_late.any():
        raise late_error(ts, is_late, top, last, 0)


def drop_late(raw: bytes, ts: np.ndarray, vals: Optional[np.ndarray], last: Optional[int], late: str):
    """In-order processing (lateness 0): the batch without its late events, and their number."""
    is_late, top = late_mask(ts, last, 0)
    if not is_late.any():
        return raw, ts, vals, 0
    if late != "count":
        raise late_error(ts, is_late, top, last, 0)
    keep = ~is_late
    raw = np.frombuffer(raw, np.uint8)[keep].tobytes()
    return raw, ts[keep], None if vals is None else vals[keep], int(is_late.sum())


def retract(reorder: Optional[Reorder], char: Any, timestamp: Any, value: Any) -> None:
    if not isinstance(char, str) or len(char) != 1:
        raise InputError(f"character {show(char)} is not a single character")
    t = check_int("timestamp", timestamp, minimum=-(2**63))
    v = check_int("value", value)
    if reorder is None:
        raise LateEventError(f"cannot retract the event at timestamp {t}: with lateness=0 every event is final; "
                             "create the engine with lateness= to take events back")
    reorder.retract(chars_to_bytes(char)[0], t, v)
