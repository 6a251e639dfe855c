"""Issue 26, item 4 (library side): numbers at the ends of their ranges. Date-times of every
datetime64 unit become whole seconds (rounded down) or an `InputError` naming the event whose
seconds leave int64; never a silently wrapped time or a raw OverflowError."""
from __future__ import annotations

import numpy as np
import pytest

import suse

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
LINEAR = {"W": 604800, "D": 86400, "h": 3600, "m": 60, "s": 1}  # seconds per tick
FINE = {"ms": 10**3, "us": 10**6, "ns": 10**9, "ps": 10**12, "fs": 10**15, "as": 10**18}  # ticks per second
Q = suse.Query("AB", window=10**18)


def seconds_of(unit: str, ticks: int) -> int | None:
    """The exact seconds of `ticks` of `unit`, or None when they do not fit int64."""
    if unit in LINEAR:
        s = ticks * LINEAR[unit]
    elif unit in FINE:
        s = ticks // FINE[unit]
    else:  # calendar units: numpy's own calendar, via days, where that cannot overflow
        years = ticks if unit == "Y" else ticks // 12
        if abs(years) > 3 * 10**11:
            return None
        s = int(np.array([ticks], f"datetime64[{unit}]").astype("datetime64[D]").view(np.int64)[0]) * 86400
    return s if INT64_MIN <= s <= INT64_MAX else None


def read(unit: str, ticks: int):
    """The timestamp suse reads for one tick count (A at 0, then B at the date-time)."""
    stamps = np.array([0, ticks], np.int64).view(f"datetime64[{unit}]")  # 0 ticks: the epoch in every unit
    return suse.Summary(Q, size=4, seed=1), stamps


@pytest.mark.parametrize("unit", list(LINEAR) + list(FINE) + ["Y", "M"])
def test_every_datetime64_unit_at_its_extremes(unit):
    edges = {INT64_MAX, INT64_MIN + 1, 1, -1, 0}  # INT64_MIN is NaT
    for per in (LINEAR.get(unit), FINE.get(unit)):
        if per:
            edges |= {INT64_MAX // per, INT64_MAX // per + 1, -(-INT64_MIN // per), -(-INT64_MIN // per) - 1}
    if unit in ("Y", "M"):
        limit = 3 * 10**11 * (12 if unit == "M" else 1)
        edges |= {limit, limit + 1, -limit, -limit - 1, 292_277_026_596, 292_277_026_597}
    for ticks in sorted(t for t in edges if INT64_MIN < t <= INT64_MAX):
        want = seconds_of(unit, ticks)
        s, stamps = read(unit, ticks)
        order = slice(None, None, -1) if ticks < 0 else slice(None)  # the far one first when negative
        if want is None:
            at = 0 if ticks < 0 else 1
            with pytest.raises(suse.InputError, match=rf"event {at}: timestamp .* is outside the 64-bit range of seconds"):
                s.extend(chars="AB", timestamps=stamps[order])
            continue
        s.extend(chars="AB"[order], timestamps=stamps[order])
        assert sorted(t for _, t, _ in s.elements()) == sorted([0, want]), (unit, ticks)


def test_the_year_584554051224_is_refused_not_read_as_1970():
    far = np.array([0, 584_554_051_224 * 365], "datetime64[D]")
    with pytest.raises(suse.InputError, match="event 1: timestamp .* is outside the 64-bit range of seconds since 1970"):
        suse.exact(Q, chars="AB", timestamps=far)
    with pytest.raises(suse.InputError, match="event 0: timestamp"):  # a scalar among Python objects
        suse.exact(Q, [("A", far[1]), ("B", far[1])])


def test_attoseconds_and_multi_tick_units():
    a = np.array([-1, 10**18, 2 * 10**18 - 1], "datetime64[as]")  # floor: -1 as is in second -1
    r = suse.Summary(Q, size=4, seed=1)
    r.extend(chars="AAB", timestamps=a)
    assert [t for _, t, _ in r.elements()] == [-1, 1, 1]
    three = np.array([0, 1, INT64_MAX], np.int64).view("datetime64[3ms]")
    r = suse.Summary(Q, size=4, seed=1)
    r.extend(chars="AAB", timestamps=three)
    assert [t for _, t, _ in r.elements()] == [0, 0, INT64_MAX * 3 // 1000]
    with pytest.raises(suse.InputError, match="event 1: timestamp"):
        suse.exact(Q, chars="AB", timestamps=np.array([0, INT64_MAX // 2], np.int64).view("datetime64[7s]"))


@pytest.mark.parametrize("given", [[2**63], [1, 2**63], [-1, 2**63], (5, 2**64 + 1), np.array([2**63], np.uint64),
                                   [-(2**63) - 1]])
def test_an_integer_past_64_bits_is_named_as_such(given):
    with pytest.raises(suse.InputError, match="outside the 64-bit integer range"):
        suse.exact(Q, chars="A" * len(given), timestamps=[0] * len(given), values=given)
