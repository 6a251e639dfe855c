"""`suse exact --queries FILE` and `suse eval --queries FILE`: a query set over one stream,
one row per query (docs/CLI.md). The file holds `name = regex` lines; `--aggregate`, `--of` and
`--max-missing` apply to every query of the file (per-query settings: a job file or the library)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rich.markup import escape

import suse
from suse.cli.app import read_text_file, stdout_console
from suse.cli.feed import Feed, Timed, play
from suse.cli.options import EvalOptions, ExactOptions
from suse.cli.output import avg_text, new_table, print_json
from suse.errors import InputError, QueryError
from suse.io.formats import Events, iter_stream


def stream_argument(o: ExactOptions | EvalOptions) -> str:
    """With --queries the one positional argument (QUERY's place) is the stream file."""
    if o.queries is None:
        return o.stream
    if o.stream != "-":
        raise InputError("with --queries, give only the stream FILE ('-' for stdin): the queries come from the file")
    return o.query


def load_queries(path: Path, window: int, aggregate: str, policy: str, of: Optional[str] = None,
                 max_missing: int = 0) -> suse.QuerySet:
    text = read_text_file(path, "queries")
    try:
        return suse.QuerySet.parse(text, window, aggregate, policy, of, max_missing)
    except QueryError as exc:
        raise QueryError(f"{path}: {exc.message}", exc.position, exc.query) from None
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def set_feed(engines: list) -> Feed:
    """A `Feed` for `ExactSet` and `SummarySet` engines fed together: per time, one
    {name: Evaluation} per engine."""
    def feed(events: Events, times: Optional[list[int]]) -> list:
        with events.located():
            rows = [e.extend(events=events, evaluate_at=times) for e in engines]
        return [tuple({name: evs[k] for name, evs in r.items()} for r in rows) for k in range(len(times or ()))]

    return feed


def _by_query(answers: list, qs: suse.QuerySet, n_engines: int = 1) -> list[dict[str, list]]:
    """Per engine, name -> its evaluations in the order of the times."""
    return [{name: [a[e][name] for a in answers] for name in qs} for e in range(n_engines)]


def _row(r: Any) -> dict[str, Any]:
    row = {"count": r.count, "sum": r.sum, "avg": r.avg, "partial_count": r.partial_count}
    # MIN/MAX and approximate queries add their fields, as the one-query output does
    if r.min is not None or r.max is not None:
        row |= {"min": r.min, "max": r.max}
    if r.count_by_missing is not None:
        row["count_by_missing"] = r.count_by_missing
    return row


def _extra_columns(qs: suse.QuerySet) -> list[str]:
    q = next(iter(qs.values()))  # the flags are the same for every query of the file
    return (["min", "max"] if q._extrema else []) + (["count_by_missing"] if q.max_missing else [])


def _print(data: dict, columns: list[str], title: str) -> None:
    out = stdout_console()
    out.print(title, markup=False)
    table = new_table("query", "t", *columns)
    for name, q in data["queries"].items():
        for ev in q["evaluations"]:
            table.add_row(escape(name), f"≤ {ev['timestamp']}", *(_cell(ev, c) for c in columns))
        table.add_row(f"[bold]{escape(name)}[/]", "stream", *(_cell(q, c) for c in columns))
    out.print(table)


def _cell(row: dict, column: str) -> str:
    value = row.get(column)
    if column == "count_by_missing" and value is not None:
        return " / ".join(map(str, value))
    return avg_text(value) if column == "avg" else "-" if value is None else str(value)


def exact_set(o: ExactOptions) -> None:
    assert o.queries is not None  # the command comes here only with --queries
    queries, stream, window, policy, evaluate_at, fmt = o.queries, stream_argument(o), o.window, o.policy.value, o.evaluate_at, o.fmt.value
    qs = load_queries(queries, window, o.aggregate.value, policy, o.of, o.max_missing)
    engine = suse.ExactSet(qs)
    results = engine.result(_by_query(play(iter_stream(stream, fmt), set_feed([engine]), evaluate_at), qs)[0])
    first = next(iter(results.values()))
    data = {
        "events": first.events,
        "queries": {
            name: {"regex": qs[name].regex, **_row(r), "skipped": r.skipped,
                   "evaluations": [{"timestamp": ev.timestamp, **_row(ev)} for ev in r.evaluations]}
            for name, r in results.items()
        },
    }
    if o.as_json:
        print_json(data)
        return
    _print(data, ["count", "sum", "avg", "partial_count", "skipped", *_extra_columns(qs)],
           f"{len(qs)} queries from {queries}, window {window}, policy {policy}: {first.events} events")


def eval_set(o: EvalOptions) -> None:
    assert o.queries is not None  # the command comes here only with --queries
    queries, stream, window, size, strategy = o.queries, stream_argument(o), o.window, o.size, o.strategy.value
    evaluate_at, fmt = o.evaluate_at, o.fmt.value
    qs = load_queries(queries, window, o.aggregate.value, o.policy.value, o.of, o.max_missing)
    summaries = suse.SummarySet(qs, size, strategy, None, o.seed, o.time_to_live)
    timed = Timed(summaries)
    engine = suse.ExactSet(qs) if o.compare_exact else None
    answers = play(iter_stream(stream, fmt), set_feed([timed, *([engine] if engine else [])]), evaluate_at)
    evaluations, *exact_rows = _by_query(answers, qs, 1 + bool(engine))
    elapsed = timed.seconds
    exact = engine.result(exact_rows[0]) if engine else None
    results = summaries.result()
    out: dict[str, Any] = {}
    for name, r in results.items():
        rows = []
        for i, ev in enumerate(evaluations[name]):
            row = {"timestamp": ev.timestamp, **_row(ev), "detected_count": ev.detected_count}
            if exact is not None:
                row |= {"exact_count": exact[name].evaluations[i].count, "exact_sum": exact[name].evaluations[i].sum}
            rows.append(row)
        out[name] = {"regex": qs[name].regex, **_row(r), "detected_count": r.detected_count,
                     "detected_sum": r.detected_sum, "skipped": r.skipped, "retained": r.size,
                     "elements": [{"char": c, "timestamp": t, "value": v} for c, t, v in summaries.summaries[name].elements()],
                     "evaluations": rows}
        if exact is not None:
            out[name] |= {"exact_count": exact[name].count, "exact_sum": exact[name].sum}
    n_events = next(iter(results.values())).events
    data = {"events": n_events, "seed": summaries.seed,
            "events_per_second": n_events / elapsed if elapsed > 0 else None, "queries": out}
    if o.as_json:
        print_json(data)
        return
    columns = ["count", "sum", "avg", "detected_count", "retained", *_extra_columns(qs)] + (
        ["exact_count", "exact_sum"] if exact else [])
    _print(data, columns, f"{len(qs)} queries from {queries}, window {window}, {strategy} summaries of size {size}: "
                          f"{n_events} events, seed {summaries.seed}")
