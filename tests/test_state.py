"""Saved summaries cannot hurt the process that loads them.

Every corruption of a real saved state (flipped, truncated, extended, inserted bytes) either
loads to an equal summary or is refused with `suse.StateError`: never a crash, a panic, a
hang or a huge allocation. A longer run: `SUSE_FUZZ_EXAMPLES=200000 pytest tests/test_state.py`.
"""
from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse

EXAMPLES = int(os.environ.get("SUSE_FUZZ_EXAMPLES", "2000"))


def _states() -> list[bytes]:
    out = []
    for policy in ("any", "next"):
        for strategy in ("suse", "random"):
            q = suse.Query("A(B*C)*D", window=8, aggregate="sum", policy=policy)
            s = suse.Summary(q, size=5, strategy=strategy, seed=3, time_to_live=20)
            s.extend("ABBCADBCDXA", list(range(11)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
            out.append(s.to_bytes())
    big = suse.Summary(suse.Query("a+b", window=10**6), size=200, strategy="present")
    big.extend("a" * 199 + "b", list(range(200)))  # counts past 2^198: big-integer tier
    out.append(big.to_bytes())
    return out


STATES = _states()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(STATES) - 1), kind=st.sampled_from(["flip", "truncate", "extend", "insert", "splice"]),
       pos=st.integers(0, 10**6), data=st.binary(min_size=1, max_size=16))
def test_corrupt_state_is_refused_or_equal(which, kind, pos, data):
    good = STATES[which]
    i = pos % len(good)
    if kind == "flip":
        bad = good[:i] + bytes([good[i] ^ (data[0] or 1)]) + good[i + 1:]
    elif kind == "truncate":
        bad = good[:i]
    elif kind == "extend":
        bad = good + data
    elif kind == "insert":
        bad = good[:i] + data + good[i:]
    else:
        bad = good[:i] + data + good[i + len(data):]
    try:
        loaded = suse.Summary.from_bytes(bad)
    except suse.StateError:
        return
    assert loaded.to_bytes() == good


def test_untouched_states_round_trip():
    for good in STATES:
        s = suse.Summary.from_bytes(good)
        assert s.to_bytes() == good
        assert pickle.loads(pickle.dumps(s)).to_bytes() == good


def _with_header(summary: suse.Summary, **changes) -> bytes:
    header = summary._header()
    header.update(changes)
    return summary._engine.to_bytes(json.dumps(header))


@pytest.mark.parametrize("change", [
    {"size": -1}, {"size": 6}, {"strategy": "lifo"}, {"strategy": "fifo"}, {"seed": 4}, {"time_to_live": None},
    {"query": {"regex": "A(B*C)*DD", "window": 8, "aggregate": "sum", "policy": "any"}},
    {"query": {"regex": "A(B*C)*D", "window": 9, "aggregate": "sum", "policy": "any"}},
    {"query": {"regex": "A(B*C)*D", "window": 8, "aggregate": "count", "policy": "any"}},
    {"query": {"regex": "((", "window": 8, "aggregate": "sum", "policy": "any"}},
    {"query": "nonsense"},
])
def test_a_description_that_does_not_match_is_refused(change):
    q = suse.Query("A(B*C)*D", window=8, aggregate="sum")
    s = suse.Summary(q, size=5, seed=3, time_to_live=20)
    s.extend("ABCD", [1, 2, 3, 4])
    with pytest.raises(suse.StateError):
        suse.Summary.from_bytes(_with_header(s, **change))


def test_state_of_the_previous_release_is_refused_clearly():
    old = (Path(__file__).parent / "data" / "summary_format1.bin").read_bytes()
    with pytest.raises(suse.StateError, match="suse 0.1"):
        suse.Summary.from_bytes(old)


def test_memory_limit_applies_to_loaded_states():
    with pytest.raises(suse.LimitError, match="memory_limit"):
        suse.Summary.from_bytes(STATES[0], memory_limit=100)


@pytest.mark.parametrize("placement", ["buffer", "insert"])
def test_states_saved_by_the_python_reorder_buffer_still_load(placement):
    """Summaries with lateness saved before the kernel's out-of-order layer (commit 8ddddf1,
    pending events in the header) load and are the summary fed the same arrivals now: the
    same saved bytes, and they go on alike."""
    old = suse.Summary.from_bytes((Path(__file__).parent / "data" / f"summary_lateness_{placement}_8ddddf1.bin").read_bytes())
    q = suse.Query("A(B|C)*D", window=12)
    now = suse.Summary(q, 4, seed=2, lateness=3, placement=placement)
    now.extend(events=[("A", 1), ("B", 5), ("A", 3), ("D", 8), ("C", 7), ("D", 6), ("A", 9), ("B", 11), ("A", 2)],
               late="count")
    if placement == "buffer":
        now.retract("B", 11)
        assert old.pending == now.pending > 0
    assert old.to_bytes() == now.to_bytes() and old.late == now.late == 1
    more = [("C", 10), ("D", 13), ("B", 12), ("D", 16)]
    assert old.extend(events=more, evaluate_at=[12, 14]) == now.extend(events=more, evaluate_at=[12, 14])
    assert old.result() == now.result() and old.elements() == now.elements()
