"""The live page's engine (`suse serve`): matches among retained elements, exact numbers, the
replay against the batch job, checkpoints, and the command's errors (in a subprocess)."""
from __future__ import annotations

import random
import socket

import numpy as np
import pytest

from helpers import ROOT, run, synthetic_input
from suse.dashboard.numbers import compact, number, recall
from suse.errors import InputError

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


def _explorer(regex: str, window: int, policy: str, chars: str, size: int, evaluated: bool = True):
    """A live page over one partition of `chars` (timestamp = index), evaluated at the end
    (or not started, to load a checkpoint into)."""
    from suse.dashboard.live import Live, QueryEvents, Settings
    from suse.spec import QuerySpec

    n = len(chars)
    events = QueryEvents(QuerySpec(regex, window, policy=policy, name="q"), [("p",)], np.zeros(n, np.int32),
                         np.arange(n, dtype=np.int64), np.frombuffer(chars.encode(), np.uint8), None)
    live = Live([events], Settings(size, ["suse", "fifo"], 1, True), False, 1.0)
    if evaluated:
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


def test_match_explorer_after_a_restart_shows_what_the_summary_counts(tmp_path):
    from suse.dashboard import checkpoint as ckpt

    for policy, chars, want in (("contiguous", "ABC", None), ("any", "ABC", [0, 1]), ("contiguous", "AC", [0, 1])):
        a = _explorer("AC", 10, policy, chars, size=5)
        ckpt.save_state(tmp_path, a)
        b = _explorer("AC", 10, policy, chars, size=5, evaluated=False)
        assert ckpt.load_state(tmp_path, b)
        assert b.match(0, 0, "suse", 0)["match"] == a.match(0, 0, "suse", 0)["match"] == want
    # fed since the last evaluation: the shown elements' neighbours are not at hand until the next one
    b.query(0).parts[0].dirty, b.query(0).parts[0].matches = True, {}
    with pytest.raises(InputError, match="next evaluation"):
        b.match(0, 0, "suse", 0)


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
    # the stream clock is a float and the page's JSON has no infinity: a speed has a ceiling
    for text, datetime_axis in (("9" * 400 + "/s", False), ("10000000000000000/s", False),
                                ("99999999999999 weeks/s", True), ("0 days/s", True), ("000/s", False)):
        with pytest.raises(InputError, match="positive"):
            parse_speed(text, datetime_axis, 10)
    assert parse_speed("0007/s", False, 10) == 7


# --- the replay against the batch job ----------------------------------------------------------


@pytest.fixture(scope="module")
def small(spark, tmp_path_factory):
    """The small job, its batch output (`suse run`'s code) and its classified events."""
    from suse.dashboard.source import classify
    from suse.spark.jobs.load import parse_config, tomllib
    from suse.spark.jobs.run import run_job

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


def test_refreshes_keep_a_bounded_history(small):
    """Many refreshes cannot grow the state: only the last `keep` evaluations stay, and the
    series of every partition over them is the one an unbounded page shows over the same."""
    bounded, full = _live(small, ("suse", "fifo")), _live(small, ("suse", "fifo"))
    bounded.keep, full.keep = 7, 10**9
    rng = random.Random(5)
    for live in (bounded, full):
        live.advance(0)
    for _ in range(60):
        step = rng.choice([0, 0, 0.3, 2])
        for live in (bounded, full):
            live.advance(step)
            live.refresh()
        kept = {e["id"] for e in bounded.evaluations}
        assert len(kept) <= 7 and bounded.status()["evaluations"] == full.status()["evaluations"]
        for pid, part in full.query(0).parts.items():
            if not part.history:
                continue
            expected = [p for p in full.partition(0, pid)["series"] if p["evaluation"] in kept]
            assert bounded.partition(0, pid)["series"] == expected
            assert len(bounded.query(0).parts[pid].history) <= 8


def test_five_thousand_refreshes_do_not_grow_the_checkpoint_or_an_answer(small, tmp_path):
    import json

    from suse.dashboard import checkpoint as ckpt
    from suse.dashboard.live import MAX_EVALUATIONS

    live = _live(small)
    live.advance(0)
    sizes = []
    for total in (2 * MAX_EVALUATIONS, 5000):
        while live.status()["evaluations"] < total:
            live.advance(0.01)
            live.refresh()
        ckpt.save_state(tmp_path, live)
        sizes.append(((tmp_path / "state.json").stat().st_size, len(json.dumps(live.partition(0, 0)))))
    assert len(live.evaluations) == MAX_EVALUATIONS
    (state_then, answer_then), (state_now, answer_now) = sizes
    assert state_now <= 1.05 * state_then and answer_now <= 1.05 * answer_then, sizes
    assert answer_now < 300_000  # about 200 bytes per kept evaluation


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


def _edit(path, change) -> None:
    import json

    state = json.loads(path.read_text())
    change(state)
    path.write_text(json.dumps(state))


def _first_part(state) -> dict:
    return next(iter(state["queries"][0]["parts"].values()))


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda s: s["queries"][0]["parts"].update(abc=_first_part(s)), "parts.abc: Input should be a valid integer"),
        (lambda s: s["queries"][0]["parts"].update({"99": _first_part(s)}), "no such partition"),
        (lambda s: s["queries"][0].update(pos=10**9), "pos: 1000000000 is past the"),
        (lambda s: s["queries"][0].update(pos=-1), "pos: Input should be greater than or equal to 0"),
        (lambda s: s.update(clock=1e300), "outside the input's time range"),
        (lambda s: s.update(clock="soon"), "clock: Input should be a valid number"),
        (lambda s: _first_part(s).update(fed=_first_part(s)["fed"] + 1), "come before the position"),
        (lambda s: _first_part(s)["history"][0].__setitem__(0, 10**6), "after the last evaluation"),
        (lambda s: _first_part(s)["history"][0][2].update(suse="12x"), "is not a non-negative integer"),
        (lambda s: _first_part(s)["history"].append("junk"), "history[1]: Input should be a valid"),
        (lambda s: _first_part(s)["elements"]["suse"].append(["ab", 1, 1]), "not one letter"),
        (lambda s: s["evaluations"].append(s["evaluations"][0]), "evaluation ids must increase"),
        (lambda s: s.update(queries=[]), "0 queries, the job has 1"),
        (lambda s: s.update(surprise=1), "surprise: unknown key"),
    ],
)
def test_an_edited_checkpoint_is_a_state_error(small, tmp_path, change, problem):
    from suse.dashboard import checkpoint as ckpt
    from suse.errors import StateError

    a = _live(small)
    a.advance(0)
    a.advance(5)
    a.refresh()
    ckpt.save_state(tmp_path, a)
    _edit(tmp_path / "state.json", change)
    with pytest.raises(StateError) as err:
        ckpt.load_state(tmp_path, _live(small))
    message = str(err.value)
    assert message.startswith(f"checkpoint {tmp_path / 'state.json'} is not valid: ") and "\n" not in message
    assert problem in message, message


def test_a_checkpoint_missing_a_summary_is_a_state_error(small, tmp_path):
    import zipfile

    from suse.dashboard import checkpoint as ckpt
    from suse.errors import StateError

    a = _live(small)
    a.advance(0)
    a.advance(5)
    ckpt.save_state(tmp_path, a)
    with zipfile.ZipFile(tmp_path / "summaries.zip", "w") as z:  # the summaries lost
        z.writestr("other", b"")
    with pytest.raises(StateError, match="saved summary '0/suse/0' cannot be read"):
        ckpt.load_state(tmp_path, _live(small))


def test_empty_input_is_a_clear_error(small):
    from suse.dashboard.live import Live, QueryEvents, Settings

    q = small[2][0]
    empty = QueryEvents(q.spec, [], np.empty(0, np.int32),
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


@pytest.mark.parametrize("refresh", [float("inf"), float("-inf"), float("nan"), -1.0, 1e300, 86401.0])
def test_refresh_must_be_a_finite_number_of_seconds(refresh):
    from suse.dashboard import check_refresh

    with pytest.raises(InputError, match="give a number of seconds from 0 \\(no auto-refresh\\) to 86400"):
        check_refresh(refresh)
    check_refresh(0.0), check_refresh(86400.0), check_refresh(2.5)


def test_refresh_inf_is_one_line_before_any_work():
    proc = run("serve", "--replay", "flights", "--port", "0", "--refresh", "inf", timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "error: --refresh inf: give a number of seconds from 0 (no auto-refresh) to 86400\n"


def test_an_internal_error_exits_1_as_documented(capsys):
    import typer

    from suse.cli.app import friendly_errors
    from suse.errors import InternalError

    @friendly_errors
    def broken():
        raise InternalError("an invariant of the kernel did not hold")

    with pytest.raises(typer.Exit) as exit_:
        broken()
    assert exit_.value.exit_code == 1
    assert "internal error: InternalError: an invariant of the kernel did not hold. This is a bug in suse" in (
        " ".join(capsys.readouterr().err.split()))


def test_bundled_jobs_are_the_examples():
    from suse.dashboard import BUNDLED, bundled_job

    for name in BUNDLED:
        assert bundled_job(name) == (ROOT / "examples" / f"{name}.toml").read_text(encoding="utf-8")


def test_the_live_page_counts_a_feed_with_retractions_as_suse_run_does(spark, tmp_path):
    """examples/corrections.toml has 8 events and two rows that take one back each (op "-"):
    the page must feed the 6 events `suse run` counts, not all 10 rows, and end on the same
    counts (the page once prepared its events without the op column)."""
    from suse.dashboard.live import Live, Settings
    from suse.dashboard.source import classify
    from suse.spark.jobs.load import load_config
    from suse.spark.jobs.run import run_job

    cfg = load_config(ROOT / "examples" / "corrections.toml")
    cfg.input.path = str(ROOT / "examples" / "corrections.csv")
    cfg.output.path = str(tmp_path / "out")
    cfg.spark.master = None  # the shared session
    run_job(cfg)
    out = spark.read.json(str(tmp_path / "out")).toPandas()
    queries_, datetime_axis = classify(cfg)
    assert sum(len(q) for q in queries_) == int(out["events"].sum()) == 6
    live = Live(queries_, Settings(cfg.summary.size, ["suse"], cfg.summary.seed, True), datetime_axis, 7.0)
    live.advance(0)
    while not live.finished:
        live.advance(1e9)
    live.refresh()
    rows = {r["key"][0]: r for r in live.table(0)}
    assert set(rows) == set(out["sensor"])
    for _, job_row in out.iterrows():
        row = rows[job_row["sensor"]]
        assert row["events"] == job_row["events"]
        assert row["exact"]["exact"] == job_row["exact_count"]
        assert row["counts"]["suse"]["exact"] == job_row["count"]
