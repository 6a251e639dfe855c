"""The real-data case studies (§7.5-7.6) on the Spark pipeline's own example jobs.

Characters are not redefined here: the events come from ``examples/flights.toml`` and
``examples/stocks.toml`` through the pipeline's loader and ``to_events`` (its predicates,
filters, partitioning and tie-breaking), collected once to the driver. Every partition is
then one stream, run through each strategy with ``probabilities=None`` (estimated online,
as a deployment would), and evaluated at timestamps drawn uniformly over its own span.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from suse.eval import metrics
from suse.eval.plotting import figure, improvement_axes, lines, log

REPO = Path(__file__).resolve().parents[3]


def partition_streams(config: str, unit: int) -> dict[str, dict[str, tuple[str, np.ndarray]]]:
    """``{query label: {partition: (chars, timestamps)}}`` for a pipeline TOML; timestamps are
    divided by ``unit`` (e.g. 3600: epoch seconds -> hours) so windows read naturally."""
    import suse
    from suse.spark.events.rows import RANK, TIE, TS, to_events
    from suse.spark.jobs.load import load_config
    from suse.spark.jobs.run import load_input
    from suse.spark.session import get_session
    from suse.spec import InputSpec

    path = Path(config) if Path(config).exists() else REPO / config
    cfg = load_config(path)
    spark = get_session(cfg.spark.master, cfg.spark.app_name, cfg.spark.options)
    df = load_input(spark, cfg)
    out = {}
    for q in cfg.queries:
        mapping = InputSpec(cfg.input.timestamp, cfg.characters, tuple(cfg.input.partition_by))
        ev = to_events(df, mapping, suse.Query(q.regex, 0).alphabet)
        frame = ev.usable.toPandas().sort_values([*ev.keys, TS, RANK, TIE])
        frame["char"] = np.array(list(ev.order))[frame[RANK].to_numpy()]
        out[q.label] = {
            "/".join(map(str, key if isinstance(key, tuple) else (key,))): (
                "".join(g["char"]), (g[TS].to_numpy(np.int64) // unit))
            for key, g in frame.groupby(list(ev.keys), sort=True)}
    return out


def case_study(task: dict) -> list[dict]:
    """One (query, size, window): every partition through every strategy -> metric rows."""
    import suse

    q = suse.Query(task["regex"], window=task["window"])
    streams = task["streams"]
    n_eval, run = task["evaluations"], task["run"]
    ours_all: dict[str, list[int]] = {b: [] for b in task["strategies"][1:]}
    theirs_all: dict[str, list[int]] = {b: [] for b in task["strategies"][1:]}
    exact_all: list[int] = []  # with ``ceiling``: the exact count (an unbounded summary)
    seconds, events, overflowing = 0.0, 0, 0
    for chars, ts in streams.values():
        events += len(chars)
        if len(chars) <= task["size"]:
            continue  # nothing is ever evicted: every strategy keeps every match (ratio 1)
        overflowing += 1
        at = metrics.evaluation_timestamps(int(ts[0]), int(ts[-1]), n_eval, seed=[run, len(chars)])
        counts = {}
        for strategy in task["strategies"]:
            s = suse.Summary(q, size=task["size"], strategy=strategy, seed=run)
            start = time.perf_counter()
            evals = s.extend(chars, ts, evaluate_at=at)
            if strategy == task["strategies"][0]:
                seconds += time.perf_counter() - start
            counts[strategy] = [e.count for e in evals]
        for b in ours_all:
            ours_all[b] += counts[task["strategies"][0]]
            theirs_all[b] += counts[b]
        if task.get("ceiling"):
            exact_all += [e.count for e in suse.exact(q, chars=chars, timestamps=ts, evaluate_at=at).evaluations]
    # Throughput over every partition (a summary per partition, as the pipeline runs it).
    start = time.perf_counter()
    for chars, ts in streams.values():
        if len(chars) <= task["size"]:
            suse.Summary(q, size=task["size"], seed=run).extend(chars, ts)
    seconds += time.perf_counter() - start
    # Steady-state latency: the last elements of the longest partition, one insert each.
    chars, ts = max(streams.values(), key=lambda s: len(s[0]))
    s = suse.Summary(q, size=task["size"], seed=run)
    split = max(len(chars) - task["latency_sample"], 0)
    s.extend(chars[:split], ts[:split])
    lat = metrics.per_element_latency(s.insert, chars[split:], ts[split:])

    rows = []
    for b in ours_all:
        imp = metrics.relative_recall_improvement(ours_all[b], theirs_all[b])
        rows.append({"query": task["label"], "regex": task["regex"], "size": task["size"],
                     "window": task["window"], "unit": task["unit_name"], "run": run,
                     "strategy": task["strategies"][0], "baseline": b,
                     "log10_improvement": imp.log10_mean, "mean_log10_ratio": imp.mean_log10,
                     "timestamps": imp.timestamps, "zero_baseline": imp.zero_baseline,
                     "zero_strategy": imp.zero_suse, "partitions": len(streams),
                     "overflowing_partitions": overflowing, "events": events,
                     "throughput": events / seconds, "latency_min": lat.min,
                     "latency_mean": lat.mean, "latency_max": lat.max, "latency_p99": lat.p99})
        if task.get("ceiling"):
            rows[-1]["ceiling_log10_ratio"] = metrics.relative_recall_improvement(exact_all, theirs_all[b]).mean_log10
    return rows


def run(p: dict) -> pd.DataFrame:
    start = time.perf_counter()
    data = partition_streams(p["config"], p["unit"])
    log(f"case study: {sum(len(v) for v in data.values())} partition streams from {p['config']} "
        f"({time.perf_counter() - start:.0f} s)")
    rows = []
    # One process, one configuration at a time: the throughput and latency columns are timings.
    for label, streams in data.items():
        regex = _regex(p["config"], label)
        for size in p["size"]:
            for window in p["window"]:
                for r in range(p["runs"]):
                    rows += case_study({"label": label, "regex": regex, "streams": streams, "size": size,
                                        "window": window, "run": r, "unit_name": p["unit_name"],
                                        "evaluations": p["evaluations"], "strategies": p["strategies"],
                                        "latency_sample": p["latency_sample"],
                                        "ceiling": p.get("ceiling", False)})
                log(f"case study {label}: size={size} window={window} done "
                    f"({time.perf_counter() - start:.0f} s)")
    return pd.DataFrame(rows)


def _regex(config: str, label: str) -> str:
    from suse.spark.jobs.load import load_config

    path = Path(config) if Path(config).exists() else REPO / config
    return next(q.regex for q in load_config(path).queries if q.label == label)


def plot(df: pd.DataFrame, path: Path, title: str) -> None:
    queries = list(df["query"].unique())
    fig, axes = figure(len(queries) + 2, title, width=3.8)
    unit = df["unit"].iloc[0]
    for ax, qname in zip(axes, queries):
        sub = df[df["query"] == qname]
        for k, b in enumerate(sub["baseline"].unique()):
            lines(ax, sub[sub["baseline"] == b], "window", "size", "log10_improvement",
                   style=["-o", "--x"][k % 2], suffix=f" vs {b}")
        improvement_axes(ax, f"{qname}: {sub['regex'].iloc[0]}")
        ax.set_xlabel(f"window ({unit})")
    first = df[(df["query"] == queries[0]) & (df["baseline"] == df["baseline"].iloc[0])]
    lines(axes[-2], first, "window", "size", "throughput")
    axes[-2].set(yscale="log", ylabel="events / s", xlabel=f"window ({unit})",
                 title=f"throughput ({queries[0]})")
    w = first["window"].max()
    for y, style in (("latency_min", "-v"), ("latency_mean", "-o"), ("latency_max", "-^")):
        lines(axes[-1], first[first["window"] == w], "size", None, y, style, suffix=f" {y[8:]}")
    axes[-1].set(yscale="log", ylabel="seconds per element", title=f"latency, window {w} {unit}")
    for ax in axes[-2:]:
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=100)
