"""`suse serve JOB.toml`: the live page of a job (docs/DASHBOARD.md)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from suse.cli.app import app, err_console, friendly_errors, optional_imports


@app.command("serve")
@friendly_errors
def serve_cmd(
    job: Optional[Path] = typer.Argument(None, help="Job file (TOML), as for `suse run`; a batch job is replayed as a stream."),
    replay: Optional[str] = typer.Option(None, "--replay", metavar="NAME", help="Replay a bundled job instead: flights, stocks or synthetic."),
    port: int = typer.Option(8050, "--port", help="Port on 127.0.0.1 (0: any free port)."),
    speed: Optional[str] = typer.Option(None, "--speed", help="Stream time per second, e.g. 1day/s or 500/s; default: the whole input in 5 minutes."),
    strategies: Optional[str] = typer.Option(None, "--strategies", metavar="S1,S2", help="Strategies to run beside the job's own, e.g. fifo,random."),
    refresh: float = typer.Option(5.0, "--refresh", help="Default auto-refresh of the page in seconds (0: off)."),
    checkpoint: Optional[Path] = typer.Option(None, "--checkpoint", help="Checkpoint directory; default: OUTPUT.live beside the job's output path."),
    fresh: bool = typer.Option(False, "--fresh", help="Ignore (and replace) an existing checkpoint."),
    master: Optional[str] = typer.Option(None, help="Spark master for classifying the input, overriding spark.master."),
) -> None:
    """Serve a live page of JOB on http://127.0.0.1:PORT/: a table of partitions, counts over
    time and the retained elements. Each refresh is an evaluation at the current stream time.
    Ctrl-C stops it and writes a checkpoint; the next start resumes."""
    with optional_imports("serve", "spark,dashboard"):
        import suse.spark.jobs.config  # noqa: F401  (pyspark, pydantic)
        from suse.dashboard import serve
    extra = [s.strip() for s in strategies.split(",") if s.strip()] if strategies else []
    serve(
        str(job) if job is not None else None, replay=replay, port=port, speed=speed, checkpoint=checkpoint,
        fresh=fresh, strategies=extra, refresh_seconds=refresh, master=master,
        log=lambda line: err_console.print(line, markup=False, highlight=False),
    )
