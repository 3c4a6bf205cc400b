"""What every figure shares: the canvas (Agg, no pyplot state), colours, markers, empty panels, titles.

matplotlib is imported only inside these functions, so importing the report stays light."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.access import AW, BC, FC
from harness_gym.bench.report.palette import colour

POLICY_COLOURS = {name: colour(name) for name in (AW, BC, FC)}
POLICY_LABELS = {AW: "AW", BC: "BC", FC: "Forced CHECK"}
PAPER_MARKER = {"marker": "D", "facecolor": "white", "s": 28, "zorder": 4, "linewidths": 1.2}


def _new_figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _paper_legend_handle() -> Any:
    from matplotlib.lines import Line2D

    return Line2D(
        [], [], marker="D", linestyle="", markerfacecolor="white", markeredgecolor="black", label="paper"
    )


def _smoke_title(results: Mapping[str, Any], title: str) -> str:
    return f"{title} (smoke run)" if results.get("smoke") else title


def _estimate_and_error(entry: Mapping[str, Any]) -> tuple[float, list[float]]:
    """An {estimate, ci_low, ci_high} entry as a point and matplotlib's (below, above) error (0 without)."""
    point = entry["estimate"]
    if entry.get("ci_low") is None:
        return point, [0.0, 0.0]
    return point, [max(point - entry["ci_low"], 0.0), max(entry["ci_high"] - point, 0.0)]
