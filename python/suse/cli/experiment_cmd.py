"""`suse experiment NAME`: reproduce one of the paper's figures (CSV + PNG)."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from suse.cli.app import Command, app, err_console, friendly_errors, optional_imports
from suse.errors import InputError


@app.command("experiment", cls=Command)
@friendly_errors
def experiment(
    name: str = typer.Argument(..., metavar="NAME", help="fig7a ... fig11, flights, stocks, beyond, beyond-flights, beyond-stocks, or 'all'."),
    quick: bool = typer.Option(False, "--quick", help="Reduced sizes: minutes per experiment on 2 cores."),
    out: Path = typer.Option(Path("out/experiments"), "--out", help="Directory for NAME.csv, NAME.png, NAME.json."),
    plot_only: bool = typer.Option(False, "--plot-only", help="Redraw NAME.png from NAME.csv in --out; run nothing."),
) -> None:
    """Run a paper experiment and write its CSV, PNG plot and parameters (docs/RESULTS.md)."""
    with optional_imports("experiment", "eval"):
        from suse.eval.experiments import EXPERIMENTS, run_experiment

    if name != "all" and name not in EXPERIMENTS:
        raise InputError(f"unknown experiment {name!r}; choose one of: {', '.join(EXPERIMENTS)}, all")
    names = list(EXPERIMENTS) if name == "all" else [name]
    for n in names:
        err_console.print(f"[bold]{n}[/]: {escape(EXPERIMENTS[n].title)}")
        csv, png = run_experiment(n, quick=quick, out=out, plot_only=plot_only)
        typer.echo(f"{n}: drew {png} from {csv}" if plot_only else f"{n}: wrote {csv} and {png}")
