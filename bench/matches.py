"""Matches as output: delay per match of `suse.matches` and time per uniform sample.

Two families, each at about 10^6 and about 10^100 matches:
* `AB*C` over blocks `A B^m C` (timestamp = index, window = block length): one first element
  per block, 2^m matches each; m = 20 (10^6 per block) and m = 333 (10^100).
* the paper's workload, `a(b*c)*d(e|f)g*` over Zipf(2) characters of `abcdefg`, with the
  window chosen so that the stream holds about that many matches.
* a negation at the end: `A B+ !C` over blocks `A B^m C` with window m (each block's C just
  past its A's window: 2^m − 1 matches per block), and `a(b|d)+!c` over the Zipf stream, where
  every first element needs its own closing tables (docs/ENGINE.md, "A negation at the end").
Delay: the mean wall time per match read from `suse.matches` over the first `--enumerate`
matches (the iterator fetches them in batches), and the largest time the kernel took for one
match, measured on its cursor one match per call over the first `--probe` matches (with the
Python call around it); the first match includes the preparation (one backward pass over the
stream), printed apart. Sampling: `--samples` draws in one call.
Usage: python bench/matches.py [--enumerate 1000000] [--samples 1000] [--only TEXT]
"""
from __future__ import annotations

import argparse
import math
import time

import suse
from suse.api.matching import count_matches, stream_set
from suse.io.synthetic import synthetic_stream


def blocks(m: int, k: int) -> list[tuple[str, int]]:
    out = []
    for b in range(k):
        word = "A" + "B" * m + "C"
        out += [(c, b * len(word) + i) for i, c in enumerate(word)]
    return out


def zipf_stream(n: int, seed: int) -> list[tuple[str, int]]:
    s = synthetic_stream("abcdefg", n, "zipf", 2.0, seed=seed)
    return list(zip(s.chars, s.timestamps.tolist()))


def run(label: str, q: suse.Query, events: list, n_enum: int, n_probe: int, n_samples: int, only: str = "") -> None:
    if only not in label:
        return
    start = time.perf_counter()
    total = count_matches(q, events)
    count_s = time.perf_counter() - start
    start = time.perf_counter()
    it = suse.matches(q, events, limit=n_enum)
    first = next(it, None)
    prepare = time.perf_counter() - start
    got, t0 = (1 if first is not None else 0), time.perf_counter()
    for _ in it:
        got += 1
    mean = (time.perf_counter() - t0) / max(got - 1, 1)
    cursor = stream_set(q, events, None, None).cursor()
    worst, last = 0.0, time.perf_counter()
    for _ in range(n_probe):
        if not cursor.next_batch(1):
            break
        now = time.perf_counter()
        worst, last = max(worst, now - last), now
    start = time.perf_counter()
    suse.sample_matches(q, events, n_samples, seed=1)
    per_sample = (time.perf_counter() - start) / n_samples
    print(f"{label:<34} {len(events):>8,} {q.window:>6} 10^{math.log10(total):<6.1f} {count_s:>8.3f} {prepare * 1e3:>9.2f} "
          f"{got:>9,} {mean * 1e6:>9.2f} {worst * 1e6:>9.1f} {per_sample * 1e3:>10.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--enumerate", type=int, default=1_000_000, help="matches read per run")
    ap.add_argument("--probe", type=int, default=100_000, help="matches timed one by one on the kernel's cursor")
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="run only the workloads whose label contains this")
    args = ap.parse_args()
    print("mean µs: per match read from suse.matches; max µs: the slowest single match on the kernel's cursor; "
          "prepare: time to the first match")
    print(f"{'workload':<34} {'events':>8} {'window':>6} {'matches':<9} {'count s':>8} {'prepare ms':>9} "
          f"{'read':>9} {'mean µs':>9} {'max µs':>9} {'ms/sample':>10}")
    for m, k in ((20, 1), (20, 50), (333, 1), (333, 50)):
        run(f"AB*C, blocks A B^{m} C x {k}", suse.Query("AB*C", m + 1), blocks(m, k), args.enumerate, args.probe,
            args.samples, args.only)
    for n, window in ((10_000, 24), (10_000, 200)):
        run(f"a(b*c)*d(e|f)g*, Zipf(2), seed {args.seed}", suse.Query("a(b*c)*d(e|f)g*", window),
            zipf_stream(n, args.seed), args.enumerate, args.probe, args.samples, args.only)
    for m, k in ((20, 50), (333, 50)):
        run(f"A B+ !C, blocks A B^{m} C x {k}", suse.Query("A B+ !C", m), blocks(m, k), args.enumerate, args.probe,
            args.samples, args.only)
    for n, window in ((10_000, 24), (100_000, 24), (100_000, 200)):
        run(f"a(b|d)+!c, Zipf(2), seed {args.seed}", suse.Query("a(b|d)+!c", window), zipf_stream(n, args.seed),
            args.enumerate, args.probe, args.samples, args.only)


if __name__ == "__main__":
    main()
