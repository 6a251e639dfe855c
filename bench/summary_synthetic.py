"""The state summary with selection on the paper's synthetic workload, against its bars.

Query `a(b*c)*d(e|f)g*`, Zipf(s=2) characters over its sorted letters, timestamp = index,
10,000 events fed through one `extend` call, strategy `suse`. Each (|S|, tau) and seed runs
in its own process so that max RSS is per configuration. Throughput varies a lot with the
stream (seed): how often the new element wins and whether the evicted one is active decide
the cost. The `all` row is total events / total time over the seeds.
Bars (10x the paper's C++ on this machine class): 240,000 / 20,000 / 440 events/s at
(|S|, tau) = (100,100) / (500,100) / (500,500), with exact counts.
`--probabilities given` passes the Zipf(2) letter probabilities instead of estimating them
online (the bars above are stated for given probabilities). `--build DIR` runs another
build of the package (e.g. a copy of a previous release) for before/after figures.
Usage: python bench/summary_synthetic.py [--configs 100:100,500:100,500:500] [--strategy suse]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

BARS = {(100, 100): 240_000, (500, 100): 20_000, (500, 500): 440}


def zipf_probabilities(letters: str, s: float = 2.0) -> dict:
    weights = [1 / (i + 1) ** s for i in range(len(letters))]
    return {c: w / sum(weights) for c, w in zip(letters, weights)}


def run_one(size: int, tau: int, strategy: str, events: int, seed: int, repeat: int, given: bool) -> dict:
    import suse
    from suse.io.synthetic import synthetic_stream

    stream = synthetic_stream("abcdefg", events, "zipf", 2.0, seed=seed)
    query = suse.Query("a(b*c)*d(e|f)g*", window=tau)
    probabilities = zipf_probabilities("abcdefg") if given else None
    best, summary = float("inf"), None
    for _ in range(repeat):
        s = suse.Summary(query, size=size, strategy=strategy, seed=seed, probabilities=probabilities)
        t0 = time.perf_counter()
        s.extend(stream.chars, stream.timestamps)
        best = min(best, time.perf_counter() - t0)
        summary = s
    r = summary.result()
    return {
        "size": size, "tau": tau, "strategy": strategy, "events": events, "seconds": best,
        "events_per_second": events / best, "evictions": r.evictions,
        "count": str(r.count), "count_bits": r.count.bit_length(), "big_integers": summary._engine.is_big,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="100:100,500:100,500:500")
    ap.add_argument("--strategy", default="suse")
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--probabilities", choices=["estimated", "given"], default="estimated")
    ap.add_argument("--build", help="directory holding another build of the suse package")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        size, tau = map(int, args.one.split(":"))
        print(json.dumps(run_one(size, tau, args.strategy, args.events, int(args.seeds), args.repeat,
                                 args.probabilities == "given")))
        return
    env = dict(os.environ, PYTHONPATH=args.build) if args.build else None
    print(f"summary a(b*c)*d(e|f)g*, Zipf(2), {args.events:,} events, strategy {args.strategy}, "
          f"probabilities {args.probabilities}, best of {args.repeat}" + (f", build {args.build}" if args.build else ""))
    print(f"{'|S|':>5} {'tau':>5} {'seed':>4} {'events/s':>12} {'bar':>9} {'x bar':>6} {'evictions':>9} {'count':>12} {'bits':>5} {'big':>5} {'RSS MB':>7}")
    for cfg in args.configs.split(","):
        total_s, total_events = 0.0, 0
        for seed in args.seeds.split(","):
            out = subprocess.run(
                [sys.executable, __file__, "--one", cfg, "--strategy", args.strategy, "--events", str(args.events),
                 "--seeds", seed, "--repeat", str(args.repeat), "--probabilities", args.probabilities],
                check=True, capture_output=True, text=True, env=env,
            )
            r = json.loads(out.stdout)
            total_s += r["seconds"]
            total_events += r["events"]
            bar = BARS.get((r["size"], r["tau"]))
            ratio = f"{r['events_per_second'] / bar:.1f}" if bar and args.strategy == "suse" else ""
            count = r["count"] if len(r["count"]) <= 12 else f"{int(r['count']):.3e}"
            print(f"{r['size']:>5} {r['tau']:>5} {seed:>4} {r['events_per_second']:>12,.0f} {bar or '':>9} {ratio:>6} "
                  f"{r['evictions']:>9} {count:>12} {r['count_bits']:>5} {str(r['big_integers']):>5} {r['max_rss_mb']:>7.1f}")
        bar = BARS.get(tuple(map(int, cfg.split(":"))))
        rate = total_events / total_s
        ratio = f"{rate / bar:.1f}" if bar and args.strategy == "suse" else ""
        print(f"{'':>5} {'':>5} {'all':>4} {rate:>12,.0f} {bar or '':>9} {ratio:>6}")


if __name__ == "__main__":
    main()
