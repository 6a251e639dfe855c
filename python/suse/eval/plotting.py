"""What the experiment and case-study plots share: a figure of panels, mean lines per hue, the
improvement axes, and the progress log. matplotlib's object API: no global pyplot state,
no display needed."""
from __future__ import annotations

import sys

import pandas as pd


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def figure(ncols: int, title: str, width: float = 4.2):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, 3.6), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    fig.suptitle(title, fontsize=10)
    return fig, axes


def mean_over(df: pd.DataFrame, keys: list[str], y: str) -> pd.DataFrame:
    return df.groupby(keys, sort=False, dropna=False)[y].mean().reset_index()


def lines(ax, df: pd.DataFrame, x: str, hue: str | None, y: str, style: str = "-o", suffix: str = ""):
    """Mean over runs of ``y`` against ``x``, one line per ``hue`` value."""
    groups = [(None, df)] if hue is None else df.groupby(hue, sort=False)
    rank = {} if hue is None else {v: k for k, v in enumerate(sorted(df[hue].unique()))}
    categorical = not pd.api.types.is_numeric_dtype(df[x])
    for key, g in groups:
        m = mean_over(g, [x], y)
        m = m if categorical else m.sort_values(x)
        xs = m[x].astype(str) if categorical else m[x]
        color = f"C{rank[key] % 10}" if hue else None  # a hue value keeps its colour across calls
        ax.plot(xs, m[y], style, ms=4, color=color,
                label=f"{hue}={key}{suffix}" if hue else (suffix.strip() or None))
    ax.set_xlabel(x)
    if not categorical and df[x].max() / max(df[x].min(), 1) >= 20:
        from matplotlib.ticker import NullFormatter

        ax.set_xscale("log")
        ticks = sorted(df[x].unique())
        if len(ticks) <= 8:  # label the measured points, not decades
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.xaxis.set_minor_formatter(NullFormatter())


def improvement_axes(ax, title: str):
    ax.axhline(0, color="black", ls="--", lw=1)  # no improvement
    ax.set_ylabel("log10 relative recall improvement")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
