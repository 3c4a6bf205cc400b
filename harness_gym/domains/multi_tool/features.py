"""Task features of a multi-tool question, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

import re

from harness_gym.envs.features import flag, line_after, scaled, section

_IN_FORCE = re.compile(r"\b(current|corrected|audited|final|in force|revised)\b", re.IGNORECASE)

TASK_FEATURES = (
    ("documents", "documents listed (scaled, cap 4)"),
    ("tool_steps", "tools in the required tool chain (scaled, cap 4)"),
    ("converts", "1 if the chain ends in a unit or currency conversion"),
    ("reads_document", "1 if the chain starts by reading the document's notes"),
    (
        "figures_in_force",
        "1 if the question asks for the figures in force (current, corrected, audited, final)",
    ),
)

COMPONENTS = {
    "format": "form",
    "number_missing": "form",
    "unit": "content",
    "differs_from_tool": "content",
    "tool_call": "content",
    "no_tool_output": "evidence",
    "tools_missing": "evidence",
    "tools_unconnected": "evidence",
}


def task_features(text: str) -> tuple[float, ...]:
    chain = [tool.strip() for tool in line_after(text, "Required tool chain:").split("->") if tool.strip()]
    question = text.split("\n\n", 1)[0]
    return (
        scaled(len(section(text, "Documents:")), 4),
        scaled(len(chain), 4),
        flag("convert" in chain),
        flag("read_document" in chain),
        flag(_IN_FORCE.search(question)),
    )
