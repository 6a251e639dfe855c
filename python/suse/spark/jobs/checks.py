"""Checks of a job that need no data, run before Spark starts (``suse run`` would otherwise
spend 15-30 s starting Spark before saying that a window is unreadable).

Each problem is one ``key.path: message`` line, like pydantic's. Column names and types are
checked where the job file tells them: an ``input.schema`` DDL, the synthetic dataset, or
derived ``input.columns`` (names only). Anything else is checked again, with the data, by
``aggregate``.
"""
from __future__ import annotations

import re
from typing import Any

import suse
from suse.errors import QueryError, SuseError
from suse.spark.events.letters import missing_predicates
from suse.spark.events.timing import TimeAxis, is_duration
from suse.spark.events.triggers import parse_trigger
from suse.spark.jobs.config import JobConfig
from suse.spark.runners.matches import check_matches

_INTEGRAL = {"tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"}
_KINDS = {
    **{t: "integer" for t in _INTEGRAL},
    "timestamp": "timestamp", "timestamp_ntz": "timestamp", "timestamp_ltz": "timestamp",
    "date": "date", "string": "string", "varchar": "string", "char": "string",
}
_SYNTHETIC = {"stream": "bigint", "ts": "bigint", "symbol": "string", "value": "bigint"}
_WINDOW_FN = re.compile(r"\bover\s*\(", re.IGNORECASE)


def parse_ddl(ddl: str) -> dict[str, str] | None:
    """Column name (lower case) -> base type (lower case) of a DDL such as
    ``"k string, t timestamp, xs array<int>"``; None if it does not look like one (Spark
    then reports it)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(ddl):
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(ddl[start:i])
            start = i + 1
    parts.append(ddl[start:])
    cols = {}
    for part in parts:
        m = re.match(r"\s*(`(?:[^`]|``)+`|[^\s:`]+)\s*:?\s*([A-Za-z_]+)", part)
        if not m:
            return None
        name = m.group(1)
        name = name[1:-1].replace("``", "`") if name.startswith("`") else name
        cols[name.lower()] = m.group(2).lower()
    return cols


def _columns(cfg: JobConfig) -> dict[str, str | None] | None:
    """Known input columns -> type (None: known name, unknown type); None: unknown input."""
    inp = cfg.input
    if inp.dataset == "synthetic":
        cols: dict[str, str | None] = dict(_SYNTHETIC)
    elif inp.schema_:
        parsed = parse_ddl(inp.schema_)
        if parsed is None:
            return None
        cols = dict(parsed)
    else:
        return None
    for name in inp.columns:
        cols[name.lower()] = None  # derived: Spark decides the type
    return cols


def static_problems(cfg: JobConfig) -> list[str]:
    problems: list[str] = []
    inp, summ = cfg.input, cfg.summary
    cols = _columns(cfg)
    streaming = cfg.mode == "streaming"

    def column(key: str, name: str) -> str | None:
        if cols is None:
            return None
        if name.lower() not in cols:
            problems.append(f"{key}: column '{name}' is not in the input (columns: {', '.join(cols)})")
            return None
        return cols[name.lower()]

    kind = None
    ts_type = column("input.timestamp", inp.timestamp)
    if ts_type is not None:
        kind = _KINDS.get(ts_type)
        if kind is None:
            problems.append(f"input.timestamp: column '{inp.timestamp}' has type {ts_type}; expected a "
                            f"timestamp, date, date-time string or integer column")
        elif kind == "integer" and inp.timestamp_format:
            problems.append(f"input.timestamp_format: timestamp column '{inp.timestamp}' holds integers")
    for name in inp.partition_by:
        column("input.partition_by", name)
    if inp.value is not None:
        v_type = column("input.value", inp.value)
        if v_type is not None and v_type not in _INTEGRAL:
            problems.append(f"input.value: column '{inp.value}' has type {v_type}; values must be non-negative "
                            f"integers (derive one in [input.columns], e.g. CAST(round(x) AS BIGINT))")
    if inp.op is not None:
        o_type = column("input.op", inp.op)
        if o_type is not None and o_type != "string":
            problems.append(f"input.op: column '{inp.op}' has type {o_type}; it must hold the strings '+' and '-'")

    chars = cfg.characters
    if isinstance(chars, str):
        c_type = column("characters", chars)
        if c_type is not None and c_type != "string":
            problems.append(f"characters: column '{chars}' must hold strings, it is {c_type}")
    else:
        if not chars:
            problems.append("characters: give at least one {char = predicate}")
        for char, predicate in chars.items():
            if not (len(char) == 1 and char.isascii() and char.isalnum()):
                problems.append(f"characters.{char}: a character is one ASCII letter or digit, as in the query")
            if not predicate.strip():
                problems.append(f"characters.{char}: the predicate must be a non-empty Spark SQL expression")
            elif streaming and _WINDOW_FN.search(predicate):
                problems.append(f"characters.{char}: a window function (OVER ...) cannot run on a stream")

    if streaming:
        due = isinstance(cfg.evaluate.at, dict) and "every" in cfg.evaluate.at  # rows at due times
        if (cfg.evaluate.at != "end" and not due) or cfg.evaluate.exact:
            problems.append("evaluate: a streaming job reports every changed partition once per micro-batch, "
                            "or at due times with evaluate.at = {every = DURATION}; "
                            "leave evaluate.exact = false")
        if due and len(cfg.queries) > 1:
            problems.append("evaluate.at: due times ({every = ...}) are for a streaming job with one query; "
                            "with several queries it reports once per micro-batch")
        if summ.probabilities == "estimate":
            problems.append("summary.probabilities: 'estimate' needs the whole input: use a batch job, "
                            "or give the probabilities, or 'online'")

    many = isinstance(cfg.query, list)
    for i, q in enumerate(cfg.queries):
        key = f"query[{i}]" if many else "query"
        problems += _query_problems(cfg, q, key, kind, streaming)
    if not problems and not streaming and (cfg.output.matches is not None or cfg.output.sample_matches is not None):
        problems += _matches_problems(cfg)
    return list(dict.fromkeys(problems))  # several queries may find the same problem


def _matches_problems(cfg: JobConfig) -> list[str]:
    try:
        check_matches(cfg.spec())
    except SuseError as exc:
        return [f"output.matches: {exc}"]
    return []


def _where_problems(cfg: JobConfig, q: Any, key: str) -> list[str]:
    """Conditions between events: malformed ones, and the jobs that cannot count them (as
    suse.spark.prepare refuses them once Spark runs)."""
    try:
        suse.Query(q.regex, 0, q.aggregate, q.policy, max_missing=q.max_missing, where=q.where)
    except QueryError as exc:
        return [f"{key}.where: {exc.message} at position {exc.position} of {exc.query!r}"]
    if isinstance(cfg.query, list):
        return [f"{key}.where: conditions are not counted in a query set yet; run the query as a job of its own"]
    return []


def _query_problems(cfg: JobConfig, q: Any, key: str, kind: str | None, streaming: bool) -> list[str]:
    out: list[str] = []
    try:
        query = suse.Query(q.regex, 0, q.aggregate, q.policy, max_missing=q.max_missing)
    except QueryError as exc:
        return [f"{key}.regex: {exc.message} at position {exc.position} of {q.regex!r}"]
    except SuseError as exc:
        return [f"{key}: {exc}"]
    if q.of is not None:
        try:
            suse.Query(q.regex, 0, q.aggregate, q.policy, of=q.of)
        except QueryError as exc:
            out.append(f"{key}.of: {exc.message}")
    if q.where:
        out += _where_problems(cfg, q, key)
    elif query._closing is not None and isinstance(cfg.query, list):
        out.append(f"{key}.regex: a negation at the end of the pattern is not counted in a query set yet; run the query "
                   "as a job of its own")
    chars = cfg.characters
    if not isinstance(chars, str):
        try:
            missing_predicates(query, chars)
        except SuseError as exc:
            out.append(f"{key}: {exc}")
    for c in q.replicate:
        if streaming:
            out.append(f"{key}.replicate: only batch jobs replicate characters")
            break
        if c not in query.alphabet:
            out.append(f"{key}.replicate: character {c!r} is not in the query ({query.alphabet})")
        elif not isinstance(chars, str) and c not in chars:
            out.append(f"{key}.replicate: character {c!r} has no predicate")
    if q.replicate and not cfg.input.partition_by:
        out.append(f"{key}.replicate: needs input.partition_by (without partitions there is nothing to copy into)")

    # Without a known column type, the window's form says which kind of time is meant.
    axis = TimeAxis(cfg.input.timestamp, kind or ("timestamp" if is_duration(q.window) else "integer"))
    try:
        window = axis.span(q.window, "window")
    except SuseError as exc:
        return out + [f"{key}.window: {exc}"]
    try:
        parse_trigger(cfg.evaluate.at, axis, window)
    except SuseError as exc:
        out.append(f"evaluate.at: {exc}")
    if streaming and cfg.streaming is not None and cfg.streaming.lateness not in (0, "0"):
        try:
            axis.span(cfg.streaming.lateness, "lateness")
        except SuseError as exc:
            out.append(f"streaming.lateness: {exc}")
    summ = cfg.summary
    probabilities = summ.probabilities if isinstance(summ.probabilities, dict) else None
    try:
        suse.Summary(suse.Query(q.regex, window, q.aggregate, q.policy, max_missing=q.max_missing), summ.size, summ.strategy,
                     probabilities, seed=summ.seed)
    except SuseError as exc:
        out.append(f"summary{'.probabilities' if probabilities else ''} ({key}): {exc}")
    return out
