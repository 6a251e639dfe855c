"""The live page's engine (`suse serve`): matches among retained elements, exact numbers, the
replay against the batch job, checkpoints, and the command's errors (in a subprocess)."""
from __future__ import annotations

import random
import socket

import numpy as np
import pytest

from suse.dashboard.numbers import compact, number, recall
from suse.errors import InputError

from helpers import ROOT, run, synthetic_input

JOB = synthetic_input(300, 3) + """[query]
regex = "a(b*c)*d(e|f)g*"
window = 40
[summary]
size = 12
[evaluate]
at = "end"
exact = true
[output]
path = "{out}"
"""


# --- matches among retained elements -----------------------------------------------------------


def _explorer(regex: str, window: int, policy: str, chars: str, size: int):
    """A live page over one partition of `chars` (timestamp = index), evaluated at the end."""
    from suse.dashboard.live import Live, QueryEvents, Settings

    n = len(chars)
    events = QueryEvents("q", regex, window, "count", policy, [("p",)], np.zeros(n, np.int32),
                         np.arange(n, dtype=np.int64), np.frombuffer(chars.encode(), np.uint8), None)
    live = Live([events], Settings(size, ["suse", "fifo"], 1, True), False, 1.0)
    live.advance(n)
    live.refresh()
    return live


@pytest.mark.parametrize("policy", ["any", "next", "contiguous"])
@pytest.mark.parametrize("regex", ["A(B|C)*D", "A!xB*D", "AC"])
def test_match_explorer_agrees_with_the_engine(regex, policy):
    rng = random.Random(f"{regex} {policy}")
    chars = "".join(rng.choice("ABCDx") for _ in range(40))
    live = _explorer(regex, 5, policy, chars, size=12)
    for strategy in ("suse", "fifo"):
        count = int(live.partition(0, 0)["series"][-1]["counts"][strategy]["exact"])
        shown = [live.match(0, 0, strategy, n)["match"] for n in range(count + 1)]
        assert shown[-1] is None and None not in shown[:-1]  # exactly `count` matches
        found = [tuple(m) for m in shown[:-1]]
        assert len(set(found)) == count
        for i in range(len(live.elements(0, 0, strategy))):  # through element i: those that contain it
            through = []
            while (m := live.match(0, 0, strategy, len(through), containing=i)["match"]) is not None:
                through.append(tuple(m))
            assert through == [m for m in found if i in m]


def test_match_explorer_does_not_join_what_contiguity_separates():
    live = _explorer("AC", 10, "contiguous", "ABC", size=5)
    assert live.elements(0, 0, "suse") == [("A", 0, 1), ("C", 2, 1)]
    assert live.match(0, 0, "suse", 0) == {"match": None, "n": 0, "gave_up": False}
    assert _explorer("AC", 10, "any", "ABC", size=5).match(0, 0, "suse", 0)["match"] == [0, 1]


# --- numbers -----------------------------------------------------------------------------------


def test_numbers_are_exact_strings_with_a_compact_form():
    big = 3 * 10**39 + 123
    assert number(big) == {"exact": str(big), "compact": "3.0×10^39", "approx": float(big)}
    assert compact(125 * 10**39) == "1.2×10^41"  # rounded from the exact integer (half to even)
    assert compact(999_999) == "999999"
    assert number(10**400)["approx"] is None  # beyond floats: digits stay exact, no chart point
    assert recall(1, 3) == pytest.approx(1 / 3) and recall(0, 0) is None and recall(5, None) is None


def test_speed():
    from suse.dashboard import parse_speed

    assert parse_speed("1day/s", True, 10) == 86400
    assert parse_speed("6 hours / s", True, 10) == 21600
    assert parse_speed("500/s", False, 10) == 500
    assert parse_speed(None, False, 3000) == 10  # the whole input in 300 s
    with pytest.raises(InputError, match="a date-time column; give a duration per second"):
        parse_speed("500/s", True, 10)
    with pytest.raises(InputError, match="an integer column; give a positive number of its units per second"):
        parse_speed("1day/s", False, 10)
    with pytest.raises(InputError, match="expected stream time per second"):
        parse_speed("fast", False, 10)


# --- the replay against the batch job ----------------------------------------------------------


@pytest.fixture(scope="module")
def small(spark, tmp_path_factory):
    """The small job, its batch output (`suse run`'s code) and its classified events."""
    from suse.dashboard.source import classify
    from suse.spark.config import parse_config, tomllib
    from suse.spark.jobs import run_job

    tmp = tmp_path_factory.mktemp("small")
    cfg = parse_config(tomllib.loads(JOB.format(out=tmp / "out")))
    cfg.spark.master = None  # the shared session
    run_job(cfg)
    out = spark.read.parquet(str(tmp / "out")).toPandas()
    queries_, datetime_axis = classify(cfg)
    return cfg, out, queries_, datetime_axis


def _live(small, strategies=("suse",)):
    from suse.dashboard.live import Live, Settings

    cfg, _, queries_, datetime_axis = small
    return Live(queries_, Settings(cfg.summary.size, list(strategies), cfg.summary.seed, True), datetime_axis, 7.0)


def test_replay_in_uneven_steps_ends_where_the_batch_job_ends(small):
    _, out, _, _ = small
    live = _live(small)
    rng = random.Random(3)
    live.advance(0)
    while not live.finished:
        live.advance(rng.uniform(0.05, 3))
        if rng.random() < 0.3:
            live.refresh()
    live.refresh()
    rows = {r["key"][0]: r for r in live.table(0)}
    assert len(rows) == len(out) == 3
    for _, job_row in out.iterrows():
        row = rows[job_row["stream"]]
        assert row["counts"]["suse"]["exact"] == job_row["count"]
        assert row["exact"]["exact"] == job_row["exact_count"]
        assert row["events"] == job_row["events"]
        # the page's elements are the batch job's elements
        got = [tuple(e) for e in live.partition(0, row["pid"])["elements"]["suse"]]
        assert got == [(e["char"], e["timestamp"], e["value"]) for e in job_row["elements"]]


def test_history_keeps_every_evaluation_and_only_changes(small):
    live = _live(small, ("suse", "fifo"))
    live.advance(0)
    live.advance(10)  # 70 time units
    first = live.refresh()
    second = live.refresh()  # nothing new happened: same numbers, still an evaluation
    live.advance(10)
    third = live.refresh()
    assert [first["id"], second["id"], third["id"]] == [0, 1, 2]
    assert (first["at"], third["at"]) == (70, 140)
    detail = live.partition(0, 0)
    assert [p["evaluation"] for p in detail["series"]] == [0, 1, 2]
    assert detail["series"][0]["counts"] == detail["series"][1]["counts"]
    assert len(live.query(0).parts[0].history) <= 2  # the unchanged evaluation stored nothing
    assert set(detail["elements"]) == {"suse", "fifo"}


def test_checkpoint_resumes_where_it_stopped(small, tmp_path):
    from suse.dashboard import checkpoint as ckpt

    cfg, _, queries_, datetime_axis = small
    job = {"job": "small"}
    ckpt.save_events(tmp_path, queries_, datetime_axis, job)
    a = _live(small, ("suse", "random"))
    a.advance(0)
    a.advance(13)
    a.refresh()
    ckpt.save_state(tmp_path, a)

    loaded, axis = ckpt.load_events(tmp_path, job)
    b = _live((cfg, None, loaded, axis), ("suse", "random"))
    assert ckpt.load_state(tmp_path, b)
    assert b.status() == a.status()
    for live in (a, b):  # both go on to the end
        live.advance(1000)
        live.refresh()
    assert b.table(0) == a.table(0)
    assert b.partition(0, 1) == a.partition(0, 1)
    with pytest.raises(InputError, match="written for a different job"):
        ckpt.load_events(tmp_path, {"job": "other"})


def test_empty_input_is_a_clear_error(small):
    from suse.dashboard.live import Live, QueryEvents, Settings

    q = small[2][0]
    empty = QueryEvents(q.label, q.regex, q.window, q.aggregate, q.policy, [], np.empty(0, np.int32),
                        np.empty(0, np.int64), np.empty(0, np.uint8), None)
    with pytest.raises(InputError, match="no events with a character of the query"):
        Live([empty], Settings(5, ["suse"], 0, False), False, 1.0)


# --- the command: errors before the server starts ----------------------------------------------


def test_a_bad_job_file_gives_the_same_messages_as_suse_run(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(JOB.format(out=tmp_path / "out").replace("size = 12", "size = 'big'").replace("regex", "regx"))
    served, ran = run("serve", str(bad), "--port", "0", timeout=120), run("run", str(bad), timeout=120)
    assert served.returncode == ran.returncode == 2
    assert served.stderr == ran.stderr
    assert "summary.size: Input should be a valid integer" in served.stderr and "query.regx: unknown key" in served.stderr
    assert "Traceback" not in served.stderr


def test_a_port_in_use_is_one_clear_line(tmp_path):
    job = tmp_path / "job.toml"
    job.write_text(JOB.format(out=tmp_path / "out"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run("serve", str(job), "--port", str(port), cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: port {port} on 127.0.0.1 is in use; pick another with --port"
    assert not (tmp_path / "out.live").exists()  # failed before any work


@pytest.mark.parametrize(
    "args, message",
    [
        (["--replay", "planes"], "--replay: no bundled job 'planes'; choose one of flights, stocks, synthetic"),
        (["--replay", "flights", "--strategies", "fifo,best"], "--strategies: 'best' is not one of suse, present, fifo, random"),
        ([], "give a job file or --replay NAME"),
    ],
)
def test_bad_arguments(args, message):
    proc = run("serve", *args, "--port", "0", timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert message in proc.stderr


def test_bundled_jobs_are_the_examples():
    from suse.dashboard import BUNDLED, bundled_job

    for name in BUNDLED:
        assert bundled_job(name) == (ROOT / "examples" / f"{name}.toml").read_text(encoding="utf-8")
