"""Chat protocol of coding, planning, DB-Bench and tau-retail: what the LLM is shown, how replies parse.

Every task of both splits: realistic replies holding the reference artifact parse back to it; garbled
replies raise ParseError; the messages show the gathered material and never hidden references.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the environments)
from harness_gym.core.actions import Action
from harness_gym.core.task import Task
from harness_gym.domains.coding.verifier import describe_test
from harness_gym.domains.dbbench.verifier import artifact_scores as dbbench_scores
from harness_gym.domains.planning.world import constraint_label
from harness_gym.envs.domain import artifact_hash
from harness_gym.executors.base import Context, ExecutorRequest, Feedback
from harness_gym.executors.prompts import ParseError, Prompts

FENCE = "```"


@cache
def _setup(env_id: str) -> tuple[Any, Prompts, tuple[Task, ...]]:
    env = gym.make(env_id, split="all")
    domain = env.unwrapped.domain
    assert domain.prompts_cls is not None, f"{env_id} names no Prompts subclass"
    return env, domain.prompts_cls(domain), tuple(env.unwrapped.tasks)


def _prompts(env_id: str) -> Prompts:
    return _setup(env_id)[1]


def _tasks(env_id: str) -> tuple[Task, ...]:
    return _setup(env_id)[2]


def _reference(env_id: str, task: Task) -> str:
    return _prompts(env_id).domain.pool(task).reference


def _draft(task: Task, context: Context | None = None) -> ExecutorRequest:
    return ExecutorRequest("draft", task, context or Context())


def _content(env_id: str, request: ExecutorRequest) -> str:
    messages = _prompts(env_id).messages(request)
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


def _parse_all(env_id: str, variants: Callable[[Task, str], list[str]]) -> None:
    prompts = _prompts(env_id)
    tasks = _tasks(env_id)
    assert {t.split for t in tasks} == {"train", "eval"}
    for task in tasks:
        ref = _reference(env_id, task)
        for reply in variants(task, ref):
            assert prompts.parse(_draft(task), reply) == ref, (task.task_id, reply)


GARBLED = [
    "",
    "   \n",
    "I'm not sure how to do this.",
    f"{FENCE}\nI would first think about the problem.\n{FENCE}",
]


def _assert_garbled(env_id: str, extra: list[str]) -> None:
    prompts = _prompts(env_id)
    task = _tasks(env_id)[0]
    for reply in GARBLED + extra:
        with pytest.raises(ParseError):
            prompts.parse(_draft(task), reply)


ALL_IDS = ["HarnessCoding-v0", "HarnessPlanning-v0", "HarnessDBBench-v0", "HarnessTauRetail-v0"]


# -- coding ------------------------------------------------------------------------------------------
CODING = "HarnessCoding-v0"


def _coding_variants(task: Task, ref: str) -> list[str]:
    name = task.payload["function_name"]
    body = ref.rstrip("\n")
    return [
        ref,
        f"Here is the implementation:\n\n{FENCE}python\n{ref}{FENCE}\n\nIt handles the edge cases.",
        f"**Solution:**\n{FENCE}\n{body}\n{FENCE}\n",
        f"{FENCE}Python\n\n{body}\n\n{FENCE}",
        f"A first idea:\n{FENCE}python\ndef {name}(*args):\n    return None\n{FENCE}\n"
        f"Better:\n{FENCE}python\n{ref}{FENCE}\nUsage:\n{FENCE}python\nprint({name}(1))\n{FENCE}",
        f"{FENCE}python\n{body}\n\n\nprint({name}('x'))\nassert {name}('x') is not None\n{FENCE}",
        f"Sure, here you go:\n\n{ref}\nThis runs in linear time.",
        f"{FENCE}python\n{ref}",  # the closing fence was cut off
    ]


def test_coding_replies_parse_to_the_reference() -> None:
    _parse_all(CODING, _coding_variants)


def test_coding_broken_code_is_still_an_artifact_but_no_function_is_not() -> None:
    prompts, task = _prompts(CODING), _tasks(CODING)[0]
    broken = next(item.source for item in prompts.domain.pool(task).flawed if item.flaw == "syntax_error")
    assert prompts.parse(_draft(task), f"{FENCE}python\n{broken}{FENCE}") == broken
    name = task.payload["function_name"]
    with pytest.raises(ParseError, match=name):
        prompts.parse(_draft(task), f"{FENCE}python\ndef helper(x):\n    return x\n{FENCE}")
    _assert_garbled(CODING, [f"You should call {name}(text) with a string."])


def test_coding_messages_hide_hidden_tests_and_show_observed_inputs() -> None:
    for task in _tasks(CODING)[:10]:
        payload, ref = task.payload, _reference(CODING, task)
        blind = _content(CODING, _draft(task))
        observed = _content(CODING, _draft(task, Context(observed=True)))
        assert task.prompt in blind and task.prompt in observed
        assert "NotImplementedError" not in blind
        assert payload["starter_code"].rstrip() in observed
        name = payload["function_name"]
        assert all(describe_test(name, test) in observed for test in payload["visible_tests"])
        for text in (blind, observed):
            assert ref.rstrip() not in text
            assert not any(describe_test(name, test) in text for test in payload["hidden_tests"])


# -- planning ----------------------------------------------------------------------------------------
PLANNING = "HarnessPlanning-v0"


def _planning_variants(task: Task, ref: str) -> list[str]:
    lines = ref.splitlines()
    return [
        ref,
        f"Let me work through it.\n\n{FENCE}\n{ref}\n{FENCE}\n\nThis reaches the goal.",
        f"Plan:\n{FENCE}text\n{ref}\n{FENCE}",
        "**Plan:**\n" + "\n".join(f"{i}. **{line}**" for i, line in enumerate(lines, 1)),
        "\n".join(f"- `{line.upper()}`" for line in lines),
        "\n".join(f"Step {i}: {line}  # step {i}" for i, line in enumerate(lines, 1)),
        "\n\n".join(line.replace(", ", ",") + ";" for line in lines),
    ]


def test_planning_replies_parse_to_the_reference() -> None:
    _parse_all(PLANNING, _planning_variants)


def test_planning_keeps_malformed_action_lines_and_rejects_plans_in_other_forms() -> None:
    prompts = _prompts(PLANNING)
    blocks = next(t for t in _tasks(PLANNING) if t.payload["kind"] == "blocks")
    assert prompts.parse(_draft(blocks), "move(red table)\nmove(a, b, c)") == "move(red table)\nmove(a, b, c)"
    _assert_garbled(PLANNING, ["Move the red block to the table, then stack blue on red."])
    logistics = next(t for t in _tasks(PLANNING) if t.payload["kind"] == "logistics")
    with pytest.raises(ParseError, match="drive"):
        prompts.parse(_draft(logistics), "move(p1, table)")


def test_planning_messages_show_the_whole_problem_but_no_reference() -> None:
    for task in _tasks(PLANNING):
        ref = _reference(PLANNING, task)
        blind = _content(PLANNING, _draft(task))
        observed = _content(PLANNING, _draft(task, Context(observed=True)))
        assert task.prompt in blind and task.prompt in observed
        assert all(constraint_label(c) in observed for c in task.payload["constraints"])
        assert ref not in blind and ref not in observed
        assert not any(item.source in observed for item in _prompts(PLANNING).domain.pool(task).flawed)


# -- dbbench -----------------------------------------------------------------------------------------
DBBENCH = "HarnessDBBench-v0"


def _dbbench_variants(task: Task, ref: str) -> list[str]:
    return [
        ref,
        f"To answer this:\n\n{FENCE}sql\n{ref};\n{FENCE}\n\nThis returns the requested value.",
        f"{FENCE}\n-- the statement\n{ref}\n{FENCE}",
        f'{FENCE}SQL\n{ref}\n{FENCE}\nFinal Answer: ["something else"]',
        f"**SQL:** {ref};",
        f"The query is below.\n\n{ref};\n\nIt runs on the table as given.",
    ]


def test_dbbench_replies_parse_to_the_reference() -> None:
    _parse_all(DBBENCH, _dbbench_variants)


def test_dbbench_final_answer_scores_like_the_reference() -> None:
    prompts = _prompts(DBBENCH)
    selects = [t for t in _tasks(DBBENCH) if t.payload["reference"].startswith("SELECT")]
    assert selects
    for task in selects:
        record, label = task.payload["record"], task.payload["record"]["label"]
        wanted = "Final Answer: " + json.dumps(label, ensure_ascii=False)
        for reply in (
            f"I looked at the table.\n**Final Answer:** {json.dumps(label)}\nHope that helps.",
            f"Final Answer: {label!r}",
        ):
            artifact = prompts.parse(_draft(task), reply)
            assert artifact == wanted
            assert dbbench_scores(record, artifact) == dbbench_scores(record, _reference(DBBENCH, task))
            assert dbbench_scores(record, artifact)["correctness"][0] > 0


def test_dbbench_garbled_replies_raise() -> None:
    _assert_garbled(DBBENCH, ["The answer is Leeds.", f"{FENCE}sql\n{FENCE}"])


def _tool_results(task: Task) -> list[str]:
    """The real CALL_TOOL summaries of the task (sample rows, then column profiles)."""
    env = _setup(DBBENCH)[0]
    env.reset(seed=0, options={"task_id": task.task_id})
    for action in (Action.OBSERVE, Action.CALL_TOOL, Action.CALL_TOOL):
        env.step(int(action))
    return list(env.unwrapped._ep.context.tool_results)


def test_dbbench_messages_show_schema_and_rows_but_no_gold() -> None:
    for task in _tasks(DBBENCH):
        record = task.payload["record"]
        table = record["table"]
        blind = _content(DBBENCH, _draft(task))
        results = _tool_results(task)
        assert len(results) == 2 and results[0].startswith("sample_rows:")
        observed = _content(DBBENCH, _draft(task, Context(observed=True, tool_results=results)))
        assert task.prompt in blind and task.prompt in observed
        assert "Schema:" not in blind and "Schema:" in observed
        assert all(f"`{c['name']}` TEXT" in observed for c in table["table_info"]["columns"])
        first_row = " | ".join(str(v) for v in table["table_info"]["rows"][0])
        assert first_row not in blind and first_row in observed
        assert results[0] in observed and results[1] in observed
        for text in (blind, observed):
            assert _reference(DBBENCH, task) not in text
            assert record.get("sql", {}).get("query", "\0") not in text
            assert json.dumps(record["label"]) not in text and str(record.get("answer_md5", "\0")) not in text


def test_dbbench_tool_text_falls_back_to_the_summary() -> None:
    prompts, task = _prompts(DBBENCH), _tasks(DBBENCH)[0]
    for summary in (
        "sample_rows: SELECT * FROM `no such table` LIMIT 5 -> 5 row(s)",
        "profile_columns: no such column: x",
        "something the harness has not written before",
    ):
        assert prompts.tool_text(task, summary) == summary


# -- tau_retail --------------------------------------------------------------------------------------
TAU = "HarnessTauRetail-v0"


def _tau_variants(task: Task, ref: str) -> list[str]:
    calls = json.loads(ref)["calls"]
    shuffled = [{"name": c["name"], "kwargs": c["kwargs"]} for c in calls]
    pretty = json.dumps({"calls": shuffled}, indent=2)
    return [
        ref,
        f"I'll look the order up first.\n\n{FENCE}json\n{pretty}\n{FENCE}\n\nLet me know if that works.",
        f"**Plan:**\n{FENCE}\n{ref}\n{FENCE}",
        f'Draft: {{"calls": []}}\nFinal plan: {json.dumps({"calls": shuffled, "note": "done"})}',
    ]


def test_tau_replies_parse_to_the_reference() -> None:
    _parse_all(TAU, _tau_variants)


def test_tau_garbled_replies_raise() -> None:
    ref = _reference(TAU, _tasks(TAU)[0])
    _assert_garbled(TAU, [ref[: len(ref) // 2], f"{FENCE}json\n{ref[:-2]}\n{FENCE}", '{"calls": "none"}'])


def test_tau_messages_render_records_and_hide_gold() -> None:
    prompts = _prompts(TAU)
    db = prompts.domain.db
    for task in _tasks(TAU):
        payload = task.payload
        user = db["users"][payload["user_id"]]
        order = user["orders"][0]
        product = db["orders"][order]["items"][0]["product_id"]
        evidence = [f"user:{payload['user_id']}", f"order:{order}", f"product:{product}", "order:#W0000000"]
        blind = _content(TAU, _draft(task))
        observed = _content(TAU, _draft(task, Context(observed=True, evidence=evidence)))
        assert task.prompt in blind and task.prompt in observed
        assert "cancel_pending_order(order_id, reason)" in observed and "(order_id, reason)" not in blind
        for record in (user, db["orders"][order], db["products"][product]):
            assert json.dumps(record) in observed and json.dumps(record) not in blind
        assert "[order:#W0000000]\norder:#W0000000" in observed
        for text in (blind, observed):
            assert _reference(TAU, task) not in text
            assert json.dumps(payload["actions"]) not in text
            assert not any(json.dumps(c["kwargs"], sort_keys=True) in text for c in payload["actions"])


# -- every domain ------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_revise_shows_draft_and_localising_feedback(env_id: str) -> None:
    prompts, task = _prompts(env_id), _tasks(env_id)[0]
    draft = prompts.domain.pool(task).flawed[0].source
    issue = "line 2: the step breaks a precondition"
    feedback = Feedback("check", artifact_hash(draft), (issue,))
    text = _content(env_id, ExecutorRequest("revise", task, Context(observed=True), draft, feedback))
    assert draft.rstrip("\n") in text and f"- {issue}" in text and "Current draft" in text
    stale = Feedback("check", artifact_hash("another draft"), (issue,))
    text = _content(env_id, ExecutorRequest("revise", task, Context(observed=True), draft, stale))
    assert issue not in text


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_judge_and_tool_replies_go_through_the_base_class(env_id: str) -> None:
    prompts, task = _prompts(env_id), _tasks(env_id)[0]
    judge = ExecutorRequest("judge", task, Context(), draft=_reference(env_id, task))
    assert "PASS" in _content(env_id, judge)
    assert prompts.parse(judge, "**PASS** - looks right") == "PASS"
    assert prompts.parse(judge, "Verdict below.\nFAIL: wrong column") == "FAIL: wrong column"
    with pytest.raises(ParseError):
        prompts.parse(judge, "Looks fine to me.")
    with pytest.raises(ParseError):
        prompts.parse(ExecutorRequest("tool", task, Context()), "call something")


def test_dbbench_takes_exactly_the_first_statement_fenced_or_bare() -> None:
    """One rule for both forms: the first statement, cut at the first ';' outside quotes."""
    from harness_gym.domains.dbbench.prompts import DBBenchPrompts

    prompts = DBBenchPrompts(gym.make("HarnessDBBench-v0").unwrapped.domain)
    task = gym.make("HarnessDBBench-v0", split="eval").unwrapped.tasks[0]
    first = "SELECT name FROM t WHERE note = 'a;b'"
    for reply in (f"```sql\n{first}; DROP TABLE t;\n```", f"SQL: {first}; DROP TABLE t;", first + ";"):
        assert prompts.artifact(task, reply) == first
