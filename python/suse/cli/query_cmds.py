"""`suse compile`, `suse exact` and `suse eval`: inspect a query, count its matches exactly,
or run a bounded summary over a stream read from a file or standard input."""
from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

import suse
from suse.api.disorder import LATE_MODES, PLACEMENTS
from suse.cli import multi_cmds
from suse.cli.app import Command, app, friendly_errors, read_text_file, stdout_console
from suse.cli.feed import Timed, engine_feed, play
from suse.errors import InputError
from suse.io.formats import iter_stream, read_probabilities
from suse.query import compile_regex


class Stage(str, Enum):
    thompson = "thompson"
    epsilon_free = "epsilon_free"
    pruned = "pruned"
    dfa = "dfa"
    minimal = "minimal"
    trimmed = "trimmed"  # the automaton the counters run over


def _choices(name: str, names: tuple[str, ...]) -> Any:
    """An option's choices from the library's list, so a new one (a strategy the kernel gained)
    reaches the command line without an edit here."""
    return Enum(name, {n: n for n in names}, type=str)


Aggregate = _choices("Aggregate", suse.api.AGGREGATES)
Policy = _choices("Policy", suse.api.POLICIES)
Strategy = _choices("Strategy", suse.api.STRATEGIES)
Late = _choices("Late", LATE_MODES)
Placement = _choices("Placement", PLACEMENTS)


class StreamFormat(str, Enum):
    auto = "auto"
    text = "text"
    csv = "csv"


class Times(list):
    """Evaluation timestamps; a list subclass so typer takes `--evaluate-at` once, not repeated."""


_INT64_MAX = 2**63 - 1


def _integer(text: str, minimum: int, example: str = "") -> int:
    text = str(text).strip()
    try:
        value = int(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not an integer{example}") from None
    if value < minimum:
        raise typer.BadParameter(f"must be at least {minimum}, got {value}")
    if value > _INT64_MAX:
        raise typer.BadParameter(f"{value} is too large (at most {_INT64_MAX})")
    return value


def _at_least(minimum: int):
    """An integer option parser with our wording (typer's own range check speaks pydantic)."""
    return lambda text: _integer(text, minimum)


def _parse_times(text: str) -> Times:
    """`--evaluate-at 10,20,30` -> [10, 20, 30], in the order given."""
    return Times(_integer(part, -(2**63), " (expected e.g. 10,20,30)") for part in str(text).split(","))


# Parameters shared by the commands; typer builds each command's signature from these defaults.
QUERY = typer.Argument(..., metavar="QUERY", help="The query, e.g. 'A(B*C)*D'.", show_default=False)
# A plain string, not a typer Path: typer's Path checks do not accept the "-" default.
# read_stream reports a missing or unreadable file itself.
STREAM = typer.Argument(
    "-", metavar="FILE", help="Stream file (text 'A 0 B 1 ...' or CSV char,timestamp[,value]); '-' reads stdin.",
)
WINDOW = typer.Option(
    ..., "--window", "-w", metavar="INTEGER", parser=_at_least(0),
    help="Time window: first and last event of a match are at most this far apart.",
)
AGGREGATE = typer.Option(
    Aggregate.count, "--aggregate",
    help="Aggregate the summary's selection optimises for; count, sum and avg are always reported, "
    "min and max (ranked by counts) add the smallest/largest value of an element in a match.",
)
OF = typer.Option(
    None, "--of", metavar="LETTERS",
    help="Aggregate only these letters' values (e.g. C): SUM, AVG, MIN and MAX; COUNT ignores it.",
)
POLICY = typer.Option(Policy.any, "--policy", help="any = skip-till-any-match, next = skip-till-next-match, contiguous = consecutive events only.")
EVALUATE_AT = typer.Option(
    None, "--evaluate-at", metavar="T1,T2,...", parser=_parse_times,
    help="Also report the aggregate over all events with timestamp <= each T (rows in this order).",
)
JSON = typer.Option(False, "--json", help="Print one JSON object instead of tables.")
MAX_MISSING = typer.Option(
    0, "--max-missing", metavar="K", parser=_at_least(0),
    help="Approximate matching: also count matches missing up to K pattern letters (reports count_by_missing).",
)
FORMAT = typer.Option(StreamFormat.auto, "--format", help="Stream format; auto = CSV if the first line has a comma.")
LATENESS = typer.Option(
    0, "--lateness", metavar="L", parser=_at_least(0),
    help="Accept events up to L time units older than the largest timestamp seen (results as if sorted by "
    "timestamp, then line); with it a CSV 'op' column of '-' rows takes events back.",
)
LATE = typer.Option(Late.error, "--late", help="An event older than that: error (exit 2), or count it and go on.")
QUERIES = typer.Option(
    None, "--queries", metavar="FILE",
    help="Run a set of queries (a file of 'name = regex' lines) over the stream in one pass, one row per query; "
    "the one positional argument is then the stream FILE ('-' for stdin).",
)


def _avg_text(avg: Optional[float]) -> str:
    return "-" if avg is None else f"{avg:.6g}"


def _table(*columns: str) -> Table:
    table = Table(*columns, show_edge=False, header_style="bold")
    for col in table.columns[1:]:
        col.justify = "right"
    return table


def _print_json(data: dict) -> None:
    # Plain print: rich would wrap long lines; json keeps big counts as exact integers.
    print(json.dumps(data, indent=2))


# --------------------------------------------------------------------------------------- compile
@app.command("compile", cls=Command)
@friendly_errors
def compile_cmd(
    query: str = QUERY,
    dot: bool = typer.Option(False, "--dot", help="Print Graphviz DOT instead of a table."),
    stage: Stage = typer.Option(Stage.trimmed, "--stage", help="Pipeline stage to show; 'trimmed' is the minimal DFA used for counting."),
    max_missing: int = MAX_MISSING,
) -> None:
    """Compile QUERY and print its automaton (or one intermediate stage)."""
    out = stdout_console()
    automaton = compile_regex(query, max_missing)
    shown = automaton if stage is Stage.trimmed else automaton.stages[stage.value]
    # Final states' missing-letter labels (approximate matching), on the automaton used for counting.
    missing = automaton.missing if max_missing and stage is Stage.trimmed else {}
    if dot:
        text = shown.to_dot(f"{query} ({stage.value})")
        for state, cost in sorted(missing.items()):
            text = text.replace(f"  {state} [shape=doublecircle];", f'  {state} [shape=doublecircle, xlabel="-{cost}"];')
        print(text, end="")
        return
    moves: dict[tuple[int, str], list[int]] = {}
    for source, ch, target in shown.edges():
        moves.setdefault((source, ch), []).append(target)
    # Letters, then the !x filter symbols, then ε and the thompson stage's negation moves.
    labels = {ch for _, ch in moves}
    zero_width = sorted(labels - set(shown.symbols), key=lambda ch: (ch != "ε", ch))
    symbols = list(shown.alphabet) + [s for s in shown.symbols[len(shown.alphabet):] if s in labels] + zero_width
    negated = f", negated {shown.negated}" if shown.negated else ""
    finals = ", ".join(f"{s} (-{missing[s]})" if missing else str(s) for s in sorted(shown.finals)) or "none"
    approx = f", max_missing {max_missing}" if max_missing else ""
    out.print(
        f"query {query!r} ({stage.value}): {shown.n_states} states, start {shown.start}, "
        f"finals {finals}, alphabet {shown.alphabet}{negated}{approx}",
        markup=False,
    )
    table = _table("state", *symbols)
    for state in shown.states:
        marks = ("→" if state == shown.start else "") + ("*" if state in shown.finals else "")
        cells = [",".join(map(str, sorted(moves.get((state, ch), [])))) or "·" for ch in symbols]
        cost = f" (-{missing[state]})" if state in missing else ""
        table.add_row(f"{marks}{state}{cost}", *cells)
    out.print(table)
    out.print("→ start, * final, · no transition (dead)", markup=False)
    if missing:
        out.print("(-j): final, its words miss j pattern letters at least (a match there counts in "
                  "count_by_missing[j])", markup=False)
    if shown.negated:
        out.print(
            "!x: where a partial match goes when an x event lies between two of its elements "
            "(· = the negation kills it)" if stage.value != "thompson" else
            "!x: zero-width negation move (no x event between the elements on either side)",
            markup=False,
        )


# ----------------------------------------------------------------------------------------- exact
def _evaluation_dict(ev: suse.Evaluation, extrema: bool = False) -> dict[str, Any]:
    row = {"timestamp": ev.timestamp, "count": ev.count, "sum": ev.sum, "avg": ev.avg, "partial_count": ev.partial_count}
    if extrema:
        row |= {"min": ev.min, "max": ev.max}
    if ev.count_by_missing is not None:
        row["count_by_missing"] = ev.count_by_missing
    return row


def _extrema_cells(r: Any, extrema: bool) -> list[str]:
    return ["-" if r.min is None else str(r.min), "-" if r.max is None else str(r.max)] if extrema else []


def _by_missing_text(counts: Optional[list[int]]) -> str:
    return " / ".join(map(str, counts)) if counts is not None else ""


def _optional_fields(data: dict, r: Any, extrema: bool, late_asked: bool) -> None:
    """Add the fields a run has only when asked for (late, MIN/MAX, counts by missing letters)."""
    if late_asked:
        data["late"] = r.late
    if extrema:
        data |= {"min": r.min, "max": r.max}
    if r.count_by_missing is not None:
        data["count_by_missing"] = r.count_by_missing


def _in_order_options(lateness: int, late: Late) -> None:
    if lateness or late != Late.error:
        raise InputError("--lateness and --late apply to one query; they are not supported with --queries")


@app.command("exact", cls=Command)
@friendly_errors
def exact_cmd(
    query: str = QUERY,
    stream: str = STREAM,
    window: int = WINDOW,
    policy: Policy = POLICY,
    evaluate_at: Optional[Times] = EVALUATE_AT,
    as_json: bool = JSON,
    fmt: StreamFormat = FORMAT,
    max_missing: int = MAX_MISSING,
    aggregate: Aggregate = typer.Option(
        Aggregate.count, "--aggregate",
        help="count, sum and avg are always reported; min or max also report the smallest and largest "
        "value of an element in a match.",
    ),
    of: Optional[str] = OF,
    queries: Optional[Path] = QUERIES,
    lateness: int = LATENESS,
    late: Late = LATE,
) -> None:
    """Count (and sum) every match of QUERY over the whole stream, exactly."""
    stream = multi_cmds.stream_argument(query, stream, queries)
    if queries is not None:
        _in_order_options(lateness, late)
        multi_cmds.exact_set(queries, stream, window, policy.value, aggregate.value, evaluate_at, fmt.value, as_json,
                             of, max_missing)
        return
    q = suse.Query(query, window, aggregate.value, policy.value, of=of, max_missing=max_missing)
    extrema = q._extrema
    engine = suse.Exact(q, lateness=lateness)
    answers = play(iter_stream(stream, fmt.value), engine_feed([engine], late.value, bool(evaluate_at)), evaluate_at,
                   lateness)
    r = engine.result([a for a, in answers])
    data = {
        "count": r.count, "sum": r.sum, "avg": r.avg, "partial_count": r.partial_count,
        "skipped": r.skipped, "events": r.events,
        "evaluations": [_evaluation_dict(ev, extrema) for ev in r.evaluations],
    }
    _optional_fields(data, r, extrema, lateness or late != Late.error)
    if as_json:
        _print_json(data)
        return
    out = stdout_console()
    out.print(f"[bold]{escape(query)}[/] window {window}, policy {policy.value}: {r.events} events, {r.skipped} skipped"
              + (f", {r.late} late" if "late" in data else ""))
    by = ["count_by_missing"] if max_missing else []
    table = _table("", "count", "sum", "avg", "partial_count", *(["min", "max"] if extrema else []), *by)
    for ev in r.evaluations:
        table.add_row(f"t ≤ {ev.timestamp}", str(ev.count), str(ev.sum), _avg_text(ev.avg), str(ev.partial_count),
                      *_extrema_cells(ev, extrema), *([_by_missing_text(ev.count_by_missing)] if by else []))
    table.add_row("[bold]stream[/]", str(r.count), str(r.sum), _avg_text(r.avg), str(r.partial_count),
                  *_extrema_cells(r, extrema), *([_by_missing_text(r.count_by_missing)] if by else []))
    out.print(table)


# ------------------------------------------------------------------------------------------ eval
def _load_probabilities(path: Optional[Path], alphabet: str) -> Optional[dict[str, float]]:
    if path is None:
        return None
    text = read_text_file(path, "probabilities")
    try:
        return suse.api.check_probabilities(read_probabilities(text), alphabet)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def _paper_text(elements: list[tuple[str, int, int]], limit: int = 40) -> str:
    """Retained elements in the paper's notation, eliding the middle of long summaries."""
    def fmt(e: tuple[str, int, int]) -> str:
        return f"{e[0]} {e[1]}" if e[2] == 1 else f"{e[0]} {e[1]} (={e[2]})"
    if len(elements) <= limit:
        return "  ".join(map(fmt, elements)) or "(empty)"
    half = limit // 2
    return "  ".join([*map(fmt, elements[:half]), f"… {len(elements) - limit} more …", *map(fmt, elements[-half:])])


@app.command("eval", cls=Command)
@friendly_errors
def eval_cmd(
    query: str = QUERY,
    stream: str = STREAM,
    window: int = WINDOW,
    size: int = typer.Option(..., "--size", "-n", metavar="INTEGER", parser=_at_least(1), help="Most elements the summary retains."),
    strategy: Strategy = typer.Option(..., "--strategy", help="Which elements to keep when the summary is full."),
    aggregate: Aggregate = AGGREGATE,
    policy: Policy = POLICY,
    probabilities: Optional[Path] = typer.Option(
        None, "--probabilities", metavar="FILE",
        help="File of 'CHAR P' pairs, one per character of the query, summing to 1 (e.g. 'A 0.25 B 0.75'); "
        "default: estimated from the stream.",
    ),
    seed: Optional[int] = typer.Option(
        None, "--seed", metavar="INTEGER", parser=_at_least(0),
        help="Random seed (default: a fresh one, printed with the results so the run can be repeated).",
    ),
    time_to_live: Optional[int] = typer.Option(
        None, "--time-to-live", metavar="INTEGER", parser=_at_least(0), help="Evict elements older than this.",
    ),
    evaluate_at: Optional[Times] = EVALUATE_AT,
    compare_exact: bool = typer.Option(False, "--compare-exact", help="Also run the exact engine and report its count and sum."),
    as_json: bool = JSON,
    fmt: StreamFormat = FORMAT,
    of: Optional[str] = OF,
    max_missing: int = MAX_MISSING,
    queries: Optional[Path] = QUERIES,
    lateness: int = LATENESS,
    late: Late = LATE,
    placement: Placement = typer.Option(
        Placement.buffer, "--placement",
        help="With --lateness: buffer late-capable events until final (results as if sorted), or insert each "
        "at its place at once (memory stays at --size; policy any without negation, no '-' rows).",
    ),
) -> None:
    """Run a bounded summary of SIZE elements over the stream and report what it counts."""
    stream = multi_cmds.stream_argument(query, stream, queries)
    if queries is not None:
        _in_order_options(lateness, late)
        if probabilities is not None:
            raise InputError("--probabilities covers one query's characters; with --queries each summary estimates its own")
        multi_cmds.eval_set(queries, stream, window, size, strategy.value, aggregate.value, policy.value, seed,
                            time_to_live, evaluate_at, compare_exact, fmt.value, as_json, of, max_missing)
        return
    q = suse.Query(query, window, aggregate.value, policy.value, of=of, max_missing=max_missing)
    extrema = q._extrema
    summary = suse.Summary(q, size, strategy.value, _load_probabilities(probabilities, q.alphabet), seed, time_to_live,
                           lateness=lateness, placement=placement.value)
    engine = suse.Exact(q, lateness=lateness) if compare_exact else None
    timed = Timed(summary)
    answers = play(iter_stream(stream, fmt.value),
                   engine_feed([timed, *([engine] if engine else [])], late.value, bool(evaluate_at)), evaluate_at,
                   lateness)
    elapsed = timed.seconds
    evaluations = [a[0] for a in answers]
    exact = engine.result([a[1] for a in answers]) if engine else None
    r = summary.result()

    rows = []
    for i, ev in enumerate(evaluations):
        row = _evaluation_dict(ev, extrema) | {"detected_count": ev.detected_count, "detected_sum": ev.detected_sum}
        if exact is not None:
            # Both engines answer the evaluation times in the order given, so rows line up.
            row |= {"exact_count": exact.evaluations[i].count, "exact_sum": exact.evaluations[i].sum}
        rows.append(row)
    data: dict[str, Any] = {
        "count": r.count, "sum": r.sum, "avg": r.avg, "partial_count": r.partial_count,
        "detected_count": r.detected_count, "detected_sum": r.detected_sum,
        "elements": [{"char": c, "timestamp": t, "value": v} for c, t, v in summary.elements()],
        "evaluations": rows,
        "events": r.events, "skipped": r.skipped, "evictions": summary._engine.evictions,
        "events_per_second": r.events / elapsed if elapsed > 0 else None,
        "seed": summary.seed,
    }
    if exact is not None:
        data |= {"exact_count": exact.count, "exact_sum": exact.sum}
    _optional_fields(data, r, extrema, lateness or late != Late.error)
    if as_json:
        _print_json(data)
        return

    out = stdout_console()
    out.print(
        f"[bold]{escape(query)}[/] window {window}, {strategy.value} summary of size {size}: {r.events} events "
        f"({r.skipped} skipped)"
    )
    out.print(f"{data['evictions']} evictions, {data['events_per_second'] or 0:,.0f} events/s, seed {summary.seed}")
    columns = ["", "count", "sum", "avg", "detected_count"] + (["min", "max"] if extrema else []) + (
        ["exact_count", "exact_sum"] if exact else [])
    table = _table(*columns)
    for ev, row in zip(evaluations, rows):
        extra = [str(row["exact_count"]), str(row["exact_sum"])] if exact else []
        table.add_row(f"t ≤ {row['timestamp']}", str(row["count"]), str(row["sum"]), _avg_text(row["avg"]),
                      str(row["detected_count"]), *_extrema_cells(ev, extrema), *extra)
    extra = [str(exact.count), str(exact.sum)] if exact else []
    table.add_row("[bold]summary[/]", str(r.count), str(r.sum), _avg_text(r.avg), str(r.detected_count),
                  *_extrema_cells(r, extrema), *extra)
    out.print(table)
    if r.count_by_missing is not None:
        out.print(f"count by missing letters (0..{max_missing}): {_by_missing_text(r.count_by_missing)}", markup=False)
    out.print(f"retained ({len(summary)}): {_paper_text(summary.elements())}", markup=False)
