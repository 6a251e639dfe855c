"""Negation and contiguity on the paper's workload, with and without each feature.

Stream: characters drawn Zipf(s=2) over `abcdefg` (the paper's alphabet), timestamp = index.
Queries: the paper's `a(b*c)*d(e|f)g*`; a negated variant `a(b*c)*d!e f g*` (no `e` between
`d` and `f`) against the same query without the negation `a(b*c)*d f g*`, where `e` is just
another character; and the paper's query under `policy="contiguous"` against the default
skip-till-any-match. Exact engine at tau = 100 and 1,000 (100,000 events), summaries (`suse`)
at (|S|, tau) = (100, 100) and (500, 100) (10,000 events). Best of `--repeat` runs.
Targets: negation costs at most 1.5x its query without it; contiguity is at least as fast
as skip-till-any-match.
Usage: python bench/negation_contiguity.py [--events 100000] [--summary-events 10000]
"""
from __future__ import annotations

import argparse

import suse
from suse.io.synthetic import synthetic_stream
from timing import best_time

PAIRS = [
    ("negation", ("a(b*c)*d!e f g*", "any"), ("a(b*c)*d f g*", "any")),
    ("contiguity", ("a(b*c)*d(e|f)g*", "contiguous"), ("a(b*c)*d(e|f)g*", "any")),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--summary-events", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    big = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed)
    small = synthetic_stream("abcdefg", args.summary_events, "zipf", 2.0, seed=args.seed)
    print(f"paper workload, Zipf(2) over abcdefg, seed {args.seed}, best of {args.repeat}")
    print(f"{'feature':<11} {'engine':<16} {'with':>12} {'without':>12} {'ratio':>6}  counts (with / without)")
    for name, (q_with, p_with), (q_without, p_without) in PAIRS:
        for tau in (100, 1000):
            rates, counts = [], []
            for regex, policy in ((q_with, p_with), (q_without, p_without)):
                q = suse.Query(regex, window=tau, policy=policy)
                seconds, r = best_time(lambda: suse.exact(q, chars=big.chars, timestamps=big.timestamps), args.repeat)
                rates.append(args.events / seconds)
                counts.append(r.count)
            print(f"{name:<11} {f'exact tau={tau}':<16} {rates[0]:>12,.0f} {rates[1]:>12,.0f} "
                  f"{rates[1] / rates[0]:>6.2f}  {counts[0]:.3e} / {counts[1]:.3e}")
        for size, tau in ((100, 100), (500, 100)):
            rates, counts = [], []
            for regex, policy in ((q_with, p_with), (q_without, p_without)):
                q = suse.Query(regex, window=tau, policy=policy)

                def run() -> suse.Summary:
                    s = suse.Summary(q, size=size, strategy="suse", seed=args.seed)
                    s.extend(small.chars, small.timestamps)
                    return s

                seconds, s = best_time(run, args.repeat)
                rates.append(args.summary_events / seconds)
                counts.append(s.result().count)
            print(f"{name:<11} {f'summary {size},{tau}':<16} {rates[0]:>12,.0f} {rates[1]:>12,.0f} "
                  f"{rates[1] / rates[0]:>6.2f}  {counts[0]:.3e} / {counts[1]:.3e}")
    print("ratio = time with the feature / time without (events/s without / with); targets: negation <= 1.5, "
          "contiguity <= 1.0")


if __name__ == "__main__":
    main()
