"""The parsers' tolerance rules (``harness_gym/executors/prompts.py``): forms with one reading are read,
the same artifact comes out as from the strict form, and what stays ambiguous is still refused; every
reply form a prompt shows is one its parser reads."""

from __future__ import annotations

import json
from functools import cache

import gymnasium as gym
import pytest

import harness_gym
from harness_gym.core.task import Task
from harness_gym.envs.domain import Domain
from harness_gym.executors.base import Context, ExecutorRequest
from harness_gym.executors.prompts import (
    INSTRUCTION_HEADING,
    ParseError,
    Prompts,
    json_objects,
    labelled_fields,
    relaxed_object,
)


@cache
def setup(env_id: str) -> tuple[Domain, tuple[Task, ...], Prompts]:
    env = gym.make(env_id, split="all")
    domain = env.unwrapped.domain
    assert domain.prompts_cls is not None
    return domain, tuple(env.unwrapped.tasks), domain.prompts_cls(domain)


def python_literal(obj: dict) -> str:
    """``obj`` as a model writing Python would: single quotes, True/None, a trailing comma."""
    return repr(obj)[:-1] + ",}"


def loose_json(obj: dict) -> str:
    """``obj`` pretty-printed with a trailing comma after every last member."""
    text = json.dumps(obj, indent=2)
    return text.replace("\n}", ",\n}").replace("\n  ]", ",\n  ]")


# -- JSON ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "{'a': 1, 'b': [1, 2,],}",
        '{"a": 1, "b": [1, 2],}',
        "```python\n{'a': 1, 'b': [1, 2]}\n```",
        "Here: {'a': 1, 'b': [1, 2]} as asked.",
    ],
)
def test_objects_with_one_reading_are_read(text: str) -> None:
    assert json_objects(text) == [{"a": 1, "b": [1, 2]}]


def test_python_constants_and_quotes_inside_strings() -> None:
    assert json_objects("{'ok': True, 'none': None, 'text': \"it's {fine}\"}") == [
        {"ok": True, "none": None, "text": "it's {fine}"}
    ]


@pytest.mark.parametrize(
    "text",
    [
        '{"body": JSON.stringify({"x": 1})',  # code, and unbalanced
        "{'a': {1, 2}}",  # a set: no JSON reading
        "{1: 'a'}",  # a non-string key
        "{'a': 1e999}",  # not a finite number
        "{'a': b}",  # a bare name
        "{'a': 1",  # unbalanced
    ],
)
def test_objects_without_one_reading_are_refused(text: str) -> None:
    assert all(obj != {"a": 1} for obj in json_objects(text))
    assert relaxed_object(text) is None


def test_strict_json_is_read_as_before() -> None:
    assert json_objects('x {"a": 1} y {"b": {"c": 2}}') == [{"a": 1}, {"b": {"c": 2}}]


@pytest.mark.parametrize("env_id", ["HarnessTauRetail-v0", "HarnessResearch-v0", "HarnessLongMemory-v0"])
def test_loose_json_replies_give_the_strict_artifact(env_id: str) -> None:
    domain, tasks, prompts = setup(env_id)
    checked = 0
    for task in tasks:
        reference = domain.pool(task).reference
        if not reference.startswith("{"):
            continue
        request = ExecutorRequest("draft", task, Context())
        obj = json.loads(reference)
        for reply in (python_literal(obj), "```json\n" + loose_json(obj) + "\n```"):
            assert prompts.parse(request, reply) == reference, (task.task_id, reply)
        checked += 1
    assert checked >= 10


def test_a_tool_call_in_python_quotes_is_the_canonical_call() -> None:
    _, tasks, prompts = setup("HarnessMultiTool-v0")
    request = ExecutorRequest("tool", tasks[0], Context(observed=True))
    strict = prompts.parse(request, '{"tool": "calculator", "args": {"expression": "2 * 3"}}')
    assert prompts.parse(request, "{'tool': 'calculator', 'args': {'expression': '2 * 3'},}") == strict


# -- labelled lines ----------------------------------------------------------------------------------------


def test_labels_in_any_spelling_and_either_separator() -> None:
    labels = ["signed_off_by", "total", "FINAL ANSWER"]
    reply = "**Signed off by:** Ann Lee\n- TOTAL = 5\nfinal_answer: Oslo"
    assert labelled_fields(reply, labels, "=") == {
        "signed_off_by": "Ann Lee",
        "total": "5",
        "FINAL ANSWER": "Oslo",
    }
    # a label split over two lines is no label
    assert labelled_fields("FINAL\nANSWER: Oslo", labels) == {}


def test_knowledge_work_reports_with_the_other_separator_give_the_reference() -> None:
    domain, tasks, prompts = setup("HarnessKnowledgeWork-v0")
    checked = 0
    for task in tasks:
        fmt = task.payload["format"]
        if fmt["style"] == "json":
            continue
        reference = domain.pool(task).reference
        sep, other = (": ", " = ") if fmt["style"] == "colon" else (" = ", ": ")
        lines = [line.split(sep.strip(), 1) for line in reference.splitlines()]
        swapped = "\n".join(
            f"{label.strip().replace('_', ' ').title()}{other}{value.strip()}" for label, value in lines
        )
        request = ExecutorRequest("draft", task, Context())
        assert prompts.parse(request, swapped) == reference, (task.task_id, swapped)
        with pytest.raises(ParseError, match="missing"):
            prompts.parse(request, swapped.splitlines()[0])
        checked += 1
    assert checked >= 30


def test_a_plan_step_with_a_dash_comment_is_read() -> None:
    _, tasks, prompts = setup("HarnessPlanning-v0")
    task = next(t for t in tasks if t.payload["kind"] == "blocks")
    request = ExecutorRequest("draft", task, Context())
    assert (
        prompts.parse(request, "1. move(a, table) - clears b\n2. move(b, a)") == "move(a, table)\nmove(b, a)"
    )
    with pytest.raises(ParseError):
        prompts.parse(request, "move(a, table) and then the rest")


# -- prompts ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_every_reply_form_shown_is_one_the_parser_reads(env_id: str) -> None:
    _, tasks, prompts = setup(env_id)
    kinds = ("draft", "revise", "tool") if env_id == "HarnessMultiTool-v0" else ("draft", "revise")
    for task in tasks:
        for kind in kinds:
            request = ExecutorRequest(kind, task, Context(observed=True), draft="x")
            content = prompts.messages(request)[-1]["content"]
            last = content.rsplit(f"\n{INSTRUCTION_HEADING}\n", 1)[1]
            assert "## " not in last and "## Your turn" not in content
            form = prompts.reply_form(task, kind)
            if form is None:
                continue
            assert last.endswith(form.strip())
            prompts.parse(request, form)  # raises ParseError if the shown form is not readable
