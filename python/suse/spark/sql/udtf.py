"""``suse_aggregate``: suse as a Python table function (UDTF) for Spark SQL.

```sql
SELECT * FROM suse_aggregate(
  TABLE(SELECT tailnum, time_hour, c FROM classified) PARTITION BY tailnum ORDER BY time_hour,
  query => 'D(D|A)*C', window => '2 days', summary_size => 24)
```

The table argument holds the timestamp column, the character column (``c`` unless
``characters =>`` names another), optionally the value column, and the partition columns:
**every other column is a partition column** and is copied to the output. Spark's
``PARTITION BY`` hands each partition to one UDTF instance; ``terminate`` then runs the
engine once over the partition's events, as ``aggregate`` does (docs/SPARK.md, "Spark SQL").

``analyze`` runs at analysis time, so a bad query, window or option fails before any job, and
it asks Spark (``select``) to turn the timestamp into engine integers and to pass only the
columns the engine needs. ``register`` installs it as an Arrow UDTF (Spark's
``SQL_ARROW_UDTF``): ``eval`` receives each partition's rows as Arrow batches and
``terminate`` hands them to the batch runner (runner.run_sorted), so the rows are exactly
``aggregate``'s. The row-at-a-time form (``register(..., arrow=False)``: one pickled row per
``eval`` call) was about 24 times slower than ``aggregate`` at 1,000,000 events in 10,000
partitions; Spark's ``useArrow=True`` for it was slower still (it converts batches back to rows).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, SelectedColumn

import suse
from suse.errors import InputError
from suse.spark.events.timing import TimeAxis
from suse.spark.events.triggers import parse_trigger
from suse.spark.runners.plan import EXACT_DDL, RESULT_DDL, Plan, empty_row, evaluate_partition, result_columns
from suse.spec import QuerySpec, SummarySpec

NAME = "suse_aggregate"
OPTIONS = (  # named arguments, after the table; query and window may also be positional
    "query", "window", "timestamp", "characters", "value", "summary_size", "strategy", "evaluate",
    "exact", "aggregate", "policy", "seed", "probabilities", "timestamp_format",
)
_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_TS, _CHAR, _VALUE = "_suse_ts", "_suse_char", "_suse_value"


@dataclasses.dataclass
class Analysis(AnalyzeResult):
    """What ``analyze`` found, handed by Spark to every UDTF instance on the executors."""

    plan: Plan | None = None
    keys: tuple[str, ...] = ()
    is_datetime: bool = False
    has_value: bool = False


def register(spark: Any, name: str = NAME, arrow: bool = True) -> None:
    """Register ``suse_aggregate`` (or ``name``) as a table function of ``spark``'s SQL.

    ``arrow``: rows reach the function as Arrow batches (SuseArrowAggregate); False registers
    the row-at-a-time function (SuseAggregate, one pickled row per ``eval`` call)."""
    from pyspark.util import PythonEvalType

    if type(spark).__module__.startswith("pyspark.sql.connect"):  # decided by the session, not the process
        from pyspark.sql.connect.udtf import _create_py_udtf, _create_udtf
    else:
        from pyspark.sql.udtf import _create_py_udtf, _create_udtf

    if arrow:
        # pyspark's arrow_udtf() refuses a class with analyze() on the client (SPARK-53286), but
        # the server runs analyze() for Arrow UDTFs as for others; _create_udtf skips the check.
        spark.udtf.register(name, _create_udtf(SuseArrowAggregate, None, name, PythonEvalType.SQL_ARROW_UDTF))
    else:
        spark.udtf.register(name, _create_py_udtf(SuseAggregate, None, useArrow=False))


def _sql_quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _options(args: tuple, kwargs: dict) -> dict[str, Any]:
    named = dict(zip(("query", "window"), args))
    if len(args) > 2:
        raise InputError(f"{NAME} takes the table, query and window as positional arguments; name the others (summary_size => 24)")
    for key, arg in kwargs.items():
        if key.lower() not in OPTIONS:
            raise InputError(f"{NAME}: unknown argument {key!r}; expected one of {', '.join(OPTIONS)}")
        if key.lower() in named:
            raise InputError(f"{NAME}: argument {key!r} given twice")
        named[key.lower()] = arg
    values = {}
    for key, arg in named.items():
        if isinstance(arg, AnalyzeArgument):
            if arg.isTable or not arg.isConstantExpression:
                raise InputError(f"{NAME}: argument {key} must be a constant (a literal), not a column or table")
            arg = arg.value
        if arg is not None:
            values[key] = arg
    for required in ("query", "window"):
        if required not in values:
            raise InputError(f"{NAME} needs {required} => ..., e.g. query => 'AB*C', window => '2 days'")
    return values


def _find(schema: T.StructType, name: str, role: str) -> T.StructField:
    for f in schema.fields:
        if f.name == name or f.name.lower() == name.lower():
            return f
    raise InputError(f"{NAME}: {role} column {name!r} not found; the table has columns: {', '.join(schema.names)}")


def _timestamp_field(schema: T.StructType, name: str | None) -> T.StructField:
    if name is not None:
        return _find(schema, name, "timestamp")
    times = [f for f in schema.fields if isinstance(f.dataType, (T.TimestampType, T.TimestampNTZType, T.DateType))]
    if len(times) != 1:
        what = "no timestamp or date column" if not times else f"several ({', '.join(f.name for f in times)})"
        raise InputError(f"{NAME}: the table has {what}; name the time column with timestamp => '...'")
    return times[0]


def _time(f: T.StructField, fmt: str | None) -> tuple[TimeAxis, str]:
    """The axis of the timestamp column and the Spark SQL expression giving engine integers
    (the same conversions as ``aggregate``: epoch seconds in UTC for date-times)."""
    col, t = _sql_quote(f.name), f.dataType
    if fmt and not isinstance(t, T.StringType):
        raise InputError(f"{NAME}: timestamp_format applies to string columns, but {f.name!r} is {t.simpleString()}")
    if isinstance(t, _INTEGRAL):
        return TimeAxis(f.name, "integer"), f"CAST({col} AS BIGINT)"
    if isinstance(t, (T.TimestampType, T.TimestampNTZType)):
        return TimeAxis(f.name, "timestamp"), f"unix_seconds(CAST({col} AS TIMESTAMP))"
    if isinstance(t, T.DateType):
        return TimeAxis(f.name, "date"), f"CAST(unix_date({col}) AS BIGINT) * 86400"
    if isinstance(t, T.StringType):
        parse = f"try_to_timestamp({col}, {json.dumps(fmt)})" if fmt else f"try_to_timestamp({col})"
        return TimeAxis(f.name, "string", fmt), f"unix_seconds({parse})"
    raise InputError(f"{NAME}: timestamp column {f.name!r} has type {t.simpleString()}; expected a timestamp, date, date-time string or integer")


def _evaluate(spec: Any) -> Any:
    """SQL has no lists or maps of mixed type: a list of times or a Poisson process is given
    as JSON text (evaluate => '{"poisson": 1, "per": "30 days"}')."""
    if isinstance(spec, str) and spec.strip()[:1] in "[{":
        try:
            return json.loads(spec)
        except json.JSONDecodeError as exc:
            raise InputError(f"{NAME}: evaluate {spec!r} is not valid JSON: {exc}") from None
    return spec


def analyse(table: Any, args: tuple, kwargs: dict) -> Analysis:
    """Check the call on the driver and describe the output; every mistake is an InputError
    or QueryError (Spark shows it as the analysis error)."""
    if not isinstance(table, AnalyzeArgument) or not table.isTable:
        raise InputError(f"{NAME}'s first argument must be a table: TABLE(t) PARTITION BY key ORDER BY time")
    opts = _options(args, kwargs)
    schema: T.StructType = table.dataType
    ts_field = _timestamp_field(schema, opts.get("timestamp"))
    axis, ts_expr = _time(ts_field, opts.get("timestamp_format"))
    char_field = _find(schema, opts.get("characters", "c"), "character")
    if not isinstance(char_field.dataType, T.StringType):
        raise InputError(f"{NAME}: character column {char_field.name!r} must hold strings, it is {char_field.dataType.simpleString()}")
    used = {ts_field.name, char_field.name}
    value_field = None
    if "value" in opts:
        value_field = _find(schema, opts["value"], "value")
        if not isinstance(value_field.dataType, _INTEGRAL):
            raise InputError(f"{NAME}: value column {value_field.name!r} has type {value_field.dataType.simpleString()}; values must be non-negative integers")
        used.add(value_field.name)
    if len(used) < 2 + (value_field is not None):
        raise InputError(f"{NAME}: the timestamp, character and value columns must be different columns")
    keys = tuple(f.name for f in schema.fields if f.name not in used)

    query = suse.Query(opts["query"], 0, policy=opts.get("policy", "any"))  # QueryError if malformed
    window = axis.span(opts["window"], "window")
    probabilities = opts.get("probabilities")
    if isinstance(probabilities, str):
        probabilities = _evaluate(probabilities) if probabilities.strip().startswith("{") else probabilities
        if not isinstance(probabilities, dict):
            raise InputError(f"{NAME}: probabilities must be JSON such as '{{\"A\": 0.5, \"B\": 0.5}}'")
    exact = opts.get("exact", False)
    if not isinstance(exact, bool):
        raise InputError(f"{NAME}: exact must be true or false, got {exact!r}")
    plan = Plan(
        QuerySpec(opts["query"], window, opts.get("aggregate", "count"), opts.get("policy", "any")),
        SummarySpec(opts.get("summary_size", 500), opts.get("strategy", "suse"), probabilities, opts.get("seed", 0)),
        parse_trigger(_evaluate(opts.get("evaluate", "end")), axis, window), exact,
        # rank = position in the alphabet, as for a character column in aggregate
        query.alphabet + "".join(c for c in query.negated if c not in query.alphabet),
    )
    if plan.extrema:  # its output schema has no min/max columns yet
        raise InputError(f"{NAME}: aggregate {plan.aggregate!r} is not offered by the table function; use suse.spark.aggregate")
    if plan.policy == "contiguous":
        raise InputError(f"{NAME}: policy 'contiguous' needs every row, including rows with no character; use suse.spark.aggregate or suse.spark.sql")
    plan.new_summary()  # a bad size, strategy, probabilities or seed fails now

    out = T.StructType([schema[k] for k in keys] + _result_fields(exact, axis.is_datetime))
    select = [SelectedColumn(_sql_quote(k)) for k in keys] + [
        SelectedColumn(ts_expr, _TS), SelectedColumn(_sql_quote(char_field.name), _CHAR)
    ]
    if value_field is not None:
        select.append(SelectedColumn(f"CAST({_sql_quote(value_field.name)} AS BIGINT)", _VALUE))
    # Without partition columns the whole table is one stream.
    return Analysis(schema=out, withSinglePartition=not keys, select=select, plan=plan, keys=keys,
                    is_datetime=axis.is_datetime, has_value=value_field is not None)


def _result_fields(exact: bool, datetime: bool) -> list[T.StructField]:
    """RESULT_DDL (+ EXACT_DDL) as fields, built by hand: analyze runs where no session exists
    to parse DDL."""
    string, long, double = T.StringType(), T.LongType(), T.DoubleType()
    element = T.StructType([T.StructField("char", string), T.StructField("timestamp", long), T.StructField("value", long)])
    types = {
        "evaluated_at": T.TimestampType() if datetime else long, "count": string, "sum": string, "avg": double,
        "count_double": double, "sum_double": double, "detected_count": string, "events": long,
        "dropped_events": long, "corrupt_records": long, "elements": T.ArrayType(element),
        "exact_count": string, "exact_sum": string,
    }
    names = [c.split()[0] for c in (RESULT_DDL + (", " + EXACT_DDL if exact else "")).split(", ") if c.split()[0] in types]
    return [T.StructField(n, types[n]) for n in names]


class SuseAggregate:
    """The UDTF: ``eval`` collects one partition's events, ``terminate`` runs the engine."""

    def __init__(self, analysis: Analysis):
        self.a = analysis
        self.rank = {c: i for i, c in enumerate(analysis.plan.order)}
        self.key: tuple | None = None
        self.ts: list[int] = []
        self.ranks: list[int] = []
        self.values: list[int] = []
        self.dropped = 0
        self.rows = 0

    @staticmethod
    def analyze(table: AnalyzeArgument, *args: AnalyzeArgument, **kwargs: AnalyzeArgument) -> AnalyzeResult:
        return analyse(table, args, kwargs)

    def eval(self, row: Any, *args: Any, **kwargs: Any) -> None:
        n = len(self.a.keys)
        key = tuple(row[:n]) if n != 1 else (row[0],)
        self.rows += 1
        if self.key is None:
            self.key = key
        elif key != self.key:
            raise InputError(
                f"{NAME}: rows of different partitions ({_show(self.a.keys, self.key)} and "
                f"{_show(self.a.keys, key)}) reached one call. Add PARTITION BY "
                f"{', '.join(self.a.keys)} after TABLE(...), and pass only the partition, time, "
                f"character and value columns: every other column counts as a partition column"
            )
        rank = self.rank.get(row[n + 1])
        if rank is None:  # no character of the query: never part of a match
            return
        ts = row[n]
        if ts is None:  # NULL or unreadable time: counted, never fed
            self.dropped += 1
            return
        if self.a.has_value:
            v = row[n + 2]
            if v is None or v < 0:
                raise InputError(f"{NAME}: the value column is {'NULL' if v is None else f'negative ({v})'} in partition {_show(self.a.keys, key)} at time {ts}")
            self.values.append(v)
        self.ts.append(ts)
        self.ranks.append(rank)

    def terminate(self) -> Iterator[tuple]:
        plan = self.a.plan
        ts = np.asarray(self.ts, dtype=np.int64)
        ranks = np.asarray(self.ranks, dtype=np.int32)
        order = np.lexsort((ranks, ts))  # stable: ties of one character keep Spark's ORDER BY order
        ts, ranks = ts[order], ranks[order]
        values = np.asarray(self.values, dtype=np.int64)[order] if self.a.has_value else None
        key = self.key or ()
        rows = evaluate_partition(plan, key, plan.chars(ranks), ts, values) if len(ts) else []
        if not rows and self.dropped:
            rows = [empty_row(plan, self.dropped, 0)]
        rows = [r._replace(dropped=self.dropped) for r in rows]
        cols = result_columns(rows, plan.exact)
        if self.a.is_datetime:
            cols["evaluated_at"] = [None if t is None else _UTC_EPOCH + dt.timedelta(seconds=t) for t in cols["evaluated_at"]]
        cols["elements"] = [[(c, t, v) for c, t, v in els] for els in cols["elements"]]
        for i in range(len(rows)):
            yield (*key, *(col[i] for col in cols.values()))


_UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _show(keys: tuple[str, ...], values: tuple) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in zip(keys, values)) or "the only one"


class SuseArrowAggregate(SuseAggregate):
    """The UDTF over Arrow batches: ``eval`` keeps one partition's batches, ``terminate``
    ranks, checks and sorts them with Arrow and numpy and runs the batch runner once."""

    def __init__(self, analysis: Analysis):
        super().__init__(analysis)
        self.batches: list[pa.RecordBatch] = []

    def eval(self, batch: pa.RecordBatch, *args: Any, **kwargs: Any) -> None:
        from suse.spark.runners.gathered import _same_key, key_runs

        keys = list(self.a.keys)
        if keys and batch.num_rows and (len(key_runs(batch, keys)[0]) > 1 or (
                self.batches and not _same_key(self.batches[-1], batch, keys))):
            starts, _ = key_runs(_rows(self.batches[-1:] + [batch], keys), keys)
            first, second = (_rows(self.batches[-1:] + [batch], keys).slice(int(i), 1).select(keys).to_pylist()[0]
                             for i in starts[:2])
            raise InputError(
                f"{NAME}: rows of different partitions ({_show(self.a.keys, tuple(first.values()))} and "
                f"{_show(self.a.keys, tuple(second.values()))}) reached one call. Add PARTITION BY "
                f"{', '.join(self.a.keys)} after TABLE(...), and pass only the partition, time, "
                f"character and value columns: every other column counts as a partition column"
            )
        if batch.num_rows:
            self.batches.append(batch)

    def terminate(self) -> Iterator[pa.RecordBatch]:
        from suse.spark.events.rows import DROPPED, RANK, TIE, TS, VALUE
        from suse.spark.runners.sorted import run_sorted

        if not self.batches:
            return
        plan, keys = self.a.plan, list(self.a.keys)
        first = self.batches[0].select(keys)
        key = tuple(first.slice(0, 1).to_pylist()[0].values()) if keys else ()
        table = _rows(self.batches, keys + [_TS, _CHAR] + ([_VALUE] if self.a.has_value else []))
        self.batches = []
        rank = pc.index_in(table.column(_CHAR), value_set=pa.array(list(plan.order)))
        table = table.filter(rank.is_valid())  # no character of the query: never part of a match
        rank = rank.drop_null()
        timed = table.column(_TS).is_valid()
        dropped = len(table) - pc.sum(timed).as_py() if len(table) else 0  # NULL or unreadable time
        table, rank = table.filter(timed), rank.filter(timed)
        ts = table.column(_TS).to_numpy(zero_copy_only=False).astype(np.int64)
        ranks = rank.to_numpy(zero_copy_only=False).astype(np.int32)
        values = None
        if self.a.has_value:
            col = table.column(_VALUE)
            bad = pc.or_(col.is_null(), pc.less(col.fill_null(0), 0)).to_numpy(zero_copy_only=False)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                v = col[i].as_py()
                raise InputError(f"{NAME}: the value column is {'NULL' if v is None else f'negative ({v})'} in partition {_show(self.a.keys, key)} at time {ts[i]}")
            values = col.to_numpy(zero_copy_only=False).astype(np.int64)
        order = np.lexsort((ranks, ts))  # stable: ties of one character keep Spark's ORDER BY order
        n = len(order) + dropped
        cols = {k: first.column(k).take(pa.array(np.zeros(n, np.int64))) for i, k in enumerate(keys)}
        cols[TS] = pa.array(np.concatenate([np.zeros(dropped, np.int64), ts[order]]))
        cols[RANK] = pa.array(np.concatenate([np.full(dropped, DROPPED, np.int32), ranks[order]]))
        cols[TIE] = pa.array(np.zeros(n, np.int64))
        if values is not None:
            cols[VALUE] = pa.array(np.concatenate([np.zeros(dropped, np.int64), values[order]]))
        batch = pa.RecordBatch.from_pydict(cols)
        for out in run_sorted(plan, keys, iter([batch]), TS, RANK, VALUE if values is not None else None):
            if self.a.is_datetime:  # engine seconds -> the TIMESTAMP column aggregate gives
                i = out.schema.get_field_index("evaluated_at")
                micros = pc.multiply(out.column(i), 1_000_000).cast(pa.timestamp("us", tz="UTC"))
                out = out.set_column(i, "evaluated_at", micros)
            yield out



def _rows(batches: list[pa.RecordBatch], names: list[str]) -> pa.RecordBatch:
    return pa.Table.from_batches([b.select(names) for b in batches]).combine_chunks().to_batches()[0] \
        if len(batches) > 1 else batches[0].select(names)
