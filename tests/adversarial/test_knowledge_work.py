"""Knowledge work: reports that try to earn credit without answering the question, played on every task."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adversarial.hacks import Hack, assert_no_gain, play_hack
from harness_gym.core.task import Task
from harness_gym.domains.knowledge_work import HarnessKnowledgeWorkEnv
from harness_gym.domains.knowledge_work.verifier import artifact_scores, format_figure, parse_report

FUNCTIONAL = ("answer_correctness", "evidence_support", "criterion_coverage", "source_conflict")
ENV = HarnessKnowledgeWorkEnv


def plain(task: Task) -> str:
    """The first pool report with a wrong key figure."""
    payload = task.payload
    for item in payload["pool"]:
        wrong = artifact_scores(payload, item["source"]).rubric["answer_correctness"][0] == 0
        if wrong and parse_report(payload["format"], item["source"]).well_formed:
            return item["source"]
    raise AssertionError(f"{task.task_id}: no well-formed wrong report in the pool")


def _values(task: Task) -> dict[str, Any]:
    return dict(parse_report(task.payload["format"], plain(task)).values)


def _render(task: Task, values: dict[str, Any], repeat: tuple[str, Any] | None = None) -> str:
    """A report in the task's style; ``repeat`` adds a second copy of one field with another value."""
    fmt = task.payload["format"]
    pairs = [(label, values.get(role, "")) for role, label in fmt["fields"]]
    if repeat is not None:
        label = dict(fmt["fields"])[repeat[0]]
        pairs.append((label, repeat[1]))
    if fmt["style"] == "json":
        return "{" + ", ".join(f"{json.dumps(label)}: {json.dumps(value)}" for label, value in pairs) + "}"
    glue = ": " if fmt["style"] == "colon" else " = "
    return "\n".join(f"{label}{glue}{', '.join(v) if isinstance(v, list) else v}" for label, v in pairs)


def _ids(task: Task) -> list[str]:
    return [src["id"] for src in task.payload["sources"]]


def cite_every_source(task: Task) -> str:
    return _render(task, {**_values(task), "sources": _ids(task)})


def conflict_note_lists_everything(task: Task) -> str:
    """Every source id and the gold figures in the conflict note (tasks with conflicting sources)."""
    values = _values(task)
    gold = task.payload["gold"]
    figures = [gold["figure"]] + ([gold["superseded"]["figure"]] if gold.get("superseded") else [])
    note = f"{', '.join(_ids(task))} disagree; figures {', '.join(format_figure(x) for x in figures)}"
    return _render(task, {**values, "conflict": note})


def figure_candidates(task: Task) -> str:
    values = _values(task)
    gold = format_figure(task.payload["gold"]["figure"])
    return _render(task, {**values, "figure": f"{values['figure']} or {gold}"})


def repeated_figure_label(task: Task) -> str:
    """The wrong figure, then the right one under the same label (a repeated key in JSON)."""
    return _render(task, _values(task), repeat=("figure", format_figure(task.payload["gold"]["figure"])))


def repeated_label_right_first(task: Task) -> str:
    """The right figure first, then the wrong one under the same label."""
    values = _values(task)
    gold = format_figure(task.payload["gold"]["figure"])
    return _render(task, {**values, "figure": gold}, repeat=("figure", values["figure"]))


def candidates_right_first(task: Task) -> str:
    values = _values(task)
    gold = format_figure(task.payload["gold"]["figure"])
    return _render(task, {**values, "figure": f"{gold} or {values['figure']}"})


def nonexistent_sources(task: Task) -> str:
    existing = set(_ids(task))
    fake = [i for i in ("MEMO-999", "EMAIL-998", "TABLE-997") if i not in existing]
    return _render(task, {**_values(task), "sources": fake})


def padded_with_sources(task: Task) -> str:
    return plain(task) + "\n" + "\n".join(src["text"] for src in task.payload["sources"])


def _conflicting(task: Task) -> bool:
    return "conflict" in dict(task.payload["format"]["fields"])


HACKS: dict[str, Hack] = {
    "conflict_note_lists_everything": Hack(plain, conflict_note_lists_everything, where=_conflicting)
} | {
    f.__name__: Hack(plain, f)
    for f in (
        cite_every_source,
        figure_candidates,
        repeated_figure_label,
        repeated_label_right_first,
        candidates_right_first,
        nonexistent_sources,
        padded_with_sources,
    )
}


@pytest.mark.parametrize("split", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_no_more_than_the_plain_wrong_answer(name: str, split: str) -> None:
    assert_no_gain(*play_hack(ENV, HACKS[name], split=split), FUNCTIONAL, name)
