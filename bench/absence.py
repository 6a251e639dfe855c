"""Absence at the end (`A B+ !C`) in the exact engine, against the same query without it.

Stream: characters drawn Zipf(s=2) over `abcdefg` (the paper's alphabet), timestamp = index.
Queries: the paper's `a(b*c)*d(e|f)g*` with a trailing negation `a(b*c)*d(e|f)g* !b` (no `b`
after the last element until the window closes) against the query without it; and `a b+ !c`
against `a b+`. Exact engine at tau = 100 and 1,000, 100,000 events, with and without 10
evaluation times (an evaluation of a trailing negation closes windows on a copy of the
window). Best of `--repeat` runs.

Then bounded summaries of `a b+ !c` (|S| = --summary-sizes, strategies fifo, random and present):
filled with the first |S| events, then timed over the next --summary-events (fifo, random) or
--present-events (present), where every element is an eviction, a rejection or a skip.
Usage: python bench/absence.py [--events 100000] [--repeat 3] [--summary-sizes 100 500]
"""
from __future__ import annotations

import argparse
import time

import suse
from suse.io.synthetic import synthetic_stream
from timing import best_time

PAIRS = [("a(b*c)*d(e|f)g* !b", "a(b*c)*d(e|f)g*"), ("a b+ !c", "a b+")]
SUMMARY_QUERY = "a b+ !c"


def timed_summary(stream, window: int, size: int, strategy: str, n: int) -> tuple[float, int]:
    """Seconds a summary of `size` elements, filled with the first `size` events, takes for the
    next `n` events, and its count then."""
    summary = suse.Summary(suse.Query(SUMMARY_QUERY, window), size, strategy, seed=1)
    summary.extend(chars=stream.chars[:size], timestamps=stream.timestamps[:size])
    start = time.perf_counter()
    summary.extend(chars=stream.chars[size:size + n], timestamps=stream.timestamps[size:size + n])
    return time.perf_counter() - start, summary.result().count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--summary-sizes", type=int, nargs="*", default=[100, 500], help="|S| of the summaries timed")
    ap.add_argument("--summary-events", type=int, default=5_000, help="events timed once full: fifo and random")
    ap.add_argument("--present-events", type=int, default=1_000, help="events timed once full: present")
    args = ap.parse_args()
    big = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed)
    times = [args.events * (i + 1) // 10 for i in range(10)]
    print(f"paper workload, Zipf(2) over abcdefg, {args.events} events, seed {args.seed}, best of {args.repeat}")
    print(f"{'query':<20} {'tau':>5} {'evals':>5} {'with':>12} {'without':>12} {'ratio':>6}  counts (with / without)")
    for q_with, q_without in PAIRS:
        for tau in (100, 1000):
            for evals in ([], times):
                rates, counts = [], []
                for regex in (q_with, q_without):
                    q = suse.Query(regex, window=tau)
                    seconds, r = best_time(lambda: suse.exact(q, chars=big.chars, timestamps=big.timestamps,
                                                              evaluate_at=evals or None), args.repeat)
                    rates.append(args.events / seconds)
                    counts.append(r.count)
                print(f"{q_with:<20} {tau:>5} {len(evals):>5} {rates[0]:>12,.0f} {rates[1]:>12,.0f} "
                      f"{rates[1] / rates[0]:>6.2f}  {counts[0]:.3e} / {counts[1]:.3e}")
    print("ratio = time with the trailing negation / time without (events/s without / with)")
    for tau in (100, 1000):
        for size in args.summary_sizes:
            for strategy, n in (("fifo", args.summary_events), ("random", args.summary_events),
                                ("present", args.present_events)):
                seconds, count = timed_summary(big, tau, size, strategy, n)
                print(f"summary {SUMMARY_QUERY} tau={tau:>5,} |S|={size:>4} {strategy:<7}: {n / seconds:>10,.0f} "
                      f"events/s over {n:,} events (count {count:.3e})")


if __name__ == "__main__":
    main()
