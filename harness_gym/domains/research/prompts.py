"""Chat protocol of the research domain: retrieved documents rendered from the corpus, answers parsed back.

The prompt already states the question and the answer format (all OBSERVE reads), so the task text is
the prompt. A search leaves evidence ids (and a ``search returned ...`` tool record, kept as it is); the
executor needs each document's text to follow the hops.
"""

from __future__ import annotations

import json
import re

from harness_gym.core.task import Task
from harness_gym.domains.research.verifier import FORMATS
from harness_gym.executors.prompts import ParseError, Prompts, required_fields, required_json_object


def _last_tag(reply: str, name: str) -> str | None:
    found = re.findall(rf"<{name}>[ \t]*([^<\n]*?)[ \t]*</{name}>", reply, re.IGNORECASE)
    return found[-1] if found else None


class ResearchPrompts(Prompts):
    """Answers in the task's ``verifier.FORMATS`` layout: two labelled lines, one JSON object or two tags."""

    artifact_instruction = "Answer the question from the documents above, in the format the task requires."

    def evidence_text(self, task: Task, item: str) -> str:
        for doc in task.payload["docs"]:
            if doc["id"] == item:
                return f"{doc['title']}\n{doc['text']}"
        return item

    def reply_form(self, task: Task, kind: str) -> str | None:
        """The task's layout with placeholders (the task's own example of the tags layout reads
        ``<answer><answer></answer>``, its placeholder being a tag)."""
        if kind == "tool":
            return None
        fmt = FORMATS[task.payload["format"]]
        if fmt.kind == "tags":
            return "<answer>your answer</answer>\n<sources>doc-NNN doc-NNN</sources>"
        return fmt.render("your answer", ["doc-NNN", "doc-NNN"])

    def artifact(self, task: Task, reply: str) -> str:
        fmt = FORMATS[task.payload["format"]]
        if fmt.kind == "json":
            obj = required_json_object(reply, ("answer", "sources"))
            return json.dumps(obj, ensure_ascii=False)  # as AnswerFormat.render writes it
        if fmt.kind == "tags":
            parts = [(name, _last_tag(reply, name)) for name in ("answer", "sources")]
            missing = [f"<{name}>" for name, value in parts if value is None]
            if missing:
                raise ParseError(f"no {' or '.join(missing)} tag (both <answer> and <sources> are required)")
            return "\n".join(f"<{name}>{value}</{name}>" for name, value in parts)
        labels = (fmt.answer_label, fmt.sources_label)
        fields = required_fields(reply, labels)
        return "\n".join(f"{label}: {fields[label]}" for label in labels)
