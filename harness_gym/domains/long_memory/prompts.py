"""Chat protocol of the long-memory domain: dated session transcripts in, one answer and its session out.

The prompt gives the question, the answer layout and only the range of session dates; OBSERVE also reads
the session index, so once observed the task text lists every session id with its date. A retrieved
session is rendered as its dated transcript (dates matter: "as of" questions and the latest change).
Dates are shown in the task's own style, as the prompt shows them.
"""

from __future__ import annotations

import json
import re

from harness_gym.core.task import Task
from harness_gym.domains.long_memory.dates import show_date
from harness_gym.domains.long_memory.verifier import FORMATS
from harness_gym.domains.prompts import SettingPrompts, required_tags, with_id
from harness_gym.executors.prompts import (
    STRING,
    ParseError,
    object_schema,
    required_fields,
    required_json_object,
)

_LABELS: dict[str, tuple[str, ...]] = {
    "kv": ("ANSWER", "SOURCE"),
    "final": ("FINAL ANSWER", "SESSION"),
    "inline": ("Answer",),
}
"""Layouts made of ``LABEL: value`` lines (``inline`` keeps the ``[sNN]`` inside the value)."""
_PIPE = re.compile(r"^[ \t*_>#`-]*([^|\n]*?)[ \t*_`]*\|[ \t]*source[ \t]*=[ \t]*([^\s*_`]*)", re.I | re.M)


class LongMemoryPrompts(SettingPrompts):
    """Answers in the task's ``answer_format`` layout (``verifier.FORMATS``)."""

    artifact_instruction = "Answer the question from the sessions above, in the format the task requires."

    def task_text(self, task: Task, observed: bool) -> str:
        if not observed:
            return task.prompt
        style = task.payload["date_style"]
        index = "\n".join(f"- {s['id']}: {show_date(s['date'], style)}" for s in task.payload["sessions"])
        return f"{task.prompt}\n\nSessions (id: date):\n{index}"

    def evidence_text(self, task: Task, item: str) -> str:
        session = with_id(task.payload["sessions"], item)
        if session is None:
            return item
        return f"Session {item}, {show_date(session['date'], task.payload['date_style'])}\n{session['text']}"

    def artifact_form(self, task: Task) -> str:
        """The task's layout with placeholders (``sNN``: no real session id to copy)."""
        return FORMATS[task.payload["answer_format"]].render("your answer", "sNN")

    def artifact_schema(self, task: Task) -> dict:
        return object_schema({"answer": STRING, "source": STRING})

    def artifact_text(self, task: Task, obj: dict) -> str:
        """The answer in the task's layout (``verifier.FORMATS``)."""
        return FORMATS[task.payload["answer_format"]].render(str(obj["answer"]), str(obj["source"]))

    def artifact(self, task: Task, reply: str) -> str:
        layout = task.payload["answer_format"]
        if layout in _LABELS:
            labels = _LABELS[layout]
            fields = required_fields(reply, labels)
            return "\n".join(f"{label}: {fields[label]}" for label in labels)
        if layout == "json":
            obj = required_json_object(reply, ("answer", "source"))
            return json.dumps(obj)  # as verifier._json_render writes it
        if layout == "tags":
            parts = required_tags(reply, ("answer", "source"))
            return "".join(f"<{name}>{value}</{name}>" for name, value in parts)
        assert layout == "pipe", layout
        found = [(a, s) for a, s in _PIPE.findall(reply) if a]
        if not found:
            raise ParseError("no '<value> | source=<session id>' line")
        answer, source = found[-1]
        return f"{answer} | source={source}"
