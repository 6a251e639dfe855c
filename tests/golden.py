"""Regression vectors: summary evaluations recorded with suse 0.1.0 (before the Core v2 kernel).

The refactor promised every result bit for bit; these cases (every strategy, both policies,
COUNT and SUM, time-to-live, given and estimated probabilities, counts past 2^128) pin it.
`python tests/golden.py OUT.json` records them again with whatever build is installed.
"""
from __future__ import annotations

import json
import sys

import numpy as np

PAPER = "a(b*c)*d(e|f)g*"


def configs() -> list[dict]:
    out = []
    for seed in range(3):
        for strategy in ("suse", "present", "fifo", "random"):
            for policy in ("any", "next"):
                for agg in ("count", "sum"):
                    out.append(dict(query=PAPER, window=60, size=25, strategy=strategy, policy=policy, aggregate=agg,
                                    seed=seed, events=600, ttl=None, probs=False, values=agg == "sum"))
    for seed in range(2):
        out.append(dict(query=PAPER, window=100, size=100, strategy="suse", policy="any", aggregate="count", seed=seed,
                        events=3000, ttl=None, probs=True, values=False))
        out.append(dict(query=PAPER, window=100, size=500, strategy="suse", policy="any", aggregate="count", seed=seed,
                        events=3000, ttl=None, probs=False, values=False))
        out.append(dict(query="A(B|G)*A", window=40, size=30, strategy="suse", policy="any", aggregate="count",
                        seed=seed, events=800, ttl=25, probs=False, values=False))
    for seed, probs in ((0, True), (1, False)):
        out.append(dict(query=PAPER, window=500, size=500, strategy="suse", policy="any", aggregate="count", seed=seed,
                        events=2500, ttl=None, probs=probs, values=False))
    return out


def zipf_probabilities(letters: str, s: float = 2.0) -> dict:
    w = np.array([1 / (i + 1) ** s for i in range(len(letters))])
    w /= w.sum()
    return {c: float(p) for c, p in zip(letters, w)}


def run_case(cfg: dict) -> dict:
    import suse
    from suse.io.synthetic import synthetic_stream

    letters = "".join(sorted(set(c for c in cfg["query"] if c.isalpha())))
    stream = synthetic_stream(letters, cfg["events"], "zipf", 2.0, seed=cfg["seed"])
    rng = np.random.default_rng(cfg["seed"] + 99)
    values = rng.integers(0, 50, cfg["events"]) if cfg["values"] else None
    q = suse.Query(cfg["query"], window=cfg["window"], aggregate=cfg["aggregate"], policy=cfg["policy"])
    s = suse.Summary(q, size=cfg["size"], strategy=cfg["strategy"], seed=cfg["seed"], time_to_live=cfg["ttl"],
                     probabilities=zipf_probabilities(letters) if cfg["probs"] else None)
    step = cfg["events"] // 20
    rows = s.extend(stream.chars, stream.timestamps, values, evaluate_at=list(range(step, cfg["events"], step)),
                    elements=True)
    evaluations = [[e.timestamp, str(e.count), str(e.sum), str(e.partial_count), str(e.detected_count),
                    str(e.detected_sum), "".join(f"{c}{t}:{v} " for c, t, v in e.elements)] for e in rows]
    return {"config": cfg, "evaluations": evaluations, "evictions": s._engine.evictions}


if __name__ == "__main__":
    json.dump([run_case(c) for c in configs()], open(sys.argv[1], "w"), indent=0)
