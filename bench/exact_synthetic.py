"""Exact mode on the paper's synthetic workload: `a(b*c)*d(e|f)g*`, Zipf(s=2) characters.

Prints events/s for windows tau = 100, 1,000, 10,000 over 100,000 events, and the size of
the counts (they grow far past 128 bits, so big integers take over).
Usage: python bench/exact_synthetic.py [--events 100000] [--windows 100,1000,10000]
"""
from __future__ import annotations

import argparse
import time

import suse
from suse.io.synthetic import synthetic_stream


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--windows", default="100,1000,10000")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    stream = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed)
    print(f"exact a(b*c)*d(e|f)g*, Zipf(2), {args.events:,} events, seed {args.seed}")
    print(f"{'tau':>8} {'seconds':>9} {'events/s':>12} {'count bits':>11} {'sum bits':>9}")
    for tau in (int(w) for w in args.windows.split(",")):
        query = suse.Query("a(b*c)*d(e|f)g*", window=tau)
        t0 = time.perf_counter()
        r = suse.exact(query, stream)
        dt = time.perf_counter() - t0
        print(f"{tau:>8} {dt:>9.3f} {args.events / dt:>12,.0f} {r.count.bit_length():>11} {r.sum.bit_length():>9}")


if __name__ == "__main__":
    main()
