"""The live page under a burst of readers: N clients at once ask `GET /api/status` while a
replay runs (the former hand-written server's listen backlog of 5 left some of 200 waiting
for SYN retries until they timed out).

`suse serve --replay synthetic` is started on a free port of 127.0.0.1 (classification by
Spark first: about half a minute), then each round opens `--clients` connections at the same
moment (a barrier) and reports how many answered within `--timeout`, and the median and
slowest answer. Only 127.0.0.1 is contacted, and each round is bounded by its client count.

    python bench/dashboard_load.py [--clients 200] [--rounds 5] [--timeout 40] [--speed 20/s]
"""
from __future__ import annotations

import argparse
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path


def start(workdir: Path, speed: str) -> tuple[subprocess.Popen, str, Path]:
    log = workdir / "serve.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "suse", "serve", "--replay", "synthetic", "--port", "0", "--speed", speed,
             "--refresh", "0", "--checkpoint", str(workdir / "live")],
            cwd=workdir, stdout=subprocess.DEVNULL, stderr=err,
        )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        m = re.search(r"suse serve: (http://127\.0\.0\.1:\d+/)", log.read_text())
        if m:
            return proc, m.group(1), log
        if proc.poll() is not None:
            raise SystemExit(f"suse serve exited with {proc.returncode}:\n{log.read_text()}")
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("suse serve did not start")


def burst(url: str, clients: int, timeout: float) -> tuple[list[float], int]:
    """Seconds each answered client waited, and how many did not answer in time."""
    barrier = threading.Barrier(clients)
    waited: list[float] = []
    failed = [0]
    lock = threading.Lock()

    def one() -> None:
        barrier.wait()
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(url + "api/status", timeout=timeout) as r:
                r.read()
            with lock:
                waited.append(time.perf_counter() - t0)
        except OSError:
            with lock:
                failed[0] += 1

    threads = [threading.Thread(target=one) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return waited, failed[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=40.0, help="seconds a client waits for its answer")
    ap.add_argument("--speed", default="20/s", help="replay speed: the replay must outlast the rounds")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url, log = start(Path(tmp), args.speed)
        try:
            print(f"suse serve --replay synthetic --speed {args.speed}: {args.clients} concurrent GET /api/status, "
                  f"timeout {args.timeout:g} s")
            for i in range(args.rounds):
                waited, failed = burst(url, args.clients, args.timeout)
                status = urllib.request.urlopen(url + "api/status", timeout=args.timeout).read()
                finished = b'"finished":true' in status.replace(b" ", b"")
                med = statistics.median(waited) if waited else float("nan")
                worst = max(waited) if waited else float("nan")
                print(f"round {i + 1}: {len(waited)}/{args.clients} answered, {failed} failed; "
                      f"median {med * 1000:.0f} ms, slowest {worst * 1000:.0f} ms"
                      + ("  (replay already finished)" if finished else ""))
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)


if __name__ == "__main__":
    main()
