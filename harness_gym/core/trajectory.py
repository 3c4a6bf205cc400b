"""Step records: the JSON-serialisable account of an episode that HMS, datasets and rendering read.

A record is a plain dict (cheap to build on the hot path, trivially serialisable). Keys always present:
``t`` (1-based step number), ``action`` (name), ``valid``, ``cost`` (of this step), ``draft_version``,
``draft_hash`` (of the draft after the step, ``None`` without one), ``failure`` (a failure signal the
harness saw), ``text`` (what happened, for people). Optional keys, present only when the step produced
them: ``check`` {coverage, missing, issues}, ``tests`` {passed, total}, ``tool`` {name, valid, ok},
``evidence`` [item ids gathered], ``issues`` [problems reported].
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from harness_gym.core.actions import Action

StepRecord = dict[str, Any]


@functools.lru_cache(maxsize=1 << 16)
def artifact_hash(text: str) -> str:
    """Short content hash: identifies a draft in records, feedback and verifier caches (kept for the
    most recent drafts: a simulated executor's drafts come from finite pools and recur on every step)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


MARKED = {"CHECK": ("s", "#2a9d4b"), "REVISE": ("D", "#e08a00"), "SUBMIT": ("*", "#c0392b")}
"""The operations a reader looks for first, with their marker and colour (rendering and the viewer)."""


def render_steps(
    task_line: str, records: Iterable[Mapping[str, Any]], final: Mapping[str, Any] | None
) -> str:
    """Readable text of a trajectory (``render_mode="ansi"``)."""
    lines = [task_line]
    for rec in records:
        flag = "" if rec["valid"] else " [invalid: no-op]"
        lines.append(f"{rec['t']:>3} {rec['action']:<9}{flag} {rec['text']}")
        for issue in rec.get("issues", ())[:5]:
            lines.append(f"{'':>14}- {issue}")
    if final is not None:
        events = ", ".join(
            f"{name}{'' if ev['fired'] else ' (no)'}" for name, ev in final["hms"].items() if ev["applicable"]
        )
        rubric = ", ".join(f"{name} {score:.2f}/{top:g}" for name, (score, top) in final["rubric"].items())
        lines.append(f"    end: {final['termination_reason']}  G={final['G']:.3f}  [{rubric}]")
        lines.append(f"    HMS_norm={final['hms_norm']:+.3f}  events: {events}")
    return "\n".join(lines) + "\n"


def draw_steps(
    title: str, records: Sequence[Mapping[str, Any]], final: Mapping[str, Any] | None, max_steps: int
) -> np.ndarray:
    """A small image of a trajectory (``render_mode="rgb_array"``): (240, 480, 3) uint8.

    One marker per step at (step, action); CHECK, REVISE and SUBMIT are marked, an illegal action is a
    cross, and the title gives G and the termination reason once the episode is scored. matplotlib is
    imported here, only when an image is asked for.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(4.8, 2.4), dpi=100)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0.2, 0.17, 0.76, 0.7))
    names = [action.name for action in Action]
    ts = [rec["t"] for rec in records]
    ax.plot(ts, [names.index(rec["action"]) for rec in records], color="#bbbbbb", lw=1, zorder=1)
    for rec in records:
        marker, colour = MARKED.get(rec["action"], ("o", "#4a6fa5"))
        if not rec["valid"]:
            marker, colour = "x", "#777777"
        ax.scatter(rec["t"], names.index(rec["action"]), marker=marker, color=colour, s=60, zorder=2)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlim(0.5, max(max_steps, len(records)) + 0.5)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.set_xlabel("step", fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(axis="x", color="#eeeeee")
    if final is not None:
        title += f"   G={final['G']:.3f} ({final['termination_reason']})"
    ax.set_title(title, fontsize=8)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
