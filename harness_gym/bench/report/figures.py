"""Which figures a report has, their file names, and the functions that write them all."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.bench.report.access import _ordered_settings
from harness_gym.bench.report.paper_figures import (
    curves_figure,
    events_figure,
    outcome_process_figure,
    policy_figure,
    sigma_figure,
    tokens_figure,
)
from harness_gym.bench.report.score_figures import (
    aggregate_figure,
    improvement_figure,
    per_setting_figure,
    performance_profile_figure,
)

FIGURES = {
    "aggregate": "fig_aggregate.png",
    "improvement": "fig_improvement.png",
    "performance_profile": "fig_performance_profile.png",
    "per_setting": "fig_per_setting.png",
    "outcome_process": "fig_outcome_process.png",
    "policy_comparison": "fig_policy_comparison.png",
    "sigma_delta_g": "fig_sigma_vs_delta_g.png",
    "events": "fig_events.png",
    "learning_curves": "fig_learning_curves.png",
    "g_vs_tokens": "fig_g_vs_tokens.png",
}
"""The figures, comparison first (aggregate intervals, probability of improvement, performance profiles,
per-setting scores), then the paper-comparison figures."""
LEADERBOARD_FIGURES = ("aggregate", "improvement", "performance_profile")
"""The figures ``harness-gym leaderboard`` draws (from the aggregate alone)."""


def leaderboard_figures(results: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """``LEADERBOARD_FIGURES`` of a document with an ``aggregate`` under ``out_dir``."""
    out = Path(out_dir)
    builders = {
        "aggregate": aggregate_figure,
        "improvement": improvement_figure,
        "performance_profile": performance_profile_figure,
    }
    return {key: builders[key](results, out / FIGURES[key]) for key in LEADERBOARD_FIGURES}


def write_figures(results: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """The PNG figures (``FIGURES``) under ``out_dir``; needs matplotlib (and rliable for the profiles)."""
    import matplotlib  # noqa: F401  (fail early, before any file is written)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = _ordered_settings(results)
    paths = leaderboard_figures(results, out)
    paths["per_setting"] = per_setting_figure(results, out / FIGURES["per_setting"])
    builders = {
        "outcome_process": outcome_process_figure,
        "policy_comparison": policy_figure,
        "sigma_delta_g": sigma_figure,
        "events": events_figure,
        "learning_curves": curves_figure,
        "g_vs_tokens": tokens_figure,
    }
    for key, build in builders.items():
        paths[key] = out / FIGURES[key]
        build(settings, paths[key])
    return paths
