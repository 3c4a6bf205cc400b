"""DB-Bench verifier: artifact text -> rubric, with AgentBench's native score beside it.

Artifact format (what the prompt asks for): ONE SQL statement, optionally in a fenced ``sql`` block. For the
SELECT family the executor may instead give the answer itself, ``Final Answer: ["v1", "v2"]`` (the
AgentBench answer protocol); a SQL statement is run and its result cells are the answer.

Rubric (``CRITERIA``): ``correctness`` (SELECT family: AgentBench's comparator against ``label``;
INSERT/UPDATE: the table hash after running the statement equals ``answer_md5``), ``executes`` (the
statement runs without error on the record's table), ``format`` (one statement of the kind the task
asks for: SELECT for questions, INSERT/UPDATE for modifications; or a well-formed Final Answer list).

What is refused (the engine's and this module's rules, which prompts and SQL extraction follow):

- **Exactly one statement.** The SQL (the first fenced ``sql`` block if there is one, else the whole text) is
  split at semicolons outside string literals, quoted identifiers and comments; one trailing semicolon
  and trailing comments are fine. Two or more statements are never run: the draft earns nothing but is
  reported as "not exactly one SQL statement".
- **Only the record's table, only rows.** The engine denies schema changes (CREATE, DROP, ALTER),
  PRAGMAs, ATTACH, transactions, extension loading and reads of any other table (``sqlite_master``
  included); such a statement fails to execute.
- **Questions are answered by reading.** On a SELECT-family task a statement earns ``correctness`` only
  if it is a query (its first keyword SELECT or WITH) that changed no row: ``DELETE ... RETURNING`` or
  ``UPDATE ... RETURNING`` returning the right values earns nothing.
- **Modifications must modify.** On an INSERT/UPDATE/DELETE task a statement that changed no row earns
  no ``correctness`` even when the table hash matches (AgentBench's hash covers only the first 1024
  bytes of sorted row hashes, so a no-op can match it on large tables).
- Time and size: the engine aborts a statement after its time limit (cross joins, recursive CTEs) and
  caps every string value; only the first ``MAX_ROWS`` result rows are read.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness_gym.domains.dbbench.engine import answers_match, quote_ident, result_values, run_sql
from harness_gym.domains.dbbench.mysql_engine import statement_kind
from harness_gym.executors.base import Finding

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


_QUOTES = "'\"`"


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql``: split at semicolons outside quotes and comments; empty or comment-only
    pieces dropped. MySQL backslash escapes inside string literals are honoured."""
    pieces: list[str] = []
    start = i = 0
    n = len(sql)
    while i < n:
        ch = sql[i]
        if ch in _QUOTES:
            i += 1
            while i < n:
                if sql[i] == "\\" and ch != "`":
                    i += 2
                    continue
                if sql[i] == ch:
                    if i + 1 < n and sql[i + 1] == ch:
                        i += 2
                        continue
                    break
                i += 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif ch == ";":
            pieces.append(sql[start:i])
            start = i + 1
        i += 1
    pieces.append(sql[start:])
    return [piece.strip() for piece in pieces if _code(piece)]


def _dump_issues(record: Mapping[str, Any], n_values: int) -> list[Finding]:
    """An answer with as many values as the whole table has cells dumps the table instead of answering."""
    rows = record["table"]["table_info"]["rows"]
    cells = len(rows) * len(record["table"]["table_info"]["columns"])
    if len(rows) > 1 and n_values >= cells:
        return [
            Finding(
                "table_dump",
                f"the answer has {n_values} values, as many as the whole table: answer the question asked",
            )
        ]
    return []


def _code(piece: str) -> bool:
    """Whether a piece holds more than whitespace and comments."""
    stripped = re.sub(r"--[^\n]*|/\*.*?(\*/|$)", " ", piece, flags=re.DOTALL)
    return bool(stripped.strip())


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
    issues: list[Finding] = []
    if mode == "answer":
        answer = parse_answer(body)
        if kind != "SELECT":
            issues.append(Finding("wrong_mode", f"this task needs an {kind} statement, not a Final Answer"))
        if answer is None:
            issues.append(Finding("answer_unparsable", "Final Answer is not a list"))
            return Report(mode, False, False, False, None, (), 0, tuple(issues))
        if not answer:
            issues.append(Finding("answer_empty", "Final Answer is empty"))
        issues += _dump_issues(record, len(answer))
        correct = kind == "SELECT" and answers_match(answer, record["label"])
        ok = kind == "SELECT"
        return Report(mode, ok, ok, correct, None, tuple(map(str, answer)), 0, tuple(issues))
    statements = split_statements(body)
    single = len(statements) == 1
    if single:
        body = statements[0]
    first = body.split(None, 1)[0].upper() if body.split() else ""
    format_ok = single and first == kind
    if not single:
        issues.append(Finding("not_one_statement", "not exactly one SQL statement"))
    elif first != kind:
        issues.append(
            Finding("wrong_statement_kind", f"expected a {kind} statement, got {first or 'nothing'}")
        )
    execution = run_sql(record, body) if single else None
    if execution is None or not execution.ok:
        error = execution.error if execution is not None else "not run"
        issues.append(Finding("sql_error", f"SQL error: {error}"))
        return Report(mode, format_ok, False, False, error, (), 0, tuple(issues))
    answer = tuple(str(v) for v in result_values(execution.rows))
    if kind == "SELECT":
        read_only = statement_kind(body) in ("SELECT", "WITH") and execution.changes == 0
        correct = (
            execution.is_query and read_only and answers_match(result_values(execution.rows), record["label"])
        )
        if not read_only:
            issues.append(
                Finding(
                    "not_read_only",
                    "a question is answered by reading: this statement is not a read-only query",
                )
            )
        if execution.is_query and not execution.rows:
            issues.append(Finding("empty_result", "the query returned no rows"))
        issues += _dump_issues(record, len(answer))
        name = record["table"]["table_name"]
        table = quote_ident(name)
        source = rf"(?:FROM|JOIN|,)\s*(?:{re.escape(table)}|{re.escape(name)}(?![\w`]))"
        reads = len(re.findall(source, body, re.IGNORECASE))
        if reads > 2:
            issues.append(
                Finding(
                    "self_join",
                    f"the query reads {table} {reads} times (a cross join of the table with itself?)",
                )
            )
    else:
        correct = execution.changes > 0 and execution.table_hash == record.get("answer_md5")
        if execution.changes == 0:
            issues.append(Finding("no_change", "the statement changed no rows"))
    return Report(mode, format_ok, True, bool(correct), None, answer, execution.changes, tuple(issues))


def artifact_scores(record: Mapping[str, Any], artifact: str) -> dict[str, tuple[float, float]]:
    report = evaluate(record, artifact)
    return {
        "correctness": (CRITERIA["correctness"] * report.correct, CRITERIA["correctness"]),
        "executes": (CRITERIA["executes"] * report.executes, CRITERIA["executes"]),
        "format": (CRITERIA["format"] * report.format_ok, CRITERIA["format"]),
    }
