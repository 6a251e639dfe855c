"""``suse serve``: a live page over a job, refreshed like the paper's dashboard (docs/DASHBOARD.md).

>>> from suse.dashboard import serve
>>> serve("examples/flights.toml", port=8050, speed="1day/s")   # doctest: +SKIP

The job's events are classified once by Spark (as ``suse run`` does), then replayed in
event-time order at ``speed`` into per-partition summaries; every page refresh is an
evaluation at the current stream time. Ctrl-C stops it and writes a checkpoint; the next
start resumes from it.
"""
from __future__ import annotations

import math
import re
import signal
import sys
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Callable, Optional, Sequence

from suse.errors import InputError

BUNDLED = ("flights", "stocks", "synthetic")
DEFAULT_PORT = 8050
REPLAY_SECONDS = 300  # default speed: the whole input in five minutes
SAVE_EVERY = 30.0  # seconds between checkpoints while running
TICK = 0.1  # seconds between feeds of the replay
MAX_REFRESH = 86_400  # seconds: a day
MAX_SPEED = 10**15  # stream time units per second

__all__ = ["serve", "parse_speed", "bundled_job"]


def bundled_job(name: str) -> str:
    """The text of a bundled job (the same files as examples/*.toml)."""
    if name not in BUNDLED:
        raise InputError(f"--replay: no bundled job {name!r}; choose one of {', '.join(BUNDLED)}")
    return resources.files("suse.dashboard").joinpath("jobs", f"{name}.toml").read_text(encoding="utf-8")


_SPEED = re.compile(r"^\s*(.+?)\s*/\s*s(?:ec(?:ond)?)?\s*$", re.IGNORECASE)


def parse_speed(text: Optional[str], datetime_axis: bool, span: int) -> float:
    """Stream time per wall-clock second: ``"1day/s"``, ``"6 hours/s"`` (date-time data) or
    ``"500/s"`` (integer time); None or ``"auto"``: the whole input in five minutes."""
    from suse.spark.events.timing import is_duration, parse_duration

    if text is None or text.strip().lower() == "auto":
        return max(span / REPLAY_SECONDS, 1.0)
    m = _SPEED.match(text)
    if not m:
        raise InputError(f"--speed {text!r}: expected stream time per second, e.g. '1day/s' or '500/s'")
    amount = m.group(1)
    if datetime_axis:
        if not is_duration(amount):
            raise InputError(f"--speed {text!r}: the job's time is a date-time column; give a duration per second, e.g. '1day/s'")
        return _finite_speed(text, parse_duration(amount))
    digits = amount.lstrip("0")
    if is_duration(amount) or not amount.isascii() or not amount.isdigit() or not digits:
        raise InputError(f"--speed {text!r}: the job's time is an integer column; give a positive number of its units per second, e.g. '500/s'")
    return _finite_speed(text, int(digits) if len(digits) <= 16 else MAX_SPEED + 1)


def _finite_speed(text: str, amount: int) -> float:
    """A speed the stream clock (a float, exact to 2^53) can move by."""
    if not 0 < amount <= MAX_SPEED:
        raise InputError(f"--speed {text!r}: give a positive amount of stream time per second, at most {MAX_SPEED:.0e} units")
    return float(amount)


def check_refresh(seconds: float) -> None:
    """The page's auto-refresh: 0 (off) to a day; a browser timer cannot go past 24.8 days and
    the page's JSON cannot carry an infinity or NaN."""
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and 0 <= seconds <= MAX_REFRESH):
        raise InputError(f"--refresh {seconds!r}: give a number of seconds from 0 (no auto-refresh) to {MAX_REFRESH}")


def serve(
    job: Optional[str | Path] = None,
    *,
    replay: Optional[str] = None,
    port: int = DEFAULT_PORT,
    speed: Optional[str] = None,
    checkpoint: Optional[str | Path] = None,
    fresh: bool = False,
    strategies: Sequence[str] = (),
    refresh_seconds: float = 5.0,
    master: Optional[str] = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> None:
    """Run the live page until Ctrl-C (or SIGTERM); then write the checkpoint and return.

    ``job`` is a job file; ``replay`` names a bundled one instead (flights, stocks,
    synthetic). ``strategies`` adds strategies to run side by side with the job's own."""
    from suse.api import STRATEGIES
    from suse.dashboard import checkpoint as ckpt
    from suse.dashboard.live import Settings
    try:
        from suse.dashboard.server import PageServer
    except ModuleNotFoundError as exc:
        raise InputError(f"`suse serve` needs {exc.name}: pip install 'suse[dashboard]'") from None
    from suse import Query
    from suse.spark.jobs.load import load_config, parse_config, tomllib

    if (job is None) == (replay is None):
        raise InputError("give a job file or --replay NAME (flights, stocks, synthetic), not both or neither")
    if job is not None:
        cfg = load_config(job)
    else:
        cfg = parse_config(tomllib.loads(bundled_job(replay)), f"bundled job {replay!r}")
    if master:
        cfg.spark.master = master
    for q in cfg.queries:  # the live page shows counts and sums of every letter only
        if q.aggregate in ("min", "max") or q.of is not None:
            raise InputError(f"query {q.label!r}: the live page does not show aggregate min/max or `of` yet; "
                             "run the job with `suse run`")
        # It replays summaries of plain events saved with to_bytes: no attributes, no WhereSummary.
        if q.where or cfg.evaluate.engine != "summary":
            raise InputError(f"query {q.label!r}: the live page does not run conditions between events (where) "
                             "or engine = 'exact' yet; run the job with `suse run`")
        if "!" in q.regex and Query(q.regex, 1)._closing is not None:
            raise InputError(f"query {q.label!r}: the live page does not run a negation at the end of the pattern "
                             "yet; run the job with `suse run`")
    if cfg.mode == "streaming" and speed is not None:
        raise InputError("--speed applies to a replayed batch job; a streaming job runs at the pace its files arrive")
    names = [cfg.summary.strategy]
    for s in strategies:
        if s not in STRATEGIES:
            raise InputError(f"--strategies: {s!r} is not one of {', '.join(STRATEGIES)}")
        if s not in names:
            names.append(s)
    check_refresh(refresh_seconds)
    settings = Settings(cfg.summary.size, names, cfg.summary.seed, cfg.evaluate.exact)
    identity = {
        **cfg.model_dump(mode="json", by_alias=True, include={"input", "characters", "query", "summary"}),
        "exact": cfg.evaluate.exact, "strategies": names,
    }
    directory = Path(checkpoint) if checkpoint is not None else Path(cfg.output.path.rstrip("/") + ".live")
    if fresh and cfg.mode == "batch":
        for name in ("events.json", "events.npz", "state.json", "summaries.zip"):
            (directory / name).unlink(missing_ok=True)

    server = PageServer(port)  # before the slow part: a busy port is reported at once
    server.page.refresh_seconds = refresh_seconds
    live = None
    query = None  # the Structured Streaming query of a streaming job
    stop = threading.Event()
    failure: list[BaseException] = []

    def fail(exc: BaseException) -> None:  # from a worker thread: the main thread reports it
        failure.append(exc)
        server.shutdown()

    def save() -> None:
        if query is not None:
            from suse.dashboard import stream

            stream.save(directory, live, identity)
        else:
            ckpt.save_state(directory, live)

    serving = threading.Event()  # from then on a signal stops the server instead of interrupting

    def stop_serving() -> bool:
        if serving.is_set():
            server.shutdown()
        return serving.is_set()

    previous = _on_signals(stop_serving)
    try:
        if cfg.mode == "streaming":
            from suse.dashboard import stream

            live, query = stream.start(cfg, settings, directory, identity, fresh, log, fail)
            resumed = bool(live.evaluations or live.last_batch >= 0)
            where = f"resumed after micro-batch {live.last_batch}, {live.status()['fed']:,} events"
        else:
            live, resumed = _replay(cfg, settings, directory, identity, speed, log)
            where = f"resumed at evaluation {live.evaluation_count}, {live.status()['fed']:,} events played"
        server.page.live = live

        def play() -> None:
            last = time.monotonic()
            next_save = last + SAVE_EVERY
            try:
                while not stop.wait(TICK):
                    now = time.monotonic()
                    live.advance(now - last)
                    last = now
                    if query is not None and not query.isActive:
                        raise query.exception() or InputError("the streaming query stopped")
                    if now >= next_save:
                        save()
                        next_save = now + SAVE_EVERY
            except BaseException as exc:  # noqa: BLE001  (reported by the main thread, never lost)
                fail(exc)

        threading.Thread(target=play, name="suse-live", daemon=True).start()
        host, bound = server.address
        log(f"{cfg.name}: {where if resumed else 'new'}; checkpoint {directory}")
        log(f"suse serve: http://{host}:{bound}/  (Ctrl-C stops)")
        serving.set()
        if not failure:
            server.serve()
    except KeyboardInterrupt:
        if live is None:  # stopped while loading: nothing to save, and no Spark traceback
            log("stopped before the page was ready; nothing saved")
            raise Interrupted from None
    finally:
        stop.set()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        server.close()
        if query is not None:
            try:
                query.stop()
            except Exception:  # noqa: BLE001  (already failed: the failure is reported below)
                pass
        if live is not None and not failure:  # after a failure the state may be half-fed
            save()
            log(f"stopped; checkpoint written to {directory}")
    if failure:
        from suse.spark.jobs.run import spark_errors

        with spark_errors():  # a Spark failure as one line, like `suse run`
            raise failure[0]


def _replay(cfg, settings, directory: Path, identity: dict, speed: Optional[str], log):
    """A batch job's input, classified (or taken from the checkpoint), ready to replay."""
    from suse.dashboard import checkpoint as ckpt
    from suse.dashboard.live import Live

    saved = ckpt.load_events(directory, identity)
    if saved is None:
        from suse.dashboard.source import classify, stop_spark

        log(f"{cfg.name}: classifying the input with Spark ({cfg.spark.master or 'local[2]'})")
        queries, datetime_axis = classify(cfg)
        stop_spark()
        ckpt.save_events(directory, queries, datetime_axis, identity)
    else:
        queries, datetime_axis = saved
    live = Live(queries, settings, datetime_axis, 1.0, cfg.name)
    live.speed = parse_speed(speed, datetime_axis, live.last - live.first)
    resumed = ckpt.load_state(directory, live)
    live.advance(0.0)  # events at the first timestamp (nothing new when resumed)
    return live, resumed


class Interrupted(KeyboardInterrupt):
    """Ctrl-C before the page was ready (already reported in one line)."""


def _on_signals(stop_serving: Callable[[], bool]) -> dict:
    """SIGINT and SIGTERM stop the server cleanly (checkpoint written): while it serves,
    ``stop_serving`` asks it to finish; before that the start-up is interrupted. SIGINT
    explicitly too: a process started in the background by a shell inherits SIGINT ignored."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, frame):
        if not stop_serving():
            raise KeyboardInterrupt

    return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
