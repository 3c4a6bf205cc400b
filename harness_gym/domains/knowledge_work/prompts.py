"""Chat protocol of the knowledge-work domain: sources rendered from their text, reports parsed back.

The task prompt already holds everything OBSERVE reads (question, report format, source catalogue), so the
task text is the prompt. RETRIEVE only records a source id (its outcome text is the title): the executor
needs the source's full text to read figures, names and dates off it. ``table_calc`` results carry the
computation itself and stay as they are.
"""

from __future__ import annotations

import json
from datetime import date

from harness_gym.core.task import Task
from harness_gym.domains.knowledge_work.report import Values, render
from harness_gym.domains.prompts import SettingPrompts, with_id
from harness_gym.executors.prompts import (
    STRING,
    STRINGS,
    object_schema,
    required_fields,
    required_json_object,
)


class KnowledgeWorkPrompts(SettingPrompts):
    """Reports as ``LABEL: value`` lines, ``label = value`` lines or one JSON object (``format.style``)."""

    artifact_instruction = "Write the report the task asks for, from the sources above, and nothing else."

    def evidence_text(self, task: Task, item: str) -> str:
        src = with_id(task.payload["sources"], item)
        return item if src is None else f"({src['kind']}) {src['title']}\n{src['text']}"

    def artifact_form(self, task: Task) -> str:
        """The task's own "Shape of the report" (same placeholder values)."""
        example = Values(1234.0, "First Last", date(2000, 1, 31), ("MEMO-000", "TABLE-000"), "none")
        return render(task.payload["format"], example)

    def artifact_schema(self, task: Task) -> dict:
        """The report's fields under its labels (a JSON report's keys in lower case, its figure a number
        and its sources a list, as the task's own JSON reports write them)."""
        fmt = task.payload["format"]
        if fmt["style"] != "json":
            return object_schema({label: STRING for _, label in fmt["fields"]})
        kinds = {"figure": {"type": "number"}, "sources": STRINGS}
        return object_schema({label.lower(): kinds.get(role, STRING) for role, label in fmt["fields"]})

    def artifact_text(self, task: Task, obj: dict) -> str:
        fmt = task.payload["format"]
        if fmt["style"] == "json":
            return json.dumps({label.lower(): obj[label.lower()] for _, label in fmt["fields"]})
        glue = ": " if fmt["style"] == "colon" else " = "
        return "\n".join(f"{label}{glue}{obj[label]}" for _, label in fmt["fields"])

    def artifact(self, task: Task, reply: str) -> str:
        fmt = task.payload["format"]
        labels = [label for _, label in fmt["fields"]]
        if fmt["style"] == "json":
            obj = required_json_object(reply, labels)
            # the generator's layout: json.dumps defaults (", " and ": ", ASCII escapes), keys as given
            return json.dumps(obj)
        sep, glue = (":", ": ") if fmt["style"] == "colon" else ("=", " = ")
        fields = required_fields(reply, labels, sep)
        return "\n".join(f"{label}{glue}{fields[label]}" for label in labels)
