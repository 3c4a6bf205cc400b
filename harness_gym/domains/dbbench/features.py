"""Task features of a DB-Bench question, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

import re

from harness_gym.envs.features import flag, scaled

_INSERT = re.compile(r"\b(insert|new row|new entry)\b", re.IGNORECASE)
_UPDATE = re.compile(r"^(set|change)\b|\bset \w+ to\b|\bchange \w+ to\b|\b(delete|remove)\b", re.IGNORECASE)
_AGGREGATE = re.compile(
    r"\b(how many|count|total|sum|average|mean|highest|lowest|maximum|minimum|largest|ranked)\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(
    r"\b(whose|where|with|equal to|above|exceeds|from|for rows|listed under)\b", re.IGNORECASE
)
_HEADERS = re.compile(r"the headers of this table are (.+?)\.\s*$", re.MULTILINE)

TASK_FEATURES = (
    ("insert", "1 if the task asks for an INSERT statement"),
    ("update", "1 if it asks for an UPDATE (or DELETE) statement"),
    ("aggregate", "1 if the question asks for an aggregate or a ranking (count, total, average, highest)"),
    ("columns", "columns of the table (scaled, cap 10): its width"),
    ("conditions", "condition words in the question (whose, where, above, ...; scaled, cap 3)"),
)

COMPONENTS = {
    "not_one_statement": "form",
    "wrong_statement_kind": "form",
    "wrong_mode": "form",
    "answer_unparsable": "form",
    "answer_empty": "form",
    "sql_error": "form",
    "empty_result": "content",
    "no_change": "content",
    "self_join": "content",
    "table_dump": "content",
    "not_read_only": "content",
}


def task_features(text: str) -> tuple[float, ...]:
    question = text.split("\n", 1)[0]
    headers = _HEADERS.search(text)
    insert = _INSERT.search(question)
    return (
        flag(insert),
        flag(not insert and _UPDATE.search(question)),
        flag(_AGGREGATE.search(question)),
        scaled(len(headers.group(1).split(",")) if headers else 0, 10),
        scaled(len(_CONDITION.findall(question)), 3),
    )
