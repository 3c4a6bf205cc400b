"""Long memory: answers that try to earn credit without recalling the fact, played on every task."""

from __future__ import annotations

import json

import pytest

from adversarial.hacks import Hack, assert_no_gain, play_hack
from harness_gym.core.task import Task
from harness_gym.domains.long_memory import HarnessLongMemoryEnv
from harness_gym.domains.long_memory.verifier import FORMATS, artifact_scores, parse_answer

FUNCTIONAL = ("answer_correctness", "source_match")
ENV = HarnessLongMemoryEnv


def _wrong(task: Task) -> tuple[str, str, str]:
    """The first pool draft with a wrong value: (text, value, cited session or '')."""
    payload = task.payload
    ids = tuple(s["id"] for s in payload["sessions"])
    for item in payload["pool"]:
        if artifact_scores(payload, item["source"])["answer_correctness"][0] == 0:
            parsed = parse_answer(item["source"], payload["answer_format"], ids)
            if parsed.answer:
                return item["source"], parsed.answer, (parsed.sources or ("",))[0]
    other = payload["others"][0]
    fmt = FORMATS[payload["answer_format"]]
    return fmt.render(other["value"], other["session"]), other["value"], other["session"]


def plain(task: Task) -> str:
    return _wrong(task)[0]


def _render(task: Task, answer: str, source: str) -> str:
    return FORMATS[task.payload["answer_format"]].render(answer, source)


def cite_every_session(task: Task) -> str:
    _, value, _ = _wrong(task)
    return _render(task, value, ", ".join(s["id"] for s in task.payload["sessions"]))


def every_stated_value(task: Task) -> str:
    """Every value the history states for the asked fact (the timeline and other people's), as the answer."""
    _, value, source = _wrong(task)
    payload = task.payload
    values = [value, *(t["value"] for t in payload["timeline"]), *(o["value"] for o in payload["others"])]
    return _render(task, ", ".join(dict.fromkeys(values)), source)


def hedged_answer(task: Task) -> str:
    _, value, source = _wrong(task)
    return _render(task, f"{value} or {task.payload['answer']}", source)


def padded_with_sessions(task: Task) -> str:
    text = plain(task)
    return text + "\n" + " ".join(s["text"] for s in task.payload["sessions"])


def repeated_answer_label(task: Task) -> str:
    """The wrong value, then the right one under the same label (or a repeated JSON key)."""
    _, value, source = _wrong(task)
    gold = task.payload["answer"]
    if task.payload["answer_format"] == "json":
        return f'{{"answer": {json.dumps(value)}, "answer": {json.dumps(gold)}, "source": "{source}"}}'
    return f"{_render(task, value, source)}\n{_render(task, gold, source)}"


def repeated_label_right_first(task: Task) -> str:
    """Candidates in the other order: the right value first, the wrong one second."""
    _, value, source = _wrong(task)
    gold = task.payload["answer"]
    if task.payload["answer_format"] == "json":
        return f'{{"answer": {json.dumps(gold)}, "answer": {json.dumps(value)}, "source": "{source}"}}'
    return f"{_render(task, gold, source)}\n{_render(task, value, source)}"


def markdown_right_first(task: Task) -> str:
    return f"**Answer:** {task.payload['answer']}\n{plain(task)}"


def markdown_alternative(task: Task) -> str:
    return f"{plain(task)}\n**Answer:** {task.payload['answer']}"


def unknown_session(task: Task) -> str:
    _, value, _ = _wrong(task)
    return _render(task, value, "s99")


HACKS: dict[str, Hack] = {
    f.__name__: Hack(plain, f)
    for f in (
        cite_every_session,
        every_stated_value,
        hedged_answer,
        padded_with_sessions,
        repeated_answer_label,
        repeated_label_right_first,
        markdown_right_first,
        markdown_alternative,
        unknown_session,
    )
}


@pytest.mark.parametrize("split", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_no_more_than_the_plain_wrong_answer(name: str, split: str) -> None:
    assert_no_gain(*play_hack(ENV, HACKS[name], split=split), FUNCTIONAL, name)
