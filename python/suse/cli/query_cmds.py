"""`suse compile`, `suse exact` and `suse eval`: inspect a query, count its matches exactly,
or run a bounded summary over a stream read from a file or standard input."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape

import suse
from suse.cli import multi_cmds
from suse.cli.app import Command, app, friendly_errors, options_command, read_text_file, stdout_console
from suse.cli.feed import Timed, engine_feed, play
from suse.cli.options import MAX_MISSING, QUERY, EvalOptions, ExactOptions, Late, where_conditions
from suse.cli.output import avg_text, new_table, print_json
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
    # A negation at the end of the pattern: the states whose sets count when their window closes.
    pending = automaton.pending if stage is Stage.trimmed else frozenset()
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
    table = new_table("state", *symbols)
    for state in shown.states:
        marks = ("→" if state == shown.start else "") + ("*" if state in shown.finals else "") + (
            "~" if state in pending else "")
        cells = [",".join(map(str, sorted(moves.get((state, ch), [])))) or "·" for ch in symbols]
        cost = f" (-{missing[state]})" if state in missing else ""
        table.add_row(f"{marks}{state}{cost}", *cells)
    out.print(table)
    out.print("→ start, * final, · no transition (dead)", markup=False)
    if pending:
        out.print(f"~ pending: its sets count, in state {automaton.closed}, once their window has closed with no "
                  "negated event after their last element", markup=False)
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


@options_command("exact", ExactOptions)
def exact_cmd(o: ExactOptions) -> None:
    """Count (and sum) every match of QUERY over the whole stream, exactly."""
    where = where_conditions(o.where)
    if o.queries is not None:
        _in_order_options(o.lateness, o.late)
        if where:
            raise InputError("--where applies to one query; it is not supported with --queries")
        multi_cmds.exact_set(o)
        return
    query, stream, window, policy, evaluate_at = o.query, o.stream, o.window, o.policy, o.evaluate_at
    lateness, late, fmt, max_missing, as_json = o.lateness, o.late, o.fmt, o.max_missing, o.as_json
    q = suse.Query(query, window, o.aggregate.value, policy.value, of=o.of, max_missing=max_missing, where=where)
    extrema = q._extrema
    engine = suse.Exact(q, lateness=lateness)
    attributes = () if q.where is None else q.where.attribute_names()
    answers = play(iter_stream(stream, fmt.value, attributes), engine_feed([engine], late.value, bool(evaluate_at)),
                   evaluate_at, lateness)
    r = engine.result([a for a, in answers])
    data = {
        "count": r.count, "sum": r.sum, "avg": r.avg, "partial_count": r.partial_count,
        "skipped": r.skipped, "events": r.events,
        "evaluations": [_evaluation_dict(ev, extrema) for ev in r.evaluations],
    }
    _optional_fields(data, r, extrema, lateness or late != Late.error)
    if as_json:
        print_json(data)
        return
    out = stdout_console()
    out.print(f"[bold]{escape(query)}[/] window {window}, policy {policy.value}: {r.events} events, {r.skipped} skipped"
              + (f", {r.late} late" if "late" in data else ""))
    by = ["count_by_missing"] if max_missing else []
    table = new_table("", "count", "sum", "avg", "partial_count", *(["min", "max"] if extrema else []), *by)
    for ev in r.evaluations:
        table.add_row(f"t ≤ {ev.timestamp}", str(ev.count), str(ev.sum), avg_text(ev.avg), str(ev.partial_count),
                      *_extrema_cells(ev, extrema), *([_by_missing_text(ev.count_by_missing)] if by else []))
    table.add_row("[bold]stream[/]", str(r.count), str(r.sum), avg_text(r.avg), str(r.partial_count),
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


@options_command("eval", EvalOptions)
def eval_cmd(o: EvalOptions) -> None:
    """Run a bounded summary of SIZE elements over the stream and report what it counts."""
    if o.queries is not None:
        _in_order_options(o.lateness, o.late)
        if o.probabilities is not None:
            raise InputError("--probabilities covers one query's characters; with --queries each summary estimates its own")
        multi_cmds.eval_set(o)
        return
    query, stream, window, size, strategy, evaluate_at = o.query, o.stream, o.window, o.size, o.strategy, o.evaluate_at
    lateness, late, fmt, max_missing, as_json = o.lateness, o.late, o.fmt, o.max_missing, o.as_json
    q = suse.Query(query, window, o.aggregate.value, o.policy.value, of=o.of, max_missing=max_missing)
    extrema = q._extrema
    summary = suse.Summary(q, size, strategy.value, _load_probabilities(o.probabilities, q.alphabet), o.seed,
                           o.time_to_live, lateness=lateness, placement=o.placement.value)
    engine = suse.Exact(q, lateness=lateness) if o.compare_exact else None
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
        "events": r.events, "skipped": r.skipped, "evictions": r.evictions,
        "events_per_second": r.events / elapsed if elapsed > 0 else None,
        "seed": summary.seed,
    }
    if exact is not None:
        data |= {"exact_count": exact.count, "exact_sum": exact.sum}
    _optional_fields(data, r, extrema, lateness or late != Late.error)
    if as_json:
        print_json(data)
        return

    out = stdout_console()
    out.print(
        f"[bold]{escape(query)}[/] window {window}, {strategy.value} summary of size {size}: {r.events} events "
        f"({r.skipped} skipped)"
    )
    out.print(f"{data['evictions']} evictions, {data['events_per_second'] or 0:,.0f} events/s, seed {summary.seed}")
    columns = ["", "count", "sum", "avg", "detected_count"] + (["min", "max"] if extrema else []) + (
        ["exact_count", "exact_sum"] if exact else [])
    table = new_table(*columns)
    for ev, row in zip(evaluations, rows):
        extra = [str(row["exact_count"]), str(row["exact_sum"])] if exact else []
        table.add_row(f"t ≤ {row['timestamp']}", str(row["count"]), str(row["sum"]), avg_text(row["avg"]),
                      str(row["detected_count"]), *_extrema_cells(ev, extrema), *extra)
    extra = [str(exact.count), str(exact.sum)] if exact else []
    table.add_row("[bold]summary[/]", str(r.count), str(r.sum), avg_text(r.avg), str(r.detected_count),
                  *_extrema_cells(r, extrema), *extra)
    out.print(table)
    if r.count_by_missing is not None:
        out.print(f"count by missing letters (0..{max_missing}): {_by_missing_text(r.count_by_missing)}", markup=False)
    out.print(f"retained ({len(summary)}): {_paper_text(summary.elements())}", markup=False)
