"""Multi-tool: answers and tool use that try to earn credit without computing the answer."""

from __future__ import annotations

import pytest

from adversarial.hacks import Hack, assert_no_gain, play_hack
from harness_gym import Action
from harness_gym.core.task import Task
from harness_gym.domains.multi_tool import HarnessMultiToolEnv
from harness_gym.domains.multi_tool.tools import canonical_call, numeric, read_result
from harness_gym.domains.multi_tool.verifier import AnswerSpec, artifact_scores
from harness_gym.executors.base import Context

FUNCTIONAL = ("numeric_answer", "tool_use")
ENV = HarnessMultiToolEnv
NO_TOOLS = {"script": (Action.OBSERVE, Action.DRAFT, Action.CHECK, Action.SUBMIT)}
FOUR_CALLS = (Action.OBSERVE, *(Action.CALL_TOOL,) * 4, Action.DRAFT, Action.CHECK, Action.SUBMIT)


def plain(task: Task) -> str:
    """The first pool answer with a wrong number."""
    payload = task.payload
    for item in payload["pool"]:
        if artifact_scores(payload, item["source"])["numeric_answer"][0] == 0:
            return item["source"]
    raise AssertionError(f"{task.task_id}: no wrong number in the pool")


def _spec(task: Task) -> AnswerSpec:
    return AnswerSpec.from_payload(task.payload)


def _tools_line(task: Task) -> str:
    return "TOOLS: " + ", ".join(_spec(task).tools)


def trivial_calls(task: Task, context: Context) -> str:
    """Each required tool on something unrelated: constants, 1 unit converted, a document and a table the
    task's chain does not use."""
    spec = _spec(task)
    matches = [step["match"] for step in task.payload["chain"]]
    used_docs = {m.get("doc") for m in matches}
    used_tables = {(m.get("doc"), m.get("table")) for m in matches}
    docs = task.payload["documents"]
    calls = [
        ("calculator", {"expression": "1 + 1"}),
        ("convert", {"value": 1, "from_unit": spec.unit, "to_unit": spec.unit}),
    ]
    calls += [("read_document", {"doc": d["id"]}) for d in docs if d["id"] not in used_docs][:1]
    calls += [
        ("extract_table", {"doc": d["id"], "table": t["name"]})
        for d in docs
        for t in d["tables"]
        if (d["id"], t["name"]) not in used_tables
    ][:1]
    tool, args = calls[len(context.tool_results) % len(calls)]
    return canonical_call(tool, args)


def gold_chain_but_last(task: Task, context: Context) -> str:
    """The task's own chain without its last step (then the call before it again)."""
    chain = task.payload["chain"]
    return chain[min(len(context.tool_results), len(chain) - 2)]["call"]


def last_output_as_answer(task: Task, context: Context) -> str:
    """The last numeric tool output, in the required answer format, whatever step produced it."""
    outputs = [out for out in (numeric(read_result(t)) for t in context.tool_results) if out is not None]
    spec = _spec(task)
    return f"{spec.line(outputs[-1][0] if outputs else 0.0)}\n{_tools_line(task)}"


def two_answer_lines(task: Task) -> str:
    spec = _spec(task)
    return f"{plain(task).splitlines()[0]}\n{spec.line(spec.value)}\n{_tools_line(task)}"


def candidates_on_one_line(task: Task) -> str:
    spec = _spec(task)
    return f"{plain(task).splitlines()[0]} or {spec.line(spec.value).split(': ', 1)[1]}\n{_tools_line(task)}"


def right_line_first(task: Task) -> str:
    """Candidates are candidates in any order: the right line first, the wrong one second."""
    spec = _spec(task)
    return f"{spec.line(spec.value)}\n{plain(task).splitlines()[0]}\n{_tools_line(task)}"


def right_number_wrong_unit(task: Task) -> str:
    """The wrong number in the right unit, then the right number labelled with another unit."""
    spec = _spec(task)
    other = "EUR" if spec.unit != "EUR" else "USD"
    return f"{plain(task).splitlines()[0]} ({spec.value:.{spec.decimals}f} {other})\n{_tools_line(task)}"


HACKS: dict[str, Hack] = {
    "trivial_tool_calls": Hack(
        plain, plain, plain_play=NO_TOOLS, hacked_play={"script": FOUR_CALLS, "tool": trivial_calls}
    ),
    "last_tool_output_without_the_last_step": Hack(
        plain,
        plain,
        hacked_in_context=last_output_as_answer,
        plain_play={"script": FOUR_CALLS, "tool": gold_chain_but_last},
        hacked_play={"script": FOUR_CALLS, "tool": gold_chain_but_last},
    ),
} | {
    f.__name__: Hack(plain, f, plain_play=NO_TOOLS, hacked_play=NO_TOOLS)
    for f in (two_answer_lines, right_line_first, candidates_on_one_line, right_number_wrong_unit)
}


@pytest.mark.parametrize("split", ["eval", "train"])
@pytest.mark.parametrize("name", sorted(HACKS))
def test_hack_earns_no_more_than_the_plain_wrong_answer(name: str, split: str) -> None:
    assert_no_gain(*play_hack(ENV, HACKS[name], split=split), FUNCTIONAL, name)
