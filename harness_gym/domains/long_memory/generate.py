"""Deterministic generator for ``long_memory-v0.jsonl``: 100 questions over multi-session chat histories.

Each task is a dated history of chat sessions (``s01``..``sNN``) between a user and an assistant. One
fact about the user (home city, employer, pet, ...) is introduced and, from standard difficulty on,
changed later; distractor sessions state the same kind of fact about other people, hard histories add a
near-miss (a value the user considered and rejected) and passing mentions of the current value. The
question asks for the fact's current value, its value before the latest change, or its value as of a
date. The answer names the value and the session that establishes it, in a layout the prompt fixes.

Template families fix difficulty and question form. The split is drawn from the family structure
first (``stratified_split``), then held-out families get their own fact kinds (so their values,
distractor sentences and question wordings), answer layouts, date style and people: nothing in an eval
task's content appears in a training task.

The flawed pool imitates what an LLM answering from memory gets wrong; every variant is scored by the
real verifier and kept only if it loses points.

``--version v1`` writes ``long_memory-v1.jsonl``, the task set of MDP v2 (``FAMILIES_V1``): LongMemEval's
single-session, knowledge-update and temporal questions in their shares (``V1_TYPES``), the number of
changes set by the question form, the same difficulty mix in every form.
"""

from __future__ import annotations

import datetime as dt
import itertools
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

from harness_gym.domains.generation import (
    POOL_MAX,
    POOL_MIN,
    VERSION,
    Reject,
    family_records,
    family_splits,
    flawed_pool,
    task_file,
    write_versioned,
)
from harness_gym.domains.long_memory.dates import show_date
from harness_gym.domains.long_memory.facts import (
    EVAL_KINDS,
    FILLER,
    MENTION_REPLIES,
    NEAR_MISS_REPLIES,
    OPENERS,
    OTHER_REPLIES,
    OTHER_REQUESTS,
    PEOPLE,
    RELATIONS,
    TRAIN_KINDS,
    FactKind,
    stated_values,
)
from harness_gym.domains.long_memory.verifier import (
    CRITERIA,
    EVAL_FORMATS,
    FORMATS,
    TRAIN_FORMATS,
    artifact_scores,
    contains_value,
)

DOMAIN = "long_memory"
OUTPUT = task_file(DOMAIN)
FLAWS = ("outdated_value", "distractor_value", "wrong_source", "missing_source", "malformed")
NAMES_PER_FAMILY = 5
MAX_ATTEMPTS = 50

SHAPES: dict[str, dict[str, tuple[int, int]]] = {
    # sessions, updates, other people, near-misses, mentions (inclusive ranges)
    "easy": {"sessions": (6, 8), "updates": (0, 0), "others": (1, 1), "near": (0, 0), "mentions": (0, 0)},
    "standard": {
        "sessions": (10, 14),
        "updates": (1, 1),
        "others": (2, 2),
        "near": (0, 0),
        "mentions": (1, 1),
    },
    "hard": {"sessions": (16, 20), "updates": (2, 3), "others": (3, 3), "near": (1, 1), "mentions": (2, 2)},
}
DATE_STYLES = {"train": "iso", "eval": "dmy"}


@dataclass(frozen=True)
class Family:
    """A template family: difficulty and question form (the fact kind and layout follow the split)."""

    difficulty: str
    form: str
    number: int
    count: int

    @property
    def template(self) -> str:
        return f"{self.difficulty}/{self.form}/{self.number:02d}"


def _families() -> tuple[Family, ...]:
    spec = [
        ("easy", ["current"] * 10, 2),
        ("standard", ["current"] * 9 + ["previous"] * 3 + ["as_of"] * 3, 4),
        ("hard", ["current"] * 2 + ["previous"] * 3 + ["as_of"] * 5, 2),
    ]
    out: list[Family] = []
    for difficulty, forms, count in spec:
        for form in forms:
            out.append(Family(difficulty, form, len(out) + 1, count))
    return tuple(out)


FAMILIES = _families()

# --------------------------------------------------------------------------------------------------
# The task set of MDP v2 (``long_memory-v1.jsonl``)

V1_TYPES = {"single": 43, "current": 21, "previous": 18, "as_of": 18}
"""Tasks per question form in ``long_memory-v1`` (100, as v0), from LongMemEval's question types (Wu et al.
2024, ICLR 2025; 500 questions): single-session 156 (user 70, assistant 56, preference 30), knowledge-update
78, temporal-reasoning 133, multi-session 133. Multi-session questions (aggregating over several
sessions) and the 30 abstention questions have no form here (their answers would need another verifier),
so the shares are those of the three other types, 156 / 78 / 133 of 367 (42.5% / 21.3% / 36.2%): 43
single-session questions (``single``: a fact stated once, asked without "now"), 21 knowledge updates
(``current``: the value after one or more changes) and 36 temporal questions, split evenly (assumption)
between the value before the latest change (``previous``) and the value as of a date (``as_of``)."""
V1_FAMILY_SIZES = {
    "single": {"easy": (3, 2, 2, 2), "standard": (3, 3, 4, 4, 3, 4, 4), "hard": (3, 2, 2, 2)},
    "current": {"easy": (2, 2), "standard": (3, 4, 3, 3), "hard": (2, 2)},
    "previous": {"easy": (2, 2), "standard": (4, 4, 2), "hard": (2, 2)},
    "as_of": {"easy": (2, 2), "standard": (5, 2, 3), "hard": (2, 2)},
}
"""Template families of each form: tasks per family by difficulty, 20% / 60% / 20% of every form rounded
symmetrically (the v0 mix), so the hidden difficulty says nothing about the form (assumption: LongMemEval
gives no difficulty by type beyond what the history shows). The family sizes are such that the held-out
families (``family_splits``) take each form near its share: 9 / 4 / 4 / 3 of the 20 eval tasks."""
V1_UPDATES = {"easy": (1, 1), "standard": (1, 1), "hard": (2, 3)}
"""Changes of the asked fact in a knowledge-update or temporal question (a single-session fact never
changes): one, as in LongMemEval's knowledge-update questions, whose evidence is the first statement and
its update; two or three in hard histories (the v0 shape)."""


def _families_v1() -> tuple[Family, ...]:
    out: list[Family] = []
    for form, by_difficulty in V1_FAMILY_SIZES.items():
        for difficulty, sizes in by_difficulty.items():
            for size in sizes:
                out.append(Family(difficulty, form, len(out) + 1, size))
    if {f.form: sum(g.count for g in out if g.form == f.form) for f in out} != V1_TYPES:
        raise AssertionError("v1 families do not add up to the form counts")
    return tuple(out)


FAMILIES_V1 = _families_v1()


@dataclass(frozen=True)
class Assignment:
    """What a family's split decides: fact kind, layout, question wording, date style, people."""

    split: str
    kind: FactKind
    answer_format: str
    phrasing: int
    date_style: str
    people: tuple[str, ...]


def families_of(version: str) -> tuple[Family, ...]:
    """The paper's families (v0) or MDP v2's (v1)."""
    return FAMILIES if version == VERSION else FAMILIES_V1


@cache
def assignments(version: str = VERSION) -> dict[str, Assignment]:
    families = families_of(version)
    splits = family_splits(DOMAIN, families)
    counters = {"train": 0, "eval": 0}
    phrasings: dict[tuple[str, str], int] = {}
    out: dict[str, Assignment] = {}
    for index, family in enumerate(families):
        split = splits[family.template]
        kinds = TRAIN_KINDS if split == "train" else EVAL_KINDS
        formats = TRAIN_FORMATS if split == "train" else EVAL_FORMATS
        k = counters[split]
        counters[split] += 1
        kind = kinds[k % len(kinds)]
        answer_format = formats[(k + k // len(kinds)) % len(formats)]
        key = (kind.name, family.form)
        phrasing = phrasings.get(key, 0)
        phrasings[key] = phrasing + 1
        people = PEOPLE[NAMES_PER_FAMILY * index : NAMES_PER_FAMILY * (index + 1)]
        out[family.template] = Assignment(split, kind, answer_format, phrasing, DATE_STYLES[split], people)
    return out


# --------------------------------------------------------------------------------------------------
# Histories


def _spread(n_slots: int, k: int, rng: random.Random) -> list[int]:
    """``k`` increasing positions in ``range(n_slots)``, one per equal segment, at least 2 apart."""
    seg = n_slots // k
    for _ in range(100):
        pos = [j * seg + rng.randrange(seg) for j in range(k)]
        if all(b - a >= 2 for a, b in itertools.pairwise(pos)):
            return pos
    raise Reject("cannot spread the timeline")


def _pick(seq: Sequence[str], rng: random.Random) -> str:
    return seq[rng.randrange(len(seq))]


def _exchange(user: str, assistant: str) -> list[str]:
    return [f"User: {user}", f"Assistant: {assistant}"]


class _Deck:
    """Filler exchanges dealt without repeats until the bank runs out, then reshuffled."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.cards: list[int] = []

    def deal(self, count: int) -> list[str]:
        lines: list[str] = []
        for _ in range(count):
            if not self.cards:
                self.cards = list(range(len(FILLER)))
                self.rng.shuffle(self.cards)
            lines += _exchange(*FILLER[self.cards.pop()])
        return lines


def shape_bounds(family: Family, version: str = VERSION) -> dict[str, tuple[int, int]]:
    """The ranges a history's shape is drawn from: v0 by difficulty; v1 the same, but the number of
    changes by question form (none for a single-session fact, ``V1_UPDATES`` otherwise)."""
    bounds = SHAPES[family.difficulty]
    if version == VERSION:
        return bounds
    updates = (0, 0) if family.form == "single" else V1_UPDATES[family.difficulty]
    return {**bounds, "updates": updates}


def build_history(
    family: Family, assign: Assignment, rng: random.Random, version: str = VERSION
) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Sessions (id, date, text) and the facts placed in them."""
    shape = {key: rng.randint(*bounds) for key, bounds in shape_bounds(family, version).items()}
    kind = assign.kind
    n = shape["sessions"]
    n_time = 1 + shape["updates"]
    values = rng.sample(list(kind.values), n_time + shape["others"] + shape["near"])
    timeline_values = values[:n_time]
    other_values = values[n_time : n_time + shape["others"]]
    near_values = values[n_time + shape["others"] :]
    timeline_pos = _spread(n - 1, n_time, rng)
    free = [i for i in range(n) if i not in timeline_pos]
    rng.shuffle(free)

    def value_at(position: int) -> int:
        """Index of the timeline value in force at a session position."""
        return max(j for j, p in enumerate(timeline_pos) if p <= position)

    roles: dict[int, tuple[str, Any]] = {p: ("timeline", j) for j, p in enumerate(timeline_pos)}
    # Passing mentions: after the introduction, naming the value in force then.
    after_intro = [p for p in free if p > timeline_pos[0]]
    if len(after_intro) < shape["mentions"] + shape["near"]:
        raise Reject("no room after the introduction")
    for p in after_intro[: shape["mentions"]]:
        roles[p] = ("mention", value_at(p))
    for j, p in enumerate(after_intro[shape["mentions"] : shape["mentions"] + shape["near"]]):
        roles[p] = ("near", j)
    rest = [p for p in free if p not in roles]
    if len(rest) < shape["others"] + 1:
        raise Reject("no room for distractors and filler")
    for j, p in enumerate(rest[: shape["others"]]):
        roles[p] = ("other", j)

    people = rng.sample(list(assign.people), shape["others"])
    relations = rng.sample(list(RELATIONS), shape["others"])
    day = dt.date(2022, 1, 3) + dt.timedelta(days=rng.randrange(500))
    deck = _Deck(rng)
    sessions: list[dict[str, str]] = []
    placed: dict[str, list[dict[str, str]]] = {
        "timeline": [],
        "others": [],
        "near_misses": [],
        "mentions": [],
    }
    for p in range(n):
        if p:
            day += dt.timedelta(days=rng.randint(2, 9))
        sid = f"s{p + 1:02d}"
        role, j = roles.get(p, ("filler", None))
        opener = _pick(OPENERS, rng)
        r = rng.randrange(len(kind.requests))
        if role == "timeline":
            if j == 0:
                statement = _pick(kind.intro, rng).format(v=timeline_values[0])
            else:
                statement = _pick(kind.update, rng).format(v=timeline_values[j], old=timeline_values[j - 1])
            lines = _exchange(f"{opener}{statement} {kind.requests[r]}", kind.replies[r])
            placed["timeline"].append({"session": sid, "value": timeline_values[j]})
        elif role == "other":
            text = _pick(kind.other, rng).format(rel=relations[j], name=people[j], v=other_values[j])
            q = rng.randrange(len(OTHER_REQUESTS))
            lines = _exchange(f"{opener}{text} {OTHER_REQUESTS[q]}", OTHER_REPLIES[q])
            placed["others"].append(
                {"session": sid, "person": people[j], "relation": relations[j], "value": other_values[j]}
            )
        elif role == "near":
            text = _pick(kind.near_miss, rng).format(v=near_values[j])
            lines = _exchange(
                f"{opener}{text} {kind.requests[r]}", f"{_pick(NEAR_MISS_REPLIES, rng)} {kind.replies[r]}"
            )
            placed["near_misses"].append({"session": sid, "value": near_values[j]})
        elif role == "mention":
            text = _pick(kind.mention, rng).format(v=timeline_values[j])
            lines = _exchange(f"{opener}{text}", _pick(MENTION_REPLIES, rng))
            placed["mentions"].append({"session": sid, "value": timeline_values[j]})
        else:
            lines = []
        lines += deck.deal(2 if role == "filler" else rng.randint(0, 1))
        sessions.append({"id": sid, "date": day.isoformat(), "text": "\n".join(lines)})
    return sessions, placed


def _check_history(kind: FactKind, sessions: list[dict[str, str]], placed: dict[str, Any]) -> None:
    """Only the timeline sessions state the user's fact, each exactly its own value."""
    stated = {item["session"]: item["value"] for item in placed["timeline"]}
    for session in sessions:
        found = stated_values(kind.name, session["text"])
        expected = (stated[session["id"]],) if session["id"] in stated else ()
        if found != expected:
            raise AssertionError(f"{session['id']}: statements {found} != {expected}")
    values = {item["value"] for group in placed.values() for item in group}
    holders = {item["session"] for group in placed.values() for item in group}
    for session in sessions:
        if session["id"] in holders:
            continue
        for value in values:
            if contains_value(session["text"], value):
                raise AssertionError(f"{session['id']} names {value!r} without a role")


# --------------------------------------------------------------------------------------------------
# Question, answer, pool


_NOW_WORDS = re.compile(r" now\b|\bcurrently |\bcurrent ")


def plain_question(question: str) -> str:
    """A "current value" question without its "now": how a single-session question asks for a fact
    stated once ("Which city does the user live in?")."""
    return _NOW_WORDS.sub("", question)


def build_question(
    family: Family,
    assign: Assignment,
    sessions: list[dict[str, str]],
    placed: dict[str, Any],
    rng: random.Random,
) -> dict[str, Any]:
    timeline = placed["timeline"]
    kind = assign.kind
    if family.form == "single":
        phrasings = tuple(plain_question(q) for q in kind.questions["current"])
    else:
        phrasings = kind.questions[family.form]
    wording = phrasings[assign.phrasing % len(phrasings)]
    date_of = {s["id"]: s["date"] for s in sessions}
    as_of = None
    if family.form in ("current", "single"):
        k = len(timeline) - 1
        gold = timeline
    elif family.form == "previous":
        if len(timeline) < 2:
            raise Reject("a 'previous' question needs an update")
        k = len(timeline) - 2
        gold = timeline
    else:
        if len(timeline) < 2:
            raise Reject("an 'as of' question needs an update")
        last = len(timeline) - 1
        k = rng.randint(1, last - 1) if last >= 2 else 0
        start = dt.date.fromisoformat(date_of[timeline[k]["session"]])
        end = dt.date.fromisoformat(date_of[timeline[k + 1]["session"]])
        gap = (end - start).days
        if gap < 2:
            raise Reject("no day between the two changes")
        as_of = (start + dt.timedelta(days=rng.randint(1, gap - 1))).isoformat()
        gold = timeline[: k + 1]
    question = wording.format(date=show_date(as_of, assign.date_style) if as_of else "")
    return {
        "question": question,
        "as_of": as_of,
        "answer": timeline[k]["value"],
        "source": timeline[k]["session"],
        "gold_sessions": [item["session"] for item in gold],
    }


def build_pool(payload: dict[str, Any], placed: dict[str, Any], rng: random.Random) -> list[dict[str, str]]:
    """Five to eight flawed answers, each losing points under the real verifier."""
    fmt = FORMATS[payload["answer_format"]]
    answer, gold = payload["answer"], payload["source"]
    ids = [s["id"] for s in payload["sessions"]]
    text_of = {s["id"]: s["text"] for s in payload["sessions"]}
    timeline = placed["timeline"]
    candidates: dict[str, list[str]] = {flaw: [] for flaw in FLAWS}
    for item in timeline:
        if item["value"] != answer:
            candidates["outdated_value"].append(fmt.render(item["value"], item["session"]))
            if contains_value(text_of[gold], item["value"]):
                candidates["outdated_value"].append(fmt.render(item["value"], gold))
    for item in placed["others"] + placed["near_misses"]:
        candidates["distractor_value"].append(fmt.render(item["value"], item["session"]))
    wrong_sources = [m["session"] for m in placed["mentions"] if m["value"] == answer]
    wrong_sources += [t["session"] for t in timeline if t["session"] != gold]
    wrong_sources += [o["session"] for o in placed["others"]]
    position = ids.index(gold)
    wrong_sources += [ids[i] for i in (position - 1, position + 1) if 0 <= i < len(ids)]
    for sid in dict.fromkeys(wrong_sources):
        if sid != gold:
            candidates["wrong_source"].append(fmt.render(answer, sid))
    candidates["missing_source"] += [fmt.render_without_source(answer), fmt.render(answer, "unknown")]
    family = TRAIN_FORMATS if fmt.name in TRAIN_FORMATS else EVAL_FORMATS
    others = [name for name in family if name != fmt.name]  # never leak a layout across splits
    candidates["malformed"] += [
        FORMATS[rng.choice(others)].render(answer, gold),
        f"The answer is {answer}, according to session {gold}.",
        f"**Answer:** {answer}\n**Source:** {gold}",
    ]
    top = sum(CRITERIA.values())

    def loses_points(flaw: str, text: str) -> bool:
        return sum(s for s, _ in artifact_scores(payload, text).values()) < top

    return flawed_pool(candidates, FLAWS, payload["reference"], loses_points, rng, (POOL_MIN + 1, POOL_MAX))


def build_prompt(payload: dict[str, Any], style: str) -> str:
    sessions = payload["sessions"]
    first, last = show_date(sessions[0]["date"], style), show_date(sessions[-1]["date"], style)
    return "\n".join(
        [
            "Answer a question about the user from their chat history with an assistant.",
            f"The history holds {len(sessions)} sessions, s01 to {sessions[-1]['id']}, dated {first} to "
            f"{last}; search it for the sessions you need.",
            "",
            f"Question: {payload['question']}",
            "",
            "Cite the one session that establishes the answer (for a current value, the session with the "
            "latest change; for an earlier value, the session that set that value).",
            FORMATS[payload["answer_format"]].instruction,
        ]
    )


def build_task(family: Family, rng: random.Random, version: str = VERSION) -> tuple[str, dict[str, Any]]:
    assign = assignments(version)[family.template]
    sessions, placed = build_history(family, assign, rng, version)
    _check_history(assign.kind, sessions, placed)
    asked = build_question(family, assign, sessions, placed, rng)
    payload: dict[str, Any] = {
        "fact_kind": assign.kind.name,
        "question_form": family.form,
        "date_style": assign.date_style,
        "answer_format": assign.answer_format,
        "sessions": sessions,
        **placed,
        **asked,
    }
    payload["reference"] = FORMATS[assign.answer_format].render(asked["answer"], asked["source"])
    payload["pool"] = build_pool(payload, placed, rng)
    return build_prompt(payload, assign.date_style), payload


def generate_records(version: str = VERSION) -> list[dict[str, Any]]:
    """All task records of the task set ``version`` (v0: the paper's, v1: MDP v2's) in id order, with
    splits assigned; deterministic for a given code version."""
    build = partial(build_task, version=version)
    return family_records(DOMAIN, families_of(version), build, MAX_ATTEMPTS, version=version)


def main(argv: Sequence[str] | None = None) -> int:
    """``[--version v1] [path]``: write the v0 task set (default) or MDP v2's."""
    return write_versioned(DOMAIN, generate_records, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
