"""Inputs at the edges of the kernel's ranges: huge automata, timestamps near ±2^63, counts
past 10^308. Each gets an exact answer or a clear `suse` error."""
from __future__ import annotations

import pytest

import suse
from suse import _core


def test_an_automaton_too_large_for_memory_is_refused_before_allocation():
    q = suse.Query("a{900}b", window=10)  # 902 states: a summary of 1,000 needs ~50 GiB
    with pytest.raises(suse.LimitError, match=r"902 states.*memory_limit"):
        suse.Summary(q, size=1000)
    assert _core.summary_memory(q._dfa, 1000) > suse.api.DEFAULT_MEMORY_LIMIT
    # The same query fits a small summary, and a raised limit admits the large one.
    suse.Summary(q, size=4)
    suse.Summary(q, size=1000, memory_limit=2**40)
    with pytest.raises(suse.InputError, match="memory_limit"):
        suse.Summary(q, size=4, memory_limit=0)


def test_exact_engine_has_a_limit_too():
    q = suse.Query("a{900}b", window=10)
    with pytest.raises(suse.LimitError):
        suse.Exact(q, memory_limit=10_000)
    assert suse.exact(q, [("a", 1), ("b", 2)]).count == 0


@pytest.mark.parametrize("policy", ["any", "next"])
def test_timestamps_at_the_ends_of_int64(policy):
    lo, hi = -(2**63), 2**63 - 1
    q = suse.Query("AB", window=2**63 - 1, policy=policy)
    events = [("A", lo, 1), ("A", lo + 1, 1), ("B", 0, 1), ("A", hi - 1, 1), ("B", hi, 1)]
    r = suse.exact(q, events)
    # Pairs (A, B) at most 2^63 - 1 apart: A(lo+1)B(0), A(hi-1)B(hi); A(lo) B(0) is 2^63 apart.
    assert r.count == 2
    for strategy in ("suse", "present", "fifo", "random"):
        s = suse.Summary(q, size=3, strategy=strategy, seed=1)
        s.extend(events=events)
        assert s.result().count >= 0


def _present_reference(n_a: int, n_b: int, size: int) -> tuple[int, list[str]]:
    """`present` selection on a^n_a b^n_b for `a+b` in exact arithmetic (one window).

    An `a` is in 2^(a's before b, minus 1) matches with each later `b`; a `b` in 2^(a's
    before it) - 1. Evict the first cheapest element when the new one forms more."""
    kept: list[str] = []
    evictions = 0
    for ch in "a" * n_a + "b" * n_b:
        if len(kept) < size:
            kept.append(ch)
            continue
        def worth(i: int) -> int:
            if kept[i] == "b":
                return 2 ** kept[:i].count("a") - 1
            return sum(2 ** (kept[:j].count("a") - 1) for j in range(i + 1, len(kept)) if kept[j] == "b")
        values = [worth(i) for i in range(len(kept))]
        cand = 2 ** kept.count("a") - 1 if ch == "b" else 0
        low = min(values)
        if cand > low:
            evictions += 1
            kept.pop(values.index(low))
            kept.append(ch)
    return evictions, sorted(kept)


@pytest.mark.parametrize("n_a,size", [(1030, 1031), (1200, 1201)])
def test_selection_decides_exactly_past_1e308(n_a, size):
    q = suse.Query("a+b", window=10**9)
    s = suse.Summary(q, size=size, strategy="present")
    s.extend("a" * n_a + "b" * 20, list(range(n_a + 20)))
    evictions, kept = _present_reference(n_a, 20, size)
    assert (s._engine.evictions, sorted(c for c, _, _ in s.elements())) == (evictions, kept)
    assert evictions >= 1  # the reference really has to rank numbers past 2^1029
    assert s.result().count.bit_length() > 1024
