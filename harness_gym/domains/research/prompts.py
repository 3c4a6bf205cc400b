"""Chat protocol of the research domain: retrieved documents rendered from the corpus, answers parsed back.

The prompt already states the question and the answer format (all OBSERVE reads), so the task text is
the prompt. A search leaves evidence ids (and a ``search returned ...`` tool record, kept as it is); the
executor needs each document's text to follow the hops.
"""

from __future__ import annotations

import json

from harness_gym.core.task import Task
from harness_gym.domains.prompts import SettingPrompts, required_tags, with_id
from harness_gym.domains.research.verifier import FORMATS
from harness_gym.executors.prompts import (
    STRING,
    STRINGS,
    object_schema,
    required_fields,
    required_json_object,
)


class ResearchPrompts(SettingPrompts):
    """Answers in the task's ``verifier.FORMATS`` layout: two labelled lines, one JSON object or two tags."""

    artifact_instruction = "Answer the question from the documents above, in the format the task requires."

    def evidence_text(self, task: Task, item: str) -> str:
        doc = with_id(task.payload["docs"], item)
        return item if doc is None else f"{doc['title']}\n{doc['text']}"

    def artifact_form(self, task: Task) -> str:
        """The task's layout with placeholders (the task's own example of the tags layout reads
        ``<answer><answer></answer>``, its placeholder being a tag)."""
        fmt = FORMATS[task.payload["format"]]
        if fmt.kind == "tags":
            return "<answer>your answer</answer>\n<sources>doc-NNN doc-NNN</sources>"
        return fmt.render("your answer", ["doc-NNN", "doc-NNN"])

    def artifact_schema(self, task: Task) -> dict:
        return object_schema({"answer": STRING, "sources": STRINGS})

    def artifact_text(self, task: Task, obj: dict) -> str:
        """The answer and cited ids in the task's layout (``verifier.FORMATS``)."""
        sources = [str(s) for s in obj["sources"]]
        return FORMATS[task.payload["format"]].render(str(obj["answer"]), sources)

    def artifact(self, task: Task, reply: str) -> str:
        fmt = FORMATS[task.payload["format"]]
        if fmt.kind == "json":
            obj = required_json_object(reply, ("answer", "sources"))
            return json.dumps(obj, ensure_ascii=False)  # as AnswerFormat.render writes it
        if fmt.kind == "tags":
            parts = required_tags(reply, ("answer", "sources"))
            return "\n".join(f"<{name}>{value}</{name}>" for name, value in parts)
        labels = (fmt.answer_label, fmt.sources_label)
        fields = required_fields(reply, labels)
        return "\n".join(f"{label}: {fields[label]}" for label in labels)
