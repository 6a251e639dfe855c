"""Issue 26, item 2: crafted saved states. A checksum is no defence against an edited file, so
these tests edit payload bytes and recompute it: every such state is refused with
`suse.StateError` (naming the field; `suse.LimitError` for a size past the memory limit) or loads to a summary whose counters equal a recomputation
and that goes on working. Never a panic (`suse.InternalError`).
A longer run: `SUSE_FUZZ_EXAMPLES=100000 pytest tests/test_state_crafted.py`.
"""
from __future__ import annotations

import os
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse

EXAMPLES = int(os.environ.get("SUSE_FUZZ_EXAMPLES", "1500"))
HEADER = 24  # magic (8) | format (4) | payload length (8) | CRC-32 (4)


def stream(chars: str, n: int, seed: int) -> list[tuple[str, int, int]]:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.integers(0, 3, n))
    return [(str(rng.choice(list(chars))), int(t), int(rng.integers(0, 50))) for t in ts]


# (query, summary options, alphabet of the stream): negation, contiguity, next, approximate,
# min/max, lateness; each evicts (the saved state holds estimates) but one, which does not.
CASES = {
    "negation": (suse.Query("A !X B+ C", 12, "sum"), {"size": 6}, "ABCXY"),
    "contiguous": (suse.Query("AB*C", 6, policy="contiguous"), {"size": 5}, "ABCX"),
    "next": (suse.Query("A(B|C)+D", 10, "sum", policy="next"), {"size": 6, "strategy": "random"}, "ABCDZ"),
    "approximate": (suse.Query("ABC", 8, max_missing=1), {"size": 6}, "ABC"),
    "max": (suse.Query("A !X B", 9, "max", of="B"), {"size": 5, "time_to_live": 15}, "ABX"),
    "lateness": (suse.Query("AB+C", 10, "sum"), {"size": 6, "lateness": 4}, "ABC"),
    "deferred": (suse.Query("A !X B", 20), {"size": 500}, "ABX"),
}


def saved(name: str) -> tuple[suse.Summary, bytes]:
    query, options, chars = CASES[name]
    s = suse.Summary(query, seed=7, **options)
    events = stream(chars, 60, seed=len(name))
    if options.get("lateness"):  # some disorder, within the lateness
        events = sorted(events, key=lambda e: e[1] + (e[2] % 3))
    s.extend(events)
    return s, s.to_bytes()


STATES = {name: saved(name) for name in CASES}


def with_checksum(payload: bytes, head: bytes) -> bytes:
    return head[:12] + struct.pack("<Q", len(payload)) + struct.pack("<I", zlib.crc32(payload)) + payload


def recount_agrees(s: suse.Summary) -> None:
    """The loaded counters equal a recomputation: by the kernel from the retained elements and
    their gaps, and, where gaps change nothing (skip-till-any/next without negation), by
    `suse.exact` over the elements alone."""
    kept, fresh = s._engine._active_counters()
    assert kept == fresh
    q = s.query
    if not q.negated and q.policy != "contiguous" and not s.pending:
        truth = suse.exact(q, s.elements()) if len(s) else None
        r = s.result()
        assert r.count == (truth.count if truth else 0)
        if q.aggregate == "sum":
            assert r.sum == (truth.sum if truth else 0)


def goes_on(s: suse.Summary) -> None:
    """A loaded summary takes more events, evaluates, and saves again."""
    start = max([t for _, t, _ in s.elements()] + [s._engine.last_timestamp or 0])
    more = [(c, start + i, i) for i, c in enumerate(s.query.alphabet * 3)]
    try:
        s.extend(more, evaluate_at=[start + 4])
    except suse.LateEventError:
        pass  # a loaded horizon may lie past these events; refusing them is right
    s.result()
    suse.Summary.from_bytes(s.to_bytes())


@pytest.mark.parametrize("name", list(CASES))
def test_the_real_states_load_and_recount(name):
    s, data = STATES[name]
    loaded = suse.Summary.from_bytes(data)
    assert loaded.to_bytes() == data
    recount_agrees(loaded)
    goes_on(loaded)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(list(CASES)), edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                                         min_size=1, max_size=3))
def test_edited_payload_with_a_recomputed_checksum(name, edits):
    _, good = STATES[name]
    payload = bytearray(good[HEADER:])
    for pos, byte in edits:
        payload[pos % len(payload)] = byte
    try:
        s = suse.Summary.from_bytes(with_checksum(bytes(payload), good))
    except (suse.StateError, suse.LimitError):  # LimitError: an edited size past the memory limit
        return
    recount_agrees(s)
    goes_on(s)


@pytest.mark.parametrize("regex, edited, field", [
    (b"A !X B", b"A B !X", "a negation at the end"),  # the exact engine's alone
    (b"A !X B", b"A<!X>B", "unreadable description"),
])
def test_an_edited_query_no_summary_counts_is_a_state_error(regex, edited, field):
    _, good = STATES["deferred"]
    payload = good[HEADER:]
    assert payload.count(regex) == 1
    with pytest.raises(suse.StateError, match=field):
        suse.Summary.from_bytes(with_checksum(payload.replace(regex, edited), good))


def element_offset(data: bytes, ev: tuple[str, int, int]) -> int:
    """Where a retained element (sym: u8, t: i64, v: u64, gap: u32) sits in the payload."""
    _, t, v = ev
    needle = struct.pack("<qQ", t, v)
    at = data.find(needle, HEADER)
    assert at > 0
    return at + 16  # its gap follows


@pytest.mark.parametrize("gap, field", [
    (1 << 5, r"field elems\[\d+\]\.gap: gap bit 5 names no negated character \(the query has 1\)"),
    (1, r"field elems\[\d+\]\.gap: a gap with negated characters but without the break bit"),
])
def test_a_gap_bit_of_no_negated_character_is_named(gap, field):
    s, good = STATES["negation"]
    elements = s._engine.elements()
    at = element_offset(good, elements[-1])
    payload = bytearray(good[HEADER:])
    payload[at - HEADER:at - HEADER + 4] = struct.pack("<I", gap)
    with pytest.raises(suse.StateError, match=field):
        suse.Summary.from_bytes(with_checksum(bytes(payload), good))


@pytest.mark.parametrize("change, message", [
    ({"max_ts": 0}, "engine holds events past the horizon|do not lie between the horizon"),
    ({"max_ts": None}, "do not lie between the horizon"),
    ({"max_ts": 1.5}, "is not an integer"),
    ({"late": -1}, "negative lateness or counts"),
    ({"ts_shift": 10**6}, "do not lie between the horizon"),
])
def test_an_edited_reorder_buffer_is_refused(change, message):
    import json
    s, _ = STATES["lateness"]
    header = s._header()
    reorder = header["reorder"]
    assert reorder["ts"], "the case must leave events pending"
    shift = change.pop("ts_shift", 0)
    reorder["ts"] = [t + shift for t in reorder["ts"]]
    reorder.update(change)
    with pytest.raises(suse.StateError, match=message):
        suse.Summary.from_bytes(s._engine.to_bytes(json.dumps(header)))
