"""Fact kinds of the long-memory domain: the sentences that introduce, update and mimic a user fact.

A fact kind is a personal fact about the user that chat sessions introduce and later update (home city,
employer, pet, ...). Each kind carries the first-person sentences the user says when the fact is stated or
changed (``intro`` / ``update``), third-person sentences about other people (distractors), near-misses
(the user considered a value but did not adopt it), passing mentions of the current value, and the
question phrasings per question form. The kinds and the everyday text around them (people's names,
relations, filler exchanges, openers, replies) are data, in ``facts.toml`` beside this module.

The train and eval kinds are disjoint (``TRAIN_KINDS`` / ``EVAL_KINDS``), so held-out tasks ask about
other facts, with other values, distractor sentences and question wordings than the training tasks.

``statement_patterns`` turns the intro/update sentences into regular expressions: a harness CHECK uses
them to read which value a retrieved session states for the user (a real text check on session text
it gathered), and the generator uses them to make sure no other sentence reads as a statement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from harness_gym.domains.base import read_toml


@dataclass(frozen=True)
class FactKind:
    """One kind of user fact and every sentence family the generator writes about it."""

    name: str
    noun: str
    """How check messages name the fact (``home city``)."""
    values: tuple[str, ...]
    intro: tuple[str, ...]
    """First-person sentences stating the fact (``{v}`` = value)."""
    update: tuple[str, ...]
    """First-person sentences changing the fact (``{v}`` = new value, optional ``{old}``)."""
    other: tuple[str, ...]
    """Sentences about another person's value (``{rel}``, ``{name}``, ``{v}``)."""
    near_miss: tuple[str, ...]
    """The user considered ``{v}`` but did not adopt it."""
    mention: tuple[str, ...]
    """A passing mention of the user's current value that does not state or change the fact."""
    requests: tuple[str, ...]
    """What the user asks the assistant right after stating the fact."""
    replies: tuple[str, ...]
    """Assistant answers to those requests (never name a value)."""
    questions: dict[str, tuple[str, ...]]
    """Question phrasings per form: ``current``, ``previous`` and ``as_of`` (with ``{date}``)."""


_TEXTS = ("values", "intro", "update", "other", "near_miss", "mention", "requests", "replies")


def _kind(entry: Mapping[str, Any]) -> FactKind:
    texts = {name: tuple(entry[name]) for name in _TEXTS}
    questions = {form: tuple(phrasings) for form, phrasings in entry["questions"].items()}
    return FactKind(name=entry["name"], noun=entry["noun"], questions=questions, **texts)


_DATA = read_toml(__package__, "facts.toml")

TRAIN_KINDS: tuple[FactKind, ...] = tuple(_kind(e) for e in _DATA["kind"] if e["split"] == "train")
EVAL_KINDS: tuple[FactKind, ...] = tuple(_kind(e) for e in _DATA["kind"] if e["split"] == "eval")
KINDS: dict[str, FactKind] = {kind.name: kind for kind in TRAIN_KINDS + EVAL_KINDS}

RELATIONS: tuple[str, ...] = tuple(_DATA["relations"])
PEOPLE: tuple[str, ...] = tuple(_DATA["people"])
"""Given names for the people in distractor sessions (each template family gets its own slice)."""
FILLER: tuple[tuple[str, str], ...] = tuple((user, assistant) for user, assistant in _DATA["filler"])
"""Everyday (user, assistant) exchanges for sessions that say nothing about the user's facts."""
OPENERS: tuple[str, ...] = tuple(_DATA["openers"])
OTHER_REQUESTS: tuple[str, ...] = tuple(_DATA["other_requests"])
OTHER_REPLIES: tuple[str, ...] = tuple(_DATA["other_replies"])
NEAR_MISS_REPLIES: tuple[str, ...] = tuple(_DATA["near_miss_replies"])
MENTION_REPLIES: tuple[str, ...] = tuple(_DATA["mention_replies"])


def _pattern(template: str) -> str:
    """A template as a regex: ``{v}`` (and ``{old}``) become lazy captures, the rest is literal."""
    pieces = re.split(r"(\{v\}|\{old\})", template)
    out = []
    for piece in pieces:
        if piece == "{v}":
            out.append(r"(?P<v>[^.!?;]+?)")
        elif piece == "{old}":
            out.append(r"(?P<old>[^.!?;]+?)")
        else:
            out.append(re.escape(piece))
    return "".join(out)


@cache
def statement_patterns(kind_name: str) -> tuple[re.Pattern[str], ...]:
    """Regexes that read a stated value of the user's fact from a user line of a session."""
    kind = KINDS[kind_name]
    return tuple(re.compile(_pattern(t)) for t in kind.intro + kind.update)


@lru_cache(maxsize=8192)
def stated_values(kind_name: str, text: str) -> tuple[str, ...]:
    """Values the user states (introduces or changes) for that fact in a session's text, in order."""
    found: list[str] = []
    for line in text.splitlines():
        if not line.startswith("User: "):
            continue
        for pattern in statement_patterns(kind_name):
            for match in pattern.finditer(line):
                found.append(match.group("v").strip())
    return tuple(found)
