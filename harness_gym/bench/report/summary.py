"""The report's first screen: which policy won, by how much, with what interval, and which beat Base.

Every number comes from ``results["aggregate"]`` (``harness_gym.evaluation.aggregate.summarize``): each
policy's IQM (``metrics``) and its paired comparisons with Base and with the best-ranked policy
(``paired``). Nothing is recomputed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.format import DASH, _missing, fmt_num, markdown_table
from harness_gym.bench.report.sections import SMOKE_NOTE

POINT_MARK = "°"
"""Follows an interval whose two ends are equal; ``POINT_NOTE`` says why that happens."""
POINT_NOTE = (
    f"{POINT_MARK} A point interval: every bootstrap replicate gave the same value. For a difference this "
    "happens when all paired differences are equal (0 when the policy took Base's actions in every "
    "episode); for P(X > Y) when, in every setting, X is above Y on all resampled runs or on none."
)


def is_point(entry: Mapping[str, Any] | None) -> bool:
    """An interval whose ends coincide (not a missing one)."""
    low, high = (None, None) if entry is None else (entry.get("ci_low"), entry.get("ci_high"))
    return not _missing(low) and not _missing(high) and low == high


def interval(entry: Mapping[str, Any] | None, digits: int = 1, signed: bool = False) -> str:
    """[low, high], marked when it is a point; "—" when missing."""
    low, high = (None, None) if entry is None else (entry.get("ci_low"), entry.get("ci_high"))
    if _missing(low) or _missing(high):
        return DASH
    fmt = (lambda v: f"{round(v, digits) + 0.0:+.{digits}f}") if signed else (lambda v: fmt_num(v, digits))
    return f"[{fmt(low)}, {fmt(high)}]" + (POINT_MARK if low == high else "")


def beat_base(delta: Mapping[str, Any] | None) -> str:
    """The verdict of a paired difference to Base: its 95% interval above 0, below 0, or around it."""
    if delta is None:
        return DASH
    low, high, point = delta.get("ci_low"), delta.get("ci_high"), delta.get("estimate")
    if _missing(low) or _missing(high):
        return "no interval"
    if low == high == point == 0:
        return "same as Base"
    if low > 0:
        return "**yes**"
    if high < 0:
        return "no, worse"
    return "no, interval spans 0"


def ranking(aggregate: Mapping[str, Any]) -> list[str]:
    """Policies by IQM, best first (the order of the aggregate table)."""
    metrics = aggregate.get("metrics") or {}
    return sorted(metrics, key=lambda name: -metrics[name]["iqm"]["estimate"])


def ranked_rows(aggregate: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per policy, best IQM first: the numbers of the summary table, as read from the aggregate."""
    metrics, paired = aggregate.get("metrics") or {}, aggregate.get("paired") or {}
    rows = []
    for name in ranking(aggregate):
        comparisons = paired.get(name) or {}
        rows.append(
            {
                "policy": name,
                "iqm": metrics[name]["iqm"],
                "vs_base": (comparisons.get("base") or {}).get("delta"),
                "vs_best": (comparisons.get("best") or {}).get("delta"),
                "optimality_gap": metrics[name].get("optimality_gap"),
                "reference": name in (aggregate.get("references") or ()),
            }
        )
    return rows


def _signed(entry: Mapping[str, Any] | None) -> str:
    value = None if entry is None else entry.get("estimate")
    return DASH if _missing(value) else f"{round(value, 1) + 0.0:+.1f}"


def summary_section(results: Mapping[str, Any]) -> str:
    """## Summary: the answer in one sentence, then the ranking with intervals and verdicts against Base."""
    aggregate = results.get("aggregate") or {}
    if not aggregate.get("metrics"):
        return "## Summary\n\n_No aggregate statistics in these results: nothing is ranked._"
    rows = ranked_rows(aggregate)
    best = aggregate.get("best")
    best_row = next((row for row in rows if row["policy"] == best), rows[0])
    winners = [row["policy"] for row in rows if beat_base(row["vs_base"]) == "**yes**"]
    confidence = 100 * (aggregate.get("bootstrap") or {}).get("confidence", 0.95)
    runs = aggregate.get("runs_per_policy")
    best_interval = interval(best_row["iqm"])
    lead = (
        f"**{best_row['policy']}** ranks first with an IQM of {fmt_num(best_row['iqm']['estimate'], 1)} "
        + (f"{best_interval} (" if best_interval != DASH else "(no interval; ")
        + f"normalised score: random = 0, expert = 100; {runs} runs per policy)."
    )
    if winners:
        lead += f" Beat Base (paired {confidence:.0f}% interval above 0): {', '.join(winners)}."
    elif any(not _missing((row["vs_base"] or {}).get("ci_low")) for row in rows):
        lead += " No policy beat Base with a paired interval above 0."
    else:
        lead += " No intervals: one seed, so no policy can be said to beat Base."
    headers = [
        "#",
        "Policy",
        "IQM",
        f"{confidence:.0f}% CI",
        "Δ vs Base",
        f"{confidence:.0f}% CI",
        "Beat Base?",
        f"Δ vs {best or 'best'}",
        f"{confidence:.0f}% CI",
        "Gap to expert",
    ]
    table = [
        [
            str(rank),
            row["policy"] + (" (reference)" if row["reference"] else ""),
            fmt_num(row["iqm"]["estimate"], 1),
            interval(row["iqm"]),
            _signed(row["vs_base"]),
            interval(row["vs_base"], signed=True),
            beat_base(row["vs_base"]) if row["policy"] != "base" else DASH,
            _signed(row["vs_best"]),
            interval(row["vs_best"], signed=True),
            fmt_num((row["optimality_gap"] or {}).get("estimate"), 1),
        ]
        for rank, row in enumerate(rows, 1)
    ]
    explain = (
        "IQM: interquartile mean of the policy's runs (seed x setting) in normalised score. Δ vs Base and "
        f"Δ vs {best or 'the best'}: mean paired difference in normalised score on the same episodes, with "
        "its bootstrap interval; a policy beat Base when that interval lies above 0. Gap to expert: the "
        "optimality gap, the mean shortfall below the expert's 100. Details: Aggregate statistics below."
    )
    parts = ["## Summary", lead, markdown_table(headers, table, left=2), explain]
    if results.get("smoke"):
        parts.insert(1, f"_{SMOKE_NOTE}_")
    if any(POINT_MARK in cell for row in table for cell in row):
        parts.append(POINT_NOTE)
    return "\n\n".join(parts)
