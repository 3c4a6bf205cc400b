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


def figure_captions() -> dict[str, str]:
    """The caption under each figure of ``FIGURES`` in report.md: what it shows and how to read it."""
    from harness_gym.bench.report.curves import curve_split

    return {
        "aggregate": "IQM, mean and optimality gap of every policy's normalised scores (random = 0, "
        "expert = 100), best IQM at the top, with 95% bootstrap intervals. Each policy has one colour in "
        "every figure; a greedy mode is the light shade of its learner's.",
        "improvement": "Probability of improvement P(X > Y) of each compared pair with its 95% interval, "
        "in the colour of X; 0.5 (dotted) is no difference. Against Base it is paired (same episodes); "
        "a bar without width is a point interval (see the summary's note).",
        "performance_profile": "Performance profiles: for each normalised score τ, the share of a "
        "policy's runs scoring above it, with 95% bands; dashed: a greedy mode. A curve above another "
        "everywhere dominates it; the dotted lines mark random (0) and expert (100).",
        "per_setting": "Each setting's mean normalised score of every policy with its 95% interval, "
        "policies ordered by overall IQM (best at the top); the dotted line is Base's score, so a bar "
        "ending right of it beat Base on that setting.",
        "outcome_process": "AW against Base per setting: the outcome change ΔG (percentage points, with "
        "its 95% paired bootstrap interval) and the process change ΔHMS; white diamonds: the paper's values.",
        "policy_comparison": "Lift over Base (ΔG in percentage points) of AW, BC and Forced CHECK per "
        "setting; white diamonds: the paper's values.",
        "sigma_delta_g": "Buffer slack σ_D (max G − mean G of the training buffer) against AW's ΔG per "
        "setting, beside the paper's calibrated-verifier settings (grey): no reweighting of the buffer "
        "can lift mean G by more than σ_D.",
        "events": "Share of evaluation episodes in which each process event fired, Base and AW, per "
        "setting; n/a: the event does not apply there; diamonds: the paper's rates. EarlySubmit is a "
        "penalty.",
        "learning_curves": f"G on the {curve_split()} split (a fixed fifth of the train tasks, never the "
        "eval split) of each training run's checkpoints against gradient steps: mean over seeds, band "
        "min–max. The dotted line is Base's G on the eval split, for scale only: the splits differ.",
        "g_vs_tokens": "Mean G against mean executor tokens per episode, one point per evaluated policy "
        "and setting (squares: reference policies, circles: learners). Policies on the same point, such "
        "as greedy modes that take Base's actions, are drawn as nested rings.",
    }


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
