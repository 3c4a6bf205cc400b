"""Chat prompts of knowledge_work, research, multi_tool and long_memory: messages hide the references and
show gathered material; realistic replies parse back to the exact artifact (or tool call) the verifier
(or the tool runner) expects; replies without one raise ParseError."""

from __future__ import annotations

import json
import re
from functools import cache

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the environments)
from harness_gym.core.task import Task
from harness_gym.domains.long_memory.dates import show_date
from harness_gym.domains.multi_tool.tools import names_in_context, read_result, run_call
from harness_gym.domains.research.verifier import FORMATS as RESEARCH_FORMATS
from harness_gym.envs.domain import Domain, artifact_hash
from harness_gym.executors.base import Context, ExecutorRequest, Feedback
from harness_gym.executors.prompts import INSTRUCTION_HEADING, ParseError, Prompts

KW, RESEARCH, MULTI, MEMORY = (
    "HarnessKnowledgeWork-v0",
    "HarnessResearch-v0",
    "HarnessMultiTool-v0",
    "HarnessLongMemory-v0",
)
ENV_IDS = (KW, RESEARCH, MULTI, MEMORY)


@cache
def setup(env_id: str) -> tuple[Domain, tuple[Task, ...], Prompts]:
    env = gym.make(env_id, split="all")
    domain = env.unwrapped.domain
    assert domain.prompts_cls is not None
    return domain, tuple(env.unwrapped.tasks), domain.prompts_cls(domain)


def instruction_of(content: str) -> str:
    """The request's last section: the instruction, then the reply form if any."""
    return content.rsplit(f"\n{INSTRUCTION_HEADING}\n", 1)[1]


def user_text(prompts: Prompts, request: ExecutorRequest) -> str:
    messages = prompts.messages(request)
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


# -- the reference artifact written the way chat LLMs write it ----------------------------------------


def labels_of(env_id: str, task: Task) -> tuple[tuple[str, ...], str]:
    """The labels of a line-based layout and its separator; () when the layout is not labelled lines."""
    payload = task.payload
    if env_id == KW:
        fmt = payload["format"]
        style = fmt["style"]
        return (() if style == "json" else tuple(label for _, label in fmt["fields"])), (
            "=" if style == "equals" else ":"
        )
    if env_id == RESEARCH:
        fmt = RESEARCH_FORMATS[payload["format"]]
        return ((fmt.answer_label, fmt.sources_label) if fmt.kind == "lines" else ()), ":"
    if env_id == MULTI:
        return (payload["answer"]["label"], "TOOLS"), ":"
    layouts = {"kv": ("ANSWER", "SOURCE"), "final": ("FINAL ANSWER", "SESSION"), "inline": ("Answer",)}
    return layouts.get(payload["answer_format"], ()), ":"


def emphasised(env_id: str, task: Task, reference: str) -> str:
    """Markdown-bold labels (line layouts), pretty JSON in a json fence, tags on separate lines, a bold
    pipe line."""
    labels, sep = labels_of(env_id, task)
    if labels:
        out = []
        for line in reference.splitlines():
            label, _, value = line.partition(sep)
            label = label.strip()
            assert label in labels, (label, labels)
            out.append(
                f"**{label}{sep}** {value.strip()}" if sep == ":" else f"- **{label}** = {value.strip()}"
            )
        return "Here is the report:\n\n" + "\n".join(out) + "\n\nAll figures come from the sources above."
    if reference.startswith("{"):
        pretty = json.dumps(json.loads(reference), indent=2, ensure_ascii=False)
        return f"Based on the material gathered:\n```json\n{pretty}\n```\nI hope this helps!"
    if reference.startswith("<"):
        tags = re.findall(r"<(\w+)>.*?</\1>", reference)
        assert tags, reference
        parts = re.findall(r"<\w+>.*?</\w+>", reference)
        return "My answer, in the required tags:\n\n" + "\n".join(parts) + "\n\nThat is all."
    assert "| source=" in reference, reference
    return f"After reading the sessions:\n\n**{reference}**\n"


def completions(env_id: str, task: Task, reference: str) -> dict[str, str]:
    return {
        "bare": reference,
        "bare with newline": reference + "\n",
        "fenced with chatter": (
            "Sure! I checked everything that was gathered.\n\n```\n" + reference + "\n```\n\n"
            "Let me know if you need anything else."
        ),
        "emphasised": emphasised(env_id, task, reference),
        "lines in bold": "Answer:\n\n" + "\n".join(f"**{line}**" for line in reference.splitlines()),
    }


def unlabelled(reference: str) -> str:
    """The reference's content without its labels, keys, tags or pipe: it holds no artifact."""
    if reference.startswith("{"):
        return "\n".join(str(v) for v in json.loads(reference).values())
    if reference.startswith("<"):
        return re.sub(r"</?\w+>", " ", reference)
    text = reference.replace("| source=", "from session ")
    return "\n".join(re.sub(r"^[A-Za-z_ ]+[:=] ?", "", line) for line in text.splitlines())


# -- artifacts -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_replies_holding_the_reference_parse_back_to_it(env_id: str) -> None:
    domain, tasks, prompts = setup(env_id)
    assert len(tasks) == 100
    for task in tasks:
        reference = domain.pool(task).reference
        for kind in ("draft", "revise"):
            request = ExecutorRequest(kind, task, Context(), draft=reference)
            for name, reply in completions(env_id, task, reference).items():
                assert prompts.parse(request, reply) == reference, (task.task_id, name, reply)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_flawed_artifacts_are_extracted_not_fixed(env_id: str) -> None:
    """A wrong answer in the right layout comes back as written (the parser never repairs content)."""
    domain, tasks, prompts = setup(env_id)
    checked = 0
    for task in tasks:
        for flawed in domain.pool(task).flawed:
            if flawed.flaw.startswith(("malformed", "missing")):
                continue
            request = ExecutorRequest("draft", task, Context())
            reply = "Here it is.\n```\n" + flawed.source + "\n```"
            assert prompts.parse(request, reply) == flawed.source, (task.task_id, flawed.flaw)
            checked += 1
    assert checked >= 100


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_replies_without_an_artifact_raise_parse_error(env_id: str) -> None:
    domain, tasks, prompts = setup(env_id)
    for task in tasks:
        reference = domain.pool(task).reference
        request = ExecutorRequest("draft", task, Context())
        for reply in ("I could not find it.", "", "  \n ", unlabelled(reference)):
            with pytest.raises(ParseError):
                prompts.parse(request, reply)


def test_parse_error_names_what_was_expected() -> None:
    for env_id, needle in ((RESEARCH, "FINAL ANSWER:|ANSWER:|Answer:|<answer>|JSON"), (MULTI, "TOOLS:")):
        _, tasks, prompts = setup(env_id)
        with pytest.raises(ParseError, match=needle):
            prompts.parse(ExecutorRequest("draft", tasks[0], Context()), "I could not find it.")
    _, tasks, prompts = setup(KW)
    task = next(t for t in tasks if t.payload["format"]["style"] == "colon")
    label = task.payload["format"]["fields"][0][1]
    with pytest.raises(ParseError, match=re.escape(f"'{label}:'")):
        prompts.parse(ExecutorRequest("draft", task, Context()), "The total is 5.")


def test_knowledge_work_keeps_the_last_value_and_reads_fences_first() -> None:
    domain, tasks, prompts = setup(KW)
    task = next(t for t in tasks if t.payload["format"]["style"] == "colon")
    reference = domain.pool(task).reference
    first_label = reference.split(":", 1)[0]
    request = ExecutorRequest("draft", task, Context())
    reply = f"{first_label}: (working) 12\n\n```\n{reference}\n```\n{first_label}: is what the memo says."
    assert prompts.parse(request, reply) == reference
    # without a fence the last value of a repeated label wins
    assert prompts.parse(request, f"{first_label}: 12\n{reference}") == reference
    # lines in a different order come back in the format's order
    lines = reference.splitlines()
    assert prompts.parse(request, "\n".join(reversed(lines))) == reference
    # a partial report is a format error naming what is missing (never a half artifact)
    missing = lines[1].split(":", 1)[0]
    with pytest.raises(ParseError, match=re.escape(f"missing '{missing}:'")):
        prompts.parse(request, lines[0])


# -- multi_tool tool calls --------------------------------------------------------------------------------


def gold_runs(task: Task) -> list[tuple[str, dict[str, float], str]]:
    """Per gold step: the call, the names bound before it, its result text (running the whole chain)."""
    docs = task.payload["documents"]
    results: list[str] = []
    out = []
    for step in task.payload["chain"]:
        names = names_in_context(docs, [read_result(t) for t in results])
        result = run_call(docs, step["call"], names)
        assert result.ok, (task.task_id, step["call"], result.text)
        out.append((step["call"], names, result.text))
        results.append(result.text)
    return out


def test_replies_holding_a_gold_call_parse_to_it() -> None:
    _, tasks, prompts = setup(MULTI)
    steps = 0
    for task in tasks:
        docs = task.payload["documents"]
        request = ExecutorRequest("tool", task, Context(observed=True))
        for call, names, _ in gold_runs(task):
            pretty = json.dumps(json.loads(call), indent=2)
            reversed_keys = json.dumps(dict(reversed(list(json.loads(call).items()))))
            replies = (
                call,
                f"Next I need the table.\n```json\n{pretty}\n```\nThis binds the cell names.",
                f"I will run {reversed_keys} now.",
            )
            for reply in replies:
                parsed = prompts.parse(request, reply)
                assert parsed == call, (task.task_id, reply)
                assert run_call(docs, parsed, names) == run_call(docs, call, names)
            steps += 1
    assert steps >= 250


def test_tool_replies_without_a_call_raise_parse_error() -> None:
    _, tasks, prompts = setup(MULTI)
    for task in tasks[:20]:
        request = ExecutorRequest("tool", task, Context(observed=True))
        call = task.payload["chain"][0]["call"]
        for reply in (
            call[:-2],
            "```json\n" + call[: len(call) // 2] + "\n```",
            "I would read the document first.",
            '{"doc": "X-1"}',
        ):
            with pytest.raises(ParseError, match="tool"):
                prompts.parse(request, reply)
        with pytest.raises(ParseError, match="empty"):
            prompts.parse(request, "")


def test_a_call_with_wrong_arguments_is_extracted_for_the_runner_to_refuse() -> None:
    _, tasks, prompts = setup(MULTI)
    task = tasks[0]
    request = ExecutorRequest("tool", task, Context(observed=True))
    parsed = prompts.parse(request, 'Call: {"tool": "read_document", "doc": "CMB-1"}')
    result = run_call(task.payload["documents"], parsed)
    assert not result.valid and "exactly the keys" in (result.error or "")


def test_tool_messages_carry_the_tool_instruction_and_each_result_once() -> None:
    _, tasks, prompts = setup(MULTI)
    for task in tasks[:30]:
        runs = gold_runs(task)
        texts = [text for _, _, text in runs]
        evidence = [f"tool:{i}:{read_result(text).tool}" for i, text in enumerate(texts)]
        context = Context(observed=True, evidence=evidence, tool_results=texts)
        content = user_text(prompts, ExecutorRequest("tool", task, context))
        assert instruction_of(content).startswith(prompts.tool_instruction)
        assert '{"tool": NAME, "args": {...}}' in prompts.tool_instruction
        gathered = content.split("## Evidence gathered\n")[1].split("## Tool results so far")[0]
        for i, (marker, text) in enumerate(zip(evidence, texts, strict=True)):
            assert f"[{marker}]" in gathered and text not in gathered
            shown = prompts.evidence_text(task, marker)
            assert len(shown) < 100 and f"tool result {i + 1} " in shown, shown
            assert content.count(text) == 1, (task.task_id, text)


# -- messages ------------------------------------------------------------------------------------------


def hidden(env_id: str, task: Task, domain: Domain) -> list[str]:
    """Strings that must never reach the executor before it gathered them."""
    payload = task.payload
    out = [domain.pool(task).reference]
    if env_id == KW:
        out += [payload["gold"]["person"], f"{payload['gold']['figure']:,}"]
    elif env_id == RESEARCH:
        out += [payload["answer"], *payload["gold_docs"]]
    elif env_id == MULTI:
        calls = [json.loads(step["call"]) for step in payload["chain"]]
        out += [step["call"] for step in payload["chain"]]
        out += [c["args"]["expression"] for c in calls if c["tool"] == "calculator"]
    else:
        out += [payload["answer"]]
    return out


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("observed", [False, True])
def test_draft_messages_show_the_task_and_hide_the_references(env_id: str, observed: bool) -> None:
    domain, tasks, prompts = setup(env_id)
    for task in tasks:
        content = user_text(prompts, ExecutorRequest("draft", task, Context(observed=observed)))
        assert task.prompt in content
        assert "## Evidence gathered" not in content and "## Current draft" not in content
        for secret in hidden(env_id, task, domain):
            assert not re.search(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", content), (task.task_id, secret)


def test_observing_adds_the_session_index_in_long_memory() -> None:
    _, tasks, prompts = setup(MEMORY)
    for task in tasks:
        sessions = task.payload["sessions"]
        style = task.payload["date_style"]
        before = user_text(prompts, ExecutorRequest("draft", task, Context(observed=False)))
        after = user_text(prompts, ExecutorRequest("draft", task, Context(observed=True)))
        for session in sessions:
            line = f"- {session['id']}: {show_date(session['date'], style)}"
            assert line in after and line not in before
            assert session["text"] not in after


def gold_items(env_id: str, task: Task) -> list[tuple[str, str]]:
    """(evidence id, a text that must then show) for the task's gold evidence."""
    payload = task.payload
    if env_id == KW:
        texts = {s["id"]: s["text"] for s in payload["sources"]}
        return [(sid, texts[sid]) for sid in payload["gold"]["sources"]]
    if env_id == RESEARCH:
        texts = {d["id"]: d["text"] for d in payload["docs"]}
        return [(did, texts[did]) for did in payload["gold_docs"]]
    sessions = {s["id"]: s for s in payload["sessions"]}
    return [
        (sid, f"{show_date(sessions[sid]['date'], payload['date_style'])}\n{sessions[sid]['text']}")
        for sid in payload["gold_sessions"]
    ]


@pytest.mark.parametrize("env_id", [KW, RESEARCH, MEMORY])
def test_gathered_evidence_shows_its_text(env_id: str) -> None:
    _, tasks, prompts = setup(env_id)
    for task in tasks:
        items = gold_items(env_id, task)
        empty = user_text(prompts, ExecutorRequest("draft", task, Context(observed=True)))
        context = Context(observed=True, evidence=[item for item, _ in items])
        content = user_text(prompts, ExecutorRequest("draft", task, context))
        assert "## Evidence gathered" in content
        for item, text in items:
            assert f"[{item}]" in content
            assert text in content and text not in empty, (task.task_id, item)


def test_evidence_of_other_domains_items_is_not_invented() -> None:
    """An id the task does not know is shown as the id itself, not as some other document's text."""
    for env_id in (KW, RESEARCH, MEMORY, MULTI):
        _, tasks, prompts = setup(env_id)
        assert prompts.evidence_text(tasks[0], "doc-999x") == "doc-999x"


def test_knowledge_work_tool_results_are_shown_as_they_are() -> None:
    _, tasks, prompts = setup(KW)
    task = tasks[0]
    result = "table_calc TABLE-1: sum(amount) where office=Porto = 12,345 (3 row(s))"
    content = user_text(
        prompts, ExecutorRequest("draft", task, Context(observed=True, tool_results=[result]))
    )
    assert "## Tool results so far\n" + result in content


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_revise_messages_show_the_draft_and_localising_feedback(env_id: str) -> None:
    domain, tasks, prompts = setup(env_id)
    for task in tasks[::7]:
        draft = domain.pool(task).flawed[0].source
        issue = "citations: doc-999 was never retrieved"
        local = Feedback("check", artifact_hash(draft), (issue,))
        content = user_text(prompts, ExecutorRequest("revise", task, Context(observed=True), draft, local))
        assert "## Current draft\n```\n" + draft + "\n```" in content
        assert f"- {issue}" in content
        assert instruction_of(content).startswith(prompts.revise_instruction)
        stale = Feedback("check", artifact_hash(draft + "x"), (issue,))
        content = user_text(prompts, ExecutorRequest("revise", task, Context(observed=True), draft, stale))
        assert issue not in content and draft in content


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_judge_replies_parse_via_the_base_class(env_id: str) -> None:
    domain, tasks, prompts = setup(env_id)
    task = tasks[0]
    request = ExecutorRequest("judge", task, Context(observed=True), domain.pool(task).reference)
    assert prompts.parse(request, "**PASS**\nThe draft meets the task.") == "PASS"
    assert prompts.parse(request, "Verdict below.\nFAIL: cites a source never opened") == (
        "FAIL: cites a source never opened"
    )
    with pytest.raises(ParseError):
        prompts.parse(request, "Looks fine to me.")
    content = user_text(prompts, request)
    assert domain.pool(task).reference in content  # the draft under judgement is shown


def test_long_memory_labelled_reply_needs_every_label() -> None:
    _, tasks, prompts = setup(MEMORY)
    task = next((t for t in tasks if t.payload["answer_format"] == "final"), None)
    assert task is not None, "no task with the FINAL ANSWER / SESSION layout in split='all'"
    request = ExecutorRequest("draft", task, Context())
    with pytest.raises(ParseError, match="missing 'SESSION:'"):
        prompts.parse(request, "FINAL ANSWER: 42")
    assert prompts.parse(request, "FINAL ANSWER: 42\nSESSION: s03") == "FINAL ANSWER: 42\nSESSION: s03"
