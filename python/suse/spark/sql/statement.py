"""``suse.spark.sql(spark, text)``: a ``MATCH_RECOGNIZE``-style statement run by ``aggregate``.

```sql
SELECT * FROM flights
MATCH_RECOGNIZE (
  PARTITION BY tailnum ORDER BY time_hour
  MEASURES COUNT(*) AS cascades, SUM(delay_minutes) AS minutes
  PATTERN (DELAY (DELAY | LATE)* CANCEL)
  DEFINE CANCEL AS dep_time IS NULL, DELAY AS dep_delay >= 60, LATE AS arr_delay >= 30
  WITHIN INTERVAL '2' DAY
  SUMMARY 24 EVALUATE EVERY INTERVAL '30' DAY
)
```

The statement is tokenised here (positions kept), the clauses are read by a small
recursive-descent parser, and everything Spark understands on its own (the source, DEFINE
conditions, SUM/AVG arguments, the select list) is passed to Spark verbatim. Pattern variables
become engine characters; ``PREV(x)`` becomes ``lag(x) OVER (PARTITION BY ... ORDER BY ...)``.
Every error is a :class:`suse.SqlError` with the 1-based line and column of the statement.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from typing import Any

from suse.errors import InputError, QueryError, SqlError, SuseError

_TOKEN = re.compile(
    r"""(?P<ws>\s+|--[^\n]*)
      | (?P<str>'(?:[^']|'')*')
      | (?P<qid>`(?:[^`]|``)*`)
      | (?P<num>\d+(?:\.\d+)?)
      | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op><=|>=|<>|!=|==|\|\||[-+*/%<>=!|(){},.;?^$:\[\]])""",
    re.VERBOSE,
)
_UNITS = {"SECOND": "seconds", "MINUTE": "minutes", "HOUR": "hours", "DAY": "days", "WEEK": "weeks"}
_CLAUSES = ("PARTITION", "ORDER", "MEASURES", "PATTERN", "DEFINE", "WITHIN", "SUMMARY", "EVALUATE",
            "SKIP", "CONTIGUOUS", "AFTER", "ONE", "ALL", "SUBSET")
_MEASURES = {"COUNT": "count", "SUM": "sum", "AVG": "avg"}


@dataclass(frozen=True)
class Token:
    kind: str  # str | qid | num | id | op | end
    text: str
    pos: int

    def upper(self) -> str:
        return self.text.upper() if self.kind == "id" else self.text


@dataclass
class Statement:
    """A parsed statement: what ``aggregate`` is called with, and where each part was written."""

    text: str
    select: list[str]
    source: str  # a table name or a subquery
    source_is_query: bool
    partition_by: list[str] = field(default_factory=list)
    order_by: str = ""
    measures: list[tuple[str, str, str | None]] = field(default_factory=list)  # (name, kind, argument)
    regex: str = ""
    letters: dict[str, str] = field(default_factory=dict)  # pattern variable -> engine character
    define: dict[str, str] = field(default_factory=dict)  # variable -> Spark SQL condition
    define_tokens: dict[str, list[Token]] = field(default_factory=dict)  # variable -> its condition's tokens
    window: Any = None
    summary_size: int = 500
    engine: str = "summary"  # SUMMARY EXACT: the exact engine alone
    strategy: str = "suse"  # SUMMARY 24 FIFO: the summary's strategy
    evaluate: Any = "end"
    policy: str = "any"
    at: dict[str, int] = field(default_factory=dict)  # clause or variable -> position

    def error(self, message: str, where: str | int) -> SqlError:
        pos = self.at.get(where, self.at.get("MATCH_RECOGNIZE", 0)) if isinstance(where, str) else where
        return SqlError(message, pos, self.text)


def tokenize(text: str) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SqlError(f"unexpected character {text[pos]!r}", pos, text)
        if m.lastgroup != "ws":
            tokens.append(Token(m.lastgroup, m.group(), pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = tokenize(text)
        self.i = 0

    # --- token helpers ----------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def fail(self, message: str, tok: Token | None = None) -> SqlError:
        return SqlError(message, (tok or self.tok).pos, self.text)

    def _shown(self, tok: Token) -> str:
        return "the end of the statement" if tok.kind == "end" else repr(tok.text)

    def accept(self, *words: str) -> Token | None:
        if self.tok.upper() in words and self.tok.kind in ("id", "op"):
            tok = self.tok
            self.i += 1
            return tok
        return None

    def expect(self, word: str, what: str | None = None) -> Token:
        tok = self.accept(word)
        if tok is None:
            raise self.fail(f"expected {what or word}, found {self._shown(self.tok)}")
        return tok

    def ident(self, what: str) -> str:
        tok = self.tok
        if tok.kind == "id":
            self.i += 1
            return tok.text
        if tok.kind == "qid":
            self.i += 1
            return tok.text[1:-1].replace("``", "`")
        raise self.fail(f"expected {what}, found {self._shown(tok)}")

    def number(self, what: str) -> int:
        tok = self.tok
        if tok.kind != "num" or "." in tok.text:
            raise self.fail(f"expected {what} (a whole number), found {self._shown(tok)}")
        self.i += 1
        return int(tok.text)

    def span(self, stops: tuple[str, ...]) -> tuple[str, int]:
        """Source text up to a top-level comma, ')' or one of ``stops`` (keywords)."""
        start, depth = self.tok, 0
        while True:
            tok = self.tok
            if tok.kind == "end":
                break
            if depth == 0 and (tok.text in (",", ")") or (tok.kind == "id" and tok.upper() in stops)):
                break
            if tok.text in ("(", "[", "{"):
                depth += 1
            elif tok.text in (")", "]", "}"):
                depth -= 1
            self.i += 1
        if self.tok is start:
            raise self.fail(f"expected an expression, found {self._shown(start)}")
        end = self.toks[self.i - 1]
        return self.text[start.pos : end.pos + len(end.text)], start.pos

    # --- the statement ----------------------------------------------------------------------
    def head(self) -> tuple[list[str], str, bool, dict[str, int]]:
        """SELECT ... FROM source MATCH_RECOGNIZE ( : the select list, the source, whether it is
        a subquery, and where FROM and MATCH_RECOGNIZE were written."""
        self.expect("SELECT")
        select = []
        while True:
            item, _ = self.span(("FROM",))
            select.append(item)
            if not self.accept(","):
                break
        self.expect("FROM")
        source_at = self.tok.pos
        if self.accept("("):
            open_at = self.i - 1
            depth = 1
            while depth:
                if self.tok.kind == "end":
                    raise self.fail("unclosed '(' of the subquery", self.toks[open_at])
                depth += {"(": 1, ")": -1}.get(self.tok.text, 0)
                self.i += 1
            source = self.text[self.toks[open_at].pos + 1 : self.toks[self.i - 1].pos]
            is_query = True
        else:
            parts = [self.ident("a table name or a (subquery) after FROM")]
            while self.accept("."):
                parts.append(self.ident("a table name"))
            source, is_query = ".".join(parts), False
        mr = self.tok
        if mr.upper() != "MATCH_RECOGNIZE":
            raise self.fail(f"expected MATCH_RECOGNIZE after the source, found {self._shown(mr)}")
        self.i += 1
        self.expect("(", "'(' after MATCH_RECOGNIZE")
        return select, source, is_query, {"FROM": source_at, "MATCH_RECOGNIZE": mr.pos}

    def clauses(self, st: Any, methods: dict[str, tuple[str, str]], expected: str) -> set[str]:
        """Read clauses up to the ')' closing MATCH_RECOGNIZE and what may follow it. ``methods``:
        clause word -> (the key that may be given once, the method reading the clause)."""
        seen: set[str] = set()
        while not self.accept(")"):
            tok = self.tok
            word = tok.upper() if tok.kind == "id" else ""
            if tok.kind == "end":
                raise self.fail("unclosed '(' of MATCH_RECOGNIZE: expected ')'")
            if word not in methods:
                raise self.fail(f"unknown clause {self._shown(tok)}; expected one of {expected}")
            key, method = methods[word]
            if key in seen:
                raise self.fail(f"{word} is given twice")
            seen.add(key)
            st.at[key] = tok.pos
            self.i += 1
            getattr(self, method)(st, tok)
        self.tail()
        return seen

    def tail(self) -> None:
        """What may follow MATCH_RECOGNIZE (...): a table alias and a semicolon."""
        self.accept("AS")
        if self.tok.kind in ("id", "qid") and self.tok.upper() not in ("WHERE", "ORDER", "GROUP", "LIMIT"):
            self.i += 1  # a table alias, as in SQL; nothing refers to it
        self.accept(";")
        if self.tok.kind != "end":
            raise self.fail(f"unexpected {self._shown(self.tok)} after MATCH_RECOGNIZE (...); "
                            f"filter or sort the result with Spark (the statement returns a DataFrame)")

    def statement(self) -> Statement:
        select, source, is_query, at = self.head()
        st = Statement(self.text, select, source, is_query)
        st.at.update(at)
        seen = self.clauses(st, {w: ("SKIP" if w == "CONTIGUOUS" else w, "clause_" + w.lower()) for w in _CLAUSES},
                            "PARTITION BY, ORDER BY, MEASURES, PATTERN, DEFINE, WITHIN, SUMMARY, EVALUATE, SKIP TILL ... MATCH, CONTIGUOUS")
        for needed in ("ORDER", "PATTERN", "WITHIN"):
            if needed not in seen:
                example = {"ORDER": "ORDER BY time", "PATTERN": "PATTERN (A B* C)", "WITHIN": "WITHIN INTERVAL '1' HOUR"}[needed]
                raise SqlError(f"MATCH_RECOGNIZE needs {needed} ({example})", st.at["MATCH_RECOGNIZE"], self.text)
        if not st.measures:
            st.measures = [("count", "count", None)]
        self.check_variables(st)
        return st

    # --- clauses ------------------------------------------------------------------------------
    def clause_partition(self, st: Statement, tok: Token) -> None:
        self.expect("BY", "BY after PARTITION")
        while True:
            st.partition_by.append(self.ident("a partition column"))
            if not self.accept(","):
                break

    def clause_order(self, st: Statement, tok: Token) -> None:
        self.expect("BY", "BY after ORDER")
        st.at["ORDER"] = self.tok.pos
        st.order_by = self.ident("the time column after ORDER BY")
        if self.accept("DESC"):
            raise self.fail("suse reads each partition forward in time: ORDER BY the time column ascending", self.toks[self.i - 1])
        self.accept("ASC")
        if self.tok.text == ",":
            raise self.fail("ORDER BY takes one time column; ties are broken by the DEFINE order and then by the row's content (docs/SPARK.md, 'Ties')")

    def clause_measures(self, st: Statement, tok: Token) -> None:
        while True:
            head = self.tok
            kind = _MEASURES.get(head.upper()) if head.kind == "id" else None
            if kind is None:
                raise self.fail(f"expected COUNT(*), SUM(expression) or AVG(expression), found {self._shown(head)} "
                                f"({self.mode_clause()} makes this statement suse's counting mode)")
            self.i += 1
            self.expect("(", f"'(' after {head.text}")
            arg = None
            if kind == "count":
                self.accept("*")
            else:
                arg, _ = self.span(())
            self.expect(")", f"')' closing {head.text}(")
            name = kind
            if self.accept("AS"):
                name = self.ident("a name after AS")
            elif self.tok.kind in ("id", "qid") and self.tok.upper() not in _CLAUSES:
                name = self.ident("a name")
            st.at[f"measure:{name}"] = head.pos
            if arg is not None:
                st.at["VALUE"] = head.pos
            st.measures.append((name, kind, arg))
            if not self.accept(","):
                break
        args = {" ".join(a.split()) for _, _, a in st.measures if a is not None}
        if len(args) > 1:
            raise self.fail("SUM and AVG must all aggregate the same expression: suse keeps one value per event", tok)

    def clause_pattern(self, st: Statement, tok: Token) -> None:
        self.expect("(", "'(' after PATTERN")
        st.at["PATTERN"] = self.tok.pos
        self.used_vars: list[Token] = []
        parts, depth, opened = [], 1, [self.toks[self.i - 1]]
        while True:
            t = self.tok
            if t.kind == "end" or (t.kind == "id" and t.upper() in _CLAUSES and t.upper() not in ("ONE", "ALL")):
                raise self.fail("unclosed '(' in PATTERN", opened[-1])
            if t.kind in ("id", "qid"):
                name = self.ident("a pattern variable")
                self.used_vars.append(Token("id", name, t.pos))
                parts.append(("var", name, t.pos))
                continue
            self.i += 1
            if t.text == "(":
                depth += 1
                opened.append(t)
            elif t.text == ")":
                depth -= 1
                opened.pop()
                if depth == 0:
                    break
            elif t.text == "?" and parts and parts[-1][1] in ("*", "+", "?", "}"):
                raise self.fail("reluctant quantifiers (*?, +?) choose among matches; suse's counting counts all matches, so they have no meaning here" + self.standard_hint(), t)
            elif t.text in ("^", "$"):
                raise self.fail(f"'{t.text}' anchors a match to the partition's start or end; suse's counting counts matches anywhere in the window" + self.standard_hint(), t)
            elif t.text == "{" and self.tok.text == "-":
                raise self.fail("exclusion {- -} only shapes the rows of ALL ROWS PER MATCH" + self.standard_hint(), t)
            elif t.kind == "num" or t.text in ("|", "*", "+", "?", "{", "}", ",", "!"):
                pass
            else:
                raise self.fail(f"unexpected {self._shown(t)} in PATTERN", t)
            parts.append(("op", t.text, t.pos))
        self.pattern_parts = parts

    def definitions(self, stops: tuple[str, ...]) -> list[tuple[str, int, list[Token], str, int]]:
        """DEFINE's list: (variable, its position, the condition's tokens, its text, its position)."""
        out: list[tuple[str, int, list[Token], str, int]] = []
        while True:
            at = self.tok.pos
            name = self.ident("a pattern variable")
            if any(name == d[0] for d in out):
                raise SqlError(f"variable {name} is defined twice", at, self.text)
            self.expect("AS", f"AS after {name}")
            start = self.i
            cond, cond_at = self.span(stops)
            out.append((name, at, self.toks[start:self.i], cond, cond_at))
            if not self.accept(","):
                return out

    def clause_define(self, st: Statement, tok: Token) -> None:
        for name, at, tokens, cond, cond_at in self.definitions(_CLAUSES):
            st.define[name] = cond
            st.define_tokens[name] = tokens
            st.at[f"var:{name}"] = cond_at
            st.at[f"name:{name}"] = at

    def clause_within(self, st: Statement, tok: Token) -> None:
        st.at["WITHIN"] = self.tok.pos
        st.window = self.length("WITHIN")

    def length(self, clause: str) -> Any:
        """INTERVAL '2' DAY, INTERVAL '90 minutes', or a whole number (integer time columns)."""
        if self.accept("INTERVAL"):
            amount = self.tok
            if amount.kind == "str":
                value = amount.text[1:-1].replace("''", "'").strip()
            elif amount.kind == "num":
                value = amount.text
            else:
                raise self.fail(f"expected a quoted amount after INTERVAL, e.g. INTERVAL '2' DAY, found {self._shown(amount)}")
            self.i += 1
            unit = self.tok
            if unit.kind == "id" and unit.upper().rstrip("S") in _UNITS:
                self.i += 1
                if not re.fullmatch(r"\d+(\.\d+)?", value):
                    raise self.fail(f"expected a number in INTERVAL '{value}' {unit.text}", amount)
                return f"{value} {_UNITS[unit.upper().rstrip('S')]}"
            if re.fullmatch(r"\d+(\.\d+)?", value):
                raise self.fail(f"INTERVAL '{value}' needs a unit: SECOND, MINUTE, HOUR, DAY or WEEK", unit)
            return value
        return self.number(f"INTERVAL '...' UNIT or a number after {clause}")

    def clause_summary(self, st: Statement, tok: Token) -> None:
        st.at["SUMMARY"] = self.tok.pos
        if self.accept("EXACT"):
            st.engine = "exact"
            return
        st.summary_size = self.number("the summary size (or EXACT) after SUMMARY")
        from suse.api.checks import STRATEGIES

        strategy = self.accept(*(name.upper() for name in STRATEGIES))
        if strategy is not None:
            st.strategy = strategy.text.lower()

    def clause_evaluate(self, st: Statement, tok: Token) -> None:
        st.at["EVALUATE"] = self.tok.pos
        if self.accept("AT"):
            if self.accept("END"):
                st.evaluate = "end"
                return
            times = []
            while True:
                t = self.tok
                if t.kind == "str":
                    times.append(t.text[1:-1].replace("''", "'"))
                elif t.kind == "num" and "." not in t.text:
                    times.append(int(t.text))
                else:
                    raise self.fail(f"expected END or times ('2013-06-01', ... or whole numbers) after EVALUATE AT, found {self._shown(t)}")
                self.i += 1
                if not self.accept(","):
                    break
            st.evaluate = times
        elif self.accept("EVERY"):
            if self.tok.kind == "num" and self.toks[self.i + 1].upper() in ("EVENT", "EVENTS"):
                n = self.number("a number of events")
                self.i += 1
                st.evaluate = f"every {n} events"
            else:
                st.evaluate = {"every": self.length("EVALUATE EVERY")}
        elif self.accept("RANDOMLY"):
            rate = self.number("evaluations per period after RANDOMLY")
            self.expect("PER", "PER after the number of evaluations (RANDOMLY 1 PER INTERVAL '30' DAY)")
            spec: dict[str, Any] = {"poisson": rate, "per": self.length("PER")}
            if self.accept("SEED"):
                spec["seed"] = self.number("a seed")
            st.evaluate = spec
        else:
            raise self.fail(f"expected AT END, AT times, EVERY n EVENTS, EVERY INTERVAL ... or RANDOMLY n PER INTERVAL ... after EVALUATE, found {self._shown(self.tok)}")

    def clause_skip(self, st: Statement, tok: Token) -> None:
        self.expect("TILL", "TILL after SKIP (SKIP TILL ANY MATCH or SKIP TILL NEXT MATCH)")
        which = self.tok
        if not self.accept("ANY", "NEXT"):
            raise self.fail(f"expected ANY or NEXT after SKIP TILL, found {self._shown(which)}")
        self.expect("MATCH", "MATCH")
        st.policy = "any" if which.upper() == "ANY" else "next"

    def clause_contiguous(self, st: Statement, tok: Token) -> None:
        st.policy = "contiguous"

    def clause_after(self, st: Statement, tok: Token) -> None:
        raise self.fail(f"AFTER MATCH SKIP is a clause of the standard mode, but {self.mode_clause()} makes this statement "
                        "suse's counting mode, which counts every subsequence match in the window; leave out suse's "
                        "clauses for the standard's matches (docs/SPARK.md, 'Spark SQL')", tok)

    def clause_one(self, st: Statement, tok: Token) -> None:
        raise self.fail(f"{tok.text.upper()} ROWS PER MATCH is a clause of the standard mode, but {self.mode_clause()} makes "
                        "this statement suse's counting mode, which reports one row per partition and evaluation time", tok)

    clause_all = clause_one

    def clause_subset(self, st: Statement, tok: Token) -> None:
        raise self.fail(f"SUBSET is a clause of the standard mode, but {self.mode_clause()} makes this statement suse's "
                        "counting mode: write the union in PATTERN, (A | B)", tok)

    def standard_hint(self) -> str:
        return f" ({self.mode_clause()} makes this statement suse's counting mode; without suse's clauses it is standard MATCH_RECOGNIZE, which has it)"

    def mode_clause(self) -> str:
        found = counting_clause(self.toks)
        return f"{found.text.upper()} (line {SqlError('', found.pos, self.text).line})" if found else "a counting clause"

    # --- variables -> engine characters --------------------------------------------------------
    def check_variables(self, st: Statement) -> None:
        names = [t.text for t in self.used_vars]
        order = list(dict.fromkeys(list(st.define) + names))
        st.letters = assign_letters(order)
        undefined = [t for t in self.used_vars if t.text not in st.define]
        if len({t.text for t in undefined}) > 1:
            second = next(t for t in undefined if t.text != undefined[0].text)
            raise SqlError(
                f"pattern variables {undefined[0].text} and {second.text} have no DEFINE; a variable without "
                f"one matches every row not claimed by a DEFINE, so only one may be left undefined",
                second.pos, self.text,
            )
        for t in undefined:  # SQL: a variable without DEFINE is true for every row
            st.define.setdefault(t.text, "true")
            st.at.setdefault(f"var:{t.text}", t.pos)
        regex = []
        for kind, text, _ in self.pattern_parts:
            regex.append(st.letters[text] if kind == "var" else text)
        st.regex = "".join(regex)


COUNTING_CLAUSES = ("SUMMARY", "EVALUATE", "CONTIGUOUS", "SKIP")


def counting_clause(tokens: list[Token]) -> Token | None:
    """The first of suse's own clauses (SUMMARY, EVALUATE, CONTIGUOUS, SKIP TILL) directly
    inside MATCH_RECOGNIZE ( ... ): it selects suse's counting; without one the statement is
    standard MATCH_RECOGNIZE."""
    depth, inside = 0, False
    for k, t in enumerate(tokens):
        if not inside:
            inside = t.upper() == "MATCH_RECOGNIZE"
            continue
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            depth -= 1
            if depth == 0:
                return None
        elif depth == 1 and t.kind == "id" and t.upper() in COUNTING_CLAUSES:
            if t.upper() != "SKIP" or tokens[k + 1].upper() == "TILL":
                return t
    return None


def assign_letters(names: list[str]) -> dict[str, str]:
    """Pattern variable -> engine character: a one-character name keeps itself, a longer one
    takes its initial if free, else the first free letter or digit."""
    letters: dict[str, str] = {}
    pool = string.ascii_uppercase + string.ascii_lowercase + string.digits
    for name in names:
        if len(name) == 1 and name.isascii() and name.isalnum():
            letters[name] = name
    taken = set(letters.values())
    for name in names:
        if name in letters:
            continue
        initial = name[0].upper() if name[0].isascii() and name[0].isalpha() else None
        choice = initial if initial and initial not in taken else next((c for c in pool if c not in taken), None)
        if choice is None:
            raise InputError("more than 62 pattern variables")
        letters[name] = choice
        taken.add(choice)
    return letters


def parse(text: str) -> Statement:
    """Parse a statement; errors are :class:`suse.SqlError` with line and column."""
    if not isinstance(text, str) or not text.strip():
        raise SqlError("the statement is empty", 0, text if isinstance(text, str) else "")
    st = _Parser(text).statement()
    try:
        import suse

        suse.Query(st.regex, 0, policy=st.policy)
    except QueryError as exc:  # map the engine regex position back to the PATTERN text
        raise st.error(f"PATTERN: {exc.message}", _pattern_position(st, exc.position)) from None
    return st


def _pattern_position(st: Statement, pos: int) -> int:
    offset = 0
    # Walk the translated pieces in order: the k-th engine character came from the k-th piece.
    parser = _Parser(st.text)
    parser.i = next(i for i, t in enumerate(parser.toks) if t.pos == st.at["PATTERN"])
    for kind, text, at in _pieces(parser):
        width = 1 if kind == "var" else len(text)
        if offset + width > pos:
            return at
        offset += width
    return st.at["PATTERN"]


def _pieces(parser: _Parser):
    depth = 1
    while parser.tok.kind != "end":
        t = parser.tok
        parser.i += 1
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            depth -= 1
            if depth == 0:
                return
        yield ("var" if t.kind in ("id", "qid") else "op", t.text, t.pos)


def _prev(text: str, over: str) -> str:
    """``PREV(x)`` / ``PREV(x, n)`` -> ``lag(x[, n]) OVER (...)``: the previous row of the partition."""
    toks = tokenize(text)
    out, last, i = [], 0, 0
    while i < len(toks):
        t = toks[i]
        if t.upper() == "PREV" and toks[i + 1].text == "(":
            depth, j = 0, i + 1
            while True:
                depth += {"(": 1, ")": -1}.get(toks[j].text, 0)
                if depth == 0 or toks[j].kind == "end":
                    break
                j += 1
            inner = text[toks[i + 1].pos + 1 : toks[j].pos]
            out.append(text[last : t.pos] + f"lag({_prev(inner, over)}) OVER ({over})")
            last = toks[j].pos + 1
            i = j + 1
            continue
        i += 1
    return "".join(out) + text[last:]


def translate(spark: Any, text: str) -> tuple[Statement, Any, dict[str, Any]]:
    """The statement, its source DataFrame and the keyword arguments of ``aggregate``."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    from suse.spark.events.rows import analysing, spark_message

    st = parse(text)
    df = read_source(spark, st)
    value = None
    kinds = [k for _, k, _ in st.measures if k != "count"]
    arg = next((a for _, _, a in st.measures if a is not None), None)
    if arg is not None:
        try:
            with analysing():
                df = df.withColumn("_suse_measure", F.expr(arg))
                df.schema  # analyse now: a bad expression fails here, with its position
        except PySparkException as exc:
            raise st.error(f"MEASURES: cannot compute {arg!r}: {spark_message(exc)}", "VALUE") from None
        value = "_suse_measure"
    over = ", ".join(f"`{k}`" for k in st.partition_by)
    over = (f"PARTITION BY {over} " if over else "") + f"ORDER BY `{st.order_by}`"
    characters, where = _defines(st, {f.name.lower(): f.name for f in df.schema.fields}, over)
    kwargs = dict(
        query=st.regex, window=st.window, characters=characters, timestamp=st.order_by,
        partition_by=st.partition_by, value=value, summary_size=st.summary_size, strategy=st.strategy,
        evaluate=st.evaluate, aggregate=kinds[0] if kinds else "count", policy=st.policy,
        where=where or None, engine=st.engine,
    )
    return st, df, kwargs


def _defines(st: Statement, columns: dict[str, str], over: str) -> tuple[dict[str, str], dict[str, str]]:
    """Each variable's row predicate (its engine character's) and, for a DEFINE that reads
    other rows of the match, its condition of ``where`` (suse.spark.sql.split)."""
    from suse.errors import ConditionError
    from suse.spark.sql.split import crosses_rows, split_define

    characters: dict[str, str] = {}
    where: dict[str, str] = {}
    cross = {}
    for name, cond in st.define.items():
        tokens = st.define_tokens.get(name, [])
        if not crosses_rows(tokens, set(st.letters)):
            characters[st.letters[name]] = _prev(cond, over)
            continue
        predicate, condition = split_define(name, tokens, st.text, columns, st.letters, over,
                                            lambda text: _prev(text, over))
        characters[st.letters[name]] = predicate
        if condition is not None:
            where[st.letters[name]], cross[st.letters[name]] = condition.text, condition
    if not where:
        return characters, where
    first = min(c.anchors[0][1] for c in cross.values())
    try:
        import suse

        suse.Query(st.regex, 0, policy=st.policy, where=where)
    except ConditionError as exc:
        name = next(n for n, c in st.letters.items() if c == exc.letter)
        raise st.error(f"DEFINE {name}: {exc.message.split(': ', 1)[1]}", cross[exc.letter].position(exc.position)) from None
    except QueryError as exc:
        raise st.error(f"DEFINE: {exc.message}", first) from None
    return characters, where


def sql(spark: Any, text: str):
    """Run a MATCH_RECOGNIZE-style statement (docs/SPARK.md, "Spark SQL") and return a lazy
    DataFrame: the partition columns, ``evaluated_at``, one column per measure, ``events``,
    ``dropped_events``, ``corrupt_records`` and ``elements`` (whose ``char`` is the pattern
    variable)."""
    from pyspark.sql import functions as F

    from suse.spark.batch.aggregate import aggregate

    st, df, kwargs = translate(spark, text)
    if df.isStreaming:  # counting rows per micro-batch is aggregate_stream's, not a statement's
        raise st.error(f"a counting statement reads a batch table, but {st.source if not st.source_is_query else 'the subquery'} "
                       "is streaming: count a stream with suse.spark.aggregate_stream (conditions between rows: where=...), "
                       "or leave the counting "
                       "clauses out for the standard's streaming MATCH_RECOGNIZE", "FROM")
    try:
        out = aggregate(df, **kwargs)
    except QueryError as exc:
        raise st.error(f"PATTERN: {exc.message}", "PATTERN") from None
    except SuseError as exc:
        message = str(exc).replace("'_suse_measure'", repr(next((a for _, _, a in st.measures if a), "")))
        raise st.error(*_locate(st, message)) from None
    names = {v: k for k, v in st.letters.items()}
    back = F.create_map(*[F.lit(x) for pair in names.items() for x in pair])
    cols = [F.col(f"`{k}`") for k in st.partition_by] + [F.col("evaluated_at")]
    cols += [F.col(kind).alias(name) for name, kind, _ in st.measures]
    cols += [F.col(c) for c in ("events", "dropped_events", "corrupt_records")]
    if st.engine == "summary":  # the exact engine keeps no elements
        cols.append(F.transform("elements", lambda e: F.struct(
            F.element_at(back, e["char"]).alias("char"), e["timestamp"].alias("timestamp"),
            e["value"].alias("value"))).alias("elements"))
    return apply_select(st, out.select(*cols))


def read_source(spark: Any, st: Any):
    """The statement's FROM as a DataFrame, analysed (a missing table fails here, at FROM)."""
    from pyspark.errors import PySparkException

    from suse.spark.events.rows import analysing, spark_message

    try:
        with analysing():
            df = spark.sql(st.source) if st.source_is_query else spark.table(st.source)
            df.schema  # Spark Connect analyses lazily: fail here, at the source
    except PySparkException as exc:
        raise st.error(f"cannot read {'the subquery' if st.source_is_query else st.source}: {spark_message(exc)}", "FROM") from None
    return df


def apply_select(st: Any, out: Any):
    """The statement's select list over its result (``SELECT *``: the result as it is)."""
    if st.select == ["*"]:
        return out
    from pyspark.errors import PySparkException

    from suse.spark.events.rows import analysing, spark_message

    try:
        with analysing():
            out = out.selectExpr(*st.select)
            out.schema
    except PySparkException as exc:
        raise st.error(f"SELECT: {spark_message(exc)}", 7) from None
    return out


def _locate(st: Statement, message: str) -> tuple[str, str]:
    """Which clause an error from ``aggregate`` belongs to, by its wording."""
    m = re.match(r"character (\w): (.*)", message)
    if m:
        name = next((n for n, c in st.letters.items() if c == m.group(1)), m.group(1))
        return f"DEFINE {name}: {m.group(2)}", f"var:{name}"
    for prefix, clause in (("window", "WITHIN"), ("evaluate", "EVALUATE"), ("evaluation timestamp", "EVALUATE"),
                           ("timestamp column", "ORDER"), ("partition", "PARTITION"), ("value column", "VALUE"),
                           ("summary", "SUMMARY"), ("size", "SUMMARY"), ("characters:", "PATTERN"),
                           ("query", "PATTERN")):
        if message.lower().startswith(prefix):
            return message, clause
    return message, "MATCH_RECOGNIZE"
