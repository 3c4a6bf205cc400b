"""How a domain talks to a chat LLM: the messages for each request and the parser for each reply.

A domain's :class:`Prompts` subclass lives beside its verifier (``harness_gym/domains/<name>/prompts.py``)
and is named by ``Domain.prompts_cls``; chat executors (``OpenAIExecutor``) only call :meth:`messages` and
:meth:`parse`, so they stay ignorant of every domain's internals.

The request is rendered from what the harness has gathered, never from hidden references: the task
statement (plus the inputs OBSERVE reads, once observed), the text of each retrieved evidence item, the
tool results so far, the current draft and the feedback that localises problems in it. A reply that holds
no artifact in the required form raises :class:`ParseError`, which the executor turns into an executor
error: the harness sees a failure signal, the episode goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from harness_gym.executors.base import ExecutorRequest
from harness_gym.task import Task

if TYPE_CHECKING:
    from harness_gym.domains.base import Domain

Message = dict[str, str]

SYSTEM_PROMPT = (
    "You are the executor inside an agent harness. A controller decides when to read inputs, gather "
    "evidence, run tools, check and revise; you write the artifact it asks for. Follow the required "
    "output format exactly: the harness parses your reply mechanically."
)

JUDGE_INSTRUCTION = (
    "Judge the current draft against the task's requirements and the gathered material. Reply with "
    "'PASS' if it fully meets them, otherwise 'FAIL: <the most important problem>', on the first line."
)

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.DOTALL)
_JUDGE = re.compile(r"^[\s*_>#`\"']*(PASS|FAIL)\b[\s*_`\"']*[:.\-\u2013\u2014]?\s*(.*)$", re.IGNORECASE)


HARNESS_ERROR_MARKERS = ("executor error:", "judge error:", "parse failure:", "truncated reply")
"""Prefixes the harness puts on its own failures (an unparsable reply, a truncated reply, a judge call
that failed). They are failure signals for the controller, never feedback on the executor's work, so the
prompts drop them from the problems and tool results shown to the model."""


def is_harness_error(text: str) -> bool:
    """True for a message about the harness's own failure (see ``HARNESS_ERROR_MARKERS``)."""
    return any(marker in text for marker in HARNESS_ERROR_MARKERS)


class ParseError(ValueError):
    """The reply holds no artifact in the required form; the message says what was expected."""


def fenced_blocks(reply: str, languages: Sequence[str] | None = None) -> list[str]:
    """Contents of the reply's ``` fences, in order; only those tagged with one of ``languages`` if given
    (an untagged fence always counts)."""
    wanted = {lang.lower() for lang in languages} if languages else None
    return [
        body for lang, body in _FENCE.findall(reply) if wanted is None or not lang or lang.lower() in wanted
    ]


def json_objects(reply: str) -> list[Any]:
    """Every JSON object that can be decoded starting at a ``{`` in the reply, outermost first."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    end = 0
    for match in re.finditer(r"\{", reply):
        if match.start() < end:
            continue
        try:
            value, stop = decoder.raw_decode(reply, match.start())
        except json.JSONDecodeError:
            continue
        found.append(value)
        end = stop
    return found


def labelled_fields(reply: str, labels: Sequence[str], sep: str = ":") -> dict[str, str]:
    """``{label: value}`` of the reply's ``LABEL<sep> value`` lines (labels in the given spelling).

    Markdown emphasis, list bullets and quotes around the label are ignored. When a fenced block holds
    such lines only the last such block is read (prose around an answer often repeats a label); a label
    given more than once keeps its last value.
    """
    names = "|".join(re.escape(label) for label in labels)
    line = re.compile(
        rf"^[ \t*_>#`-]*({names})[ \t*_`]*{re.escape(sep)}[ \t*_`]*(.*?)[ \t\r*_`]*$",
        re.IGNORECASE | re.MULTILINE,
    )
    spelling = {label.casefold(): label for label in labels}
    for text in [*reversed(fenced_blocks(reply)), reply]:
        found = {spelling[m.group(1).casefold()]: m.group(2).strip() for m in line.finditer(text)}
        if found:
            return found
    return {}


def last_json_object(reply: str, keys: Collection[str]) -> dict[str, Any] | None:
    """The reply's last JSON object that has at least one of ``keys`` (compared case-insensitively)."""
    wanted = {key.casefold() for key in keys}
    hits = [
        obj
        for obj in json_objects(reply)
        if isinstance(obj, dict) and any(str(key).casefold() in wanted for key in obj)
    ]
    return hits[-1] if hits else None


def required_fields(reply: str, labels: Sequence[str], sep: str = ":") -> dict[str, str]:
    """:func:`labelled_fields` that insists on every label: a reply missing one is a format error, so
    parse-failure rates count it (a half-answer is never passed on as an artifact)."""
    fields = labelled_fields(reply, labels, sep)
    if not fields:
        raise ParseError(expected(labels, sep))
    missing = [label for label in labels if label not in fields]
    if missing:
        raise ParseError("missing " + " / ".join(repr(f"{label}{sep}") for label in missing) + " line")
    return fields


def required_json_object(reply: str, keys: Collection[str]) -> dict[str, Any]:
    """The reply's last JSON object holding every one of ``keys`` (case-insensitive); ParseError naming
    the missing keys when objects hold only some of them."""
    wanted = {key.casefold(): key for key in keys}
    partial = last_json_object(reply, keys)
    if partial is None:
        raise ParseError("no JSON object with the keys " + ", ".join(repr(k) for k in keys))
    full = [
        obj
        for obj in json_objects(reply)
        if isinstance(obj, dict) and set(wanted) <= {str(key).casefold() for key in obj}
    ]
    if not full:
        have = {str(key).casefold() for key in partial}
        missing = [key for folded, key in wanted.items() if folded not in have]
        raise ParseError("the JSON object lacks the key(s) " + ", ".join(repr(k) for k in missing))
    return full[-1]


def expected(labels: Sequence[str], sep: str = ":") -> str:
    """The lines a reply lacked, for a :class:`ParseError` message."""
    return "no " + " / ".join(repr(f"{label}{sep}") for label in labels) + " line"


class Prompts:
    """The chat protocol of one domain. Subclasses override the hooks below, not :meth:`messages`.

    Hooks: :meth:`task_text` (the task as the executor sees it), :meth:`evidence_text` (one gathered
    evidence item), :meth:`tool_text` (one tool result), :meth:`artifact` (reply -> artifact) and, in
    settings where the executor chooses tool calls, :meth:`tool_call` (reply -> call).
    """

    system: ClassVar[str] = SYSTEM_PROMPT
    artifact_instruction: ClassVar[str] = "Reply with the artifact in the format the task requires."
    revise_instruction: ClassVar[str] = (
        "Revise the current draft so that it meets the task, fixing the problems reported above if any. "
        "Reply with the complete revised artifact in the format the task requires."
    )
    tool_instruction: ClassVar[str] = "Reply with the next tool call only."

    def __init__(self, domain: Domain) -> None:
        self.domain = domain

    # -- hooks ---------------------------------------------------------------------------------------
    def task_text(self, task: Task, observed: bool) -> str:
        """The task as the executor sees it; ``observed`` says whether the harness ran OBSERVE."""
        return task.prompt

    def evidence_text(self, task: Task, item: str) -> str:
        """The text of one evidence item the harness gathered (``Context.evidence`` holds ids)."""
        return item

    def tool_text(self, task: Task, result: str) -> str:
        """One tool result as the executor sees it (``Context.tool_results`` holds the result texts)."""
        return result

    def artifact(self, task: Task, reply: str) -> str:
        """The reply's artifact in the form the domain's verifier scores; :class:`ParseError` if none."""
        raise NotImplementedError(f"{type(self).__name__} does not parse artifacts")

    def tool_call(self, task: Task, reply: str) -> str:
        """The tool call in the reply, in the form the domain runs; :class:`ParseError` if none."""
        raise ParseError(f"{self.domain.env_id} has no executor-chosen tool calls")

    # -- the protocol --------------------------------------------------------------------------------
    def messages(self, request: ExecutorRequest) -> list[Message]:
        """System + one user message holding everything the harness gathered for this request."""
        task, context = request.task, request.context
        parts = ["## Task\n" + self.task_text(task, context.observed).strip()]
        if context.evidence:
            items = "\n\n".join(
                f"[{item}]\n{self.evidence_text(task, item).strip()}" for item in context.evidence
            )
            parts.append("## Evidence gathered\n" + items)
        tool_results = [r for r in context.tool_results if not is_harness_error(r)]
        if tool_results:
            results = "\n\n".join(self.tool_text(task, r).strip() for r in tool_results)
            parts.append("## Tool results so far\n" + results)
        if request.kind in ("revise", "judge"):
            if request.draft is None:
                raise ValueError(f"a {request.kind} request needs the current draft")
            parts.append("## Current draft\n```\n" + request.draft.rstrip("\n") + "\n```")
        if request.kind == "revise" and self._localized(request):
            assert request.feedback is not None
            real = [issue for issue in request.feedback.issues if not is_harness_error(issue)]
            if real:
                issues = "\n".join(f"- {issue}" for issue in real)
                parts.append(f"## Problems reported by the harness ({request.feedback.source})\n{issues}")
        parts.append("## Your turn\n" + self._instruction(request))
        return [{"role": "system", "content": self.system}, {"role": "user", "content": "\n\n".join(parts)}]

    def parse(self, request: ExecutorRequest, reply: str) -> str:
        """The reply turned into what the harness consumes for this kind of request."""
        if not reply.strip():
            raise ParseError("the reply is empty")
        if request.kind == "judge":
            return parse_judgement(reply)
        if request.kind == "tool":
            return self.tool_call(request.task, reply)
        return self.artifact(request.task, reply)

    def _instruction(self, request: ExecutorRequest) -> str:
        return {
            "draft": self.artifact_instruction,
            "revise": self.revise_instruction,
            "judge": JUDGE_INSTRUCTION,
            "tool": self.tool_instruction,
        }[request.kind]

    @staticmethod
    def _localized(request: ExecutorRequest) -> bool:
        from harness_gym.domains.base import artifact_hash

        return (
            request.feedback is not None
            and request.draft is not None
            and request.feedback.localizes(artifact_hash(request.draft))
        )


def parse_judgement(reply: str) -> str:
    """``PASS`` or ``FAIL: <reason>`` from the first line that starts with either word."""
    for line in reply.splitlines():
        match = _JUDGE.match(line)
        if match:
            verdict, reason = match.group(1).upper(), match.group(2).strip()
            if verdict == "PASS":
                return "PASS"
            return f"FAIL: {reason or 'no reason given'}"
    raise ParseError("the judge reply has no line starting with PASS or FAIL")
