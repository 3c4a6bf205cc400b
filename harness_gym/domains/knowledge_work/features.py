"""Task features of a knowledge-work request, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

import re

from harness_gym.envs.features import flag, scaled, section

_REVISED = re.compile(r"\b(Correction|corrected|Re:|Proposed|revised|superseded)", re.IGNORECASE)
_AGGREGATE = re.compile(r"\b(total|average|largest|smallest|how many|sum)\b", re.IGNORECASE)

TASK_FEATURES = (
    ("sources", "sources the workspace lists (scaled, cap 8)"),
    ("tables", "tables among them (scaled, cap 4)"),
    ("emails", "emails among them (scaled, cap 4)"),
    ("revised_sources", "sources whose title reads as a correction, a reply or a proposal (scaled, cap 3)"),
    ("asks_correction", "1 if the report must say which source supersedes which (the latest figure)"),
    ("aggregate", "1 if the figure is computed over rows (total, average, largest, how many)"),
)

COMPONENTS = {
    "format": "form",
    "missing_field": "form",
    "figure_missing": "form",
    "conflict_field_padded": "content",
    "figure_ungrounded": "evidence",
    "person_or_date_ungrounded": "evidence",
    "no_citation": "evidence",
    "unknown_citation": "evidence",
    "cites_unopened": "evidence",
    "too_many_citations": "evidence",
}


def task_features(text: str) -> tuple[float, ...]:
    sources = section(text, "Sources you can open")
    question = text.split("\n", 1)[0]
    return (
        scaled(len(sources), 8),
        scaled(sum("(table)" in s for s in sources), 4),
        scaled(sum("(email)" in s for s in sources), 4),
        scaled(sum(bool(_REVISED.search(s)) for s in sources), 3),
        flag(re.search(r"if sources disagree", text)),
        flag(_AGGREGATE.search(question)),
    )
