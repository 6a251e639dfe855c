"""Exact numbers for the page: decimal strings (JSON numbers would lose digits in a browser)
with a compact form beside them."""
from __future__ import annotations

from decimal import Decimal
from typing import Optional


def compact(n: int) -> str:
    """``1.2×10^41`` for large integers (correctly rounded from the exact value); small ones
    as they are."""
    if abs(n) < 1_000_000:
        return str(n)
    mantissa, exponent = f"{Decimal(n):.1e}".split("e")
    return f"{mantissa}×10^{int(exponent)}"


def number(n: Optional[int]) -> Optional[dict]:
    """What the page shows for a count: the exact digits, the compact form and a float for
    charts (None beyond the float range, where a chart cannot place it)."""
    if n is None:
        return None
    try:
        approx: Optional[float] = float(n)
    except OverflowError:
        approx = None
    return {"exact": str(n), "compact": compact(n), "approx": approx}


def recall(count: int, exact: Optional[int]) -> Optional[float]:
    """Relative recall (paper §7): the summary's count over the exact count; None when there
    is nothing to recall."""
    if exact is None or exact == 0:
        return None
    return count / exact  # int / int is correctly rounded, even for huge integers


def duration_text(seconds: int) -> str:
    """A window in seconds as people write it: 172800 -> "2 days"."""
    for unit, size in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"
