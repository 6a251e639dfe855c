"""Threads and summaries: events/s with 1 and 2 threads, each feeding a
`Summary` of its own, and with 2 threads feeding one stream into one shared summary.

Query `a(b*c)*d(e|f)g*`, window 100, size 100, strategy `suse`, Zipf(s=2) characters,
timestamp = index; each thread feeds its stream in batches of `--batch` events (the native
work per batch runs without the GIL; the Python around it holds it). The rate is total events
over wall time, best of `--repeat` runs, with the process's CPU time over wall time beside
it (near 2 when two threads run at once on two free cores). On a machine busy with other
work the rates say little about scaling; the last line does not depend on the load: how fast
a pure-Python thread counts while another thread is inside one native `extend` of all the
events, against while that thread sleeps: near 0% if the native work held the GIL, near
100% on a free second core, in between when the cores are busy.
Usage: python bench/threads.py [--events 200000] [--batch 10000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import threading
import time

import suse
from suse.io.synthetic import synthetic_stream
from timing import best_time


def feed(summary: suse.Summary, chars: bytes, ts, batch: int) -> None:
    for i in range(0, len(ts), batch):
        summary.extend(chars=chars[i:i + batch], timestamps=ts[i:i + batch])


def in_threads(jobs) -> None:
    threads = [threading.Thread(target=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def cpu_share(fn) -> float:
    """Process CPU time over wall time of one run of `fn`."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return (time.process_time() - c0) / (time.perf_counter() - w0)


def gil_free(work) -> float:
    """A spinning Python thread's rate while `work` runs, over its rate while we sleep as long."""
    count, stop = [0], [False]

    def spin():
        while not stop[0]:
            count[0] += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    time.sleep(0.2)
    before, w0 = count[0], time.perf_counter()
    work()
    wall = time.perf_counter() - w0
    during = count[0] - before
    before = count[0]
    time.sleep(wall)
    idle = count[0] - before
    stop[0] = True
    spinner.join()
    return during / max(idle, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000, help="events per thread")
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    stream = synthetic_stream("abcdefg", args.events, "zipf", 2.0, seed=1)
    chars, ts = stream.chars.encode("latin-1"), stream.timestamps
    query = suse.Query("a(b*c)*d(e|f)g*", window=100)

    def summary() -> suse.Summary:
        return suse.Summary(query, size=100, seed=1)

    def own(n: int):
        return lambda: in_threads([lambda: feed(summary(), chars, ts, args.batch) for _ in range(n)])

    def shared():
        # Both threads feed one stream into one summary: a thread takes the next batch and
        # feeds it under a hand-out lock (timestamps must not go back), so they take turns.
        s, handout, next_batch = summary(), threading.Lock(), [0]

        def worker():
            while True:
                with handout:
                    i = next_batch[0]
                    next_batch[0] += args.batch
                    if i >= len(ts):
                        return
                    s.extend(chars=chars[i:i + args.batch], timestamps=ts[i:i + args.batch])

        in_threads([worker, worker])

    print(f"cores {os.cpu_count()}, events per thread {args.events}, batch {args.batch}, "
          f"query a(b*c)*d(e|f)g* window 100 size 100 strategy suse")
    one, _ = best_time(own(1), args.repeat)
    two, _ = best_time(own(2), args.repeat)
    both, _ = best_time(shared, args.repeat)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"1 thread, own summary:      {args.events / one:>12,.0f} events/s  cpu/wall {cpu_share(own(1)):.2f}")
    print(f"2 threads, own summaries:   {2 * args.events / two:>12,.0f} events/s  cpu/wall {cpu_share(own(2)):.2f}"
          f"  ({one * 2 / two:.2f}x)")
    print(f"2 threads, shared summary:  {args.events / both:>12,.0f} events/s  (one stream, taking turns)")
    whole = gil_free(lambda: summary().extend(chars=chars, timestamps=ts))
    print(f"a Python thread during one native extend of {args.events} events: {whole:.0%} of its idle rate "
          "(0% if the GIL were held)")


if __name__ == "__main__":
    main()
