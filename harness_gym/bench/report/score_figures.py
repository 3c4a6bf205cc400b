"""The figures of the normalised scores (``results["aggregate"]``): performance profiles, aggregate
intervals, probability of improvement, per-setting scores."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness_gym.bench.report.access import _label
from harness_gym.bench.report.format import _count
from harness_gym.bench.report.palette import colour, linestyle
from harness_gym.bench.report.plot import _estimate_and_error, _new_figure, _no_data, _smoke_title


def performance_profile_figure(results: Mapping[str, Any], path: Path) -> Path:
    """rliable's performance profiles (share of runs above each normalised score) with their bands."""
    aggregate = results.get("aggregate") or {}
    fig = _new_figure(9, 5)
    ax = fig.subplots()
    profile = aggregate.get("profile") or {}
    policies = profile.get("policies") or {}
    if not policies:
        _no_data(ax, "no aggregate statistics")
        fig.savefig(path)
        return path
    import numpy as np
    from rliable import plot_utils

    plot_utils.plot_performance_profiles(
        {name: np.asarray(p["fraction"]) for name, p in policies.items()},
        np.asarray(profile["tau"]),
        performance_profile_cis={name: np.array([p["ci_low"], p["ci_high"]]) for name, p in policies.items()},
        ax=ax,
        colors={name: colour(name) for name in policies},
        linestyles={name: linestyle(name) for name in policies},
        xlabel="Normalised score τ (random = 0, expert = 100)",
        ylabel="Fraction of runs with score > τ",
        labelsize="medium",
        ticklabelsize="small",
    )
    for tau in (0, 100):
        ax.axvline(tau, color="grey", lw=0.8, ls=":")
    runs, seeds, envs = aggregate["runs_per_policy"], len(aggregate["seeds"]), len(aggregate["settings"])
    ax.set_title(
        _smoke_title(
            results,
            f"Performance profiles: {runs} runs per policy ({_count(seeds, 'seed')} x "
            f"{_count(envs, 'setting')})",
        )
    )
    fig.legend(loc="outside right upper", fontsize=7)
    fig.savefig(path)
    return path


AGGREGATE_PANELS = {"iqm": "IQM", "mean": "Mean", "optimality_gap": "Optimality gap"}


def aggregate_figure(results: Mapping[str, Any], path: Path) -> Path:
    """IQM, mean and optimality gap of every policy with their 95% intervals (as rliable draws them)."""
    metrics = (results.get("aggregate") or {}).get("metrics") or {}
    fig = _new_figure(11, 0.32 * max(len(metrics), 3) + 1.4)
    axes = fig.subplots(1, len(AGGREGATE_PANELS), sharey=True)
    if not metrics:
        _no_data(axes[0], "no aggregate statistics")
        fig.savefig(path)
        return path
    order = ranked(metrics, metrics)[::-1]  # best at the top
    ys = range(len(order))
    for ax, (key, label) in zip(axes, AGGREGATE_PANELS.items(), strict=True):
        for y, name in zip(ys, order, strict=True):
            point, error = _estimate_and_error(metrics[name][key])
            ax.errorbar(point, y, xerr=[[error[0]], [error[1]]], fmt="o", ms=4, capsize=3, color=colour(name))
        ax.set_title(label)
        ax.set_xlabel("Normalised score")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(list(ys), order)
    fig.legend(handles=interval_legend_handles(), loc="outside lower center", ncols=2, fontsize=8)
    fig.suptitle(_smoke_title(results, "Aggregate scores with 95% intervals (random = 0, expert = 100)"))
    fig.savefig(path)
    return path


def improvement_figure(results: Mapping[str, Any], path: Path) -> Path:
    """Probability of improvement of each compared pair with its interval (rliable's plot)."""
    pairs = [
        p for p in (results.get("aggregate") or {}).get("improvement") or [] if p.get("estimate") is not None
    ]
    fig = _new_figure(8, 0.35 * max(len(pairs), 3) + 1.4)
    ax = fig.subplots()
    if not pairs:
        _no_data(ax, "no pairs compared")
        fig.savefig(path)
        return path
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from rliable import plot_utils

    keys = [f"{p['x']};{p['y']}" for p in pairs]
    plot_utils.plot_probability_of_improvement(
        {key: p["estimate"] for key, p in zip(keys, pairs, strict=True)},
        {
            key: np.array(
                [p["estimate"] if p.get("ci_low") is None else p["ci_low"], p["ci_high"] or p["estimate"]]
            )
            for key, p in zip(keys, pairs, strict=True)
        },
        pair_separator=";",
        ax=ax,
        colors=[colour(p["x"]) for p in pairs],  # the colour of X
        labelsize="medium",
        ticklabelsize="small",
    )
    ax.axvline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_title(_smoke_title(results, "Probability of improvement P(X > Y) with 95% intervals"))
    fig.legend(
        handles=[
            Line2D([], [], color="grey", ls=":", label="0.5: no difference"),
            Line2D([], [], color="black", marker="|", ms=8, ls="", label="estimate"),
            Patch(color="grey", alpha=0.6, label="95% interval"),
        ],
        loc="outside lower center",
        ncols=3,
        fontsize=8,
    )
    fig.savefig(path)
    return path


def ranked(metrics: Mapping[str, Any], names: Iterable[str]) -> list[str]:
    """``names`` by overall IQM, best first; ties by name, so the order never depends on set order."""
    return sorted(
        names, key=lambda name: (-(metrics.get(name) or {}).get("iqm", {}).get("estimate", 0.0), name)
    )


def interval_legend_handles() -> list[Any]:
    """Legend entries shared by the interval plots: the estimate and its 95% interval."""
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], color="dimgrey", marker="o", ls="", ms=4, label="estimate"),
        Line2D([], [], color="dimgrey", marker="|", ms=8, ls="-", label="95% interval"),
    ]


def per_setting_figure(results: Mapping[str, Any], path: Path) -> Path:
    """One panel per setting: every policy's mean normalised score as a bar with its 95% interval,
    policies in their overall-IQM order and colours, Base's score as a dotted line."""
    aggregate = results.get("aggregate") or {}
    per_setting = aggregate.get("per_setting") or {}
    settings = [e for e in aggregate.get("settings") or [] if per_setting.get(e)]
    if not settings:
        fig = _new_figure(12, 4.5)
        _no_data(fig.subplots(), "no per-setting scores")
        fig.savefig(path)
        return path
    from matplotlib.lines import Line2D

    policies = ranked(aggregate.get("metrics") or {}, {name for e in settings for name in per_setting[e]})
    ncols = min(4, len(settings))
    nrows = math.ceil(len(settings) / ncols)
    fig = _new_figure(3.1 * ncols + 1.6, (0.17 * len(policies) + 0.9) * nrows + 1.0)
    axes = fig.subplots(nrows, ncols, sharey=True, sharex=True, squeeze=False).ravel()
    ys = list(range(len(policies)))[::-1]
    for ax, env_id in zip(axes, settings, strict=False):
        scores = per_setting[env_id]
        for y, name in zip(ys, policies, strict=True):
            if name not in scores:
                continue
            point, error = _estimate_and_error(scores[name])
            ax.barh(y, point, height=0.75, color=colour(name), xerr=[[error[0]], [error[1]]],
                    error_kw={"elinewidth": 0.8, "capsize": 1.5, "ecolor": "black"})  # fmt: skip
        if "base" in scores:
            ax.axvline(scores["base"]["estimate"], color=colour("base"), lw=0.9, ls=":")
        ax.axvline(0, color="black", lw=0.6)
        ax.set_title(_label(env_id), fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=7)
    for ax in axes[len(settings) :]:
        ax.set_axis_off()
    axes[0].set_yticks(ys, policies)
    for ax in axes[-ncols:]:
        ax.set_xlabel("normalised score", fontsize=8)
    handles = [
        Line2D([], [], color=colour("base"), ls=":", label="Base's score"),
        Line2D([], [], color="black", marker="|", ms=6, ls="-", lw=0.8, label="95% interval"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8)
    fig.suptitle(
        _smoke_title(results, "Per-setting normalised scores (random = 0, expert = 100)"), fontsize=10
    )
    fig.savefig(path)
    return path
