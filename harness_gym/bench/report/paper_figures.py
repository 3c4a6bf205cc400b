"""The figures set beside the paper: outcome and process gain, policy lifts, buffer slack, events,
learning curves, G versus tokens; one function per figure, each drawn from the ordered settings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.bench.report.access import (
    AW,
    BC,
    FC,
    _base,
    _base_G,
    _get,
    _label,
    _policies,
    _policy,
    _short,
)
from harness_gym.bench.report.curves import _curve_runs, _curve_stats, curve_split
from harness_gym.bench.report.format import _missing
from harness_gym.bench.report.palette import colour, linestyle
from harness_gym.bench.report.plot import (
    PAPER_MARKER,
    POLICY_COLOURS,
    POLICY_LABELS,
    _new_figure,
    _no_data,
    _paper_legend_handle,
)
from harness_gym.core.hms import EVENTS
from harness_gym.evaluation.frontier import pareto_front
from harness_gym.evaluation.paper import PAPER


def outcome_process_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig = _new_figure(11, 0.45 * max(len(settings), 3) + 1.6)
    axes = fig.subplots(1, 2, sharey=True)
    labels = [_label(e) for e, _ in settings]
    ys = list(range(len(settings)))[::-1]
    for ax, key, scale, title, xlabel in (
        (axes[0], "delta_G", 100.0, "Outcome: ΔG of AW vs Base", "ΔG (percentage points)"),
        (axes[1], "delta_hms", 1.0, "Process: ΔHMS of AW vs Base", "ΔHMS (normalised score)"),
    ):
        for y, (e, s) in zip(ys, settings, strict=True):
            aw = _policy(s, AW)
            value = _get(aw, key)
            if _missing(value):
                ax.text(0, y, " no AW", va="center", fontsize=8, color="grey")
            else:
                ax.barh(y, scale * value, color=colour(AW), alpha=0.85, height=0.6)
                if (
                    key == "delta_G"
                    and not _missing(_get(aw, "ci_low"))
                    and not _missing(_get(aw, "ci_high"))
                ):
                    lo, hi = scale * aw["ci_low"], scale * aw["ci_high"]
                    ax.errorbar(
                        scale * value,
                        y,
                        xerr=[[scale * value - lo], [hi - scale * value]],
                        fmt="none",
                        ecolor="black",
                        capsize=3,
                        lw=1,
                    )
            ref = getattr(PAPER.get(e), key, None)
            if ref is not None:
                ax.scatter([scale * ref], [y], edgecolor="black", **PAPER_MARKER)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys, labels)
    handles = [
        Patch(color=colour(AW), label="this run: AW − Base"),
        Line2D([], [], color="black", marker="|", linestyle="-", label="95% bootstrap CI"),
        _paper_legend_handle(),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8)
    fig.suptitle("Outcome and process gain of AW per setting")
    fig.savefig(path)


def policy_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.patches import Patch

    fig = _new_figure(8, 0.7 * max(len(settings), 3) + 1.4)
    ax = fig.subplots()
    ys = list(range(len(settings)))[::-1]
    height = 0.26
    keys = {AW: "aw", BC: "bc", FC: "fc"}
    for k, policy in enumerate((AW, BC, FC)):
        offset = (1 - k) * height
        for y, (e, s) in zip(ys, settings, strict=True):
            lift = _get(_policy(s, policy), "delta_G")
            if not _missing(lift):
                ax.barh(y + offset, 100 * lift, height=height, color=POLICY_COLOURS[policy], alpha=0.85)
            ref = PAPER[e].lifts.get(keys[policy]) if e in PAPER else None
            if ref is not None:
                ax.scatter([100 * ref], [y + offset], edgecolor=POLICY_COLOURS[policy], **PAPER_MARKER)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, [_label(e) for e, _ in settings])
    ax.set_xlabel("Lift over Base: ΔG (percentage points)")
    ax.set_title("Policy comparison: AW vs BC vs Forced CHECK")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=POLICY_COLOURS[p], label=POLICY_LABELS[p]) for p in (AW, BC, FC)]
    fig.legend(handles=[*handles, _paper_legend_handle()], loc="outside lower center", ncols=4, fontsize=8)
    fig.savefig(path)


def sigma_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    fig = _new_figure(7, 5)
    ax = fig.subplots()
    points = []
    for e, s in settings:
        sigma = (s.get("buffer") or {}).get("sigma_D")
        delta = _get(_policy(s, AW), "delta_G")
        if not _missing(sigma) and not _missing(delta):
            points.append((e, sigma, 100 * delta))
    paper = [(e, p.sigma_D, 100 * p.delta_G) for e, p in PAPER.items() if p.sigma_D is not None]
    if not points and not paper:
        _no_data(ax, "no buffer statistics")
    if paper:
        ax.scatter(
            [p[1] for p in paper],
            [p[2] for p in paper],
            facecolor="white",
            edgecolor="grey",
            s=50,
            label="paper (calibrated verifier)",
            zorder=3,
        )
        for e, x, y in paper:
            ax.annotate(
                PAPER[e].short, (x, y), textcoords="offset points", xytext=(5, -10), fontsize=7, color="grey"
            )
    if points:
        ax.scatter(
            [p[1] for p in points],
            [p[2] for p in points],
            color=colour(AW),
            s=50,
            label="this run (AW)",
            zorder=4,
        )
        for e, x, y in points:
            ax.annotate(_short(e), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("Buffer slack σ_D = max G − mean G")
    ax.set_ylabel("ΔG of AW vs Base (percentage points)")
    ax.set_title("Buffer slack vs final-quality change")
    ax.grid(alpha=0.3)
    if points or paper:
        ax.legend(loc="best", fontsize=8)
    fig.savefig(path)


def events_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.patches import Patch

    shown = [(e, s) for e, s in settings if _policies(s)]
    ncols = max(1, min(4, len(shown)))
    nrows = max(1, math.ceil(len(shown) / ncols))
    fig = _new_figure(3.4 * ncols + 1.6, 2.9 * nrows + 0.9)
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
    ys = list(range(len(EVENTS)))[::-1]
    colours = {"base": colour("base"), "policy": colour(AW)}
    for ax, (e, s) in zip(axes, shown, strict=False):
        aw = _policy(s, AW)
        entries = (aw or _base(s) or {}).get("events", {})
        ref = PAPER[e].events if e in PAPER else {}
        for y, event in zip(ys, EVENTS, strict=True):
            entry = entries.get(event)
            if entry is None or not entry.get("applicable", True):
                ax.text(2, y, "n/a", va="center", fontsize=7, color="grey")
                continue
            for k, side in enumerate(("base", "policy")):
                rate = entry.get(side) if (side == "base" or aw is not None) else None
                offset = 0.18 if k == 0 else -0.18
                if not _missing(rate):
                    ax.barh(y + offset, 100 * rate, height=0.34, color=colours[side])
                rates = ref.get(event)
                if rates is not None:
                    ax.scatter([100 * rates[k]], [y + offset], edgecolor=colours[side], **PAPER_MARKER)
        ax.set_xlim(-4, 105)
        ax.set_title(_label(e), fontsize=10)
        ax.set_xlabel("episodes with event (%)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(ys, EVENTS, fontsize=8)
    for ax in axes[len(shown) :]:
        _no_data(ax, "")
        ax.set_axis_off()
    if not shown:
        _no_data(axes[0], "no evaluation results")
    handles = [
        Patch(color=colours["base"], label="Base"),
        Patch(color=colours["policy"], label="AW"),
        _paper_legend_handle(),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle("Event-level decomposition: rate per event, Base vs AW (n/a: event does not apply)")
    fig.savefig(path)


def curves_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.lines import Line2D

    shown = [(e, _curve_runs(s), _base_G(s)) for e, s in settings]
    shown = [row for row in shown if row[1]] or shown[:1]
    algos = list(dict.fromkeys(algo for _, runs, _ in shown for algo in runs))
    split = curve_split()
    ncols = max(1, min(4, len(shown)))
    nrows = max(1, math.ceil(len(shown) / ncols))
    fig = _new_figure(max(6.0, 3.6 * ncols + 0.6), 2.9 * nrows + 1.0)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (e, runs, base) in zip(axes, shown, strict=False):
        if not runs:
            _no_data(ax, "no learning curves")
            continue
        for algo, curves in runs.items():
            stats = _curve_stats(curves)
            steps, mean, low, high = zip(*stats, strict=True)
            ax.plot(steps, mean, linestyle(algo), color=colour(algo), marker="o", ms=3, lw=1.3)
            ax.fill_between(steps, low, high, color=colour(algo), alpha=0.15)
        if not _missing(base):
            ax.axhline(base, color=colour("base"), lw=0.9, ls=":")
        ax.set_title(_label(e), fontsize=10)
        ax.set_xlabel("gradient steps", fontsize=8)
        ax.set_ylabel(f"{split} G", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(shown) :]:
        ax.set_axis_off()
    handles = [Line2D([], [], color=colour(a), ls=linestyle(a), marker="o", ms=3, label=a) for a in algos]
    handles.append(Line2D([], [], color=colour("base"), ls=":", label="Base's G on the eval split"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(6, len(handles)), fontsize=8)
    fig.suptitle(
        f"Learning curves: G on the {split} split vs gradient steps (mean over seeds; band: min–max)",
        fontsize=10,
    )
    fig.savefig(path)


FRONTIER_STYLES = {"reference": "--", "learner": "-"}
"""Line style of each kind's G-versus-tokens frontier (``harness_gym.evaluation.frontier``)."""


def tokens_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    """Per setting, one point per evaluated policy: mean executor tokens per episode against mean G.

    Policies on the same point (the greedy modes that take Base's actions) are drawn as nested rings,
    the first largest; the legend names every policy in its colour."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    shown = [(e, s["tokens"]) for e, s in settings if s.get("tokens")]
    ncols = max(1, min(4, len(shown)))
    nrows = max(1, math.ceil(len(shown) / ncols))
    fig = _new_figure(max(6.0, 3.6 * ncols + 0.6), 3.0 * nrows + 1.6)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    markers = {"reference": "s", "learner": "o"}
    kinds: dict[str, str] = {}  # every policy shown, in order of appearance, with its kind
    for ax, (e, points) in zip(axes, shown, strict=False):
        at: dict[tuple[float, float], int] = {}  # how many policies already sit on a point
        for name, point in points.items():
            xy = (point["tokens"], point["G"])
            size = max(70.0 - 14.0 * at.get(xy, 0), 8.0)
            at[xy] = at.get(xy, 0) + 1
            ax.scatter(*([v] for v in xy), color=colour(name), marker=markers.get(point["kind"], "o"), s=size,
                       edgecolors="white", linewidths=0.5, zorder=3)  # fmt: skip
            kinds.setdefault(name, point["kind"])
        for kind, style in FRONTIER_STYLES.items():
            front = pareto_front((p["tokens"], p["G"]) for p in points.values() if p["kind"] == kind)
            if len(front) > 1:
                ax.step(*zip(*front, strict=True), where="post", color="0.45", lw=0.8, ls=style, zorder=2)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
        ax.set_title(_label(e), fontsize=10)
        ax.set_xlabel("mean tokens per episode", fontsize=8)
        ax.set_ylabel("mean G", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(shown) :]:
        ax.set_axis_off()
    if not shown:
        _no_data(axes[0], "no token counts in these results")
    handles = [
        Line2D([], [], color=colour(name), marker=markers.get(kind, "o"), ls="", label=name)
        for name, kind in kinds.items()
    ]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(7, len(handles)), fontsize=8)
    fig.suptitle(
        "G versus executor tokens per episode (one point per policy; squares: references, circles: learners;"
        " steps: each kind's frontier, dashed for references)",
        fontsize=10,
    )
    fig.savefig(path)
