"""The learning-curves section: each training run's checkpoints, evaluated on a fixed episode set."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.access import _label
from harness_gym.bench.report.format import DASH, fmt_num, fmt_signed, markdown_table
from harness_gym.bench.report.sections import _section
from harness_gym.evaluation.paper import CURVE_SPLIT


def curve_split() -> str:
    """The split the learning curves are measured on (``harness_gym.evaluation.paper.CURVE_SPLIT``)."""
    return CURVE_SPLIT


def _curve_runs(setting: Mapping[str, Any]) -> dict[str, list[list[tuple[int, float]]]]:
    """{algo: one [(step, G), ...] per seed} from a setting's ``curves`` (``harness_gym.bench.runner``)."""
    runs = {}
    for algo, per_seed in (setting.get("curves") or {}).items():
        curves = [[(int(step), float(g)) for step, g in points] for points in per_seed.values() if points]
        if curves:
            runs[algo] = curves
    return runs


def _curve_stats(curves: list[list[tuple[int, float]]]) -> list[tuple[int, float, float, float]]:
    """(step, mean, min, max) of G over seeds at each checkpoint (seeds share their checkpoint steps)."""
    out = []
    for k in range(min(len(c) for c in curves)):
        gs = [c[k][1] for c in curves]
        out.append((curves[0][k][0], sum(gs) / len(gs), min(gs), max(gs)))
    return out


def curves_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    rows_in = [(e, algo, _curve_stats(c)) for e, s in settings for algo, c in _curve_runs(s).items()]
    if not rows_in:
        return _section("curves", "_No learning curves in these results._", "", None)
    k = max(len(stats) for _, _, stats in rows_in)
    headers = ["Setting", "Algorithm", "Steps", *(f"{100 * (i + 1) / k:.0f}%" for i in range(k)), "Last ΔG"]
    rows = []
    for e, algo, stats in rows_in:
        gs = [fmt_num(g) for _, g, _, _ in stats] + [DASH] * (k - len(stats))
        last = fmt_signed(stats[-1][1] - stats[-2][1]) if len(stats) > 1 else DASH
        rows.append([_label(e), algo, str(stats[-1][0]), *gs, last])
    return _section(
        "curves",
        f"G on the {curve_split()} split of each trained policy at evenly spaced points of its training "
        "run (columns: share of the run's gradient steps; Steps: its length), mean over seeds. A point "
        f"plays every {curve_split()} task with the run's seed, the same episodes at every point; "
        "stochastic learners sample, Q-learners act greedily. The eval split never enters a curve, so "
        "these G are not the eval G of the other tables. Last ΔG is the change over the final stretch: a "
        "large positive value marks a run still improving.",
        markdown_table(headers, rows, left=2),
        None,
    )
