"""Conditions between events (``where``): the "rising run" through the exact engine.

    AB+C  with  B: LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)   (each B above the previous B)
                C: C.p < B.p                                     (C below the last B)

One event per time unit, so a window of W time units holds W + 1 events. Letters are drawn
with probabilities A, B, C = (--a-share, rest, --c-share); p is uniform in [0, --values).
Prints, per window, events/s of `suse.exact` (best of --repeat), the count's size, and the
growth factor of the time per event from the smallest window to the largest; then the
agreement with a brute-force enumerator on a prefix, and how far the enumerator (which lists
every partial match, as the engines that enumerate do) gets in --budget seconds.

    .venv/bin/python bench/predicates.py                        # 100,000 events, W = 1,000 and 10,000
    .venv/bin/python bench/predicates.py --events 20000 --windows 100 1000

Then summaries with the same conditions (|S| = --summary-sizes, --strategies): filled with the
first |S| events, then timed over the next --summary-events (--present-events for the ranked
strategies present, suse and adaptive), where every event is an eviction or a rejection:
events/s. With --quality S:W ..., the retained count of each ranked strategy over the first
--quality-events events, at 20 evaluation times spread over them: the mean of log10(count + 1).

FlinkCEP 2.3 (IterativeConditions) and this enumerator side by side with suse on this stream:
`bench/peer_flink.py --suite predicates`.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import suse
from suse.query.conditions import evaluate, parse_where

QUERY = "A B+ C"
WHERE = {"B": "LAST(B.p, 1) IS NULL OR B.p > LAST(B.p, 1)", "C": "C.p < B.p"}
# The stream's defaults: letter shares of A and C (B the rest), p uniform in [0, VALUES).
A_SHARE, C_SHARE, VALUES = 0.01, 0.05, 1_000


def stream(n: int, a_share: float, c_share: float, values: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    letters = rng.choice(np.array(list("ABC")), size=n, p=[a_share, 1 - a_share - c_share, c_share])
    prices = rng.integers(0, values, size=n)
    return [(str(c), t, {"p": int(p)}) for t, (c, p) in enumerate(zip(letters.tolist(), prices.tolist()))]


def timed_exact(events: list, window: int, repeat: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    query = suse.Query(QUERY, window, where=WHERE)
    for _ in range(repeat):
        start = time.perf_counter()
        count = suse.exact(query, events).count
        best = min(best, time.perf_counter() - start)
    return best, count


def timed_summary(events: list, window: int, size: int, strategy: str, n: int) -> tuple[float, int]:
    """Seconds a summary of `size` elements, filled with the first `size` events, takes for the
    next `n` (each an eviction or a rejection: the steady state), and its final count."""
    summary = suse.Summary(suse.Query(QUERY, window, where=WHERE), size, strategy, seed=1)
    summary.extend(events[:size])
    start = time.perf_counter()
    summary.extend(events[size:size + n])
    return time.perf_counter() - start, summary.result().count


def retained_quality(events: list, window: int, size: int, strategy: str) -> float:
    """The mean log10(count + 1) of a summary's retained matches at 20 times spread over
    `events` (after the first window)."""
    summary = suse.Summary(suse.Query(QUERY, window, where=WHERE), size, strategy, seed=1)
    last = events[-1][1]
    times = np.linspace(min(window, last // 2), last, 20).astype(int).tolist()
    rows = summary.extend(events, evaluate_at=times)
    return float(np.mean([math.log10(row.count + 1) for row in rows]))


def enumerate_matches(events: list, window: int, deadline: float, query: str = QUERY,
                      conditions: dict | None = None) -> int | None:
    """Count by listing every partial match (depth-first, skip-till-any-match), judging each
    element with suse's reference evaluator; None when the deadline passes. `conditions`
    defaults to WHERE."""
    where = parse_where(query, WHERE if conditions is None else conditions).conditions
    automaton = suse.Query(query, window).automaton
    elements = [(c, t, attributes) for c, t, attributes in events]
    count = 0
    stack = [(i, automaton.transitions.get((automaton.start, e[0])), [e]) for i, e in enumerate(elements)]
    stack = [(i, s, m) for i, s, m in stack if s is not None and (m[0][0] not in where or evaluate(where[m[0][0]], [], m[0]))]
    while stack:
        if time.perf_counter() > deadline:
            return None
        i, state, match = stack.pop()
        count += state in automaton.finals
        for j in range(i + 1, len(elements)):
            e = elements[j]
            if e[1] - match[0][1] > window:
                break
            target = automaton.transitions.get((state, e[0]))
            if target is not None and (e[0] not in where or evaluate(where[e[0]], match, e)):
                stack.append((j, target, match + [e]))
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--windows", type=int, nargs="+", default=[1_000, 10_000])
    ap.add_argument("--a-share", type=float, default=A_SHARE)
    ap.add_argument("--c-share", type=float, default=C_SHARE)
    ap.add_argument("--values", type=int, default=VALUES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--prefix", type=int, default=16, help="events of the prefix checked against the oracle")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds the enumerator gets per window")
    ap.add_argument("--summary-sizes", type=int, nargs="*", default=[100, 500], help="|S| of the summaries timed")
    ap.add_argument("--summary-events", type=int, default=5_000, help="events timed once full: fifo and random")
    ap.add_argument("--present-events", type=int, default=300,
                    help="events timed once full: present, suse, adaptive")
    ap.add_argument("--strategies", nargs="*", default=["fifo", "random", "present", "suse", "adaptive"])
    ap.add_argument("--quality", nargs="*", default=[], metavar="S:W",
                    help="(|S|, W) pairs whose retained counts are compared across strategies")
    ap.add_argument("--quality-events", type=int, default=3_000)
    ap.add_argument("--skip-enumerator", action="store_true", help="no oracle check and no enumerator")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    events = stream(args.events, args.a_share, args.c_share, args.values, args.seed)
    print(f"{QUERY} where {WHERE}; {args.events:,} events, A/B/C shares {args.a_share}/"
          f"{1 - args.a_share - args.c_share:.2f}/{args.c_share}, p uniform in [0, {args.values})")
    per_event = {}
    for window in args.windows:
        seconds, count = timed_exact(events, window, args.repeat)
        per_event[window] = seconds / args.events
        print(f"  exact  W={window:>6,}: {args.events / seconds:>12,.0f} events/s  ({seconds:.2f} s; count has "
              f"{count.bit_length()} bits)")
    small, large = min(args.windows), max(args.windows)
    if small != large:
        print(f"  growth of the time per event from W={small:,} to W={large:,}: "
              f"{per_event[large] / per_event[small]:.2f}x for {large / small:.0f}x the window")

    for window in args.windows:
        for size in args.summary_sizes:
            for strategy in args.strategies:
                n = args.summary_events if strategy in ("fifo", "random") else args.present_events
                n = min(n, args.events - size)
                seconds, count = timed_summary(events, window, size, strategy, n)
                rate = n / seconds
                shown = f"{rate:>10,.0f}" if rate >= 10 else f"{rate:>10.2f}"
                print(f"  summary W={window:>6,} |S|={size:>4} {strategy:<7}: {shown} events/s "
                      f"({n:,} events once full, {seconds:.2f} s; count has {count.bit_length()} bits)")

    for pair in args.quality:
        size, window = (int(x) for x in pair.split(":"))
        scores = {strategy: retained_quality(events[:args.quality_events], window, size, strategy)
                  for strategy in ("fifo", "present", "suse", "adaptive")}
        print(f"  retained W={window:>6,} |S|={size:>4} over {args.quality_events:,} events, mean log10(count + 1): "
              + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()))
    if args.skip_enumerator:
        return

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from oracle import where_aggregate

    prefix = events[: args.prefix]
    for window in args.windows:
        exact = suse.exact(suse.Query(QUERY, window, where=WHERE), prefix).count
        oracle = where_aggregate(QUERY, prefix, window, WHERE)["count"]
        assert exact == oracle, (window, exact, oracle)
    print(f"  agreement with the brute-force oracle on the first {args.prefix} events: yes")
    for window in args.windows:
        n, done = 250, None
        while n <= args.events:
            start = time.perf_counter()
            got = enumerate_matches(events[:n], window, start + args.budget)
            if got is None:
                break
            exact = suse.exact(suse.Query(QUERY, window, where=WHERE), events[:n]).count
            assert got == exact, (window, n, got, exact)
            done = (n, time.perf_counter() - start, got)
            n *= 2
        if done is None:
            print(f"  enumerator W={window:>6,}: did not finish 250 events within {args.budget:.0f} s")
        else:
            n, seconds, got = done
            print(f"  enumerator W={window:>6,}: {n:,} events in {seconds:.2f} s ({n / seconds:,.0f} events/s, {got:,} "
                  f"matches, equal to exact); {2 * n:,} events did not finish within {args.budget:.0f} s")


if __name__ == "__main__":
    main()
