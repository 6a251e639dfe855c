"""`suse matches QUERY FILE`: the matches themselves, each once (or a uniform sample of them),
one per line: the 0-based positions of its events in the stream, then the events."""
from __future__ import annotations

import json
from typing import Any, Iterable, cast

import typer

import suse
from suse.cli.app import options_command
from suse.cli.options import MatchesOptions, where_conditions
from suse.errors import InputError
from suse.io.formats import read_stream


@options_command("matches", MatchesOptions)
def matches_cmd(o: MatchesOptions) -> None:
    """List every match of QUERY over the stream, each once: positions, then events."""
    if o.limit is not None and o.sample is not None:
        raise InputError("give --limit or --sample, not both")
    if o.seed is not None and o.sample is None:
        raise InputError("--seed goes with --sample")
    max_missing, as_json = o.max_missing, o.as_json
    q = suse.Query(o.query, o.window, policy=o.policy.value, max_missing=max_missing, where=where_conditions(o.where))
    events = read_stream(o.stream, o.fmt.value, () if q.where is None else q.where.attribute_names())
    with events.located():
        if o.sample is None:
            drawn: Iterable[Any] = suse.matches(q, events, o.limit, with_missing=True)
        else:
            drawn = suse.sample_matches(q, events, o.sample, o.seed, with_missing=True)
    found = cast(Iterable[tuple[tuple[int, ...], int]], drawn)  # with_missing: (positions, missing letters)
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
