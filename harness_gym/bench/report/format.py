"""Numbers and tables as the report prints them: one format per kind of number, "—" where missing."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

DASH = "—"
NOT_REPORTED = "n/r"
"""Paper cell for something the paper does not report (versus "—": not applicable)."""


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None and not _isnan(v)]
    return sum(kept) / len(kept) if kept else None


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _missing(x: Any) -> bool:
    return x is None or _isnan(x)


def _no_negative_zero(x: float, digits: int) -> float:
    """-0.0004 shows as +0.000, not -0.000."""
    return round(x, digits) + 0.0


def fmt_num(x: float | None, digits: int = 3) -> str:
    """0.450; "—" when missing."""
    return DASH if _missing(x) else f"{x:.{digits}f}"


def fmt_signed(x: float | None, digits: int = 3) -> str:
    """+0.014 / -0.003; "—" when missing."""
    return DASH if _missing(x) else f"{_no_negative_zero(x, digits):+.{digits}f}"


def fmt_pp(x: float | None, digits: int = 1) -> str:
    """G units as signed percentage points: 0.182 -> +18.2."""
    return DASH if _missing(x) else f"{_no_negative_zero(100 * x, digits):+.{digits}f}"


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """A rate as a percentage: 0.056 -> 5.6%."""
    return DASH if _missing(x) else f"{100 * x:.{digits}f}%"


def fmt_ci(low: float | None, high: float | None, fmt: Callable[[float | None], str] = fmt_signed) -> str:
    """[low, high] with ``fmt``; "—" when either end is missing."""
    return DASH if _missing(low) or _missing(high) else f"[{fmt(low)}, {fmt(high)}]"


def fmt_p(p: float | None, below: bool = False) -> str:
    """0.097; <0.001 below that (or when the paper gives only the bound)."""
    if _missing(p):
        return DASH
    if below:
        return f"<{p:.3f}"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def fmt_transition(base: float | None, other: float | None) -> str:
    """Base → policy rates: 0.0% → 5.6%."""
    return f"{fmt_pct(base)} → {fmt_pct(other)}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """A GitHub-flavoured Markdown table, the first ``left`` columns left-aligned, the others right."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    align = [":---"] * left + ["---:"] * (len(headers) - left)
    return "\n".join([line(headers), line(align), *(line(r) for r in rows)])


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
