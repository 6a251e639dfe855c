"""``suse.spark.sql(spark, text)``: one entry for both modes of MATCH_RECOGNIZE.

A statement with one of suse's own clauses (``SUMMARY``, ``EVALUATE``, ``SKIP TILL ANY|NEXT
MATCH``, ``CONTIGUOUS``) is suse's counting (:mod:`suse.spark.sql.statement`); any other is the
standard's row pattern recognition (:mod:`suse.spark.sql.standard`). docs/SPARK.md, "Spark SQL".
"""
from __future__ import annotations

from typing import Any

from suse.errors import SqlError
from suse.spark.sql import standard, statement


def is_counting(text: str) -> bool:
    if not isinstance(text, str) or not text.strip():
        raise SqlError("the statement is empty", 0, text if isinstance(text, str) else "")
    return statement.counting_clause(statement.tokenize(text)) is not None


def parse(text: str):
    """The parsed statement of either mode (a mistake is a :class:`suse.SqlError`)."""
    return statement.parse(text) if is_counting(text) else standard.parse_standard(text)


def sql(spark: Any, text: str):
    """Run a MATCH_RECOGNIZE statement and return a lazy DataFrame: suse's counting rows when the
    statement has a counting clause, else the standard's rows (ONE ROW PER MATCH: the partition
    columns and the measures; ALL ROWS PER MATCH: the partition and order columns, the measures,
    then the other input columns)."""
    return statement.sql(spark, text) if is_counting(text) else standard.sql_standard(spark, text)
