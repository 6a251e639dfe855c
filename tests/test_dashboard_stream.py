"""`suse serve` over a streaming job: a watched directory, files arriving while it runs and
while it is stopped, a late event; the page's numbers against the batch API over the same events."""
from __future__ import annotations

import json
import random

import pytest

from serving import Server

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


def expected(spark, events) -> dict:
    """The batch API over the same events: one summary per partition, like the stream's."""
    from suse.spark import aggregate

    df = spark.createDataFrame(events, "k string, t long, c string, v long")
    out = {}
    for strategy in ("suse", "fifo"):
        for r in aggregate(df, "A(B|C)*C", 20, "c", "t", ["k"], "v", 10, strategy).collect():
            out.setdefault(r["k"], {"events": r["events"]})[strategy] = r["count"]
    return out


def table(server: Server) -> dict:
    server.post("/api/refresh")
    return {r["key"][0]: {"events": r["events"], "suse": r["counts"]["suse"]["exact"],
                          "fifo": r["counts"]["fifo"]["exact"]} for r in server.get("/api/table")}


def test_a_watched_directory_across_a_restart(spark, tmp_path):
    (tmp_path / "job.toml").write_text(JOB)
    (tmp_path / "in").mkdir()
    first, second, third = rows(1, range(0, 60), "xy"), rows(2, range(60, 90), "xyz"), rows(3, range(90, 110), "xy")
    late = {"k": "x", "t": 5, "c": "A", "v": 1}  # older than x's watermark once the second file is in

    write(tmp_path / "in" / "1.json", first)
    server = Server(tmp_path, ARGS)
    try:
        server.wait(lambda s: s["batches"] >= 1, "the first micro-batch")
        assert table(server) == expected(spark, first)

        write(tmp_path / "in" / "2.json", second + [late])
        status = server.wait(lambda s: s["batches"] >= 2, "the second micro-batch")
        assert status["late"] == 1 and status["clock"] == 89
        assert table(server) == expected(spark, first + second)  # the late event is counted, not fed
    finally:
        code = server.stop()
    assert code == 0 and "stopped; checkpoint written to out.live" in server.log.read_text()

    write(tmp_path / "in" / "3.json", third)  # arrives while the page is down
    again = Server(tmp_path, ARGS)
    try:
        assert "resumed after micro-batch 1" in again.log.read_text()
        status = again.wait(lambda s: s["batches"] >= 3, "the file that arrived while stopped")
        assert status["late"] == 1 and status["evaluations"] == 2
        assert table(again) == expected(spark, first + second + third)  # every event once
        series = again.get("/api/partition?q=0&pid=0")["series"]
        assert [p["evaluation"] for p in series] == [0, 1, 2]
    finally:
        assert again.stop() == 0


def test_streaming_refusals_are_those_of_suse_run(tmp_path):
    import subprocess
    import sys

    from serving import ENV

    (tmp_path / "in").mkdir()
    (tmp_path / "job.toml").write_text(JOB.replace("[output]", "[evaluate]\nexact = true\n[output]"))
    served = subprocess.run([sys.executable, "-m", "suse", "serve", "job.toml", "--port", "0"], cwd=tmp_path,
                            capture_output=True, text=True, env=ENV, timeout=180)
    ran = subprocess.run([sys.executable, "-m", "suse", "run", "job.toml"], cwd=tmp_path,
                         capture_output=True, text=True, env=ENV, timeout=180)
    assert served.returncode == ran.returncode == 2
    message = "error: evaluate: a streaming job reports every changed partition once per micro-batch"
    assert served.stderr.strip().splitlines()[-1].startswith(message), served.stderr
    assert ran.stderr.strip().splitlines()[-1].startswith(message), ran.stderr


@pytest.mark.parametrize("extra, message", [(["--speed", "10/s"], "--speed applies to a replayed batch job")])
def test_stream_options(tmp_path, extra, message):
    import subprocess
    import sys

    from serving import ENV

    (tmp_path / "job.toml").write_text(JOB)
    proc = subprocess.run([sys.executable, "-m", "suse", "serve", "job.toml", "--port", "0", *extra], cwd=tmp_path,
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr
