"""FlinkCEP 2.3 as a peer (bench/peer_flink.py): on tiny streams its counts equal suse's and
the brute-force oracle's; suse's window W is Flink's within(W + 1); the Flink-only variants
for negation and contiguity count what their brute-force definitions say; the rising run
with IterativeConditions counts what suse's `where` and the conditions oracle count.

Every Flink case runs in ONE JVM and one job (a local cluster starts once). Skipped only when
Java is missing; the Flink jars come from the `flink` extra, which `make test` installs.
"""
from __future__ import annotations

import importlib.util
import itertools
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import suse
from oracle import query_to_python_regex, stam_matches, where_aggregate

BENCH = Path(__file__).resolve().parent.parent / "bench" / "peer_flink.py"
sys.path.insert(0, str(BENCH.parent))  # as when run as a script: its sibling modules import
_spec = importlib.util.spec_from_file_location("peer_flink", BENCH)
pf = importlib.util.module_from_spec(_spec)
sys.modules["peer_flink"] = pf  # dataclasses look their module up by name
_spec.loader.exec_module(pf)

try:
    pf.java_tools()
except pf.PeerUnavailable as e:  # only a missing JDK skips; missing jars must fail
    pytest.skip(str(e), allow_module_level=True)

STAM = [p for p in pf.PATTERNS.values() if p.feature == "stam"]


def _streams():
    """Tiny streams over each STAM pattern's letters: a few written to hit every step, the
    rest random (seeded). (chars, window) pairs; timestamp = index."""
    rng = random.Random(20261122)
    out = {}
    for p in STAM:
        letters = sorted({c for c in p.suse if c.isalnum()})
        cases = [("".join(letters * 3)[:12], 11), ("".join(sorted(letters * 3))[:12], 11)]
        if p.name == "paper":  # long enough to reach e/f/g: a word of the language, noised
            cases = [("abcbcdfgeg", 9), ("acbbcdbdegg", 10), ("abcbcdegfg", 5)]
        for window in (3, 7, 11):
            cases.append(("".join(rng.choice(letters) for _ in range(12)), window))
        out[p.name] = cases
    return out


STREAMS = _streams()

# suse's window W against Flink's within(W) and within(W + 1), on a stream with gaps.
WITHIN_STREAM = ("ABAABBAB", [0, 2, 3, 7, 8, 9, 12, 16])
WITHIN_WINDOWS = range(1, 9)  # Flink within(w)

# The event right after A, and what lies strictly between, are what the variants look at.
VARIANT_STREAMS = ["ABCDABBBCABEB", "AEBABEABCDBB", "ABBCABCDEABC", "EAABEBCABBBC"]
VARIANT_WINDOWS = (3, 6, 20)

# The rising run AB+C with conditions: (chars, p, window), timestamp = index. Small p values
# make ties (B.p = previous B.p and C.p = B.p fail); None is a NULL attribute.
RISING = pf.PATTERNS["rising"]


def _rising_streams():
    rng = random.Random(20261126)
    cases = [("ABBBCABBCC", [5, 1, 3, 2, 2, 0, 4, 6, 5, 1], 9),
             ("ABBBCBC", [0, 2, None, 3, 1, 4, None], 6)]
    for window in (4, 7, 11, 11):
        chars = "A" + "".join(rng.choice("ABBBCC") for _ in range(12))
        cases.append((chars, [rng.randrange(4) for _ in chars], window))
    return cases


RISING_STREAMS = _rising_streams()


def _rising_events(chars, p):
    return [(c, t, {"p": v}) for t, (c, v) in enumerate(zip(chars, p))]


# A group loop whose body starts with a single step: Flink emits some matches twice.
DUPLICATES = ("a >>(b >>c)+:any >>d", "a(bc)+d", "abcbcd")


def _negation(chars, w):  # A!EB: an A, a later B, no E strictly between them
    return sum(1 for i, j in itertools.combinations(range(len(chars)), 2)
               if chars[i] == "A" and chars[j] == "B" and j - i <= w and "E" not in chars[i + 1:j])


def _not_next(chars, w):  # A notNext E followedByAny B: the event right after A is not E
    return sum(1 for i, j in itertools.combinations(range(len(chars)), 2)
               if chars[i] == "A" and chars[j] == "B" and j - i <= w and chars[i + 1:i + 2] != "E")


def _contiguous(regex):  # policy="contiguous": runs of consecutive events spelling a word
    def count(chars, w):
        return sum(1 for i in range(len(chars)) for j in range(i, min(len(chars), i + w + 1))
                   if re.fullmatch(regex, chars[i:j + 1]))
    return count


VARIANT_ORACLES = {
    "A!EB": _negation,
    "A!.E>>B": _not_next,
    "ABCD/contiguous": _contiguous("ABCD"),
    "AB+C/contiguous": _contiguous("AB+C"),
}


@pytest.fixture(scope="module")
def flink(tmp_path_factory):
    """All cases in one JVM and one job; results by case name."""
    tmp = tmp_path_factory.mktemp("flink-peer")
    cases = []

    def add(name, spec, within, chars, ts=None):
        path = tmp / f"s{len(cases)}.txt"
        pf.write_stream(path, chars, range(len(chars)) if ts is None else ts)
        cases.append(pf.FlinkCase(name, spec, within, path))

    for name, streams in STREAMS.items():
        for k, (chars, w) in enumerate(streams):
            add(f"stam|{name}|{k}", pf.PATTERNS[name].flink, pf.flink_within(w), chars)
    chars, ts = WITHIN_STREAM
    for w in WITHIN_WINDOWS:
        add(f"within|{w}", "A >>B", w, chars, ts)
    for name in VARIANT_ORACLES:
        for k, chars in enumerate(VARIANT_STREAMS):
            for w in VARIANT_WINDOWS:
                add(f"variant|{name}|{k}|{w}", pf.PATTERNS[name].flink, pf.flink_within(w), chars)
    for k, (chars, p, w) in enumerate(RISING_STREAMS):
        path = pf.write_stream(tmp / f"rising{k}.txt", chars, range(len(chars)), p)
        cases.append(pf.FlinkCase(f"rising|{k}", RISING.flink, pf.flink_within(w), path))
    spec, _, chars = DUPLICATES
    add("duplicates", spec, None, chars)
    results = pf.run_flink(cases, one_job=True, distinct=True, timeout=120)
    return {r["name"]: r for r in results}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_stam_patterns_agree_with_suse_and_oracle(flink, name):
    peer = pf.PATTERNS[name]
    regex = query_to_python_regex(peer.suse)
    nonzero = 0
    for k, (chars, w) in enumerate(STREAMS[name]):
        r = flink[f"stam|{name}|{k}"]
        assert r["status"] == "ok", r
        oracle = len(stam_matches(regex, [(c, t) for t, c in enumerate(chars)], w))
        ours = suse.exact(suse.Query(peer.suse, window=w), chars=chars, timestamps=np.arange(len(chars))).count
        assert (r["count"], r["distinct"], r["overlapping"]) == (oracle, oracle, 0), (chars, w, r)
        assert ours == oracle, (chars, w)
        nonzero += oracle > 0
    assert nonzero >= 2, f"{name}: the streams must produce matches to prove anything"


def test_suse_window_is_flink_within_plus_one(flink):
    chars, ts = WITHIN_STREAM
    events = list(zip(chars, ts))
    suse_counts = {w: suse.exact(suse.Query("AB", window=w), events).count for w in range(0, 8)}
    # within(w) keeps last - first < w: suse's window w - 1, so suse's window W is within(W + 1).
    for w in WITHIN_WINDOWS:
        assert flink[f"within|{w}"]["count"] == suse_counts[w - 1], w
    # The stream has pairs at many distances, so an off-by-one would show: within(W) alone
    # loses the pairs exactly W apart.
    assert len(set(suse_counts.values())) >= 5
    assert sum(flink[f"within|{w}"]["count"] < suse_counts[w] for w in range(1, 8)) >= 4


@pytest.mark.parametrize("name", sorted(VARIANT_ORACLES))
def test_flink_variants_count_their_definition(flink, name):
    """Flink's notFollowedBy / notNext / next / consecutive() against brute force. When suse
    accepts the same query and policy, it must agree too (the lead wires it in later)."""
    peer = pf.PATTERNS[name]
    nonzero = 0
    for k, chars in enumerate(VARIANT_STREAMS):
        for w in VARIANT_WINDOWS:
            r = flink[f"variant|{name}|{k}|{w}"]
            expected = VARIANT_ORACLES[name](chars, w)
            assert (r["count"], r["distinct"]) == (expected, expected), (chars, w, r)
            nonzero += expected > 0
            query = pf.suse_query(peer, w)
            if not isinstance(query, str):
                assert suse.exact(query, chars=chars, timestamps=np.arange(len(chars))).count == expected
    assert nonzero >= 3


def test_rising_run_with_iterative_conditions_agrees_with_suse_and_oracle(flink):
    """FlinkCEP's IterativeConditions (previous B of the partial match, last B at C) under
    skip-till-any-match count exactly suse's `where` matches, NULLs and ties included."""
    nonzero = filtered = 0
    for k, (chars, p, w) in enumerate(RISING_STREAMS):
        r = flink[f"rising|{k}"]
        events = _rising_events(chars, p)
        oracle = where_aggregate(RISING.suse, events, w, RISING.where)["count"]
        assert (r["count"], r["distinct"], r["overlapping"]) == (oracle, oracle, 0), (chars, p, w, r)
        assert suse.exact(pf.suse_query(RISING, w), events).count == oracle
        nonzero += oracle > 0
        # The conditions must matter, or ignoring them would pass too.
        filtered += 0 < oracle < suse.exact(suse.Query(RISING.suse, w), events).count
    assert nonzero >= 4 and filtered >= 4


def test_enumerator_and_stopping_points_in_the_report(capsys):
    """The predicates suite's third peer: its mismatch fails the run like Flink's; the report
    says per series where each peer stopped finishing."""
    ok, timeout = {"status": "ok", "count": 7, "seconds": 1.0}, {"status": "timeout", "timeout_seconds": 5.0}
    rows = [pf.Row("w", "rising", 10, 100, ok, 7, 0.001, brute=ok),
            pf.Row("w", "rising", 30, 100, ok, 8, 0.001, brute={**ok, "count": 8}),
            pf.Row("w", "rising", 100, 100, timeout, 9, 0.001, brute=pf.SKIPPED)]
    assert pf.report(rows) == ["MISMATCH w rising window=30: flink 7 != suse 8"]
    out = capsys.readouterr().out
    assert "FlinkCEP on rising, w, 100 events: finished up to window 30; not within the cap from window 100" in out
    assert "brute force on rising, w, 100 events: finished up to window 30; not within the cap from window 100" in out
    rows[0].brute = {**ok, "count": 6}
    assert pf.report(rows)[0] == "MISMATCH w rising window=10: brute force 6 != suse 7"


def test_enumerator_counts_the_rising_run():
    chars, p, w = RISING_STREAMS[0]
    case = pf.Workload("s", "w", RISING, w, chars, range(len(chars)), p)
    r = pf.run_enumerator(case, case.suse_events()["events"], timeout=30)
    assert r["status"] == "ok" and r["count"] == where_aggregate(RISING.suse, _rising_events(chars, p), w, RISING.where)["count"]
    assert pf.run_enumerator(case, case.suse_events()["events"], timeout=0)["status"] == "timeout"


def test_group_loop_with_single_first_step_emits_duplicates(flink):
    """Why PATTERNS has no `(b >>c)+` group: Flink finds every match but emits some twice."""
    _, query, chars = DUPLICATES
    oracle = len(stam_matches(query_to_python_regex(query), [(c, t) for t, c in enumerate(chars)], 100))
    r = flink["duplicates"]
    assert r["distinct"] == oracle == 4
    assert r["count"] > oracle


def test_separate_jobs_count_and_cap_time(tmp_path):
    """The benchmark's mode: one job per case, timed, and capped by Flink itself."""
    fast_chars = "ABCABCAC"
    fast = pf.write_stream(tmp_path / "fast.txt", fast_chars, range(len(fast_chars)))
    # A^24 B^24 C^24 D^24: 331,776 matches, far more than Flink enumerates in 2 s here.
    slow_chars = "A" * 24 + "B" * 24 + "C" * 24 + "D" * 24
    slow = pf.write_stream(tmp_path / "slow.txt", slow_chars, range(len(slow_chars)))
    fast_r, slow_r, after_r = pf.run_flink(
        [pf.FlinkCase("fast", "A >>B >>C", pf.flink_within(5), fast),
         pf.FlinkCase("slow", "A >>B >>C >>D", None, slow),
         pf.FlinkCase("after", "A >>B", None, fast)], timeout=2)
    expected = suse.exact(suse.Query("ABC", window=5), chars=fast_chars, timestamps=np.arange(8)).count
    assert expected > 1
    assert fast_r["status"] == "ok" and fast_r["count"] == expected and fast_r["seconds"] > 0
    assert slow_r["status"] == "timeout" and slow_r["timeout_seconds"] == 2.0
    # The cancelled task keeps running inside Flink, so the JVM ends instead of timing more.
    assert after_r["status"] == "skipped"


@pytest.mark.parametrize("spec, message", [
    ("A >>B+ >>C", r"column 7: a loop needs ':any'"),
    ("A >>B >>C[p<D]", r"column 10: no earlier step with letters 'D'"),
])
def test_malformed_spec_is_reported_with_its_column(tmp_path, spec, message):
    path = pf.write_stream(tmp_path / "s.txt", "AB", [0, 1])
    with pytest.raises(pf.PeerError, match=message):
        pf.run_flink([pf.FlinkCase("bad", spec, None, path)])


def test_stream_timestamps_must_increase(tmp_path):
    """Flink would drop an event behind the watermark as late; FlinkPeer refuses instead."""
    path = tmp_path / "s.txt"
    path.write_text("A 0\nB 2\nB 2\n")
    with pytest.raises(pf.PeerError, match=r"line 3: timestamp 2 does not increase"):
        pf.run_flink([pf.FlinkCase("ties", "A >>B", None, path)])


def test_report_flags_a_count_mismatch(capsys):
    ok = {"status": "ok", "count": 7, "seconds": 1.0}
    rows = [pf.Row("w", "ABCD", 5, 10, ok, 7, 0.001), pf.Row("w", "AB+C", 5, 10, ok, 8, 0.001)]
    mismatches = pf.report(rows)
    assert mismatches == ["MISMATCH w AB+C window=5: flink 7 != suse 8"]
    assert "MISMATCH w AB+C" in capsys.readouterr().err


def test_bench_lists_its_patterns():
    out = subprocess.run([sys.executable, str(BENCH), "--list"], capture_output=True, text=True, check=True).stdout
    assert all(name in out for name in pf.PATTERNS)
