"""Exact mode: ABCD over A^i B^i C^i D^i, all in one window (paper Fig. 11).

Prints events/s per i and, for the i that pyrematch (REmatch) can enumerate, its time and
the ratio. Bar: i = 2048 (8,192 events) in at most 0.08 s, a tenth of the paper's C++ on this
machine class (0.82 s).
Usage: python bench/exact_abcd.py [--max-i 4096] [--peer-max-i 32] [--repeat 5]
"""
from __future__ import annotations

import argparse

import numpy as np

import suse
from timing import best_time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-i", type=int, default=4096)
    ap.add_argument("--peer-max-i", type=int, default=32, help="largest i to enumerate with pyrematch")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    try:
        import pyrematch
    except ImportError:  # the bench extra is optional
        pyrematch = None
    query = suse.Query("ABCD", window=10**12)
    print(f"exact ABCD over A^i B^i C^i D^i, one window; best of {args.repeat}")
    print(f"{'i':>6} {'events':>8} {'matches':>22} {'suse s':>10} {'events/s':>14} {'pyrematch s':>12} {'ratio':>10}")
    i = 8
    while i <= args.max_i:
        chars = "A" * i + "B" * i + "C" * i + "D" * i
        ts = np.arange(4 * i, dtype=np.int64)
        result = suse.exact(query, chars=chars, timestamps=ts)
        assert result.count == i**4
        t, _ = best_time(lambda: suse.exact(query, chars=chars, timestamps=ts), args.repeat)
        peer, ratio = "", ""
        if pyrematch is not None and i <= args.peer_max_i:
            reql = pyrematch.reql("!x{A}.*!y{B}.*!z{C}.*!w{D}")
            n = sum(1 for _ in reql.finditer(chars))
            assert n == result.count, (n, result.count)
            tp, _ = best_time(lambda: sum(1 for _ in reql.finditer(chars)), max(1, args.repeat // 2))
            peer, ratio = f"{tp:.5f}", f"{tp / t:.0f}x"
        print(f"{i:>6} {4 * i:>8} {result.count:>22} {t:>10.5f} {4 * i / t:>14,.0f} {peer:>12} {ratio:>10}")
        i *= 2
    print("bar: i=2048 in <= 0.08 s (the paper's C++ took 0.82 s on this machine class)")


if __name__ == "__main__":
    main()
