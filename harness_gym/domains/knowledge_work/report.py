"""A knowledge-work report in its task's format: the values it states, rendered as the format's fields.

The format (``payload["format"]``: ``style`` and ``(role, label)`` fields) fixes the layout: ``LABEL:
value`` lines (``colon``), ``label = value`` lines (``equals``) or one JSON object (``json``). The
generator renders the reference and the flawed reports with :func:`render`; the chat protocol renders
the format's example with it, so the shape a prompt shows is the shape the verifier reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from harness_gym.domains.knowledge_work.verifier import cents, format_figure


@dataclass(frozen=True)
class Values:
    """What a report states: the key figure, the person, the date, the cited sources, the conflict note."""

    figure: float
    person: str
    day: date
    sources: tuple[str, ...]
    conflict: str | None = None


def _plain(x: float) -> str:
    return f"{x:.2f}" if cents(x) % 100 else str(round(x))


def _field_text(fmt: dict[str, Any], role: str, v: Values) -> Any:
    if role == "figure":
        if fmt["style"] == "json":
            return round(v.figure, 2) if cents(v.figure) % 100 else round(v.figure)
        return format_figure(v.figure) if fmt["style"] == "colon" else _plain(v.figure)
    if role == "person":
        return v.person
    if role == "date":
        return v.day.isoformat()
    if role == "conflict":
        return v.conflict or "none"
    if fmt["style"] == "json":
        return list(v.sources)
    return ", ".join(v.sources) if v.sources else "none"


def render(
    fmt: dict[str, Any],
    v: Values,
    omit: Sequence[str] = (),
    style: str | None = None,
    rename: dict[str, str] | None = None,
    sep: str | None = None,
) -> str:
    """A report in the task's format; the keyword arguments produce the malformed variants."""
    style = style or fmt["style"]
    shown = dict(fmt, style=style)
    pairs = []
    for role, label in fmt["fields"]:
        if role in omit:
            continue
        label = (rename or {}).get(role, label)
        pairs.append((label, _field_text(shown, role, v)))
    if style == "json":
        return json.dumps({label.lower(): value for label, value in pairs})
    glue = sep or (": " if style == "colon" else " = ")
    return "\n".join(f"{label}{glue}{value}" for label, value in pairs)
