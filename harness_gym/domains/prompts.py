"""What the settings' chat protocols share, on top of ``harness_gym.executors.prompts``.

Most settings have no executor-chosen tool calls, so their replies only ever carry an artifact:
:class:`SettingPrompts` shows its form (``artifact_form``) after every draft and revise instruction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness_gym.core.task import Task
from harness_gym.executors.prompts import ParseError, Prompts


class SettingPrompts(Prompts):
    """Prompts of a setting whose executor never chooses a tool call: the reply form is the artifact's."""

    def reply_form(self, task: Task, kind: str) -> str | None:
        return None if kind == "tool" else self.artifact_form(task)

    def artifact_form(self, task: Task) -> str | None:
        """The artifact's exact shape with placeholder values; ``None``: the instruction says enough."""
        return None


def with_id(records: Iterable[Mapping[str, Any]], item: str) -> Mapping[str, Any] | None:
    """The record (source, document, session) whose ``id`` is ``item``, or None."""
    return next((record for record in records if record["id"] == item), None)


def last_tag(reply: str, name: str) -> str | None:
    """The value of the reply's last one-line ``<name>value</name>`` (any case), or None."""
    found = re.findall(rf"<{name}>[ \t]*([^<\n]*?)[ \t]*</{name}>", reply, re.IGNORECASE)
    return found[-1] if found else None


def required_tags(reply: str, names: Sequence[str]) -> list[tuple[str, str]]:
    """``(name, value)`` of each tag (its last occurrence); :class:`ParseError` naming any missing."""
    parts = [(name, last_tag(reply, name)) for name in names]
    missing = [f"<{name}>" for name, value in parts if value is None]
    if missing:
        wanted = " and ".join(f"<{name}>" for name in names)
        raise ParseError(f"no {' or '.join(missing)} tag (both {wanted} are required)")
    return [(name, value) for name, value in parts if value is not None]
