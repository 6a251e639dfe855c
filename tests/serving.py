"""`suse serve` in a subprocess for the tests: started, polled over HTTP, stopped with Ctrl-C."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable

from helpers import ENV


class Server:
    """`suse serve job.toml ARGS` run in ``workdir``; stderr goes to a file read for the address."""

    def __init__(self, workdir: Path, args: list[str], job: str = "job.toml"):
        self.workdir = workdir
        self.log = workdir / f"serve-{time.monotonic_ns()}.log"
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "suse", "serve", job, *args], cwd=workdir, env=ENV,
                stdout=subprocess.DEVNULL, stderr=err,
            )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            m = re.search(r"suse serve: (http://127\.0\.0\.1:\d+/)", self.log.read_text())
            if m:
                self.url = m.group(1)
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"suse serve exited with {self.proc.returncode}:\n{self.log.read_text()}")
            time.sleep(0.2)
        self.proc.kill()
        raise AssertionError(f"suse serve did not start:\n{self.log.read_text()}")

    def get(self, path: str) -> dict:
        with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=60) as r:
            return json.loads(r.read())

    def post(self, path: str) -> dict:
        req = urllib.request.Request(self.url + path.lstrip("/"), method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def wait(self, until: Callable[[dict], bool], what: str, seconds: float = 60) -> dict:
        deadline = time.monotonic() + seconds
        while True:
            status = self.get("/api/status")
            if until(status):
                return status
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {status}"
            time.sleep(0.2)

    def wait_finished(self) -> None:
        self.wait(lambda s: s["finished"], "the end of the replay", 30)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=60)
