"""Chat protocol of the multi-tool domain: the executor picks tool calls and writes the two-line answer.

The prompt already lists the documents, the four tools, the call format and the answer format (all
OBSERVE reads), so the task text is the prompt. Tool results are the evidence here: each successful call
is also an evidence item ``tool:<index>:<name>`` whose content is that result text, which the message
already shows under the tool results, so the evidence entry only points at it.
"""

from __future__ import annotations

import json
from typing import ClassVar

from harness_gym.core.task import Task
from harness_gym.domains.multi_tool.verifier import AnswerSpec
from harness_gym.executors.prompts import (
    STRING,
    STRINGS,
    ParseError,
    Prompts,
    json_objects,
    object_schema,
    required_fields,
)


class MultiToolPrompts(Prompts):
    """Answers as ``<LABEL>: <number/unit>`` then ``TOOLS: ...``; calls as canonical JSON call texts."""

    tool_instruction: ClassVar[str] = (
        'Reply with the next tool call only: one JSON object {"tool": NAME, "args": {...}} with one of the '
        "tools listed in the task and its arguments. Use the results so far: do not repeat a call that "
        "already succeeded, and fix a call that was refused."
    )
    artifact_instruction: ClassVar[str] = (
        "Write the two-line answer the task asks for, from the tool results above, and nothing else."
    )

    def evidence_text(self, task: Task, item: str) -> str:
        kind, _, rest = item.partition(":")
        index, _, name = rest.partition(":")
        if kind != "tool" or not index.isdigit():
            return item
        return f"the {name} output shown as tool result {int(index) + 1} under 'Tool results so far'"

    def reply_form(self, task: Task, kind: str) -> str | None:
        """A call with a neutral example (no document of the task), or the task's answer layout."""
        if kind == "tool":
            return '{"tool": "calculator", "args": {"expression": "(2 + 3) * 4"}}'
        return f"{AnswerSpec.from_payload(task.payload).example()}\nTOOLS: <tool>, <tool>"

    def artifact_schema(self, task: Task) -> dict:
        """The answer under the task's label and the tools used."""
        return object_schema({task.payload["answer"]["label"]: STRING, "tools": STRINGS})

    def artifact_text(self, task: Task, obj: dict) -> str:
        label = task.payload["answer"]["label"]
        return f"{label}: {obj[label]}\nTOOLS: {', '.join(str(t) for t in obj['tools'])}"

    def tool_schema(self, task: Task) -> dict:
        """One call: the tool's name and its arguments (an object whose keys depend on the tool)."""
        return object_schema({"tool": STRING, "args": {"type": "object"}})

    def tool_call_text(self, task: Task, obj: dict) -> str:
        return json.dumps({"tool": obj["tool"], "args": obj["args"]})

    def artifact(self, task: Task, reply: str) -> str:
        labels = (task.payload["answer"]["label"], "TOOLS")
        fields = required_fields(reply, labels)
        return "\n".join(f"{label}: {fields[label]}" for label in labels)

    def tool_call(self, task: Task, reply: str) -> str:
        """The first JSON object with a ``tool`` key, as ``tools.canonical_call`` spells it (sorted keys,
        ``", "`` / ``": "``): the form the gold chain uses; the runner validates the rest."""
        for obj in json_objects(reply):
            if isinstance(obj, dict) and "tool" in obj:
                return json.dumps(obj, sort_keys=True, separators=(", ", ": "))
        raise ParseError('no JSON object {"tool": NAME, "args": {...}} in the reply')
