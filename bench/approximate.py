"""Approximate matching (`max_missing` = 0, 1, 2) on the paper's synthetic workload.

Query `a(b*c)*d(e|f)g*`, Zipf(s=2) characters, timestamp = index. Prints, per k, the size of
the automaton the engines run (states, transitions) and events/s of the exact engine
(tau = 100, 1,000) and of `suse` summaries at (|S|, tau) = (100, 100), (500, 100), with the
bit length of the exact counts (big counts cost more per operation).
Usage: python bench/approximate.py [--events 10000] [--query Q]
"""
from __future__ import annotations

import argparse
import time

import suse
from suse.io.synthetic import synthetic_stream


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--query", default="a(b*c)*d(e|f)g*")
    ap.add_argument("--missing", default="0,1,2")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    stream = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed)
    print(f"approximate {args.query}, Zipf(2), {args.events:,} events, seed {args.seed}; events/s")
    head = (f"{'k':>2} {'states':>6} {'trans':>6} {'exact τ=100':>12} {'exact τ=1000':>13} {'S=100 τ=100':>12} "
            f"{'S=500 τ=100':>12} {'bits τ=100/1000':>16}")
    print(head)
    for k in (int(x) for x in args.missing.split(",")):
        q100 = suse.Query(args.query, 100, max_missing=k)
        a = q100.automaton
        cells, bits = [], []
        for tau in (100, 1000):
            q = suse.Query(args.query, tau, max_missing=k)
            t0 = time.perf_counter()
            r = suse.exact(q, stream)
            cells.append(args.events / (time.perf_counter() - t0))
            bits.append(str(r.count.bit_length()))  # past 128 bits the counters leave u128
        for size in (100, 500):
            s = suse.Summary(q100, size, "suse", seed=0)
            t0 = time.perf_counter()
            s.extend(events=stream)
            cells.append(args.events / (time.perf_counter() - t0))
        print(f"{k:>2} {a.n_states:>6} {len(a.transitions):>6} " + " ".join(
            f"{c:>{w},.0f}" for c, w in zip(cells, (12, 13, 12, 12))) + f" {'/'.join(bits):>16}")


if __name__ == "__main__":
    main()
