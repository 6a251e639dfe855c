"""Standard MATCH_RECOGNIZE (SQL:2016, as Trino runs it) on Spark: ``suse.spark.sql`` picks
this mode for a statement written with standard clauses only (docs/SPARK.md).

Plan: Spark computes every row-local part (each row expression that a navigation or aggregate
reads, each DEFINE condition that depends on its row alone, ``PREV``/``NEXT`` of the current
row as ``lag``/``lead``, except the comparisons :mod:`suse.recognize.columnar` decides in the
worker without that window), shuffles by the partition keys and sorts by (keys, ORDER BY); a
``mapInArrow`` body (:mod:`suse.recognize.runner`) matches each partition in Python and returns
the values that depend on the match; Spark then evaluates the MEASURES expressions over them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from suse.errors import SqlError
from suse.recognize.columnar import FLOATING, INTEGRAL, columnar_condition
from suse.recognize.expressions import CLASSIFIER_VALUE, Agg, Classifier, Extractor, MatchNumber, Nav, Split
from suse.recognize.matcher import RecognizeError, Skip, compile_pattern
from suse.recognize.pattern import (
    Alt,
    Anchor,
    Exclude,
    Node,
    Repeat,
    Seq,
    Var,
    nullable,
    parse_pattern,
    variable_name,
    variables,
)
from suse.spark.sql.statement import Token, _Parser, apply_select, read_source, tokenize

CLAUSES = ("PARTITION", "ORDER", "MEASURES", "ONE", "ALL", "AFTER", "PATTERN", "SUBSET", "DEFINE", "WITHIN")


@dataclass
class StandardStatement:
    text: str
    select: list[str]
    source: str
    source_is_query: bool
    partition_by: list[str] = field(default_factory=list)
    order_by: list[tuple[str, bool, bool]] = field(default_factory=list)  # (column, ascending, nulls first)
    measures: list[tuple[str, list[Token], int]] = field(default_factory=list)  # (name, tokens, position)
    all_rows: bool = False
    empty: str = "show"
    skip: tuple[str, Optional[str], int] = ("past", None, 0)
    pattern: Optional[Node] = None
    subsets: dict[str, list[str]] = field(default_factory=dict)
    define: dict[str, tuple[list[Token], int]] = field(default_factory=dict)
    within: Any = None
    at: dict[str, int] = field(default_factory=dict)

    def error(self, message: str, where: str | int) -> SqlError:
        pos = self.at.get(where, self.at.get("MATCH_RECOGNIZE", 0)) if isinstance(where, str) else where
        return SqlError(message, pos, self.text)

    @property
    def variables(self) -> list[str]:
        return variables(self.node)

    @property
    def node(self) -> Node:
        assert self.pattern is not None, "parse_standard requires PATTERN"
        return self.pattern


class StandardParser(_Parser):
    def statement(self) -> StandardStatement:  # type: ignore[override]
        head = self.head()
        st = StandardStatement(self.text, *head[:3])
        st.at.update(head[3])
        methods = {w: (k, "std_" + k.lower()) for w in CLAUSES for k in ["ROWS" if w in ("ONE", "ALL") else w]}
        seen = self.clauses(st, methods, "PARTITION BY, ORDER BY, MEASURES, ONE ROW PER MATCH, ALL ROWS PER MATCH, "
                            "AFTER MATCH SKIP, PATTERN, SUBSET, DEFINE, WITHIN (or suse's counting clauses SUMMARY, "
                            "EVALUATE, SKIP TILL ... MATCH, CONTIGUOUS)")
        if "PATTERN" not in seen:
            raise st.error("MATCH_RECOGNIZE needs PATTERN (...)", "MATCH_RECOGNIZE")
        if "ORDER" not in seen:
            raise st.error("MATCH_RECOGNIZE needs ORDER BY: the rows of a partition are matched in that order", "MATCH_RECOGNIZE")
        check(st)
        return st

    def std_partition(self, st, tok):
        self.expect("BY", "BY after PARTITION")
        while True:
            st.partition_by.append(self.ident("a partition column"))
            if not self.accept(","):
                break

    def std_order(self, st, tok):
        self.expect("BY", "BY after ORDER")
        while True:
            name = self.ident("an ORDER BY column")
            ascending = not self.accept("DESC")
            if ascending:
                self.accept("ASC")
            nulls_first = ascending
            if self.accept("NULLS"):
                which = self.tok
                if not self.accept("FIRST", "LAST"):
                    raise self.fail(f"expected FIRST or LAST after NULLS, found {self._shown(which)}")
                nulls_first = which.upper() == "FIRST"
            st.order_by.append((name, ascending, nulls_first))
            if not self.accept(","):
                break

    def std_measures(self, st, tok):
        while True:
            start = self.i
            _, at = self.span(CLAUSES + ("AS",))
            tokens = self.toks[start:self.i]
            self.expect("AS", "AS and a name after the measure's expression")
            name = self.ident("a measure name")
            if any(name.lower() == m[0].lower() for m in st.measures):
                raise SqlError(f"measure {name} is given twice", self.toks[self.i - 1].pos, self.text)
            st.measures.append((name, tokens, at))
            if not self.accept(","):
                break

    def std_rows(self, st, tok):
        st.all_rows = tok.upper() == "ALL"
        self.expect("ROW" if not st.all_rows else "ROWS", "ROW PER MATCH" if not st.all_rows else "ROWS PER MATCH")
        self.expect("PER")
        self.expect("MATCH")
        if st.all_rows:
            if self.accept("SHOW"):
                self.expect("EMPTY"), self.expect("MATCHES")
            elif self.accept("OMIT"):
                self.expect("EMPTY"), self.expect("MATCHES")
                st.empty = "omit"
            elif self.accept("WITH"):
                self.expect("UNMATCHED"), self.expect("ROWS")
                st.empty = "unmatched"
            st.at["UNMATCHED"] = tok.pos

    def std_after(self, st, tok):
        self.expect("MATCH", "MATCH after AFTER")
        self.expect("SKIP", "SKIP after AFTER MATCH")
        if self.accept("PAST"):
            self.expect("LAST"), self.expect("ROW")
            st.skip = ("past", None, tok.pos)
            return
        self.expect("TO", "PAST LAST ROW, TO NEXT ROW, TO FIRST var or TO LAST var after AFTER MATCH SKIP")
        if self.accept("NEXT"):
            self.expect("ROW")
            st.skip = ("next", None, tok.pos)
            return
        mode = "last"
        which = self.accept("FIRST", "LAST")
        if which is not None:
            mode = which.upper().lower()
        at = self.tok.pos
        st.skip = (mode, self.name("a pattern variable to skip to"), at)

    def std_pattern(self, st, tok):
        open_tok = self.expect("(", "'(' after PATTERN")
        st.at["PATTERN"] = self.tok.pos
        opened, start = [open_tok], self.i
        while True:
            t = self.tok
            if t.kind == "end" or (t.kind == "id" and t.upper() in CLAUSES and t.upper() not in ("ONE", "ALL")):
                raise self.fail("unclosed '(' in PATTERN", opened[-1])
            if t.text == "(":
                opened.append(t)
            elif t.text == ")":
                opened.pop()
                if not opened:
                    break
            self.i += 1
        st.pattern = parse_pattern(self.toks[start:self.i], self.text, self.tok.pos)
        self.i += 1

    def std_subset(self, st, tok):
        while True:
            at = self.tok.pos
            name = self.name("a subset name")
            if name in st.subsets:
                raise SqlError(f"subset {name} is defined twice", at, self.text)
            self.expect("=", f"= after {name}")
            self.expect("(", "'(' listing the subset's variables")
            members = [self.name("a pattern variable")]
            while self.accept(","):
                members.append(self.name("a pattern variable"))
            self.expect(")", "')' closing the subset")
            st.subsets[name] = members
            st.at[f"subset:{name}"] = at
            if not self.accept(","):
                break

    def name(self, what: str) -> str:
        """A variable or subset name (see ``variable_name``)."""
        tok = self.tok
        self.ident(what)
        return variable_name(tok)

    def std_define(self, st, tok):
        for _, at, tokens, _, cond_at in self.definitions(CLAUSES):
            name = variable_name(next(t for t in self.toks if t.pos == at))
            if name in st.define:
                raise SqlError(f"variable {name} is defined twice", at, self.text)
            st.define[name] = (tokens, cond_at)
            st.at[f"name:{name}"] = at

    def std_within(self, st, tok):
        st.at["WITHIN"] = self.tok.pos
        st.within = self.length("WITHIN")


def check(st: StandardStatement) -> None:
    """What can be checked without the data: names of variables, subsets and skips."""
    names = st.variables
    for name, at in ((n, st.at[f"name:{n}"]) for n in st.define):
        if name not in names:
            raise SqlError(f"DEFINE {name}: {name} does not occur in PATTERN", at, st.text)
    for name, members in st.subsets.items():
        if name in names:
            raise SqlError(f"subset {name} has the name of a pattern variable", st.at[f"subset:{name}"], st.text)
        for m in members:
            if m not in names:
                raise SqlError(f"subset {name}: {m} does not occur in PATTERN", st.at[f"subset:{name}"], st.text)
    mode, var, at = st.skip
    if var is not None and var not in names and var not in st.subsets:
        raise SqlError(f"AFTER MATCH SKIP TO {mode.upper()} {var}: {var} is not a pattern variable or subset", at, st.text)
    if st.empty == "unmatched" and _has_exclusion(st.node):
        raise st.error("ALL ROWS PER MATCH WITH UNMATCHED ROWS cannot be combined with an exclusion {- -} in PATTERN: "
                       "the SQL standard forbids it (as Trino does): drop the exclusion, or WITH UNMATCHED ROWS", "UNMATCHED")


def _nodes(node: Node) -> Iterator[Node]:
    """``node`` and every node inside it."""
    yield node
    for child in getattr(node, "items", ()) + ((node.body,) if hasattr(node, "body") else ()):
        yield from _nodes(child)


def _has_exclusion(node: Node) -> bool:
    return any(isinstance(n, Exclude) for n in _nodes(node))


def evaluated_condition(sp: Split, row_local: bool):
    """The DEFINE condition ``sp`` for suse's evaluator (:mod:`suse.recognize.evaluate`): its
    text with each leaf as ``_suse_leafK``, parsed once here so an unsupported part is refused
    (``SqlError``) before any job runs."""
    from suse.recognize.evaluate import ConditionParser
    from suse.recognize.runner import Condition

    glue, toks = glue_tokens(sp)
    ConditionParser(toks, glue, "DEFINE").parse()
    return Condition(leaves=sp.leaves, tokens=toks, text=glue, row_local=row_local)


def glue_tokens(sp: Split) -> tuple[str, tuple]:
    """The text of ``sp`` with each leaf as the identifier ``_suse_leafK``, and its tokens."""
    glue = "".join(p if isinstance(p, str) else f" _suse_leaf{p} " for p in sp.pieces)
    return glue, tuple(tokenize(glue)[:-1])


def _kind(dtype) -> Optional[str]:
    """The kind :mod:`suse.recognize.columnar` compares a column of Spark type ``dtype`` as."""
    from pyspark.sql import types as T

    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return INTEGRAL
    if isinstance(dtype, T.DoubleType):  # not FLOAT: an integer meets it as a FLOAT, which rounds
        return FLOATING
    return None


def _analysed(st: StandardStatement, df: Any, source_cols: list, helper: list, streaming: bool) -> Any:
    """``df`` with the ``helper`` columns (column, position, what), analysed; an expression
    Spark cannot compute is a ``SqlError`` at its position."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    from suse.spark.events.rows import analysing, spark_message

    try:
        with analysing():
            prepared = df.select(*source_cols, *[h[0] for h in helper])
            if streaming:  # the matcher drops late rows itself (as aggregate_stream's due times do)
                prepared = prepared.select(*[F.col(f"`{f.name}`").alias(f.name, metadata={}) for f in prepared.schema.fields])
            prepared.schema
            return prepared
    except PySparkException:
        for colexpr, at, what in helper:  # find the one that fails, for its position
            try:
                with analysing():  # next to the source's columns, as above: an aggregate such as stddev(x) fails there
                    df.select(*source_cols, colexpr).schema
            except PySparkException as exc:
                raise st.error(f"{what}: {spark_message(exc)}", at) from None
        raise


def parse_standard(text: str) -> StandardStatement:
    return StandardParser(text).statement()


# --- on Spark ------------------------------------------------------------------------------------


def sql_standard(spark: Any, text: str):
    """Run a standard statement; see the module docstring."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.pandas.types import to_arrow_schema

    from suse.recognize.runner import ERROR, KIND, KIND_UNMATCHED, LATE, Condition, Plan, run
    from suse.spark.events.rows import analysing, spark_message

    st = parse_standard(text)
    df = read_source(spark, st)
    columns = {f.name.lower(): f for f in df.schema.fields}
    streaming = df.isStreaming
    if streaming:
        check_streaming(st, df)
    for name in st.partition_by + [c for c, _, _ in st.order_by]:
        if name.lower() not in columns:
            raise st.error(f"column {name!r} not found; the input has columns: {', '.join(df.columns)}",
                           "PARTITION" if name in st.partition_by else "ORDER")
    names = set(st.variables) | set(st.subsets)
    var_index = {v: i for i, v in enumerate(st.variables)}
    members = {v: frozenset([i]) for v, i in var_index.items()}
    members.update({s: frozenset(var_index[m] for m in ms) for s, ms in st.subsets.items()})

    def split(tokens, clause) -> Split:
        return Extractor(tokens, st.text, set(columns), names, clause).split()

    measures = [(name, split(tokens, "MEASURES"), at) for name, tokens, at in st.measures]
    defines = {v: (split(tokens, "DEFINE"), at) for v, (tokens, at) in st.define.items()}

    # every row expression a leaf reads becomes one column
    exprs: dict[str, str] = {}
    expr_at: dict[str, int] = {}
    for sp, at in [(m[1], m[2]) for m in measures] + list(defines.values()):
        for leaf in sp.leaves:
            read = [leaf.expr] if isinstance(leaf, Nav) else [leaf.expr, leaf.key] if isinstance(leaf, Agg) else []
            for expr in read:
                if expr is not None and expr != CLASSIFIER_VALUE and expr not in exprs:
                    exprs[expr] = f"_suse_e{len(exprs)}"
                    expr_at[expr] = at
    for expr in exprs:  # a plain column (the extractor quotes it) is read as itself: no copy through the shuffle
        only = tokenize(expr)[:-1]
        if len(only) == 1 and only[0].kind == "qid" and Extractor.ident(only[0]).lower() in columns:
            exprs[expr] = columns[Extractor.ident(only[0]).lower()].name
    keys = [f"`{k}`" for k in st.partition_by]
    order = ", ".join(f"`{c}` {'ASC' if a else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}" for c, a, nf in st.order_by)
    window = (f"PARTITION BY {', '.join(keys)} " if keys else "") + f"ORDER BY {order}"
    helper: list = []
    for expr, col in exprs.items():
        if col.startswith("_suse_e"):
            helper.append((F.expr(expr).alias(col), expr_at[expr], f"cannot compute {expr!r}"))
    source_cols = [F.col(f"`{c}`") for c in df.columns]
    row_expressions = list(helper)

    @functools.cache
    def kinds() -> dict[str, Optional[str]]:
        """Each row expression's kind for the worker's comparisons: its type needs an analysis
        by Spark, made only for a statement with a DEFINE that reads a neighbour."""
        typed = _analysed(st, df, source_cols, row_expressions, streaming=False).schema
        return {col: _kind(typed[col].dataType) for col in exprs.values()}

    conditions = []
    for v in st.variables:
        if v not in defines:
            conditions.append(Condition())
            continue
        sp, at = defines[v]
        row_local = sp.row_local(v, members)
        neighbours = any(getattr(leaf, "physical", 0) for leaf in sp.leaves)  # PREV or NEXT
        if row_local and neighbours and not streaming:
            # the worker reads the neighbour from the sorted partition, where it can decide the
            # condition exactly; this spares Spark its lag/lead window
            columnar = columnar_condition(glue_tokens(sp)[1], sp.leaves, exprs, kinds())
            if columnar is not None:
                conditions.append(Condition(columnar=columnar))
                continue
        if row_local and not (streaming and neighbours):  # no lag() in streaming
            col = f"_suse_d{var_index[v]}"
            text_v = sp.render_row(window)
            helper.append((F.expr(text_v).alias(col), at, f"DEFINE {v}: cannot compute the condition"))
            conditions.append(Condition(column=col))
        else:
            try:
                conditions.append(evaluated_condition(sp, row_local))
            except SqlError as exc:
                why = " (in streaming, a condition with PREV or NEXT is one that refers to other rows)" if row_local else ""
                raise st.error(f"DEFINE {v}: {exc.message.removeprefix('DEFINE: ')}{why}", at) from None
    within = None
    if st.within is not None:
        first, ascending, _ = st.order_by[0]
        ftype = columns[first.lower()].dataType
        if not ascending:
            raise st.error("WITHIN bounds the time from a match's first row to its last: the first ORDER BY column must be ascending", "WITHIN")
        if isinstance(ftype, (T.TimestampType, T.TimestampNTZType, T.DateType)):
            if not isinstance(st.within, str):
                raise st.error(f"WITHIN {st.within}: {first} holds date-times; write INTERVAL '{st.within}' DAY or similar", "WITHIN")
            from suse.spark.events.timing import parse_duration

            bound = parse_duration(st.within) * 1_000_000
            tcol = F.unix_micros(F.col(f"`{first}`").cast("timestamp"))
        elif isinstance(ftype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            if isinstance(st.within, str):
                raise st.error(f"WITHIN {st.within}: {first} holds integers; write a whole number", "WITHIN")
            bound, tcol = st.within, F.col(f"`{first}`").cast("long")
        else:
            raise st.error(f"WITHIN needs the first ORDER BY column to be a timestamp, date or integer; {first} is {ftype.simpleString()}", "WITHIN")
        helper.append((tcol.alias("_suse_t"), st.at["WITHIN"], "WITHIN"))
        within = ("_suse_t", bound)
    elif streaming:  # the event time, in microseconds, that the watermark is compared with
        helper.append((F.unix_micros(F.col(f"`{st.order_by[0][0]}`")).alias("_suse_t"), st.at.get("ORDER", 0), "ORDER BY"))

    prepared = _analysed(st, df, source_cols, helper, streaming)
    for v, cond in zip(st.variables, conditions):
        if cond.column is not None and not isinstance(prepared.schema[cond.column].dataType, (T.BooleanType, T.NullType)):
            raise st.error(f"DEFINE {v}: the condition gives {prepared.schema[cond.column].dataType.simpleString()}, not a boolean",
                           defines[v][1])

    # the values that depend on the match: one column per leaf of MEASURES
    all_leaves: list = []
    for _, sp, _ in measures:
        for leaf in sp.leaves:
            if leaf not in all_leaves:
                all_leaves.append(leaf)
    leaf_fields = [T.StructField(f"_suse_l{k}", _leaf_type(leaf, prepared, exprs), True) for k, leaf in enumerate(all_leaves)]
    taken = set(columns) if st.all_rows else {k.lower() for k in st.partition_by}
    for name, _, at in st.measures:
        if name.lower() in taken:
            raise SqlError(f"measure {name} has the name of {'an input' if st.all_rows else 'a partition'} column, "
                           "which the output holds too", at, st.text)
    base = list(df.schema.fields) if st.all_rows else [columns[k.lower()] for k in st.partition_by]
    late = [T.StructField(LATE, T.LongType())] if streaming else []
    out_schema = T.StructType(base + leaf_fields + [T.StructField(KIND, T.IntegerType()), T.StructField(ERROR, T.StringType())]
                              + late)
    mode, var, _ = st.skip
    try:
        program = compile_pattern(st.node, st.variables)
    except RecognizeError as exc:
        raise st.error(f"PATTERN: {exc}", "PATTERN") from None
    plan = Plan(
        keys=tuple(columns[k.lower()].name for k in st.partition_by), program=program, members=members,
        conditions=tuple(conditions), skip=Skip(mode, members.get(var or "", frozenset()), var or ""),
        all_rows=st.all_rows, empty=st.empty, leaves=tuple(all_leaves), expr_columns=dict(exprs),
        passthrough=tuple(df.columns), schema=to_arrow_schema(out_schema, timezone="UTC"), within=within,
    )
    if streaming:
        from suse.spark.streaming.recognize import recognize_stream

        out = recognize_stream(prepared, plan, out_schema, st.order_by, st.text)
    else:
        parts = [F.col(k) for k in keys]
        ordered = prepared.repartition(*parts) if parts else prepared.repartition(1)
        sort = parts + [_sort_column(F.col(f"`{c}`"), a, nf) for c, a, nf in st.order_by]
        ordered = ordered.sortWithinPartitions(*sort)
        # the matcher gets only what it reads (the keys, the rows' expressions, the conditions'
        # flags, the WITHIN time) and, for ALL ROWS PER MATCH, the input columns it copies
        matcher_reads = {*plan.keys, *plan.expr_columns.values(), *(c.column for c in conditions if c.column),
                         *(within[:1] if within else ())}
        kept = [c for c in prepared.columns if c in matcher_reads or (st.all_rows and c in plan.passthrough)]
        out = ordered.select(*[F.col(f"`{c}`") for c in kept]).mapInArrow(lambda batches: run(plan, batches), out_schema)
    out = out.where(F.when(F.col(ERROR).isNotNull(), F.raise_error(F.col(ERROR))).otherwise(F.lit(True)))
    if streaming:
        from suse.spark.streaming.recognize import observe_late_rows

        out = observe_late_rows(out)

    leaf_name = {leaf: f"`_suse_l{k}`" for k, leaf in enumerate(all_leaves)}
    measure_cols = []
    for name, sp, at in measures:
        expr_text = sp.render(lambda leaf: leaf_name[leaf])
        try:
            with analysing():
                c = F.when(F.col(KIND) == KIND_UNMATCHED, F.lit(None)).otherwise(F.expr(expr_text)).alias(name)
                out.select(c).schema
        except PySparkException as exc:
            raise SqlError(f"MEASURES {name}: {spark_message(exc)}", at, st.text) from None
        measure_cols.append(c)
    if st.all_rows:
        order_names = [c for c, _, _ in st.order_by]
        leading = [F.col(f"`{c}`") for c in st.partition_by + order_names]
        rest = [F.col(f"`{c}`") for c in df.columns if c.lower() not in {x.lower() for x in st.partition_by + order_names}]
        out = out.select(*leading, *measure_cols, *rest)
    else:
        out = out.select(*[F.col(k) for k in keys], *measure_cols)
    return apply_select(st, out)


WATERMARK = "spark.watermarkDelayMs"  # the metadata withWatermark puts on its column


def check_streaming(st: StandardStatement, df: Any) -> None:
    """Refuse, by name, what a streaming run cannot decide as the batch run over the whole
    stream would: rows must come in event-time order behind a watermark, and no match may
    depend on the end of the partition (which a stream never reaches)."""
    marked = [f.name for f in df.schema.fields if WATERMARK in (f.metadata or {})]
    first, ascending, _ = st.order_by[0]
    if not marked:
        raise st.error("streaming MATCH_RECOGNIZE needs an event-time watermark: the first ORDER BY column must be the "
                       "column of df.withWatermark(column, delay) (rows are matched once the watermark has passed them)",
                       "ORDER")
    if first.lower() not in {m.lower() for m in marked} or not ascending:
        raise st.error(f"streaming MATCH_RECOGNIZE: the first ORDER BY column must be the watermark column "
                       f"{' or '.join(marked)}, ascending; found {first}{'' if ascending else ' DESC'}", "ORDER")
    if any(isinstance(n, Anchor) and not n.start for n in _nodes(st.node)):
        raise st.error("PATTERN: the anchor $ (the partition's last row) cannot be decided in streaming: a stream's "
                       "partition has no last row", "PATTERN")
    defined = set(st.define)
    if st.within is None and any(isinstance(n, Repeat) and n.high is None and n.greedy and _always(n.body, defined)
                                 for n in _nodes(st.node)):
        raise st.error("PATTERN: a greedy unbounded quantifier over variables without DEFINE (true on every row) never "
                       "ends in streaming, so its match is never emitted: bound it with WITHIN, {n,m}, a DEFINE "
                       "condition or a reluctant quantifier (*?, +?)", "PATTERN")


def _always(node: Node, defined: set) -> bool:
    """Whether ``node`` matches at least one row whatever the rows are."""
    if isinstance(node, Var):
        return node.name not in defined
    if isinstance(node, Seq):
        return any(_always(i, defined) for i in node.items) and all(_always(i, defined) or nullable(i) for i in node.items)
    if isinstance(node, Alt):
        return any(_always(i, defined) for i in node.items)
    if isinstance(node, (Repeat, Exclude)):
        return _always(node.body, defined)
    return False


def _sort_column(col, ascending: bool, nulls_first: bool):
    if ascending:
        return col.asc_nulls_first() if nulls_first else col.asc_nulls_last()
    return col.desc_nulls_first() if nulls_first else col.desc_nulls_last()


def _leaf_type(leaf, df, exprs: dict):
    from pyspark.sql import types as T

    if isinstance(leaf, MatchNumber):
        return T.LongType()
    if isinstance(leaf, Classifier):
        return T.StringType()
    if isinstance(leaf, Agg) and leaf.expr is None:
        return T.LongType()
    t = T.StringType() if leaf.expr == CLASSIFIER_VALUE else df.schema[exprs[leaf.expr]].dataType
    if isinstance(leaf, Nav):
        return t
    if leaf.func == "count":
        return T.LongType()
    if leaf.func in ("min", "max", "max_by", "min_by"):
        return t
    if leaf.func in ("array_agg", "collect_list"):  # array_agg keeps NULL elements (collect_list drops them)
        return T.ArrayType(t, leaf.func == "array_agg" and not leaf.distinct)
    if leaf.func == "avg":
        return T.DoubleType()
    if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return T.LongType()
    if isinstance(t, T.DecimalType):
        return T.DecimalType(38, t.scale)
    return T.DoubleType()
