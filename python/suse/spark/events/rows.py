"""Raw rows -> events: partition key, integer timestamp, character, value, tie-breakers.

Characters come from an ordered mapping ``{char: Spark SQL predicate}``: one CASE WHEN
chain, so the first true predicate wins (a NULL predicate counts as false) and a row that
matches none is dropped. Any boolean Spark SQL expression works, including aggregate
window functions such as ``percentile_approx(volume, 0.9) OVER (PARTITION BY ticker)``
(batch only: Spark cannot run such windows on a stream). Alternatively ``characters`` names
a column that already holds one character per row.

Rows whose character is not in the query's alphabet can never be part of a match and are
dropped too (a predicate for such a character still claims its rows first).

Ties: within a partition events are ordered by (timestamp, rank, tie) where ``rank`` is the
character's position in the predicate list (or in the query alphabet when characters come
from a column) and ``tie`` is ``xxhash64`` of the whole input row. The order therefore
depends only on the data, never on file layout, partitioning or arrival order, so batch,
streaming and re-runs agree. Rows that are identical in every column are interchangeable.
"""
from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from suse.errors import InputError
from suse.spark.events.timing import TimeAxis
from suse.spec import InputSpec

# Internal column names; user data never sees them.
TS, RANK, VALUE, TIE = "_suse_ts", "_suse_rank", "_suse_value", "_suse_tie"
OP = "_suse_op"  # +1 an event, -1 a retraction of an equal earlier event (the `op` column)
ATTRIBUTE = "_suse_attr_{}"  # the i-th attribute a query's conditions read (`where`)
#: The character of a row that matches no predicate, fed under contiguity (never a query letter).
OTHER = "~"
# Ranks of rows that are counted, never fed: a NULL or unreadable timestamp, a corrupt record.
DROPPED, CORRUPT = -1, -2

_WINDOW = re.compile(r"\bover\s*\(", re.IGNORECASE)
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


def spark_message(exc: Exception) -> str:
    """The first line of a Spark error, without the plan dump that follows it."""
    text = getattr(exc, "getMessage", lambda: str(exc))() if isinstance(exc, PySparkException) else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


@contextlib.contextmanager
def analysing() -> Iterator[None]:
    """Silence pyspark's logging of analysis errors (a JSON dump with a JVM stack trace) while
    we check user SQL: the error is re-raised as a one-line InputError instead."""
    # Through PySparkLogger: a plain logging.getLogger would create these names as plain
    # Loggers first, and pyspark's later error logging (errorClass=...) would then fail.
    from pyspark.logger import PySparkLogger

    loggers = [PySparkLogger.getLogger(n) for n in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def field(df: DataFrame, name: str, role: str) -> T.StructField:
    """The schema field of column ``name`` (matched like Spark: case-insensitively)."""
    for f in df.schema.fields:
        if f.name == name or f.name.lower() == name.lower():
            return f
    cols = ", ".join(df.columns)
    raise InputError(f"{role} column '{name}' not found; the data has columns: {cols}")


def quoted(name: str) -> Column:
    return F.col("`" + name.replace("`", "``") + "`")


def time_axis(df: DataFrame, column: str, fmt: str | None = None) -> tuple[TimeAxis, Column]:
    """How the timestamp column maps to engine integers, and the expression doing it."""
    f = field(df, column, "timestamp")
    col = quoted(f.name)
    t = f.dataType
    if fmt and not isinstance(t, T.StringType):  # only strings are parsed; say so for every other type
        raise InputError(f"timestamp_format applies to string columns, but timestamp column '{column}' has type {t.simpleString()}")
    if isinstance(t, _INTEGRAL):
        return TimeAxis(f.name, "integer"), col.cast("long")
    if isinstance(t, (T.TimestampType, T.TimestampNTZType)):
        return TimeAxis(f.name, "timestamp"), F.unix_seconds(col.cast("timestamp"))
    if isinstance(t, T.DateType):
        return TimeAxis(f.name, "date"), F.unix_date(col).cast("long") * 86400
    if isinstance(t, T.StringType):
        # try_: an unreadable string becomes NULL (counted in dropped_events) instead of
        # failing the whole job with CAST_INVALID_INPUT under ANSI mode.
        parsed = F.try_to_timestamp(col, F.lit(fmt)) if fmt else F.try_to_timestamp(col)
        return TimeAxis(f.name, "string", fmt), F.unix_seconds(parsed)
    raise InputError(
        f"timestamp column '{column}' has type {t.simpleString()}; expected a timestamp, date, "
        f"date-time string or integer column"
    )


def check_char(name: object, where: str) -> str:
    if not (isinstance(name, str) and len(name) == 1 and name.isascii() and name.isalnum()):
        raise InputError(f"{where}: character {name!r} must be one ASCII letter or digit, as in the query")
    return name


def classify(
    df: DataFrame, characters: Mapping[str, str] | str, alphabet: str, streaming: bool = False
) -> tuple[Column, str]:
    """An integer column ``rank`` (NULL when no character applies) and the characters in rank
    order, so that ``order[rank]`` is the row's character. Every predicate is checked here,
    so a bad one fails now with its name rather than deep inside a job."""
    if isinstance(characters, str):
        f = field(df, characters, "character")
        if not isinstance(f.dataType, T.StringType):
            raise InputError(f"character column '{characters}' must hold strings, it is {f.dataType.simpleString()}")
        order = alphabet
        # A one-letter string's rank by its code (the letters are ASCII): an array lookup
        # instead of comparing the string with every letter.
        by_code = [None] * (max(map(ord, order), default=0) + 1)
        for i, c in enumerate(order):
            by_code[ord(c)] = i
        col = quoted(f.name)
        codes = F.array(*[F.lit(r).cast("int") for r in by_code])
        return F.when(F.length(col) == 1, F.try_element_at(codes, F.ascii(col) + 1)), order
    if not isinstance(characters, Mapping) or not characters:
        raise InputError("characters must map each character to a Spark SQL predicate, e.g. {'A': 'close > open'}")
    chain = None
    for i, (char, predicate) in enumerate(characters.items()):
        check_char(char, "characters")
        cond = _predicate(df, char, predicate, streaming)
        chain = F.when(cond, F.lit(i)) if chain is None else chain.when(cond, F.lit(i))
    return chain, "".join(characters)


def _predicate(df: DataFrame, char: str, predicate: object, streaming: bool) -> Column:
    if not isinstance(predicate, str) or not predicate.strip():
        raise InputError(f"character {char}: the predicate must be a non-empty Spark SQL expression")
    if streaming and _WINDOW.search(predicate):
        raise InputError(
            f"character {char}: predicate {predicate!r} uses a window function (OVER ...), which "
            f"Spark cannot evaluate on a stream; compute it in a batch job or precompute the column"
        )
    try:
        with analysing():
            cond = F.expr(predicate)
            dtype = df.select(cond.alias("p")).schema[0].dataType
    except PySparkException as exc:
        raise InputError(f"character {char}: invalid predicate {predicate!r}: {spark_message(exc)}") from None
    if not isinstance(dtype, T.BooleanType):
        raise InputError(
            f"character {char}: predicate {predicate!r} gives {dtype.simpleString()}, not a boolean"
        )
    return cond


@dataclass(frozen=True)
class Events:
    """A DataFrame with columns ``keys + [TS, RANK, TIE] (+ [VALUE])`` and how to read it."""

    frame: DataFrame
    keys: tuple[str, ...]
    axis: TimeAxis
    order: str  # order[rank] is the character
    has_value: bool
    has_op: bool = False
    #: the data's columns the conditions read (`where`), carried as ATTRIBUTE.format(i)
    attributes: tuple[str, ...] = ()

    @property
    def usable(self) -> DataFrame:
        """Only the events: without the rows that are counted, not fed (negative rank)."""
        return self.frame.where(F.col(RANK) >= 0)


def to_events(df: DataFrame, spec: InputSpec, alphabet: str, *, streaming: bool = False,
              keep_all: bool = False, attributes: Mapping[str, Sequence[str]] | None = None) -> Events:
    """``keep_all`` (contiguity): rows with no character of the query are events too, fed to
    the engine as the placeholder character :data:`OTHER`, because they break contiguity.
    ``attributes``: the columns a query's conditions read, with the letters reading each."""
    partition_by, value, op, replicate = spec.partition_by, spec.value, spec.op, spec.replicate
    keys = tuple(field(df, k, "partition").name for k in partition_by)
    if len(set(keys)) != len(keys):
        raise InputError(f"partition_by names a column twice: {list(partition_by)}")
    axis, ts = time_axis(df, spec.timestamp, spec.timestamp_format)
    characters = spec.character_column if spec.character_column is not None else spec.predicates
    rank, order = classify(df, characters, alphabet, streaming)
    if keep_all:
        rank, order = F.coalesce(rank, F.lit(len(order))), order + OTHER
    # Filter first: only rows with a query character pay for the row hash and time parsing.
    # Rows that cannot be used but must be counted stay, with a negative rank: a NULL or
    # unreadable timestamp (DROPPED) or a record the reader could not parse (CORRUPT).
    in_query = [i for i, c in enumerate(order) if c in alphabet or keep_all]
    corrupt = corrupt_column(df)
    keep = F.col(RANK).isin(in_query)
    if corrupt is not None:
        keep = keep | corrupt.isNotNull()
    ranked = df.withColumn(RANK, rank).where(keep)
    checked_rank = F.when(ts.isNull(), F.lit(DROPPED)).otherwise(F.col(RANK))
    if corrupt is not None:
        checked_rank = F.when(corrupt.isNotNull(), F.lit(CORRUPT)).otherwise(checked_rank)
    cols = [quoted(k) for k in keys] + [ts.alias(TS), F.col(RANK), _tie(df).alias(TIE)]
    if value is not None:
        f = field(df, value, "value")
        if not isinstance(f.dataType, _INTEGRAL):
            raise InputError(
                f"value column '{value}' has type {f.dataType.simpleString()}; values must be "
                f"non-negative integers (derive one, e.g. CAST(round(x) AS BIGINT))"
            )
        usable = F.col(RANK).isin(in_query) & ts.isNotNull()
        if corrupt is not None:
            usable = usable & corrupt.isNull()
        cols.append(_checked_value(df, f.name, keys, usable).alias(VALUE))
    if op is not None:
        cols.append(_checked_op(df, field(df, op, "op").name).alias(OP))
    names = tuple(attributes or ())
    cols += [quoted(attribute_field(df, name, attributes[name]).name).alias(ATTRIBUTE.format(i))  # type: ignore[index]
             for i, name in enumerate(names)]
    events = ranked.select(*cols, checked_rank.alias("_suse_checked")).drop(RANK)
    events = events.withColumnRenamed("_suse_checked", RANK)
    if replicate:
        events = _replicate(events, keys, order, alphabet, replicate)
    return Events(events, keys, axis, order, value is not None, op is not None, names)


_ATTRIBUTE_TYPES = (*_INTEGRAL, T.FloatType, T.DoubleType, T.DecimalType, T.StringType, T.BooleanType)


def attribute_field(df: DataFrame, name: str, readers: Sequence[str]) -> T.StructField:
    """The column a condition reads as attribute ``name`` (its exact name, as the conditions
    write it), checked to hold numbers, strings or booleans."""
    letters = "/".join(readers)
    found = [f for f in df.schema.fields if f.name == name]
    if not found:
        raise InputError(f"the data has no column {name!r}, which the condition of {letters} reads; "
                         f"the data has columns: {', '.join(df.columns)}")
    f = found[0]
    if not isinstance(f.dataType, _ATTRIBUTE_TYPES):
        raise InputError(f"column {name!r}, which the condition of {letters} reads, has type "
                         f"{f.dataType.simpleString()}; conditions compare numbers, strings and booleans (derive "
                         f"one, e.g. unix_seconds(...) for a timestamp)")
    return f


def corrupt_column(df: DataFrame) -> Column | None:
    """The reader's corrupt-record column (``spark.sql.columnNameOfCorruptRecord``), if the
    data has one: JSON and CSV readers in PERMISSIVE mode put an unparsable line there."""
    name = df.sparkSession.conf.get("spark.sql.columnNameOfCorruptRecord", "_corrupt_record")
    for f in df.schema.fields:
        if f.name == name and isinstance(f.dataType, T.StringType):
            return quoted(f.name)
    return None


def _checked_value(df: DataFrame, column: str, keys: Sequence[str], usable: Column) -> Column:
    """The value, or a Spark error naming partition, column and row when a usable event has
    a NULL or negative value. Raised by the JVM (``raise_error``), so it is one line instead
    of a Python worker traceback, and it fires in batch and streaming alike."""
    v = quoted(column).cast("long")
    row = F.substring(F.to_json(F.struct(*[quoted(c) for c in df.columns]), {"ignoreNullFields": "false"}), 1, 300)
    part = F.concat_ws(", ", *[F.concat(F.lit(f"{k}="), F.coalesce(quoted(k).cast("string"), F.lit("NULL")))
                               for k in keys]) if keys else F.lit("the only one")
    where = F.concat(F.lit(" in partition "), part, F.lit(", row "), F.coalesce(row, F.lit("?")))
    name = column.replace("'", "")
    what = F.when(v.isNull(), F.lit("NULL")).otherwise(F.concat(F.lit("negative ("), v.cast("string"), F.lit(")")))
    message = F.concat(F.lit(f"suse: value column '{name}' is "), what, where)
    return F.when(usable & (v.isNull() | (v < 0)), F.raise_error(message)).otherwise(v)


def _checked_op(df: DataFrame, column: str) -> Column:
    """+1 for "+", -1 for "-"; anything else stops the job with the offending row (as values)."""
    o = F.trim(quoted(column).cast("string"))
    row = F.substring(F.to_json(F.struct(*[quoted(c) for c in df.columns]), {"ignoreNullFields": "false"}), 1, 300)
    name = column.replace("'", "")
    message = F.concat(F.lit(f"suse: op column '{name}' must be '+' or '-', got "),
                       F.coalesce(F.concat(F.lit("'"), o, F.lit("'")), F.lit("NULL")), F.lit(", row "),
                       F.coalesce(row, F.lit("?")))
    return F.when(o == "+", F.lit(1)).when(o == "-", F.lit(-1)).otherwise(F.raise_error(message)).cast("int")


def _tie(df: DataFrame) -> Column:
    hashable = [quoted(f.name) for f in df.schema.fields if not _has_map(f.dataType)]
    return F.xxhash64(*hashable) if hashable else F.lit(0).cast("long")


def _has_map(t: T.DataType) -> bool:  # Spark refuses to hash maps
    if isinstance(t, T.MapType):
        return True
    if isinstance(t, T.ArrayType):
        return _has_map(t.elementType)
    if isinstance(t, T.StructType):
        return any(_has_map(f.dataType) for f in t.fields)
    return False


def _replicate(
    events: DataFrame, keys: tuple[str, ...], order: str, alphabet: str, replicate: Sequence[str]
) -> DataFrame:
    """Paper §5.3: characters outside a partitioning predicate are copied into every
    partition. The partitions are those that have at least one event of their own."""
    if not keys:
        raise InputError("replicate needs partition_by: without partitions there is nothing to copy into")
    for c in replicate:
        check_char(c, "replicate")
        if c not in order:
            raise InputError(f"replicate: character {c!r} has no predicate")
        if c not in alphabet:
            raise InputError(f"replicate: character {c!r} is not in the query ({alphabet})")
    ranks = [order.index(c) for c in replicate]
    shared = F.col(RANK).isin(ranks)
    own = events.where(~shared)
    copies = events.where(shared).drop(*keys).crossJoin(own.select(*[quoted(k) for k in keys]).distinct())
    return own.unionByName(copies)
