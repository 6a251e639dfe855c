"""Out-of-order events and retraction (`lateness=L`): cost against today's in-order engines.

Workload: `a(b*c)*d(e|f)g*` over Zipf(2) characters, timestamps 0..n-1. For each engine it
prints events/s of
  * today: lateness 0 (the in-order path), the sorted stream;
  * in order, lateness L: the same sorted stream through the reorder buffer;
  * p % late: a fraction p of the events arrives up to L time units late (delay uniform on
    1..L), the rest in order;
  * retract: after each batch, every 50th of its events newer than the horizon is taken back
    (one `retract` call each).
Events are fed in batches of `--batch` (one native call per batch and per read-out); with
`--readout` the result is also read after every batch (what a streaming caller does). Each
figure is the best of `--repeat` runs. Exact engines and summaries with the reorder buffer
(`placement="buffer"`) run on the kernel's out-of-order layer (core/kernel/src/exact/ooo.rs);
summaries also run with late events inserted at their place (`placement="insert"`, no buffer and
no retraction). The last lines compare the kernel layer at lateness 0 with the plain engine (the
in-order cost of the layer itself).
Usage: python bench/disorder.py [--events 50000] [--lateness 100] [--batch 1000] [--readout]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import suse
from suse.io.synthetic import synthetic_stream

QUERY = "a(b*c)*d(e|f)g*"


def arrival(n: int, share: float, lateness: int, rng: np.random.Generator) -> np.ndarray:
    """An arrival order where a `share` of the events comes up to `lateness` units late."""
    late = rng.random(n) < share
    key = np.arange(n) + np.where(late, rng.integers(1, lateness + 1, n), 0)
    return np.lexsort((np.arange(n), key))


def engine_horizon(engine) -> int:
    return engine._arrivals.horizon


def feed(engine, chars: np.ndarray, ts: np.ndarray, batch: int, retract_every: int = 0, readout: bool = False) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(ts), batch):
        c, t = chars[i:i + batch], ts[i:i + batch]
        engine.extend(chars=c.tobytes(), timestamps=t)
        if readout:
            engine.result()
        if retract_every:
            newer = np.flatnonzero(t > engine_horizon(engine))  # only these can still be taken back
            for k in newer[::retract_every]:
                engine.retract(chr(c[k]), int(t[k]))
    engine.result()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--lateness", type=int, default=100)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (the machine is shared)")
    ap.add_argument("--readout", action="store_true", help="read the result after every batch")
    ap.add_argument("--only", choices=["exact", "summary"], help="run one kind of engine")
    args = ap.parse_args()
    n, L = args.events, args.lateness
    stream = synthetic_stream("abcdefg", n, "zipf", 2.0, seed=args.seed)
    chars = np.frombuffer(stream.chars.encode(), np.uint8)
    ts = stream.timestamps
    rng = np.random.default_rng(args.seed)
    orders = {f"{p:.0%} late": arrival(n, p, L, rng) for p in (0.01, 0.10)}
    print(f"{QUERY}, Zipf(2), {n:,} events, lateness {L}, batches of {args.batch}, seed {args.seed}, "
          f"read-out {'after every batch' if args.readout else 'at the end'}; best of {args.repeat}, events/s")
    print(f"{'engine':<24} {'today':>10} {'in order':>10} {'ratio':>6} {'1% late':>10} {'10% late':>10} {'retract':>10}")
    engines = [(f"exact tau={tau}", lambda lateness, tau=tau: suse.Exact(suse.Query(QUERY, tau), lateness=lateness))
               for tau in (100, 1000)]
    engines += [(f"summary |S|={size} tau=100",
                 lambda lateness, size=size: suse.Summary(suse.Query(QUERY, 100), size, seed=1, lateness=lateness))
                for size in (100, 500)]
    # placement="insert": late events go in at their place, no buffer (no retraction)
    engines += [(f"summary |S|={size} insert",
                 lambda lateness, size=size: suse.Summary(suse.Query(QUERY, 100), size, seed=1, lateness=lateness,
                                                          placement="insert" if lateness else "buffer"))
                for size in (100, 500)]
    engines = [(name, make) for name, make in engines if args.only is None or name.startswith(args.only)]
    def best(lateness: int, make, order=None, **kw) -> float:
        c, t = (chars, ts) if order is None else (chars[order], ts[order])
        return min(feed(make(lateness), c, t, args.batch, readout=args.readout, **kw) for _ in range(args.repeat))

    for name, make in engines:
        today = best(0, make)
        ordered = best(L, make)
        late = [best(L, make, o) for o in orders.values()]
        retract = f"{n / best(L, make, retract_every=50):>10,.0f}" if "insert" not in name else f"{'n/a':>10}"
        print(f"{name:<24} {n / today:>10,.0f} {n / ordered:>10,.0f} {ordered / today:>6.2f} "
              f"{n / late[0]:>10,.0f} {n / late[1]:>10,.0f} {retract}")
    if args.only != "summary":
        in_order_cost_of_the_layer(chars, ts, args)


def in_order_cost_of_the_layer(chars: np.ndarray, ts: np.ndarray, args) -> None:
    """Lateness 0 through the kernel layer against the plain engine, same batches, no Python
    in between: what the layer costs an in-order stream."""
    from suse import _core

    for tau in (100, 1000):
        q = suse.Query(QUERY, tau)
        makes = {"plain": lambda: _core.ExactEngine(q._dfa, tau, "any"),
                 "layer L=0": lambda: _core.OooExactEngine(q._dfa, tau, "any", 0)}
        secs = {}
        for name, make in makes.items():
            runs = []
            for _ in range(args.repeat):
                e = make()
                t0 = time.perf_counter()
                for i in range(0, len(ts), args.batch):
                    e.extend(chars[i:i + args.batch].tobytes(), ts[i:i + args.batch])
                    if args.readout:
                        e.totals()
                runs.append(time.perf_counter() - t0)
            secs[name] = min(runs)
        print(f"kernel, tau={tau}, in order: plain {len(ts) / secs['plain']:,.0f}, layer at lateness 0 "
              f"{len(ts) / secs['layer L=0']:,.0f} events/s, ratio {secs['layer L=0'] / secs['plain']:.2f}")


if __name__ == "__main__":
    main()
