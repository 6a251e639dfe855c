"""Issue 26, item 1: engines shared by threads, and one engine per thread (docs/API.md, "Threads")."""
from __future__ import annotations

import threading
from math import comb

import numpy as np
import pytest

import suse

THREADS = 4


def run_threads(work, n=THREADS):
    """Run `work(k)` in n threads started together; re-raise the first exception any raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def body(k):
        start.wait()
        try:
            work(k)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def interleaved(k: int, calls: int, per_call: int) -> list[list[tuple[str, int, int]]]:
    """Thread k's batches: timestamps k, k + 4, k + 8, ... (disjoint across threads)."""
    rng = np.random.default_rng(k)
    batches = []
    for c in range(calls):
        ts = [(c * per_call + i) * THREADS + k for i in range(per_call)]
        batches.append([(str(rng.choice(list("ABC"))), t, int(rng.integers(0, 9))) for t in ts])
    return batches


# Pairs of any two events at one time: the count does not depend on the order they came in.
PAIRS = suse.Query("(A|B)(A|B)", window=0)


@pytest.mark.parametrize("make", [
    lambda: suse.Summary(PAIRS, size=40, seed=3),
    lambda: suse.Exact(PAIRS),
])
def test_a_shared_engine_in_order_takes_every_call(make):
    engine = make()
    calls, per_call = 300, 10

    def work(k):
        for _ in range(calls):
            engine.extend(chars="AB" * (per_call // 2), timestamps=np.zeros(per_call, np.int64))

    run_threads(work)
    r = engine.result()
    n = THREADS * calls * per_call
    assert r.events == n
    kept = len(engine) if isinstance(engine, suse.Summary) else n
    assert r.count == comb(kept, 2)


@pytest.mark.parametrize("kind", ["summary", "summary-insert", "exact"])
def test_a_shared_engine_with_lateness_equals_the_serial_run(kind):
    q = suse.Query("A B+ C", window=60)
    lateness = 10**9  # nothing is ever late, so the result is the sorted stream's
    make = {
        "summary": lambda: suse.Summary(q, size=30, seed=5, lateness=lateness),
        # placement="insert" keeps what arrival order chose: with room for every event, that is all
        "summary-insert": lambda: suse.Summary(suse.Query("AB+C", 60), size=2000, seed=5, lateness=lateness,
                                               placement="insert"),
        "exact": lambda: suse.Exact(q, lateness=lateness),
    }[kind]
    batches = {k: interleaved(k, 60, 5) for k in range(THREADS)}
    shared = make()

    def work(k):
        for b in batches[k]:
            shared.extend(b)
            _ = shared.pending, shared.late

    run_threads(work)
    serial = make()
    serial.extend(sorted((e for bs in batches.values() for b in bs for e in b), key=lambda e: e[1]))
    got, want = shared.result(), serial.result()
    assert (got.count, got.sum, got.events, got.late) == (want.count, want.sum, want.events, want.late)
    if kind == "summary":  # the buffer makes it the sorted stream's summary, elements and all
        assert shared.elements() == serial.elements()
    if kind.startswith("exact"):
        assert got.count == suse.exact(q, serial_events(batches)).count


def serial_events(batches):
    return sorted((e for bs in batches.values() for b in bs for e in b), key=lambda e: e[1])


def test_shared_query_sets():
    qs = suse.QuerySet({"pairs": PAIRS, "one": suse.Query("A", 0), "max": suse.Query("A", 0, aggregate="max")})
    exact_set = suse.ExactSet(qs)
    summary_set = suse.SummarySet(qs, size=1000, seed=1)

    def work(k):
        for _ in range(100):
            for engine in (exact_set, summary_set):
                engine.extend(chars="AB", timestamps=np.zeros(2, np.int64), values=[k, 1])
            # a summary of the set used on its own, at the same time
            summary_set.summaries["one"].result()

    run_threads(work)
    n = THREADS * 100 * 2
    for results in (exact_set.result(), summary_set.result()):
        assert results["pairs"].count == comb(n, 2)
        assert results["one"].count == n // 2
        assert results["max"].max == THREADS - 1


def test_one_engine_per_thread_equals_its_serial_run():
    q = suse.Query("A B+ C", window=40)
    batches = {k: [[(c, t // THREADS, v) for c, t, v in b] for b in interleaved(k, 40, 25)] for k in range(THREADS)}
    results = {}

    def work(k):
        s, e = suse.Summary(q, size=20, seed=k), suse.Exact(q)
        for b in batches[k]:
            s.extend(b)
            e.extend(b)
        results[k] = (s.result(), s.elements(), e.result().count)

    run_threads(work)
    for k in range(THREADS):
        s = suse.Summary(q, size=20, seed=k)
        events = [e for b in batches[k] for e in b]
        s.extend(events)
        got_summary, got_elements, got_exact = results[k]
        assert (got_summary.count, got_summary.sum) == (s.result().count, s.result().sum)
        assert got_elements == s.elements()
        assert got_exact == suse.exact(q, events).count
