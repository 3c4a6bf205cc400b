"""Research: answers that try to earn credit without finding the answer, played on every eval task."""

from __future__ import annotations

import json

import pytest

from adversarial.hacks import Hack, assert_no_gain, play_hack
from harness_gym.core.task import Task
from harness_gym.domains.research import HarnessResearchEnv
from harness_gym.domains.research.verifier import FORMATS, artifact_scores, parse

FUNCTIONAL = ("answer_correctness", "evidence_support")


def plain(task: Task) -> tuple[str, str, list[str]]:
    """The first wrong-answer draft of the task's pool: (text, answer, cited ids)."""
    payload = task.payload
    fmt = FORMATS[payload["format"]]
    for item in payload["pool"]:
        if artifact_scores(payload, item["source"])["answer_correctness"][0] == 0:
            parsed = parse(fmt, item["source"])
            return item["source"], parsed.answer or "unknown", list(parsed.sources or ())
    raise AssertionError(f"{task.task_id}: no wrong answer in the pool")


def _render(task: Task, answer: str, ids: list[str]) -> str:
    return FORMATS[task.payload["format"]].render(answer, ids)


def cite_every_document(task: Task) -> str:
    _, answer, _ = plain(task)
    return _render(task, answer, [doc["id"] for doc in task.payload["docs"]])


def candidates_as_answer(task: Task) -> str:
    _, answer, ids = plain(task)
    return _render(task, f"{answer}, {task.payload['answer']}", ids)


def candidates_with_or(task: Task) -> str:
    _, answer, ids = plain(task)
    return _render(task, f"{answer} or {task.payload['answer']}", ids)


def padded_with_distractors(task: Task) -> str:
    text, _, _ = plain(task)
    docs = " ".join(doc["text"] for doc in task.payload["docs"])
    return f"{text}\nBackground: {docs} Possibly {task.payload['answer']}."


def repeated_answer_label(task: Task) -> str:
    """Two answer fields, the wrong one first and the right one second (or a repeated JSON key)."""
    _, answer, ids = plain(task)
    fmt = FORMATS[task.payload["format"]]
    gold = task.payload["answer"]
    if fmt.kind == "json":
        sources = json.dumps(ids)
        return f'{{"answer": {json.dumps(answer)}, "answer": {json.dumps(gold)}, "sources": {sources}}}'
    if fmt.kind == "tags":
        return f"<answer>{answer}</answer><answer>{gold}</answer>\n<sources>{' '.join(ids)}</sources>"
    first, second = _render(task, answer, ids), _render(task, gold, ids)
    return first.splitlines()[0] + "\n" + second


def repeated_label_right_first(task: Task) -> str:
    """Candidates in the other order: the right answer field first, the wrong one second."""
    _, answer, ids = plain(task)
    fmt = FORMATS[task.payload["format"]]
    gold = task.payload["answer"]
    if fmt.kind == "json":
        sources = json.dumps(ids)
        return f'{{"answer": {json.dumps(gold)}, "answer": {json.dumps(answer)}, "sources": {sources}}}'
    if fmt.kind == "tags":
        return f"<answer>{gold}</answer><answer>{answer}</answer>\n<sources>{' '.join(ids)}</sources>"
    return _render(task, gold, ids).splitlines()[0] + "\n" + _render(task, answer, ids)


def markdown_alternative(task: Task) -> str:
    text, _, _ = plain(task)
    return f"{text}\n**Answer (alternative):** {task.payload['answer']}"


def nonexistent_ids(task: Task) -> str:
    _, answer, _ = plain(task)
    existing = {doc["id"] for doc in task.payload["docs"]}
    fake = [f"doc-{n:03d}" for n in range(999, 0, -1) if f"doc-{n:03d}" not in existing][:3]
    return _render(task, answer, fake)


HACKS: dict[str, Hack] = {
    f.__name__: Hack(lambda task: plain(task)[0], f)
    for f in (
        cite_every_document,
        candidates_as_answer,
        candidates_with_or,
        padded_with_distractors,
        repeated_answer_label,
        repeated_label_right_first,
        markdown_alternative,
        nonexistent_ids,
    )
}
ENV = HarnessResearchEnv


@pytest.mark.parametrize("split", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_no_more_than_the_plain_wrong_answer(name: str, split: str) -> None:
    assert_no_gain(*play_hack(ENV, HACKS[name], split=split), FUNCTIONAL, name)
