"""Task features of a long-memory question, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

import re
from datetime import date, datetime

from harness_gym.envs.features import flag, line_after, scaled

_SESSIONS = re.compile(r"holds (\d+) sessions")
_SPAN = re.compile(r"dated (.+?) to (.+?);")
_NOW = re.compile(r"\b(now|current|currently|latest)\b", re.IGNORECASE)
_BEFORE = re.compile(r"\b(before|previous|earlier|originally)\b", re.IGNORECASE)
_AS_OF = re.compile(r"\bas of\b|^On \d", re.IGNORECASE)


def _date(text: str) -> date | None:
    for form in ("%Y-%m-%d", "%d %b %Y", "%d %B %Y"):
        try:
            return datetime.strptime(text.strip(), form).date()
        except ValueError:
            continue
    return None


TASK_FEATURES = (
    ("sessions", "sessions in the history (scaled, cap 20)"),
    ("span", "days between the first and the last session (scaled, cap 365)"),
    ("asks_update", "1 if the question asks for the value after the latest update (now, current)"),
    ("asks_before", "1 if it asks for the value before the latest update"),
    ("asks_as_of", "1 if it asks for the value as of a date"),
)

COMPONENTS = {
    "layout": "form",
    "timeline_contradiction": "content",
    "answer_not_in_cited": "evidence",
    "cites_unretrieved": "evidence",
    "too_many_citations": "evidence",
}


def task_features(text: str) -> tuple[float, ...]:
    sessions = _SESSIONS.search(text)
    span = _SPAN.search(text)
    first, last = (_date(span.group(1)), _date(span.group(2))) if span else (None, None)
    days = (last - first).days if first and last else 0
    question = line_after(text, "Question:")
    before = _BEFORE.search(question)
    return (
        scaled(int(sessions.group(1)) if sessions else 0, 20),
        scaled(days, 365),
        flag(_NOW.search(question) and not before),
        flag(before),
        flag(_AS_OF.search(question)),
    )
