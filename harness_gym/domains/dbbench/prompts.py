"""DB-Bench's chat protocol: the question and schema in, one SQL statement (or a Final Answer) out.

The artifact is what ``verifier.extract`` reads: a bare SQL statement (no fence, no trailing ``;``) or
``Final Answer: [...]`` (the list re-serialised as JSON, as upstream references are written).

One rule for fenced and bare replies: the artifact is exactly **one statement**, the first statement of
the chosen SQL text (the last ```sql fence that starts with a SQL keyword, else the first bare statement),
cut at its first ``;`` outside quotes. ``SELECT ...; DROP TABLE t`` is therefore scored as ``SELECT ...``;
the engine, which runs exactly one statement, never sees a second one. Tool
results hold only a summary of the exploratory query, so the rows are rendered by re-running it on the
record's SQLite copy; never the gold SQL, label or table hash.
"""

from __future__ import annotations

import json
import re

from harness_gym.core.task import Task
from harness_gym.domains.dbbench.engine import columns_of, run_sql, using_backend
from harness_gym.domains.dbbench.verifier import parse_answer
from harness_gym.domains.prompts import SettingPrompts
from harness_gym.executors.prompts import (
    STRING,
    STRINGS,
    ParseError,
    fenced_blocks,
    labelled_fields,
    object_schema,
)

_SQL = ("sql", "mysql", "sqlite")
_KEYWORD = re.compile(r"(SELECT|INSERT|UPDATE|DELETE|WITH|REPLACE)\b", re.I)
_BODY_WORD = re.compile(r"\b(FROM|INTO|SET)\b", re.I)
_LABEL = re.compile(r"^[\s>*_#-]*(?:[A-Za-z][A-Za-z ]{0,24}[\s*_]*:[\s*_]*)?")
_TOOL = re.compile(r"^(\w+): (SELECT .*) -> \d+ row\(s\)$", re.S)
_MAX_CELL = 60


def _statement(body: str) -> str:
    """The first statement of a SQL chunk: comment lines dropped, cut at the first ``;`` outside quotes."""
    lines = [line for line in body.replace("\r\n", "\n").split("\n") if not line.lstrip().startswith("--")]
    text = "\n".join(lines)
    quote: str | None = None
    for i, char in enumerate(text):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == ";":
            return text[:i].strip()
    return text.strip()


def _cell(value: object) -> str:
    text = "NULL" if value is None else str(value).replace("\n", " ")
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 3] + "..."


class DBBenchPrompts(SettingPrompts):
    artifact_instruction = (
        "Reply with ONE MySQL statement in a ```sql fence (for a question you may instead reply "
        '`Final Answer: ["v1", ...]`).'
    )

    def artifact_form(self, task: Task) -> str:
        """A fenced statement on the task's table (its name is in the task), placeholders for the rest."""
        table = task.payload["record"]["table"]["table_name"]
        return f"```sql\nSELECT <columns> FROM `{table}` WHERE <condition>\n```"

    def artifact_schema(self, task: Task) -> dict:
        """One statement in ``sql``, or (for a question) the values in ``final_answer`` and ``sql`` empty."""
        return object_schema({"sql": STRING, "final_answer": STRINGS})

    def artifact_text(self, task: Task, obj: dict) -> str:
        if obj.get("final_answer"):
            return "Final Answer: " + json.dumps([str(v) for v in obj["final_answer"]], ensure_ascii=False)
        return f"```sql\n{obj['sql']}\n```"

    def task_text(self, task: Task, observed: bool) -> str:
        if not observed:
            return task.prompt
        table = task.payload["record"]["table"]
        columns = ", ".join(f"`{c['name']}` {c.get('type', 'TEXT')}" for c in table["table_info"]["columns"])
        return f"{task.prompt}\n\nSchema: table `{table['table_name']}` ({columns})"

    def tool_text(self, task: Task, result: str) -> str:
        """The summary plus the rows it counted; the summary alone when they cannot be produced."""
        match = _TOOL.match(result.strip())
        if match is None:
            return result
        name, sql = match.groups()
        try:
            rows = self.domain.per_task(f"prompt_rows:{sql}", task, lambda: self._rows(task, name, sql))
        except Exception:  # a rendering failure must never fail the executor call
            return result
        return f"{result}\n{rows}" if rows else result

    @staticmethod
    def _rows(task: Task, name: str, sql: str) -> str:
        record = task.payload["record"]
        with using_backend(None):  # the record's own SQLite copy, whatever engine the domain runs on
            execution = run_sql(record, sql)
        if not execution.ok:
            return ""
        columns = columns_of(record)
        if name == "sample_rows":
            header = columns
        elif name == "profile_columns":
            header = ["rows"] + [f"distinct {c}" for c in columns]
        else:
            header = []
        lines = [" | ".join(header)] if header else []
        lines += [" | ".join(_cell(v) for v in row) for row in execution.rows]
        return "\n".join(lines)

    def artifact(self, task: Task, reply: str) -> str:
        fenced = [s for s in map(_statement, fenced_blocks(reply, _SQL)) if _KEYWORD.match(s)]
        if fenced:
            return fenced[-1]
        body = labelled_fields(reply, ["Final Answer"]).get("Final Answer")
        if body is not None:
            values = parse_answer(body)
            return "Final Answer: " + (json.dumps(values, ensure_ascii=False) if values is not None else body)
        bare = self._bare(reply)
        if bare is not None:
            return bare
        raise ParseError("no ```sql fence, SQL statement or `Final Answer: [...]` line")

    @staticmethod
    def _bare(reply: str) -> str | None:
        """An unfenced statement: from a line starting with a SQL keyword (after a label such as
        ``**SQL:**``) to a line ending with ``;`` or a blank line."""
        lines = reply.replace("\r\n", "\n").split("\n")
        for i, line in enumerate(lines):
            rest = _LABEL.sub("", line, count=1)
            if not _KEYWORD.match(rest):
                rest = line.strip()
                if not _KEYWORD.match(rest):
                    continue
            chunk = [rest]
            for nxt in lines[i + 1 :]:
                if not nxt.strip() or chunk[-1].rstrip().endswith(";"):
                    break
                chunk.append(nxt)
            statement = _statement("\n".join(chunk))
            if _BODY_WORD.search(statement):
                return statement
        return None
