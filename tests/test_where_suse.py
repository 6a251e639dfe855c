"""``suse`` ranking of a summary with conditions or with a negation at the end of the pattern:
the victims equal those of an oracle that computes present(e) by enumeration, the partial
matches through e by enumeration (with the conditions) and h_n by numpy's recurrence, and the
counters stay the oracle's recount over the retained elements."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suse
from negation_strategies import absence_queries
from negation_strategies import streams as plain_streams
from oracle import absence_aggregate, expected_matches, partial_sets, where_aggregate
from suse.api.query import compiled
from test_where_exact import queries, streams
from test_where_summary import conditioned

pytestmark = pytest.mark.filterwarnings("ignore::suse.errors.SuseWarning")


def steps(window, now, t, rate, size):
    """The base summary's look-ahead: the remaining time in elements, rounded half up, capped."""
    x = max(0.0, window - (now - t)) * rate
    return size if not x < size else int(x) + (x - int(x) >= 0.5)


class Oracle:
    """What ``suse`` should decide, from the retained events and the probabilities."""

    def __init__(self, pattern, window, size, probabilities, where=None, negated="", finals=None):
        self.pattern, self.window, self.size, self.where, self.negated = pattern, window, size, where, negated
        self.automaton = compiled(pattern)[0]
        self.p = [probabilities[c] for c in self.automaton.alphabet]
        self.h = expected_matches(self.automaton, self.p, size, finals)
        self.seen, self.first, self.last = 0, None, None

    def count(self, events):
        if self.where is not None:
            return where_aggregate(self.pattern, events, self.window, self.where)["count"]
        return absence_aggregate(self.pattern, events, self.window)["count"]

    def observe(self, t):
        self.seen += 1
        self.first = t if self.first is None else min(self.first, t)
        self.last = t if self.last is None else max(self.last, t)

    def rate(self):
        return (self.seen - 1) / (self.last - self.first) if self.last > self.first and self.seen > 1 else 1.0

    def expected(self, events, i, now):
        """Σ over the partial sets through event i of h_n[state]."""
        n = steps(self.window, now, events[i][1], self.rate(), self.size)
        with_i = partial_sets(self.automaton, events, self.window, now, self.where, self.negated)
        without = partial_sets(self.automaton, events[:i] + events[i + 1:], self.window, now, self.where, self.negated)
        return sum(self.h[n][q] for _, q in with_i) - sum(self.h[n][q] for _, q in without)

    def benefits(self, kept, candidate):
        """(benefits of the retained events, the candidate's), at the candidate's time."""
        now, total = candidate[1], self.count(kept)
        out = []
        for i in range(len(kept)):
            present = total - self.count(kept[:i] + kept[i + 1:])
            out.append(present + self.expected(kept, i, now))
        both = kept + [candidate]
        return out, self.count(both) - total + self.expected(both, len(kept), now)


def follow(summary, oracle, events, letters):
    """Feed the events one by one; before each eviction the oracle's ranking decides which
    outcomes are right (near-ties of the floats either way), and the counters must equal its
    recount over the retained elements after every event."""
    decisions = 0
    for event in events:
        kept = [events[e[2]] for e in summary.elements()]
        full = event[0] in letters and len(kept) >= summary.size
        if event[0] in letters:
            oracle.observe(event[1])
        summary.insert(*event)
        after = [events[e[2]] for e in summary.elements()]
        assert summary.result().count == oracle.count(after)
        if not full:
            continue
        benefits, candidate = oracle.benefits(kept, event)
        low = min(benefits)
        tol = 1e-9 * max(1.0, abs(low), abs(candidate))
        if after == kept:  # dropped
            assert candidate <= low + tol, (benefits, candidate)
        else:
            assert candidate >= low - tol, (benefits, candidate)
            gone = next(i for i, e in enumerate(kept) if e not in after)
            assert benefits[gone] <= low + tol, (benefits, gone)
            if all(b > low + tol for j, b in enumerate(benefits) if j < gone):
                decisions += 1  # no earlier element ties: the oldest of the lowest
            else:
                raise AssertionError(f"an earlier element ties with the victim: {benefits}, {gone}")
    return decisions


def numbered(events):
    return [(e[0], e[1], i) + tuple(e[3:]) for i, e in enumerate(events)]


def probabilities_for(letters, data):
    weights = [data.draw(st.integers(1, 5)) for _ in letters]
    return {c: w / sum(weights) for c, w in zip(letters, weights)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(max_size=9), queries(), st.integers(0, 6), st.integers(1, 4), st.data())
def test_suse_evicts_as_the_oracle_ranks_with_conditions(events, query, window, size, data):
    pattern, where = conditioned(query)
    events = numbered(events)
    q = suse.Query(pattern, window, where=where)
    probabilities = probabilities_for(q.alphabet, data)
    summary = suse.Summary(q, size, "suse", probabilities=probabilities)
    follow(summary, Oracle(pattern, window, size, probabilities, where=where), events, q.alphabet)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(absence_queries, plain_streams(max_size=8, chars="abcd"), st.integers(0, 6), st.integers(1, 4), st.data())
def test_suse_evicts_as_the_oracle_ranks_with_a_negation_at_the_end(pattern, events, window, size, data):
    events = numbered(events)
    q = suse.Query(pattern, window)
    probabilities = probabilities_for(q.alphabet, data)
    summary = suse.Summary(q, size, "suse", probabilities=probabilities)
    pending, _ = q._closing
    automaton = compiled(pattern)[0]
    finals = set(automaton.finals) | set(pending)
    oracle = Oracle(pattern, window, size, probabilities, negated=q.negated, finals=finals)
    follow(summary, oracle, events, q._exact_letters)
