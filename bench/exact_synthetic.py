"""Exact mode on the paper's synthetic workload: `a(b*c)*d(e|f)g*`, Zipf(s=2) characters.

Prints events/s of the two-stacks engine for windows tau = 100, 1,000, 10,000 over 100,000
events, with the size of the counts (they grow far past 128 bits, so big integers take over).
Beside it runs the per-initiator baseline (one counter vector per active initiator, O(window)
per event, u128 only): it is faster only while windows are tiny, and cannot go past 2^128.
Usage: python bench/exact_synthetic.py [--events 100000] [--windows 10,100,1000,10000]
"""
from __future__ import annotations

import argparse
import time

import suse
from suse import _core
from suse.io.synthetic import synthetic_stream


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--windows", default="10,100,1000,10000")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    stream = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed)
    raw = stream.chars.encode()
    print(f"exact a(b*c)*d(e|f)g*, Zipf(2), {args.events:,} events, seed {args.seed}")
    print(f"{'tau':>7} {'two-stacks ev/s':>16} {'per-initiator ev/s':>19} {'ratio':>7} {'count bits':>11}")
    for tau in (int(w) for w in args.windows.split(",")):
        query = suse.Query("a(b*c)*d(e|f)g*", window=tau)
        t0 = time.perf_counter()
        r = suse.exact(query, stream)
        two_stacks = time.perf_counter() - t0
        t0 = time.perf_counter()
        baseline = _core.per_initiator_exact(query._dfa, tau, raw, stream.timestamps)
        per_init = time.perf_counter() - t0
        if baseline is None:
            base_text, ratio = "overflow", ""
        else:
            assert baseline[0] == r.count and baseline[2] == r.partial_count
            base_text, ratio = f"{args.events / per_init:,.0f}", f"{per_init / two_stacks:.2f}"
        print(f"{tau:>7} {args.events / two_stacks:>16,.0f} {base_text:>19} {ratio:>7} {r.count.bit_length():>11}")


if __name__ == "__main__":
    main()
