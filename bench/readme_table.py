"""The README's benchmark rows in one interleaved run: this build against an older one.

Workload (the paper's): query `a(b*c)*d(e|f)g*`, characters Zipf(s=2) over `abcdefg`,
timestamp = index. Rows: the summary, strategy `suse`, given probabilities, 10,000 events
(seed 0) at (|S|, τ) = (100, 100), (500, 100), (500, 500); the exact engine, 100,000 events
(seed 1), τ = 100. Each build runs in one worker process of its own, which times one
`extend` or `exact` call per request; the builds take turns call by call (`--repeat` pairs
per row and round, the order alternating pair by pair), for `--rounds` rounds. A row's
figure is its best over all calls. Its ratio is the median over the pairs of the two
builds' times: the host has fast and slow phases of seconds to minutes, so only calls run
back to back see the same host (a best taken per build can pair one build's fast phase
with the other's slow one: two runs minutes apart gave 1.64× and 2.71× at (500, 100)).
The counts of every build are printed beside it (they must agree). A second table gives
the same calls timed on CPU (the calling thread's CPU time).

`--old` is an older build: its Python (`.../.venv/bin/python`) or a checkout holding
`.venv`. `--cpp` is a command running the paper's C++ on one setting, with `{size}`, `{tau}`
and `{stream}` (this workload written as `symbol timestamp` lines, see `--stream`) filled in;
its whole process is timed, best of `--repeat`. `--stream FILE` also writes the input of
`core/kernel/examples/summary_bench.rs` (automaton, given probabilities, events), e.g. for
callgrind (`--events`, `--seed`), and exits.
Usage: python bench/readme_table.py [--old ../suse-0.1] [--rounds 5] [--cpp 'CMD {size} {tau} {stream}']
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from summary_synthetic import zipf_probabilities

REGEX = "a(b*c)*d(e|f)g*"
LETTERS = "abcdefg"
SUMMARY_ROWS = [(100, 100), (500, 100), (500, 500)]
EXACT_TAU = 100


@functools.cache
def workload(events: int, seed: int):
    """The stream, as whichever suse this process imports builds it; once per worker."""
    from suse.io.synthetic import synthetic_stream

    return synthetic_stream(LETTERS, events, "zipf", 2.0, seed=seed)


def run_one(kind: str, size: int, tau: int, events: int, seed: int, repeat: int, dry: bool = False) -> dict:
    """One row in this process (whichever suse it imports): best seconds and the count.
    `dry` does everything but the timed call (an instruction count's baseline)."""
    import suse

    stream = workload(events, seed)
    query = suse.Query(REGEX, window=tau)
    best, cpu, count = float("inf"), float("inf"), None
    for _ in range(0 if dry else repeat):
        if kind == "exact":
            t0, c0 = time.perf_counter(), time.thread_time()
            r = suse.exact(query, stream)
        else:
            s = suse.Summary(query, size=size, strategy="suse", seed=seed, probabilities=zipf_probabilities(LETTERS))
            t0, c0 = time.perf_counter(), time.thread_time()
            s.extend(stream.chars, stream.timestamps)
            r = None
        cpu = min(cpu, time.thread_time() - c0)
        best = min(best, time.perf_counter() - t0)
        count = (r if r is not None else s.result()).count
    return {"seconds": best, "cpu_seconds": cpu, "count": str(count)}


def serve() -> None:
    """A build's worker: one timed call per row read from stdin, its figures as a JSON line."""
    for line in sys.stdin:
        kind, size, tau, events, seed = line.strip().split(":")
        print(json.dumps(run_one(kind, int(size), int(tau), int(events), int(seed), 1)), flush=True)


class Worker:
    """A build's Python running `serve`."""

    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen([python, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def time(self, spec: str) -> dict:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(spec + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise SystemExit(f"a worker stopped (exit code {self.process.wait()}) on {spec}")
        return json.loads(answer)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def write_stream(path: str, events: int, seed: int, with_automaton: bool) -> None:
    """The workload as text: for summary_bench, a header (states, start, alphabet; finals;
    the transition table; the letter probabilities) before the `symbol timestamp` lines."""
    from suse.io.synthetic import synthetic_stream
    from suse.query import compile_regex

    stream = synthetic_stream(LETTERS, events, "zipf", 2.0, seed=seed)
    a = compile_regex(REGEX)
    code = {c: i for i, c in enumerate(a.alphabet)}
    lines = []
    if with_automaton:
        p = zipf_probabilities(LETTERS)
        lines += [f"{a.n_states} {a.start} {a.alphabet}", " ".join("1" if s in a.finals else "0" for s in a.states),
                  " ".join(map(str, a.table())), " ".join(repr(p[c]) for c in a.alphabet)]
    lines += [f"{code[c]} {t}" for c, t in zip(stream.chars, stream.timestamps.tolist())]
    Path(path).write_text("\n".join(lines) + "\n")


def python_of(build: str) -> str:
    path = Path(build)
    return str(path / ".venv" / "bin" / "python") if path.is_dir() else str(path)


def machine() -> str:
    model = ""
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{model or platform.processor()}, {os.cpu_count()} cores, Linux {platform.release()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", help="an older build: its python, or a checkout with .venv")
    ap.add_argument("--cpp", help="command for the paper's C++ with {size} {tau} {stream}")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--exact-events", type=int, default=100_000)
    ap.add_argument("--stream", help="write summary_bench's input to this file and exit")
    ap.add_argument("--seed", type=int, default=0, help="the stream's seed, with --stream")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dry", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve()
        return
    if args.one:
        kind, size, tau, events, seed = args.one.split(":")
        print(json.dumps(run_one(kind, int(size), int(tau), int(events), int(seed), args.repeat, args.dry)))
        return
    if args.stream:
        write_stream(args.stream, args.events, args.seed, True)
        return
    rows = [("summary", size, tau, args.events, 0) for size, tau in SUMMARY_ROWS]
    rows.append(("exact", 0, EXACT_TAU, args.exact_events, 1))
    builds = {"now": sys.executable}
    if args.old:
        builds["old"] = python_of(args.old)
    best: dict = {}
    calls: dict = {}  # (clock..., build, row) -> seconds per call, paired by index across builds
    counts: dict = {}
    loads = [os.getloadavg()[0]]
    workers = {name: Worker(python) for name, python in builds.items()}
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "stream.txt")
        if args.cpp:
            write_stream(plain, args.events, 0, False)
        for _ in range(args.rounds):
            for row in rows:
                spec = ":".join(map(str, row))
                for pair in range(args.repeat):
                    # The order alternates: a call right after a long one (0.1 at (500, 500)
                    # runs for seconds) can find the host slower.
                    for name, worker in list(workers.items())[:: -1 if pair % 2 else 1]:
                        r = worker.time(spec)
                        for key, seconds in (((name, row), r["seconds"]), (("oncpu", name, row), r["cpu_seconds"])):
                            best[key] = min(best.get(key, float("inf")), seconds)
                            calls.setdefault(key, []).append(seconds)
                        counts.setdefault((name, row), r["count"])
                if args.cpp and row[0] == "summary":
                    cmd = args.cpp.format(size=row[1], tau=row[2], stream=plain)
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        subprocess.run(shlex.split(cmd), check=True, capture_output=True)
                        best["cpp", row] = min(best.get(("cpp", row), float("inf")), time.perf_counter() - t0)
            loads.append(os.getloadavg()[0])
    for worker in workers.values():
        worker.close()
    print(f"{REGEX}, Zipf(2); summary: strategy suse, given probabilities, {args.events:,} events, seed 0; "
          f"exact: {args.exact_events:,} events, seed 1, τ = {EXACT_TAU}")
    print(f"best of {args.rounds} rounds × {args.repeat} pairs of calls, the builds taking turns (ratios: median of the pairs); machine: {machine()}; "
          f"load average (1 min) {min(loads):.1f}–{max(loads):.1f}")
    if args.old:
        print(f"old build: {builds['old']}")

    def rate(name: str, row: tuple, clock: tuple = ()) -> str:
        seconds = best.get((*clock, name, row))
        if seconds is None:
            return "—"
        r = row[3] / seconds
        return f"{r / 1e6:.2f} M" if r >= 1e6 else f"{r / 1e3:.1f} k" if r >= 1e3 else f"{r:.0f}"

    def label(row: tuple) -> str:
        kind, size, tau, events, _ = row
        return f"(\\|S\\|, τ) = ({size}, {tau})" if kind == "summary" else f"exact, {events:,} events, τ = {tau}"

    def ratio(row: tuple, clock: tuple = ()) -> str:
        old, now = (*clock, "old", row), (*clock, "now", row)
        if old not in calls:
            return "—"
        paired = [o / n for o, n in zip(calls[old], calls[now])]
        return f"{statistics.median(paired):.2f} ({min(paired):.2f}–{max(paired):.2f})"

    print()
    print("| setting | suse now | old build | paper's C++ | now / old, median of pairs (range) | counts agree |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        agree = "—" if ("old", row) not in counts else "yes" if counts["old", row] == counts["now", row] else "NO"
        print(f"| {label(row)} | {rate('now', row)} | {rate('old', row)} | {rate('cpp', row)} | {ratio(row)} | {agree} |")
    print()
    print("On CPU (the same runs):")
    print()
    print("| setting | suse now | old build | now / old, median of pairs (range) |")
    print("|---|---:|---:|---:|")
    cpu = ("oncpu",)
    for row in rows:
        print(f"| {label(row)} | {rate('now', row, cpu)} | {rate('old', row, cpu)} | {ratio(row, cpu)} |")
    print()
    for row in rows:
        print(f"count {row[0]} {row[1]}:{row[2]}: {counts['now', row]}")


if __name__ == "__main__":
    main()
