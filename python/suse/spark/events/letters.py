"""Query letters that no event can ever get: without a check, they give silent zeros.

* A letter with **no predicate** (``characters`` as a mapping) is known before any data is
  read. If the letters that do have predicates cannot spell any word of the query, every
  result would be 0: that is an InputError. Otherwise matches that need the letter are never
  counted, which may be intended (one character map shared by several queries): a warning.
* A letter that **never occurs** in a character column (or whose predicate no row satisfies,
  seen when ``probabilities="estimate"`` counts them) depends on the data: a warning.

Warnings are ``suse.SuseWarning``; ``suse run`` prints them as ``warning: ...`` lines.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Iterable, Mapping

import suse
from suse.errors import InputError, SuseWarning

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def possible(query: suse.Query, letters: Iterable[str]) -> bool:
    """Whether some non-empty word of the query uses only ``letters``."""
    a = query.automaton
    allowed = set(letters)
    seen: set[int] = set()
    frontier = [a.start]
    while frontier:
        state = frontier.pop()
        for (source, ch), target in a.transitions.items():
            if source == state and ch in allowed and target not in seen:
                seen.add(target)
                frontier.append(target)
    return bool(seen & a.finals)


def _names(letters: Iterable[str]) -> str:
    letters = list(letters)
    return ("letter " if len(letters) == 1 else "letters ") + ", ".join(letters)


def warn_letters(query: suse.Query, letters: list[str], why: str) -> None:
    warnings.warn(
        f"query {query.regex}: {why} {_names(letters)}, so no event gets "
        f"{'it' if len(letters) == 1 else 'them'}; matches that need "
        f"{'it' if len(letters) == 1 else 'them'} are never counted",
        SuseWarning,
        stacklevel=5  # the caller of aggregate(),
    )


def missing_predicates(query: suse.Query, characters: Mapping[str, object]) -> list[str]:
    """Query letters without a predicate. Raises InputError when, without them, no match
    of the query is possible at all."""
    missing = [c for c in query.alphabet if c not in characters]
    if missing and not possible(query, [c for c in query.alphabet if c in characters]):
        raise InputError(
            f"characters: query {query.regex} needs {_names(missing)}, which "
            f"{'has' if len(missing) == 1 else 'have'} no predicate: no match is possible, every "
            f"count would be 0. Give a predicate for {'it' if len(missing) == 1 else 'each'} "
            f"(predicates so far: {', '.join(map(str, characters)) or 'none'})"
        )
    return missing


def check_predicates(query: suse.Query, characters: Mapping[str, object]) -> None:
    if not isinstance(characters, Mapping):
        return  # classify() reports the wrong type
    missing = missing_predicates(query, characters)
    if missing:
        warn_letters(query, missing, "characters has no predicate for")


def check_column_letters(query: suse.Query, df: DataFrame, column: str) -> None:
    """One small Spark job: which query letters occur in the character column."""
    from pyspark.sql import functions as F

    from suse.spark.events.rows import field, quoted

    col = quoted(field(df, column, "character").name)
    # One aggregate (no shuffle of distinct values): for each letter, does any row hold it?
    seen = df.agg(*[F.max(F.when(col == c, 1)).alias(f"_{i}") for i, c in enumerate(query.alphabet)]).first()
    never = [c for i, c in enumerate(query.alphabet) if seen is None or seen[i] is None]
    if not never:
        return
    held = [r[0] for r in df.where(col.isNotNull()).select(col).distinct().limit(6).collect()]
    sample = ", ".join(repr(v) for v in held[:5]) + (", ..." if len(held) > 5 else "")
    hint = f" (it holds {sample}; characters are case-sensitive)" if held else " (it holds only NULLs or no rows)"
    warn_letters(query, never, f"character column '{column}'{hint} never holds")
