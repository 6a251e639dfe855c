"""`suse serve` over a streaming job: a watched directory, files arriving while it runs and
while it is stopped, a late event; the page's numbers against the batch API over the same events."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from serving import ENV, Server

JOB = """
name = "watched"
mode = "streaming"
characters = "c"
[input]
path = "in"
format = "json"
schema = "k string, t long, c string, v long"
timestamp = "t"
partition_by = ["k"]
value = "v"
[query]
regex = "A(B|C)*C"
window = 20
[summary]
size = 10
[output]
path = "out"
[streaming]
checkpoint = "chk"
trigger = "1 second"
[spark]
master = "local[1]"
"""
ARGS = ["--port", "0", "--strategies", "fifo", "--refresh", "0"]


def rows(seed: int, times: range, keys: str) -> list[dict]:
    rng = random.Random(seed)
    return [{"k": k, "t": t, "c": rng.choice("ABCZ"), "v": rng.randint(0, 9)} for t in times for k in keys]


def write(path, events) -> None:
    tmp = path.with_suffix(".tmp")  # a file source must never see a half-written file
    tmp.write_text("".join(json.dumps(e) + "\n" for e in events))
    tmp.rename(path)


def expected(events) -> dict:
    """The engine over each partition's events in time order (one event per key and time, so
    no ties), with the job's summary: what the stream must report."""
    import suse

    q = suse.Query("A(B|C)*C", 20)
    out = {}
    for k in sorted({e["k"] for e in events}):
        mine = sorted((e for e in events if e["k"] == k and e["c"] in q.alphabet), key=lambda e: e["t"])
        out[k] = {"events": len(mine)}
        for strategy in ("suse", "fifo"):
            s = suse.Summary(q, 10, strategy, seed=0)
            s.extend(events=[(e["c"], e["t"], e["v"]) for e in mine])
            out[k][strategy] = str(s.result().count)
    return out


def table(server: Server) -> dict:
    server.post("/api/refresh")
    return {r["key"][0]: {"events": r["events"], "suse": r["counts"]["suse"]["exact"],
                          "fifo": r["counts"]["fifo"]["exact"]} for r in server.get("/api/table")}


@pytest.mark.slow
def test_a_watched_directory_across_a_restart(tmp_path):
    (tmp_path / "job.toml").write_text(JOB)
    (tmp_path / "in").mkdir()
    first, second, third = rows(1, range(0, 60), "xy"), rows(2, range(60, 90), "xyz"), rows(3, range(90, 110), "xy")
    late = {"k": "x", "t": 5, "c": "A", "v": 1}  # older than x's watermark once the second file is in

    write(tmp_path / "in" / "1.json", first)
    server = Server(tmp_path, ARGS)
    try:
        server.wait(lambda s: s["batches"] >= 1, "the first micro-batch")
        assert table(server) == expected(first)

        write(tmp_path / "in" / "2.json", second + [late])
        status = server.wait(lambda s: s["batches"] >= 2, "the second micro-batch")
        assert status["late"] == 1 and status["clock"] == 89
        assert table(server) == expected(first + second)  # the late event is counted, not fed
    finally:
        code = server.stop()
    assert code == 0 and "stopped; checkpoint written to out.live" in server.log.read_text()

    write(tmp_path / "in" / "3.json", third)  # arrives while the page is down
    again = Server(tmp_path, ARGS)
    try:
        assert "resumed after micro-batch 1" in again.log.read_text()
        status = again.wait(lambda s: s["batches"] >= 3, "the file that arrived while stopped")
        assert status["late"] == 1 and status["evaluations"] == 2
        assert table(again) == expected(first + second + third)  # every event once
        series = again.get("/api/partition?q=0&pid=0")["series"]
        assert [p["evaluation"] for p in series] == [0, 1, 2]
    finally:
        assert again.stop() == 0

    state = tmp_path / "out.live" / "stream.json"  # edited by hand: one line, exit 2
    saved = json.loads(state.read_text())
    saved["parts"]["abc"] = saved["parts"].pop("0")
    state.write_text(json.dumps(saved))
    proc = subprocess.run([sys.executable, "-m", "suse", "serve", "job.toml", *ARGS], cwd=tmp_path,
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error")]  # after Spark's start-up notes
    assert len(errors) == 1 and proc.stderr.splitlines()[-1] == errors[0], proc.stderr
    assert errors[0].startswith("error: checkpoint out.live/stream.json is not valid: parts.abc: "), proc.stderr


def test_streaming_refusals_are_those_of_suse_run(spark, tmp_path, monkeypatch):
    import subprocess
    import sys

    from typer.testing import CliRunner

    from serving import ENV
    from suse.cli import commands  # noqa: F401  (registers the commands)
    from suse.cli.app import app

    (tmp_path / "in").mkdir()
    (tmp_path / "job.toml").write_text(JOB.replace("[output]", "[evaluate]\nexact = true\n[output]"))
    served = subprocess.run([sys.executable, "-m", "suse", "serve", "job.toml", "--port", "0"], cwd=tmp_path,
                            capture_output=True, text=True, env=ENV, timeout=60)
    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(app, ["run", "job.toml"], env={"COLUMNS": "200"})  # on the shared session
    assert served.returncode == ran.exit_code == 2
    message = "evaluate: a streaming job reports every changed partition once per micro-batch"
    assert served.stderr.startswith("error: ") and message in served.stderr, served.stderr
    assert served.stderr.count("\n") == 1, served.stderr
    assert served.stderr.strip() == ran.stderr.strip()


@pytest.mark.parametrize("extra, message", [(["--speed", "10/s"], "--speed applies to a replayed batch job")])
def test_stream_options(tmp_path, extra, message):
    import subprocess
    import sys

    from serving import ENV

    (tmp_path / "job.toml").write_text(JOB)
    proc = subprocess.run([sys.executable, "-m", "suse", "serve", "job.toml", "--port", "0", *extra], cwd=tmp_path,
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr
