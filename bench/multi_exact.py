"""Many exact queries over one stream: where the time of N separate runs goes, and what a
query set (`suse.exact(suse.QuerySet(...), events)`) saves.

Queries are drawn as A-Seq's experiments draw them (`suse.io.aseq_queries`: the common prefix
`a(b*c)*d`, then varied suffixes over the workload's letters); events are the paper's
workload (characters Zipf(2) over `abcdefg`, timestamp = index).
The query set runs with merge="never" (one validated pass, identical queries deduplicated,
one engine each) and merge="auto" (queries sharing a window run over one product automaton).
`--breakdown` splits each separate run into Python decoding/validation (`coerce_events`,
order check) and the native call (classification + counting).
`--own K`: every K-th query gets aggregate "max" and so runs an engine of its own in the pass
(MIN/MAX, of= and max_missing= do not join the shared engine).
Usage: python bench/multi_exact.py [--events 1000000] [--queries 1,4,16,64] [--window 100]
       [--breakdown] [--own K]
"""
from __future__ import annotations

import argparse
import time

import suse
from suse import _core, api
from suse.io import aseq_queries, synthetic_stream


def breakdown(queries: dict[str, suse.Query], stream) -> tuple[float, float]:
    """Seconds in Python decoding/validation and in the native call, summed over the queries."""
    py = native = 0.0
    for q in queries.values():
        t0 = time.perf_counter()
        raw, ts, vals = api.coerce_events(stream)
        api.feeding.check_order(ts, None)
        t1 = time.perf_counter()
        engine = _core.ExactEngine(q._dfa, q.window, q.policy)
        engine.extend(raw, ts, vals, None)
        engine.totals()
        t2 = time.perf_counter()
        py += t1 - t0
        native += t2 - t1
    return py, native


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--queries", default="1,4,16,64")
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--breakdown", action="store_true", help="only split separate runs into Python and native time")
    ap.add_argument("--own", type=int, default=0, help="every K-th query aggregates max (an engine of its own)")
    args = ap.parse_args()
    stream = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=args.seed)
    print(f"exact, A-Seq query sets (prefix a(b*c)*d), Zipf(2) over abcdefg, {args.events:,} events, "
          f"window {args.window}, seed {args.seed}" + (f", every {args.own}. query max" if args.own else ""))
    for n in (int(x) for x in args.queries.split(",")):
        queries = {name: suse.Query(rx, args.window, "max" if args.own and i % args.own == 0 else "count")
                   for i, (name, rx) in enumerate(aseq_queries(n).items())}
        if args.breakdown:
            py, native = breakdown(queries, stream)
            total = py + native
            print(f"N={n:>3}  separate runs {total:7.2f} s: Python decode/validate {py:6.2f} s "
                  f"({100 * py / total:4.1f}%), native classify+count {native:6.2f} s ({100 * native / total:4.1f}%)")
            continue
        t0 = time.perf_counter()
        separate = {name: suse.exact(q, stream) for name, q in queries.items()}
        t_sep = time.perf_counter() - t0
        one = t_sep / n  # one query's mean time alone
        cells = []
        for merge in ("never", "auto"):
            t0 = time.perf_counter()
            shared = suse.api.queryset.exact_set(suse.QuerySet(queries), stream, merge=merge)
            t_set = time.perf_counter() - t0
            assert all(shared[k] == separate[k] for k in queries), "query set differs from separate runs"
            cells.append(f"{merge}: {t_set:6.2f} s = {t_sep / t_set:5.2f}x faster, {t_set / one:5.2f}x one query")
        print(f"N={n:>3}  separate {t_sep:7.2f} s (one query {one:5.2f} s)  " + "  ".join(cells))

if __name__ == "__main__":
    main()
