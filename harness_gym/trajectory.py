"""Step records: the JSON-serialisable account of an episode that HMS, datasets and rendering read.

A record is a plain dict (cheap to build on the hot path, trivially serialisable). Keys always present:
``t`` (1-based step number), ``action`` (name), ``valid``, ``cost`` (of this step), ``draft_version``,
``draft_hash`` (of the draft after the step, ``None`` without one), ``failure`` (a failure signal the
harness saw), ``text`` (what happened, for people). Optional keys, present only when the step produced
them: ``check`` {coverage, missing, issues}, ``tests`` {passed, total}, ``tool`` {name, valid, ok},
``evidence`` [item ids gathered], ``issues`` [problems reported].
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

StepRecord = dict[str, Any]


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
