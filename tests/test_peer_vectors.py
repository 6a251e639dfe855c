"""Worked examples from FlinkCEP's and SASE's documented semantics (tests/data/peer_vectors.json):
each is checked against the brute-force oracle, and against ``suse.exact`` where the engine
supports the vector's features."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import suse
from oracle import absence_aggregate, query_aggregate, query_stnm_aggregate
from suse.query import compile_regex

CASES = json.loads((Path(__file__).parent / "data" / "peer_vectors.json").read_text())["cases"]
IDS = [c["name"] for c in CASES]


def partitions(case) -> list[list[tuple[str, int, int]]]:
    """The vector's stream, split by key when it has one (one suse stream per partition)."""
    tokens = case["stream"].split()
    pairs = list(zip(tokens[::2], map(int, tokens[1::2])))
    values = case.get("values") or [0] * len(pairs)
    events = [(c, t, v) for (c, t), v in zip(pairs, values)]
    keys = case.get("key") or [None] * len(events)
    assert len(keys) == len(events) == len(values), case["name"]
    by_key: dict = {}
    for key, event in zip(keys, events):
        by_key.setdefault(key, []).append(event)
    return list(by_key.values())


def oracle_result(case) -> dict:
    totals = {"count": 0, "sum": 0}
    for events in partitions(case):
        if compile_regex(case["query"]).pending:  # a negation at the end of the pattern
            got = absence_aggregate(case["query"], events, case["window"])
        elif case["policy"] == "next":
            got = query_stnm_aggregate(case["query"], events, case["window"])
        else:
            got = query_aggregate(case["query"], events, case["window"], case["policy"])
        totals = {k: totals[k] + got[k] for k in totals}
    return totals


def test_there_are_enough_vectors():
    peers = {c["peer"] for c in CASES}
    assert len(CASES) >= 10 and peers == {"FlinkCEP", "SASE"}
    assert all(c.get("note") and c.get("peer_pattern") for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_vector_against_the_oracle(case):
    if "expected_error" in case:
        with pytest.raises(suse.QueryError, match=case["expected_error"]):
            compile_regex(case["query"])
        return
    got = oracle_result(case)
    for key, value in case["expected"].items():
        assert got[key] == value, key
    if "peer_count" in case:  # a documented difference must really be one
        assert case["peer_count"] != case["expected"]["count"]


@pytest.mark.parametrize("case", [c for c in CASES if "expected_error" not in c], ids=lambda c: c["name"])
def test_vector_against_the_exact_engine(case):
    query = suse.Query(case["query"], case["window"], policy=case["policy"])
    results = [suse.exact(query, events) for events in partitions(case)]
    got = {"count": sum(r.count for r in results), "sum": sum(r.sum for r in results)}
    for key, value in case["expected"].items():
        assert got[key] == value, key
