"""Many summaries over one stream: what `suse.SummarySet` shares and what N separate
`suse.Summary` runs repeat.

Queries are drawn as A-Seq's experiments draw them (`suse.io.aseq_queries`: the common prefix
`a(b*c)*d`, then varied suffixes); events are the paper's workload (Zipf(2) over `abcdefg`,
timestamp = index), fed in batches of `--batch` events (a stream's micro-batches) with one
evaluation per batch. Three timings per N:
  separate  N `Summary` objects, each decoding and checking every batch itself;
  set       one `SummarySet`: a batch is decoded and checked once, then each summary's native call;
  native    only the N native calls on already decoded arrays (the floor for any Python sharing).
set - native is the Python work left per batch; separate - set is what the set saves.
Usage: python bench/multi_summary.py [--events 200000] [--queries 1,4,16] [--window 100]
       [--size 100] [--batch 1000] [--strategy suse]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import suse
from suse import api
from suse.io import aseq_queries, synthetic_stream


def batches(stream, size: int):
    raw, ts, vals = api.coerce_events(stream)
    chars = np.frombuffer(raw, np.uint8)
    for i in range(0, len(ts), size):
        yield chars[i:i + size].tobytes(), ts[i:i + size], None if vals is None else vals[i:i + size]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--queries", default="1,4,16")
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--strategy", default="suse")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    stream = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed)
    parts = list(batches(stream, args.batch))
    # Python lists per batch, as a caller would hand them over (what `separate` decodes N times)
    lists = [list(zip(np.frombuffer(c, "S1").astype(str), t.tolist())) for c, t, _ in parts]
    print(f"summaries |S| = {args.size}, strategy {args.strategy}, A-Seq query sets (prefix a(b*c)*d), Zipf(2) "
          f"over abcdefg, {args.events:,} events in batches of {args.batch}, window {args.window}, seed {args.seed}")
    for n in (int(x) for x in args.queries.split(",")):
        qs = suse.QuerySet({name: suse.Query(rx, args.window) for name, rx in aseq_queries(n).items()})

        t0 = time.perf_counter()
        alone = {name: suse.Summary(q, args.size, args.strategy, seed=3) for name, q in qs.items()}
        for events in lists:
            for s in alone.values():
                s.extend(events=events, evaluate_at=[events[-1][1]])
        t_sep = time.perf_counter() - t0

        t0 = time.perf_counter()
        together = suse.SummarySet(qs, args.size, args.strategy, seed=3)
        for events in lists:
            together.extend(events, evaluate_at=[events[-1][1]])
        t_set = time.perf_counter() - t0
        assert together.result() == {k: s.result() for k, s in alone.items()}, "the set differs from separate runs"

        floor = suse.SummarySet(qs, args.size, args.strategy, seed=3)
        engines = list({id(s): s._engine for s in floor.summaries.values()}.values())
        t0 = time.perf_counter()
        for chars, ts, vals in parts:
            at = np.array([ts[-1]], np.int64)
            for e in engines:
                e.extend(chars, ts, vals, at, False)
        t_nat = time.perf_counter() - t0

        rate = args.events / t_set
        print(f"N={n:>3}  separate {t_sep:7.2f} s  set {t_set:7.2f} s ({t_sep / t_set:4.2f}x, {rate:,.0f} events/s, "
              f"{rate * n:,.0f} query-events/s)  native only {t_nat:7.2f} s  -> Python in the set "
              f"{100 * (t_set - t_nat) / t_set:4.1f}%")


if __name__ == "__main__":
    main()
