"""How the commands print: tables with right-aligned numbers, averages, JSON."""
from __future__ import annotations

import json
from typing import Optional

from rich.table import Table


def avg_text(avg: Optional[float]) -> str:
    return "-" if avg is None else f"{avg:.6g}"


def new_table(*columns: str) -> Table:
    shown = Table(*columns, show_edge=False, header_style="bold")
    for col in shown.columns[1:]:
        col.justify = "right"
    return shown


def print_json(data: dict) -> None:
    # Plain print: rich would wrap long lines; json keeps big counts as exact integers.
    print(json.dumps(data, indent=2))
