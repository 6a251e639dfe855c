"""The live page's HTTP side (`suse serve`): the Starlette app under uvicorn, in this process over
the small job's replay; then the command itself in a subprocess (slow) for what only a whole
run shows: Spark's JVM ended, signals, a checkpoint edited by hand."""
from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import ENV, run
from serving import Server
from test_dashboard import JOB, _live, small  # noqa: F401  (small: the fixture)


@pytest.fixture
def served(small):  # noqa: F811
    """A PageServer on a free port over the small job's replay, serving in a thread."""
    from suse.dashboard.server import PageServer

    server = PageServer(0)
    live = _live(small)
    live.advance(0)
    live.refresh()
    server.page.live = live
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()  # requests wait in the listen queue until uvicorn takes them
    yield server
    server.shutdown()
    thread.join(30)
    server.close()
    assert not thread.is_alive()


def request(server, method: str, path: str, headers: dict | None = None, timeout: float = 30) -> tuple[int, bytes]:
    host, port = server.address
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def strict_json(body: bytes):
    def refuse(name):
        raise AssertionError(f"not JSON: {name}")

    return json.loads(body, parse_constant=refuse)


def test_only_local_host_names_are_answered(served):
    port = served.address[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        status, body = request(served, "GET", "/api/status", {"Host": host})
        assert status == 200 and "clock" in strict_json(body)
    # a page whose DNS name was rebound to 127.0.0.1 sends its own name
    for host in (f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil.example", ""):
        status, body = request(served, "GET", "/api/status", {"Host": host})
        assert status == 400 and b"clock" not in body, host


def test_other_sites_cannot_refresh(served):
    port = served.address[1]
    before = served.page.live.status()["evaluations"]
    refused = [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},  # a sandboxed frame or a file
        {"Origin": f"http://127.0.0.1:{port + 1}"},  # another local server
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "cross-site", "Origin": f"http://127.0.0.1:{port}"},
    ]
    for headers in refused:
        status, body = request(served, "POST", "/api/refresh", headers)
        assert status == 403 and "another site" in strict_json(body)["error"], headers
    assert served.page.live.status()["evaluations"] == before
    allowed = [
        {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"},  # the page itself
        {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"},
        {},  # curl
    ]
    for headers in allowed:
        status, body = request(served, "POST", "/api/refresh", headers)
        assert status == 200 and "id" in strict_json(body), headers
    assert served.page.live.status()["evaluations"] == before + len(allowed)


TRAVERSALS = [
    "/static/../../../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd", "/static/%2e%2e/%2e%2e/etc/passwd",
    "/../../etc/passwd", "/static//etc/passwd", "/static/....//....//etc/passwd", "/static/..%5c..%5cserver.py",
    "/static/%252e%252e%252fserver.py", "/static/index.html/../../server.py", "/static/../server.py",
    "/static/%2e%2e%2fserver.py", "/static/.%2e/server.py", "/%2e%2e/%2e%2e/etc/passwd", "/static/app.js%00.py",
    "//etc/passwd", "/static/plotly.min.js/../../../../etc/passwd", "/api/../../etc/passwd",
    "/static/__init__.py", "/static/server.py", "/static/..",
]


def test_paths_outside_the_page_are_refused(served):
    for path in TRAVERSALS:
        status, body = request(served, "GET", path)
        assert status in (400, 404), path
        assert b"root:" not in body and b"import " not in body, path
    status, body = request(served, "GET", "/static/app.js")
    assert status == 200 and b"function" in body


def test_errors_are_json_and_json_is_never_infinite(served):
    status, body = request(served, "GET", "/nowhere")
    assert status == 404 and strict_json(body) == {"error": "no such page: /nowhere"}
    status, body = request(served, "GET", "/api/refresh")
    assert status == 405 and "GET is not allowed" in strict_json(body)["error"]
    status, body = request(served, "GET", "/api/partition?pid=" + "9" * 5000)
    assert status == 400 and "pid: '999" in strict_json(body)["error"] and len(body) < 200
    served.page.refresh_seconds = float("inf")  # `serve` refuses it; the page would not pass it on anyway
    status, body = request(served, "GET", "/api/meta")
    assert status == 500 and "internal error" in strict_json(body)["error"]
    served.page.live, live = None, served.page.live
    status, body = request(served, "GET", "/api/status")
    assert status == 503 and strict_json(body) == {"error": "the job is still loading"}
    served.page.live = live


def test_a_burst_of_readers_all_answer_during_a_replay(served):
    """200 connections at once (the old server's listen backlog of 5 left some waiting for SYN
    retries past 40 s); a thread plays and refreshes meanwhile."""
    live = served.page.live
    stop = threading.Event()

    def play():
        while not stop.wait(0.01):
            live.advance(0.05)
            live.refresh()

    player = threading.Thread(target=play)
    player.start()
    clients = 200
    barrier = threading.Barrier(clients)
    answers: list[tuple[int, float]] = []

    def one():
        barrier.wait()
        t0 = time.monotonic()
        try:
            status, body = request(served, "GET", "/api/status", timeout=30)
            strict_json(body)
        except OSError:
            status = 0
        answers.append((status, time.monotonic() - t0))

    threads = [threading.Thread(target=one) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    player.join()
    assert sorted(s for s, _ in answers) == [200] * clients
    assert max(w for _, w in answers) < 20, max(w for _, w in answers)


# --- the command in a subprocess -----------------------------------------------------------------


def java_descendants(pid: int) -> list[int]:
    """Processes under `pid` (any depth) running java."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parent[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                continue
    found = []
    for child in parent:
        p = child
        while p in parent and p not in (0, 1, pid):
            p = parent[p]
        if p == pid and child != pid:
            try:
                if "java" in (Path("/proc") / str(child) / "comm").read_text():
                    found.append(child)
            except OSError:
                pass
    return found


@pytest.mark.slow
def test_spark_ends_after_classifying_sigterm_saves_and_an_edited_checkpoint_is_one_line(tmp_path):
    (tmp_path / "job.toml").write_text(JOB.format(out="out"))
    args = ["--port", "0", "--refresh", "0", "--speed", "1000/s"]
    server = Server(tmp_path, args)
    deadline = time.monotonic() + 30  # the JVM exits on its own once its input closes
    while java_descendants(server.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert java_descendants(server.proc.pid) == []
    server.wait_finished()
    server.post("/api/refresh")
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    log = server.log.read_text()
    assert "stopped; checkpoint written to out.live" in log and "Traceback" not in log

    state = tmp_path / "out.live" / "state.json"
    saved = json.loads(state.read_text())
    parts = saved["queries"][0]["parts"]
    parts["abc"] = parts.pop(next(iter(parts)))
    state.write_text(json.dumps(saved))
    proc = run("serve", "job.toml", *args, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: checkpoint out.live/state.json is not valid: queries[0].parts.abc: ")
    assert proc.stderr.count("\n") == 1, proc.stderr


DURING_CLASSIFICATION = 4  # seconds after the JVM is up (also tried: 0.5 and 12)


@pytest.mark.slow
def test_ctrl_c_while_classifying_is_one_line(tmp_path):
    (tmp_path / "job.toml").write_text(JOB.format(out="out"))
    log = tmp_path / "serve.log"
    with open(log, "w") as err:  # its own process group, as a shell's job: Ctrl-C reaches the JVM too
        proc = subprocess.Popen([sys.executable, "-m", "suse", "serve", "job.toml", "--port", "0"], cwd=tmp_path,
                                env=ENV, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "WARNING: Using incubator modules" not in log.read_text():  # the JVM is up: Spark works
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(DURING_CLASSIFICATION)
        assert proc.poll() is None, log.read_text()
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    lines = log.read_text().splitlines()
    assert lines[-1] == "stopped before the page was ready; nothing saved", lines
    # the JVM's own start-up notes: the interrupt waits until Spark has started, then stops it
    jvm = ("WARNING: ", "Setting default log level to", "To adjust logging level use")
    assert [line for line in lines if "classifying" not in line and not line.startswith(jvm)] == lines[-1:], lines
    assert not (tmp_path / "out.live" / "state.json").exists()
