"""Job files read with tomllib and validated by pydantic, every error as ``key.path: message``;
then every check that needs no data (suse.spark.jobs.checks), before Spark starts.

A full, commented example is in docs/SPARK.md ("Job files"); examples/*.toml run as they are.
"""
from __future__ import annotations

import sys
from pathlib import Path

from pydantic import ValidationError

from suse.spark.jobs.checks import static_problems
from suse.spark.jobs.config import ConfigError, JobConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib


def load_config(path: str | Path) -> JobConfig:
    """Read and validate a job file; problems raise ConfigError naming the key."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # -sig: a leading BOM is not TOML
    except FileNotFoundError:
        raise ConfigError(f"no such job file: {path}") from None
    except tomllib.TOMLDecodeError as exc:  # (a ValueError: before the clause below)
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    except (OSError, ValueError) as exc:  # a directory, no permission, not UTF-8, a NUL in the name
        raise ConfigError(f"cannot read job file {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_config(data, str(path))


def parse_config(data: dict, source: str = "job") -> JobConfig:
    try:
        cfg = JobConfig.model_validate(data)
    except ValidationError as exc:
        lines = format_errors(exc, data)
        raise ConfigError(f"{source} is not a valid job:\n  " + "\n  ".join(lines)) from None
    check_job(cfg, source)
    return cfg


def check_job(cfg: JobConfig, source: str = "job") -> None:
    """Everything that can be checked without data, so that a mistake fails in a moment
    instead of after Spark has started: queries, windows, evaluation times, probabilities,
    characters and, where the job file tells their types, columns."""
    lines = static_problems(cfg)
    if lines:
        raise ConfigError(f"{source} is not a valid job:\n  " + "\n  ".join(lines))


def format_errors(exc: ValidationError, data: dict) -> list[str]:
    """``key.path: message`` per problem. Pydantic puts the union member it tried into the
    location (``query.window.int``); only the parts that are keys of the input are kept, and
    a union member's "wrong type" error is dropped when another member got further."""
    found: list[tuple[str, str, str]] = []
    for err in exc.errors():
        path, node, loc = [], data, err["loc"]
        for i, part in enumerate(loc):
            if isinstance(node, dict) and part in node or (
                isinstance(node, list) and isinstance(part, int) and part < len(node)
            ):
                path.append(f"[{part}]" if isinstance(part, int) else str(part))
                node = node[part]
            elif i == len(loc) - 1 and err["type"] in ("missing", "extra_forbidden"):
                path.append(str(part))
        key = ".".join(path).replace(".[", "[")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key (check the spelling; docs/SPARK.md lists the keys)"
        found.append((key, msg, err["type"]))
    keys = {k for k, _, _ in found}
    lines: dict[str, list[str]] = {}
    for key, msg, kind in found:
        deeper = any(k != key and (k.startswith(key + ".") or k.startswith(key + "[") or not key) for k in keys)
        if deeper and (kind.endswith("_type") or kind in ("model_attributes_type", "literal_error")):
            continue
        if msg not in lines.setdefault(key, []):
            lines[key].append(msg)
    return [f"{key}: {' or '.join(m)}" if key else " or ".join(m) for key, m in lines.items() if m]
