"""DB-Bench verifier: artifact text -> rubric, with AgentBench's native score beside it.

Artifact format (what the prompt asks for): ONE SQL statement, optionally in a ```sql fence. For the
SELECT family the executor may instead give the answer itself, ``Final Answer: ["v1", "v2"]`` (the
AgentBench answer protocol); a SQL statement is run and its result cells are the answer.

Rubric (``CRITERIA``): ``correctness`` (SELECT family: AgentBench's comparator against ``label``;
INSERT/UPDATE: the table hash after running the statement equals ``answer_md5``), ``executes`` (the
statement runs without error on the record's table), ``format`` (one statement of the kind the task
asks for: SELECT for questions, INSERT/UPDATE for modifications; or a well-formed Final Answer list).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness_gym.domains.dbbench.engine import answers_match, result_values, run_sql

CRITERIA: dict[str, float] = {"correctness": 0.6, "executes": 0.2, "format": 0.2}
MODIFY_TYPES = ("INSERT", "UPDATE", "DELETE")

_FENCE = re.compile(r"```(?:sql)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def task_kind(record: Mapping[str, Any]) -> str:
    """``"SELECT"`` for the question family, else the modification type."""
    kind = record["type"][0]
    return kind if kind in MODIFY_TYPES else "SELECT"


def extract(artifact: str) -> tuple[str, str]:
    """(``"answer"`` | ``"sql"``, body) of an artifact."""
    text = artifact.strip()
    match = re.match(r"final answer\s*:\s*(.*)$", text, re.IGNORECASE | re.DOTALL)
    if match:
        return "answer", match.group(1).strip()
    fence = _FENCE.search(text)
    return "sql", (fence.group(1) if fence else text).strip()


def parse_answer(body: str) -> list[Any] | None:
    """A Final Answer list (JSON or Python literal); None when malformed."""
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(body)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, list | tuple):
            return list(value)
    return None


def _single_statement(sql: str) -> bool:
    return bool(sql) and ";" not in sql.rstrip().rstrip(";")


@dataclass(frozen=True)
class Report:
    """Everything the verifier and CHECK read about one artifact."""

    mode: str
    format_ok: bool
    executes: bool
    correct: bool
    error: str | None
    answer: tuple[str, ...]
    changes: int
    issues: tuple[str, ...]


def evaluate(record: Mapping[str, Any], artifact: str) -> Report:
    kind = task_kind(record)
    mode, body = extract(artifact)
    issues: list[str] = []
    if mode == "answer":
        answer = parse_answer(body)
        if kind != "SELECT":
            issues.append(f"this task needs an {kind} statement, not a Final Answer")
        if answer is None:
            issues.append("Final Answer is not a list")
            return Report(mode, False, False, False, None, (), 0, tuple(issues))
        if not answer:
            issues.append("Final Answer is empty")
        correct = kind == "SELECT" and answers_match(answer, record["label"])
        ok = kind == "SELECT"
        return Report(mode, ok, ok, correct, None, tuple(map(str, answer)), 0, tuple(issues))
    first = body.split(None, 1)[0].upper() if body.split() else ""
    single = _single_statement(body)
    format_ok = single and first == kind
    if not single:
        issues.append("not exactly one SQL statement")
    elif first != kind:
        issues.append(f"expected a {kind} statement, got {first or 'nothing'}")
    execution = run_sql(record, body) if single else None
    if execution is None or not execution.ok:
        error = execution.error if execution is not None else "not run"
        issues.append(f"SQL error: {error}")
        return Report(mode, format_ok, False, False, error, (), 0, tuple(issues))
    answer = tuple(str(v) for v in result_values(execution.rows))
    if kind == "SELECT":
        correct = execution.is_query and answers_match(result_values(execution.rows), record["label"])
        if execution.is_query and not execution.rows:
            issues.append("the query returned no rows")
    else:
        correct = execution.table_hash == record.get("answer_md5")
        if execution.changes == 0:
            issues.append("the statement changed no rows")
    return Report(mode, format_ok, True, bool(correct), None, answer, execution.changes, tuple(issues))


def artifact_scores(record: Mapping[str, Any], artifact: str) -> dict[str, tuple[float, float]]:
    report = evaluate(record, artifact)
    return {
        "correctness": (CRITERIA["correctness"] * report.correct, CRITERIA["correctness"]),
        "executes": (CRITERIA["executes"] * report.executes, CRITERIA["executes"]),
        "format": (CRITERIA["format"] * report.format_ok, CRITERIA["format"]),
    }
