"""MAX (A-Seq's MAX(X.weight)) against COUNT on the paper's synthetic workload.

Query `a(b*c)*d(e|f)g*`, Zipf(s=2) characters over `abcdefg` (a most frequent, g rarest),
uniform integer values, timestamp = index. Runs COUNT, MAX over every letter, MAX `of` the
frequent letter `a` and MAX `of` the rare letter `g`: the exact engine at each tau (events
fed in one call, one evaluation at the end), and summaries at each (|S|, tau) with strategy
`suse` (MAX is recomputed from the retained elements at each evaluation: `--evals` evenly
spaced evaluation times). Prints events/s per run (best of `--repeat`) and the ratio to COUNT.
Usage: python bench/minmax.py [--events 100000] [--windows 100,1000] [--summaries 100:100,500:100]
"""
from __future__ import annotations

import argparse

import numpy as np

import suse
from suse.io.synthetic import synthetic_stream
from timing import best_time

QUERY = "a(b*c)*d(e|f)g*"
VARIANTS = [("count", None), ("max", None), ("max", "a"), ("max", "g")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--summary-events", type=int, default=10_000)
    ap.add_argument("--windows", default="100,1000")
    ap.add_argument("--summaries", default="100:100,500:100")
    ap.add_argument("--evals", type=int, default=10, help="evaluation times per summary run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    stream = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed, values="uniform")
    freq = {c: stream.chars.count(c) / len(stream.chars) for c in "ag"}
    print(f"{QUERY}, Zipf(2), uniform values, seed {args.seed}; share of a {freq['a']:.3f}, of g {freq['g']:.4f}")
    print(f"\nexact engine, {args.events:,} events, best of {args.repeat}")
    print(f"{'tau':>6} {'aggregate':>12} {'events/s':>12} {'vs count':>9} {'max':>8}")
    for tau in (int(w) for w in args.windows.split(",")):
        base = None
        for agg, of in VARIANTS:
            q = suse.Query(QUERY, window=tau, aggregate=agg, of=of)
            secs, r = best_time(lambda: suse.exact(q, stream), args.repeat)
            base = base or secs
            label = agg + (f" of {of}" if of else "")
            print(f"{tau:>6} {label:>12} {args.events / secs:>12,.0f} {secs / base:>8.2f}x {str(r.max):>8}")

    n = args.summary_events
    small = synthetic_stream("abcdefg", n, "zipf", 2.0, seed=args.seed, values="uniform")
    times = np.linspace(0, n - 1, args.evals).astype(np.int64)
    print(f"\nsummaries (suse), {n:,} events, {args.evals} evaluations, best of {args.repeat}")
    print(f"{'|S|':>5} {'tau':>5} {'aggregate':>12} {'events/s':>12} {'vs count':>9} {'max':>8}")
    for cfg in args.summaries.split(","):
        size, tau = (int(x) for x in cfg.split(":"))
        base = None
        for agg, of in VARIANTS:
            q = suse.Query(QUERY, window=tau, aggregate=agg, of=of)

            def run():
                s = suse.Summary(q, size, "suse", seed=args.seed)
                return s.extend(events=small, evaluate_at=times)[-1]

            secs, ev = best_time(run, args.repeat)
            base = base or secs
            label = agg + (f" of {of}" if of else "")
            print(f"{size:>5} {tau:>5} {label:>12} {n / secs:>12,.0f} {secs / base:>8.2f}x {str(ev.max):>8}")


if __name__ == "__main__":
    main()
