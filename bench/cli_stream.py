"""`suse exact` over generated stream files of growing length: wall time, events/s and peak
memory (the CLI reads and feeds the stream in pieces, so memory should not grow with it).

Each run is a fresh process; its time includes starting Python and importing suse.
Usage: python bench/cli_stream.py [--events 1000000,4000000] [--format text,csv] [--dir /tmp]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def write_stream(path: Path, n: int, fmt: str) -> None:
    """n events A, B, C, A, ... at timestamps 0, 1, ... (CSV with a value column)."""
    with open(path, "w") as f:
        if fmt == "csv":
            f.write("char,timestamp,value\n")
        for lo in range(0, n, 1_000_000):
            t = np.arange(lo, min(n, lo + 1_000_000))
            chars = np.array(list("ABC"))[t % 3].tolist()
            f.write("".join(f"{c},{s},1\n" if fmt == "csv" else f"{c} {s}\n" for c, s in zip(chars, t.tolist())))


def peak_rss_and_seconds(args: list[str]) -> tuple[int, float]:
    """Peak resident KiB and wall seconds of `python -m suse ARGS`, measured in a fresh process
    (RUSAGE_CHILDREN covers every child it waited for: one only)."""
    code = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); assert r.returncode == 0; "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code, sys.executable, "-m", "suse", *args], capture_output=True,
                         text=True, check=True)
    kib, seconds = out.stdout.split()
    return int(kib), float(seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", default="1000000,4000000")
    ap.add_argument("--format", default="text,csv")
    ap.add_argument("--dir", default=None, help="where to write the stream files (default: a temporary folder)")
    args = ap.parse_args()
    sizes = [int(n) for n in args.events.split(",")]
    query = ["exact", "AB*C", "-w", "5", "--evaluate-at", "10,2000000"]
    print(f"suse {' '.join(query)} FILE; one fresh process per run (start-up included)")
    print(f"{'format':>6} {'events':>10} {'MB':>8} {'seconds':>8} {'events/s':>12} {'peak MiB':>9}")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for fmt in args.format.split(","):
            for n in sizes:
                path = Path(tmp) / f"stream-{n}.{fmt}"
                write_stream(path, n, fmt)
                kib, seconds = peak_rss_and_seconds([*query, str(path)])
                print(f"{fmt:>6} {n:>10,} {path.stat().st_size / 1e6:>8.1f} {seconds:>8.2f} {n / seconds:>12,.0f} "
                      f"{kib / 1024:>9.0f}")
                path.unlink()


if __name__ == "__main__":
    main()
