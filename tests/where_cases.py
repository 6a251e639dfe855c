"""Worked examples of ``where`` conditions (and a negation at the end) with expected counts.

Engines run these once they support ``where``: ``check_counts(count_of)`` calls
``count_of(case)`` for every case and compares with ``case.count``. Every count is also
recomputed by the brute-force oracle in ``tests/test_where_oracle.py``; those marked
``by_hand`` were first worked out by hand (the reasoning is in ``note``).

Events are ``(char, timestamp, attributes)``. ``at`` is an evaluation time (None: the input
is complete, every window has closed). ``REFUSED`` lists conditions that must be refused
with a ``QueryError`` at ``position`` whose message contains ``says``.

suse gives every event one letter, from the data; SQL and SASE give a row its role through
the conditions themselves. So each example below states how its stream carries the letters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional


@dataclass(frozen=True)
class WhereCase:
    name: str
    query: str
    window: int
    where: Mapping[str, str]
    events: tuple
    count: int
    policy: str = "any"
    at: Optional[int] = None
    by_hand: bool = False
    note: str = field(default="", compare=False)


@dataclass(frozen=True)
class Refused:
    name: str
    query: str
    where: Mapping[str, str]
    letter: str
    position: int
    says: str


def _ticks(prices, first: str = "S"):
    """One event per price at times 0, 1, ...: letter D when lower than the tick before,
    U when higher, E when equal; the first tick gets ``first``."""
    events, before = [], None
    for t, price in enumerate(prices):
        letter = first if before is None else "D" if price < before else "U" if price > before else "E"
        events.append((letter, t, {"price": price}))
        before = price
    return tuple(events)


# Flink SQL's "V shape" (MATCH_RECOGNIZE documentation): a run of falling prices, then a
# rise. Flink classifies rows by DEFINE alone; here each tick is lettered by its move (D fell,
# U rose), and the conditions keep Flink's: every D lower than the previous D of the match,
# and the closing U above the last D. Skip-till-any-match counts V shapes among any chosen
# ticks, not only adjacent ones.
_V_TICKS = _ticks([12, 17, 19, 21, 25, 18, 15, 14, 24, 25, 19])
_V_WHERE = {
    "D": "LAST(D.price, 1) IS NULL OR D.price < LAST(D.price, 1)",
    "U": "U.price > D.price",
}

# SASE Figure 1, Query 2: an alert for a contaminated site, then a series of shipments,
# the first leaving the site and each next one leaving where the previous one arrived.
# Letters: A alerts, B shipments. Times in minutes, WITHIN 3 hours.
_SHIPMENTS = (
    ("A", 0, {"type": "contaminated", "site": "X"}),
    ("B", 10, {"from": "X", "to": "Y"}),
    ("B", 20, {"from": "Y", "to": "Z"}),
    ("B", 30, {"from": "X", "to": "Z"}),
    ("B", 40, {"from": "Z", "to": "W"}),
    ("A", 50, {"type": "clean", "site": "Z"}),
    ("B", 60, {"from": "Z", "to": "V"}),
)
_SHIPMENT_WHERE = {
    "A": "A.type = 'contaminated'",
    "B": "(LAST(B.to, 1) IS NULL AND B.from = A.site) OR B.from = LAST(B.to, 1)",
}

# SASE Figure 1, Query 3, with avg() left out (refused below) and SASE's own experimental
# variant a[i].price > a[i-1].price in its place: a rising run of A ticks whose first has a
# volume over 1000, then a B whose volume drops below 80% of the last A's. Letters: A price
# ticks, B the ticks that may close the trend.
_STOCK = (
    ("A", 0, {"price": 10, "volume": 1500}),
    ("A", 1, {"price": 11, "volume": 900}),
    ("A", 2, {"price": 10.5, "volume": 1200}),
    ("A", 3, {"price": 12, "volume": 800}),
    ("B", 4, {"price": 11, "volume": 700}),
    ("B", 5, {"price": 11, "volume": 500}),
)
_STOCK_WHERE = {
    "A": "FIRST(A.volume) > 1000 AND (LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1))",
    "B": "B.volume < 0.8 * A.volume",
}

# FlinkCEP's iterative conditions: each B above the A's price, consecutive B's at most 5
# time units apart (the "maximum gap" FlinkCEP users ask for).
_GAPS = (
    ("A", 0, {"price": 10}),
    ("B", 2, {"price": 12}),
    ("B", 6, {"price": 13}),
    ("B", 9, {"price": 11}),
    ("B", 20, {"price": 15}),
)
_GAP_WHERE = {"B": "B.price > A.price AND (LAST(B.timestamp, 1) IS NULL OR B.timestamp - LAST(B.timestamp, 1) <= 5)"}

# Absence at the end: an A, rising B's above it, and no C until the window closes.
_ABSENCE = (
    ("A", 0, {"p": 1}),
    ("B", 2, {"p": 2}),
    ("B", 4, {"p": 3}),
    ("A", 5, {"p": 1}),
    ("C", 8, {"p": 0}),
    ("B", 12, {"p": 2}),
)

# NULLs in the data: a missing reading is NULL, so a comparison with it fails.
_NULLS = (
    ("A", 0, {"p": 5}),
    ("B", 1, {"p": None}),
    ("B", 2, {"p": 7}),
    ("B", 3, {"p": 7}),
    ("C", 4, {"p": 6}),
)

CASES: tuple[WhereCase, ...] = (
    WhereCase(
        "flink-v-shape", "D+ U", 10, _V_WHERE, _V_TICKS, 14, by_hand=True,
        note="D ticks 18, 15, 14 at t5-7 fall throughout, so each of their 7 non-empty subsets "
        "is a falling run; either U at t8 (24) or t9 (25) closes it: 7 x 2. The D at t10 (19) "
        "has no U after it.",
    ),
    WhereCase(
        "flink-v-shape-window-3", "D+ U", 3, _V_WHERE, _V_TICKS, 10, by_hand=True,
        note="with U at t8 every subset of t5-7 fits (7); with U at t9 only subsets of t6-7 (3)",
    ),
    WhereCase(
        "flink-v-shape-contiguous", "D+ U", 10, _V_WHERE, _V_TICKS, 3, policy="contiguous", by_hand=True,
        note="adjacent ticks only: t7 t8, t6 t7 t8, t5 t6 t7 t8",
    ),
    WhereCase(
        "flink-v-shape-next", "D+ U", 10, _V_WHERE, _V_TICKS, 3, policy="next", by_hand=True,
        note="one run from each of D5, D6, D7 takes the later falling D's and then U8; U9 and "
        "D10 cannot extend D...DU; the run from D10 finds no U",
    ),
    WhereCase(
        "sase-q2-shipments", "A B+", 180, _SHIPMENT_WHERE, _SHIPMENTS, 7, by_hand=True,
        note="only the alert at 0 is contaminated; series from X: {10}, {10,20}, {10,20,40}, "
        "{10,20,60}, {30}, {30,40}, {30,60}",
    ),
    WhereCase(
        "sase-q2-shipments-30min", "A B+", 30, _SHIPMENT_WHERE, _SHIPMENTS, 3, by_hand=True,
        note="within 30 minutes of the alert: {10}, {10,20}, {30}",
    ),
    WhereCase(
        "sase-q3-stock", "A+ B", 60, _STOCK_WHERE, _STOCK, 12, by_hand=True,
        note="rising A runs from A0 or A2 (volume over 1000): {0}, {0,1}, {0,2} close with B4 or "
        "B5 (6); {0,3}, {0,1,3}, {0,2,3} only with B5 (3); {2} with either (2), {2,3} with B5 (1)",
    ),
    WhereCase(
        "sase-q3-stock-next", "A+ B", 60, _STOCK_WHERE, _STOCK, 2, policy="next", by_hand=True,
        note="the run from A0 takes A1 and A3 (A2 is no rise over A1), skips B4 (700 is not "
        "under 640) and ends at B5; the run from A2 takes A3 and B5; A1 and A3 start none",
    ),
    WhereCase(
        "flinkcep-max-gap", "A B+", 30, _GAP_WHERE, _GAPS, 7, by_hand=True,
        note="B's above 10: t2, t6, t9, t20; runs with gaps <= 5: four singles, {2,6}, {6,9}, {2,6,9}",
    ),
    WhereCase(
        "first-b-is-null", "A B+ C", 10, {"B": "B.p > LAST(B.p, 1)"}, _NULLS, 0, by_hand=True,
        note="every match has a first B, where LAST(B.p, 1) is NULL: nothing counts",
    ),
    WhereCase(
        "rising-or-first", "A B+ C", 10,
        {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p"}, _NULLS, 4, by_hand=True,
        note="B1's reading is NULL, so after it LAST(B.p, 1) IS NULL holds: B sets {2}, {3}, "
        "{1,2}, {1,3} count; {1} fails at C (6 < NULL) and B2 then B3 fails (7 is not above 7)",
    ),
    WhereCase(
        "absence-at-end", "A B+ !C", 10, {"B": "B.p > A.p"}, _ABSENCE, 1, by_hand=True,
        note="matches from A0 have C8 before their window closes at 10; {A5,B12} closes at 15 with no C",
    ),
    WhereCase("absence-pending", "A B+ !C", 10, {"B": "B.p > A.p"}, _ABSENCE, 0, at=14, by_hand=True,
              note="at 14 the window of A5 (closing at 15) is still open"),
    WhereCase("absence-closed", "A B+ !C", 10, {"B": "B.p > A.p"}, _ABSENCE, 1, at=15, by_hand=True,
              note="at 15 it has closed with no C in (12, 15]"),
    WhereCase(
        "absence-inclusive", "A B+ !C", 10, {}, _ABSENCE + (("C", 15, {"p": 0}),), 0, by_hand=True,
        note="a C at f + W = 15 still lies inside (l, f + W]",
    ),
    WhereCase(
        "absence-after-window", "A B+ !C", 10, {}, _ABSENCE + (("C", 16, {"p": 0}),), 1, by_hand=True,
        note="a C at 16 is after the window of A5 closed",
    ),
)

REFUSED: tuple[Refused, ...] = (
    Refused(
        "sase-q3-avg", "A+ B",
        {"A": "FIRST(A.volume) > 1000 AND A.price > avg(A.price)", "B": "B.volume < 0.8 * A.volume"},
        "A", 37, "AVG",
    ),
    Refused(
        "flinkcep-sum", "A B+",
        {"B": "B.name = 'foo' AND SUM(B.price) + B.price < 5"},
        "B", 19, "SUM",
    ),
    Refused("sase-q2-prev", "A B+", {"B": "B.from = PREV(B.to)"}, "B", 9, "PREV"),
    Refused("navigation-too-far", "A B{1,2} C", {"C": "C.p > LAST(B.p, 2)"}, "C", 6, "at most 2"),
    Refused("never-before", "A B C", {"B": "B.p > C.p"}, "B", 6, "no C comes before a B"),
    Refused("not-a-letter", "A B C", {"B": "B.p > D.p"}, "B", 6, "not a letter"),
)


def check_counts(count_of: Callable[[WhereCase], int]) -> None:
    """Assert ``count_of(case) == case.count`` for every case, naming the first that differs."""
    for case in CASES:
        got = count_of(case)
        assert got == case.count, f"{case.name}: counted {got}, expected {case.count} ({case.note})"
