"""`suse matches QUERY FILE`: the matches themselves, each once (or a uniform sample of them),
one per line: the 0-based positions of its events in the stream, then the events."""
from __future__ import annotations

import json
from typing import Optional

import typer

import suse
from suse.cli.app import Command, app, friendly_errors
from suse.cli.query_cmds import FORMAT, JSON, MAX_MISSING, POLICY, QUERY, STREAM, WINDOW, Policy, StreamFormat, _at_least
from suse.errors import InputError
from suse.io.formats import read_stream


@app.command("matches", cls=Command)
@friendly_errors
def matches_cmd(
    query: str = QUERY,
    stream: str = STREAM,
    window: int = WINDOW,
    policy: Policy = POLICY,
    limit: Optional[int] = typer.Option(None, "--limit", metavar="N", parser=_at_least(0),
                                        help="Stop after the first N matches (in order: by first event, then second, ...)."),
    sample: Optional[int] = typer.Option(None, "--sample", metavar="N", parser=_at_least(0),
                                         help="Instead, draw N matches uniformly at random with replacement."),
    seed: Optional[int] = typer.Option(None, "--seed", metavar="S", parser=_at_least(0),
                                       help="Seed of --sample (the same seed draws the same matches)."),
    max_missing: int = MAX_MISSING,
    fmt: StreamFormat = FORMAT,
    as_json: bool = JSON,
) -> None:
    """List every match of QUERY over the stream, each once: positions, then events."""
    if limit is not None and sample is not None:
        raise InputError("give --limit or --sample, not both")
    if seed is not None and sample is None:
        raise InputError("--seed goes with --sample")
    q = suse.Query(query, window, policy=policy.value, max_missing=max_missing)
    events = read_stream(stream, fmt.value)
    with events.located():
        if sample is None:
            found = suse.matches(q, events, limit, with_missing=True)
        else:
            found = suse.sample_matches(q, events, sample, seed, with_missing=True)
    for positions, missing in found:
        taken = [(events.chars[i], int(events.timestamps[i])) for i in positions]
        if as_json:
            record = {"positions": list(positions), "events": [list(e) for e in taken]}
            if max_missing:
                record["missing"] = missing
            typer.echo(json.dumps(record))
            continue
        text = " ".join(f"{c}@{t}" for c, t in taken)
        extra = f"\tmissing {missing}" if max_missing else ""
        typer.echo(f"{' '.join(map(str, positions))}\t{text}{extra}")
