"""What several test files share: the `suse` command in a subprocess, a query's error, the head
of a job file over the bundled synthetic dataset."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from suse.errors import QueryError
from suse.query import compile_regex

ROOT = Path(__file__).resolve().parent.parent
# Wide, colourless terminals so messages are neither wrapped nor full of escape codes.
ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def run(*args: str, stdin: str | None = None, exe: list[str] | None = None, cwd: Path | None = None,
        timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`suse ARGS` (or `exe ARGS`) in a subprocess, with text output captured; `env`: variables
    set on top of ENV."""
    cmd = (exe or [sys.executable, "-m", "suse"]) + list(args)
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, env={**ENV, **(env or {})}, cwd=cwd,
                          timeout=timeout)


def error_of(query: str) -> QueryError:
    """The `QueryError` compiling `query` raises (it must raise one, naming the query)."""
    with pytest.raises(QueryError) as info:
        compile_regex(query)
    assert info.value.query == query
    return info.value


def synthetic_input(n: int, streams: int, name: str = "small synthetic", values: bool = True) -> str:
    """A job file's name, characters and [input] over the synthetic dataset: `n` events in
    `streams` partitions (with uniform values when `values`); the caller adds the rest."""
    return (
        f'name = "{name}"\ncharacters = "symbol"\n'
        '[input]\ndataset = "synthetic"\ntimestamp = "ts"\npartition_by = ["stream"]\n'
        f"[input.synthetic]\nn = {n}\nstreams = {streams}\n" + ('values = "uniform"\n' if values else "")
    )


def in_partition_order(rows: list[dict], keys: list[str]) -> list[dict]:
    """Result rows ordered by query and partition key (NULL first), each partition's rows
    keeping their order: the batch runners promise time order within a (partition, query)
    only, not how partitions and queries interleave."""
    def key(r):
        return (r.get("query") or "", *[(r[k] is not None, r[k] if r[k] is not None else "") for k in keys])
    return sorted(rows, key=key)


def live_page_job(tmp_path: Path, characters: dict[str, str], query: str) -> Path:
    """A job file for `suse serve` over an empty JSON input: the given characters and the
    lines of its [query] table (its regex, window, ...)."""
    job = tmp_path / "job.toml"
    chars = "\n".join(f'{letter} = "{predicate}"' for letter, predicate in characters.items())
    job.write_text(f"""[input]
path = "{tmp_path / 'in'}"
format = "json"
timestamp = "t"
[characters]
{chars}
[query]
{query}
[output]
path = "{tmp_path / 'out'}"
""")
    return job
