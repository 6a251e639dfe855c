"""The options the commands share, and each data command's options as one typed object.

typer reads a command's options from its signature; `app.options_command` builds that
signature from a dataclass's fields, so a command body receives its options whole (and hands
them on whole, e.g. to the query-set variants in multi_cmds)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Optional

import typer

import suse
from suse.api.feeding import LATE_MODES, PLACEMENTS
from suse.errors import InputError


def choices(name: str, names: tuple[str, ...]) -> Any:
    """An option's choices from the library's list, so a new one (a strategy the kernel gained)
    reaches the command line without an edit here."""
    return Enum(name, {n: n for n in names}, type=str)


Aggregate = choices("Aggregate", suse.api.AGGREGATES)
Policy = choices("Policy", suse.api.POLICIES)
Strategy = choices("Strategy", suse.api.STRATEGIES)
Late = choices("Late", LATE_MODES)
Placement = choices("Placement", PLACEMENTS)


class StreamFormat(str, Enum):
    auto = "auto"
    text = "text"
    csv = "csv"


class Times(list):
    """Evaluation timestamps; a list subclass so typer takes `--evaluate-at` once, not repeated."""


_INT64_MAX = 2**63 - 1


def integer(text: str, minimum: int, example: str = "") -> int:
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


def at_least(minimum: int):
    """An integer option parser with our wording (typer's own range check speaks pydantic)."""
    return lambda text: integer(text, minimum)


def parse_times(text: str) -> Times:
    """`--evaluate-at 10,20,30` -> [10, 20, 30], in the order given."""
    return Times(integer(part, -(2**63), " (expected e.g. 10,20,30)") for part in str(text).split(","))


# Parameters shared by the commands; typer builds each command's signature from these defaults.
QUERY = typer.Argument(..., metavar="QUERY", help="The query, e.g. 'A(B*C)*D'.", show_default=False)
# A plain string, not a typer Path: typer's Path checks do not accept the "-" default.
# read_stream reports a missing or unreadable file itself.
STREAM = typer.Argument(
    "-", metavar="FILE", help="Stream file (text 'A 0 B 1 ...' or CSV char,timestamp[,value]); '-' reads stdin.",
)
WINDOW = typer.Option(
    ..., "--window", "-w", metavar="INTEGER", parser=at_least(0),
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
    None, "--evaluate-at", metavar="T1,T2,...", parser=parse_times,
    help="Also report the aggregate over all events with timestamp <= each T (rows in this order).",
)
JSON = typer.Option(False, "--json", help="Print one JSON object instead of tables.")
WHERE = typer.Option(
    None, "--where", metavar="'LETTER: CONDITION'",
    help="A condition between a match's events, e.g. 'B: B.p > LAST(B.p, 1)' (docs/QUERY.md); repeat it for "
    "other letters. Attributes are the CSV's columns of those names.",
)


def where_conditions(given: Optional[list[str]]) -> Optional[dict[str, str]]:
    """``--where 'B: condition'`` options as ``{letter: condition}`` (None without any)."""
    if not given:
        return None
    out: dict[str, str] = {}
    for item in given:
        letter, colon, condition = item.partition(":")
        letter = letter.strip()
        if not colon or not letter:
            raise InputError(f"--where {item!r}: expected 'LETTER: CONDITION', e.g. 'B: B.p > LAST(B.p, 1)'")
        if letter in out:
            raise InputError(f"--where: two conditions for {letter}; join them with AND")
        out[letter] = condition.strip()
    return out
MAX_MISSING = typer.Option(
    0, "--max-missing", metavar="K", parser=at_least(0),
    help="Approximate matching: also count matches missing up to K pattern letters (reports count_by_missing).",
)
FORMAT = typer.Option(StreamFormat.auto, "--format", help="Stream format; auto = CSV if the first line has a comma.")
LATENESS = typer.Option(
    0, "--lateness", metavar="L", parser=at_least(0),
    help="Accept events up to L time units older than the largest timestamp seen (results as if sorted by "
    "timestamp, then line); with it a CSV 'op' column of '-' rows takes events back.",
)
LATE = typer.Option(Late.error, "--late", help="An event older than that: error (exit 2), or count it and go on.")
QUERIES = typer.Option(
    None, "--queries", metavar="FILE",
    help="Run a set of queries (a file of 'name = regex' lines) over the stream in one pass, one row per query; "
    "the one positional argument is then the stream FILE ('-' for stdin).",
)


STRATEGY = typer.Option(..., "--strategy", help="Which elements to keep when the summary is full.")
SIZE = typer.Option(..., "--size", "-n", metavar="INTEGER", parser=at_least(1), help="Most elements the summary retains.")
EXACT_AGGREGATE = typer.Option(
    Aggregate.count, "--aggregate",
    help="count, sum and avg are always reported; min or max also report the smallest and largest "
    "value of an element in a match.",
)
PROBABILITIES = typer.Option(
    None, "--probabilities", metavar="FILE",
    help="File of 'CHAR P' pairs, one per character of the query, summing to 1 (e.g. 'A 0.25 B 0.75'); "
    "default: estimated from the stream.",
)
SEED = typer.Option(
    None, "--seed", metavar="INTEGER", parser=at_least(0),
    help="Random seed (default: a fresh one, printed with the results so the run can be repeated).",
)
TIME_TO_LIVE = typer.Option(
    None, "--time-to-live", metavar="INTEGER", parser=at_least(0), help="Evict elements older than this.",
)
COMPARE_EXACT = typer.Option(False, "--compare-exact", help="Also run the exact engine and report its count and sum.")
PLACEMENT = typer.Option(
    Placement.buffer, "--placement",
    help="With --lateness: buffer late-capable events until final (results as if sorted), or insert each "
    "at its place at once (memory stays at --size; policy any without negation, no '-' rows).",
)


@dataclass(frozen=True)
class ExactOptions:
    """`suse exact`: the query, the stream and how to report."""

    query: str = QUERY
    stream: str = STREAM
    window: int = WINDOW
    policy: Policy = POLICY  # type: ignore[valid-type]
    evaluate_at: Optional[Times] = EVALUATE_AT
    as_json: bool = JSON
    fmt: StreamFormat = FORMAT
    max_missing: int = MAX_MISSING
    aggregate: Aggregate = EXACT_AGGREGATE  # type: ignore[valid-type]
    of: Optional[str] = OF
    queries: Optional[Path] = QUERIES
    lateness: int = LATENESS
    late: Late = LATE  # type: ignore[valid-type]
    where: Optional[list[str]] = WHERE


@dataclass(frozen=True)
class EvalOptions:
    """`suse eval`: the query, the summary, the stream and how to report."""

    query: str = QUERY
    stream: str = STREAM
    window: int = WINDOW
    size: int = SIZE
    strategy: Strategy = STRATEGY  # type: ignore[valid-type]
    aggregate: Aggregate = AGGREGATE  # type: ignore[valid-type]
    policy: Policy = POLICY  # type: ignore[valid-type]
    probabilities: Optional[Path] = PROBABILITIES
    seed: Optional[int] = SEED
    time_to_live: Optional[int] = TIME_TO_LIVE
    evaluate_at: Optional[Times] = EVALUATE_AT
    compare_exact: bool = COMPARE_EXACT
    as_json: bool = JSON
    fmt: StreamFormat = FORMAT
    of: Optional[str] = OF
    max_missing: int = MAX_MISSING
    queries: Optional[Path] = QUERIES
    lateness: int = LATENESS
    late: Late = LATE  # type: ignore[valid-type]
    placement: Placement = PLACEMENT  # type: ignore[valid-type]


@dataclass(frozen=True)
class MatchesOptions:
    """`suse matches`: the query, the stream, and how many matches (the first N or a sample)."""

    query: str = QUERY
    stream: str = STREAM
    window: int = WINDOW
    policy: Policy = POLICY  # type: ignore[valid-type]
    limit: Optional[int] = typer.Option(
        None, "--limit", metavar="N", parser=at_least(0),
        help="Stop after the first N matches (in order: by first event, then second, ...).")
    sample: Optional[int] = typer.Option(
        None, "--sample", metavar="N", parser=at_least(0), help="Instead, draw N matches uniformly at random with replacement.")
    seed: Optional[int] = typer.Option(
        None, "--seed", metavar="S", parser=at_least(0), help="Seed of --sample (the same seed draws the same matches).")
    max_missing: int = MAX_MISSING
    where: Optional[list[str]] = WHERE
    fmt: StreamFormat = FORMAT
    as_json: bool = JSON
