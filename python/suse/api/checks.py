"""The checks every entry point shares: integers, choices, memory limits, probabilities, and the
kernel's own lists of aggregates, policies and strategies."""
from __future__ import annotations

import math
import numbers
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from suse import _core
from suse.errors import InputError

# The kernel owns these names; the Python layer only validates against them. MIN and MAX run
# beside the counters (their summaries rank elements by match counts, as COUNT does).
EXTREMA = ("min", "max")
AGGREGATES = tuple(_core.AGGREGATES) + EXTREMA
POLICIES = tuple(_core.POLICIES)
STRATEGIES = tuple(_core.STRATEGIES)
#: Default memory budget of one engine (bytes); see `memory_limit=` and docs/ENGINE.md.
DEFAULT_MEMORY_LIMIT = _core.DEFAULT_MEMORY_LIMIT
INT64_MAX = 2**63 - 1


def show(value: Any) -> str:
    """A value as the user would write it: numpy scalars print as plain Python numbers."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def check_int(name: str, value: Any, minimum: int = 0, maximum: int = INT64_MAX) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer, got {show(value)}")
    value = int(value)
    if value < minimum:
        raise InputError(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise InputError(f"{name} is too large: {value} (the largest allowed is {maximum})")
    return value


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InputError(f"{name} must be one of {', '.join(choices)}; got {show(value)}")
    return value


def check_memory_limit(memory_limit: Optional[int]) -> Optional[int]:
    if memory_limit is None:
        return None
    return check_int("memory_limit", memory_limit, minimum=1, maximum=2**64 - 1)


def check_probabilities(probabilities: Optional[Mapping[str, Any]], alphabet: Optional[str]) -> Optional[dict]:
    """Validate alphabet probabilities: the one check behind `Summary`, `suse eval
    --probabilities` and the Spark jobs.

    Every key is one character of the query (`alphabet`; None checks only the numbers), every
    character of the query has a probability, each is a finite number >= 0, and they sum to 1
    within 1e-6. Returns them in alphabet order, rescaled to sum exactly to 1."""
    if probabilities is None:
        return None
    if not isinstance(probabilities, Mapping):
        raise InputError("probabilities must be a mapping from character to probability, "
                         f"got {type(probabilities).__name__}")
    where = "" if alphabet is None else f" ({alphabet})"
    clean: dict[str, float] = {}
    for c, p in probabilities.items():
        if not isinstance(c, str) or len(c) != 1 or (alphabet is not None and c not in alphabet):
            raise InputError(f"probability given for {show(c)}, which is not a character of the query{where}")
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not math.isfinite(p) or p < 0:
            raise InputError(f"probability of {c!r} must be a finite non-negative number, got {show(p)}")
        clean[c] = float(p)
    if alphabet is not None:
        missing = [c for c in alphabet if c not in clean]
        if missing:
            raise InputError(f"no probability for {', '.join(map(repr, missing))}: give one for every "
                             f"character of the query ({alphabet}), 0 for a character that never occurs")
        clean = {c: clean[c] for c in alphabet}
    total = math.fsum(clean.values())
    if not math.isclose(total, 1.0, rel_tol=0, abs_tol=1e-6):
        raise InputError(f"probabilities must sum to 1 (within 1e-6), they sum to {total:.9g}")
    return {c: p / total for c, p in clean.items()}
