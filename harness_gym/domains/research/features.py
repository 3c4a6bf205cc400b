"""Task features of a research question, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

import re

from harness_gym.envs.features import flag, line_after, scaled

_RELATIONS = re.compile(
    r"\b(founder|founded|director|author|chief executive|parent company|attended|attend|birthplace|born|"
    r"city where|makes|built|population|headquartered|located)\b"
)
_DOCS = re.compile(r"\((\d+) short documents")
_CURRENT = re.compile(r"\b(current|currently|today|now)\b")
_COMPARES = re.compile(r"\b(earlier|later|older|younger|larger|smaller)\b, .+ or .+\?")

TASK_FEATURES = (
    (
        "relations",
        "relation words the question names (founder, birthplace, makes, ...; scaled, cap 6): its hops",
    ),
    ("documents", "documents in the searchable collection (scaled, cap 20)"),
    ("asks_current", "1 if the question asks for a current value (current, today, now)"),
    ("json_reply", "1 if the reply must be one JSON object"),
    ("compares", '1 if the question compares two named entities ("Which ... earlier, A or B?")'),
)

COMPONENTS = {
    "format": "form",
    "answer_missing": "form",
    "no_citation": "evidence",
    "unknown_citation": "evidence",
    "too_many_citations": "evidence",
    "cites_unretrieved": "evidence",
    "answer_ungrounded": "evidence",
}


def task_features(text: str) -> tuple[float, ...]:
    question = line_after(text, "Question:")
    docs = _DOCS.search(text)
    return (
        scaled(len(_RELATIONS.findall(question)), 6),
        scaled(int(docs.group(1)) if docs else 0, 20),
        flag(_CURRENT.search(question)),
        flag(re.search(r"single JSON object", text)),
        flag(_COMPARES.search(question)),
    )
