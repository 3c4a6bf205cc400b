"""The figures of the normalised scores (``results["aggregate"]``): performance profiles, aggregate
intervals, probability of improvement, per-setting scores."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.bench.report.access import _label
from harness_gym.bench.report.format import _count
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
    from matplotlib import colormaps
    from rliable import plot_utils

    palette = colormaps["tab20"]  # an algorithm in a dark shade, its greedy mode in the light one
    algos = list(dict.fromkeys(name.removesuffix("-greedy") for name in policies))
    shade = {n: 2 * algos.index(n.removesuffix("-greedy")) + n.endswith("-greedy") for n in policies}
    plot_utils.plot_performance_profiles(
        {name: np.asarray(p["fraction"]) for name, p in policies.items()},
        np.asarray(profile["tau"]),
        performance_profile_cis={name: np.array([p["ci_low"], p["ci_high"]]) for name, p in policies.items()},
        ax=ax,
        colors={name: palette(shade[name] % palette.N) for name in policies},
        linestyles={name: "dashed" if name.endswith("-greedy") else "solid" for name in policies},
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
    order = sorted(metrics, key=lambda name: metrics[name]["iqm"]["estimate"])
    ys = range(len(order))
    for ax, (key, label) in zip(axes, AGGREGATE_PANELS.items(), strict=True):
        for y, name in zip(ys, order, strict=True):
            point, error = _estimate_and_error(metrics[name][key])
            ax.errorbar(point, y, xerr=[[error[0]], [error[1]]], fmt="o", ms=4, capsize=3, color="#1f77b4")
        ax.set_title(label)
        ax.set_xlabel("Normalised score")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(list(ys), order)
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
    from matplotlib import colormaps
    from rliable import plot_utils

    keys = [f"{p['x']};{p['y']}" for p in pairs]
    palette = colormaps["tab10"]
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
        colors=[palette(i % palette.N) for i in range(len(pairs))],
        labelsize="medium",
        ticklabelsize="small",
    )
    ax.axvline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_title(_smoke_title(results, "Probability of improvement P(X > Y) with 95% intervals"))
    fig.savefig(path)
    return path


def per_setting_figure(results: Mapping[str, Any], path: Path) -> Path:
    """Every policy's mean normalised score on each setting, with its 95% interval as error bars."""
    aggregate = results.get("aggregate") or {}
    per_setting = aggregate.get("per_setting") or {}
    settings = [e for e in aggregate.get("settings") or [] if per_setting.get(e)]
    fig = _new_figure(12, 4.5)
    ax = fig.subplots()
    if not settings:
        _no_data(ax, "no per-setting scores")
        fig.savefig(path)
        return path
    from matplotlib import colormaps

    metrics = aggregate.get("metrics") or {}
    policies = sorted(
        {name for e in settings for name in per_setting[e]},
        key=lambda name: -(metrics.get(name) or {}).get("iqm", {}).get("estimate", 0.0),
    )
    palette = colormaps["tab20"]
    width = 0.8 / len(policies)
    for i, name in enumerate(policies):
        xs, points, errors = [], [], [[], []]
        for j, env_id in enumerate(settings):
            if name in per_setting[env_id]:
                point, error = _estimate_and_error(per_setting[env_id][name])
                xs.append(j - 0.4 + (i + 0.5) * width)
                points.append(point)
                errors[0].append(error[0])
                errors[1].append(error[1])
        ax.bar(xs, points, width, yerr=errors, capsize=2, label=name, color=palette(i % palette.N))
    ax.set_xticks(range(len(settings)), [_label(e) for e in settings], rotation=20, ha="right")
    ax.set_ylabel("Normalised score (random = 0, expert = 100)")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_title(_smoke_title(results, "Per-setting normalised scores with 95% intervals"))
    fig.legend(loc="outside right upper", fontsize=7)
    fig.savefig(path)
    return path
