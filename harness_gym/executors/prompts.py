"""How a domain talks to a chat LLM: the messages for each request and the parser for each reply.

A domain's :class:`Prompts` subclass lives beside its verifier (``harness_gym/domains/<name>/prompts.py``)
and is named by ``Domain.prompts_cls``; chat executors (``OpenAIExecutor``) only call :meth:`messages` and
:meth:`parse`, so they stay ignorant of every domain's internals.

The request is rendered from what the harness has gathered, never from hidden references: the task
statement (plus the inputs OBSERVE reads, once observed), the text of each retrieved evidence item, the
tool results so far, the current draft and the feedback that localises problems in it, then the
instruction (under :data:`INSTRUCTION_HEADING`) and, where the domain gives one, the exact shape of the
reply it parses (:meth:`Prompts.reply_form`). A reply that holds no artifact in the required form raises
:class:`ParseError`, which the executor turns into an executor error: the harness sees a failure signal,
the episode goes on.

What the parsers accept (the rules, one place; each only changes how a reply is read into an artifact,
which the domain then writes in its canonical form, never what the verifier pays for):

- JSON (:func:`json_objects`): every object in the reply, fenced or not, with prose around it; an object
  that is not strict JSON is read as a literal when that reading is the only one: trailing commas before
  ``}`` or ``]``, single-quoted strings, Python's ``True``/``False``/``None``. Anything else that is not
  JSON (code such as ``JSON.stringify(...)``, unbalanced braces) is no object.
- Labelled lines (:func:`labelled_fields`): a label in any case, with spaces, underscores and hyphens in
  it interchangeable (``Signed off by`` is ``SIGNED_OFF_BY``), followed by ``:`` or ``=`` whichever the
  format asks for, around Markdown emphasis, bullets and quotes; the last fenced block holding such
  lines wins over prose, and a label given twice keeps its last value. Every label is required.
- Judgements (:func:`parse_judgement`): the first line starting with PASS or FAIL in any case.
- A reply cut at ``max_tokens`` is never read (see ``openai_executor``).

Structured output (``OpenAIConfig.structured``): with ``json-schema`` the request carries the reply's JSON
schema as ``response_format`` (vLLM, SGLang, llama.cpp and OpenAI constrain decoding to it), with
``tools`` as the one function the model must call. :meth:`Prompts.reply_schema` gives the schema of a
request (each domain's ``artifact_schema`` / ``tool_schema``), and :meth:`Prompts.structured_text` turns
the object back into the text the same parsers read, so the artifact's canonical form has one source.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Collection, Iterator, Sequence
from typing import Any, ClassVar

from harness_gym.core.task import Task
from harness_gym.core.trajectory import artifact_hash
from harness_gym.executors.base import DomainView, ExecutorRequest

Message = dict[str, str]

SYSTEM_PROMPT = (
    "You are the executor inside an agent harness. A controller decides when to read inputs, gather "
    "evidence, run tools, check and revise; you write the artifact it asks for. Follow the required "
    "output format exactly: the harness parses your reply mechanically."
)

INSTRUCTION_HEADING = "## Instruction"
"""Heads the request's last section (the instruction, then the reply form). A heading that reads as a
turn in a conversation ("## Your turn") made a small chat model (SmolLM2-135M-Instruct) answer "I'm ready
to help. What's the task?" instead of doing it; this one did not."""

REPLY_FORM_INTRO = "Reply in exactly this form (your own values in place of the example's):"

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


STRUCTURED_MODES = ("off", "json-schema", "tools")
"""How replies are asked for: free text (parsed), a JSON schema as ``response_format``, or a function
call whose arguments are the reply."""


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema of an object with exactly ``properties``, all required (the strict form OpenAI's
    structured outputs and vLLM's guided decoding both take)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


STRING = {"type": "string"}
STRINGS = {"type": "array", "items": STRING}
JUDGE_SCHEMA = object_schema({"verdict": {"type": "string", "enum": ["PASS", "FAIL"]}, "reason": STRING})


def fenced_blocks(reply: str, languages: Sequence[str] | None = None) -> list[str]:
    """Contents of the reply's ``` fences, in order; only those tagged with one of ``languages`` if given
    (an untagged fence always counts)."""
    wanted = {lang.lower() for lang in languages} if languages else None
    return [
        body for lang, body in _FENCE.findall(reply) if wanted is None or not lang or lang.lower() in wanted
    ]


def json_objects(reply: str) -> list[Any]:
    """Every JSON object that can be decoded starting at a ``{`` in the reply, outermost first; one that
    is not strict JSON is read by :func:`relaxed_object` (see the module docstring)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    end = 0
    for match in re.finditer(r"\{", reply):
        if match.start() < end:
            continue
        try:
            value, stop = decoder.raw_decode(reply, match.start())
        except json.JSONDecodeError:
            chunk = _balanced(reply, match.start())
            value = relaxed_object(chunk) if chunk is not None else None
            if value is None:
                continue
            stop = match.start() + len(chunk)
        found.append(value)
        end = stop
    return found


def _scan(text: str, start: int = 0) -> Iterator[tuple[int, str, bool]]:
    """``(index, char, outside)`` from ``start``: ``outside`` is False inside a quoted string and on its
    quote characters (backslash escapes honoured), so structure is only read outside strings."""
    quote, escaped = "", False
    for i in range(start, len(text)):
        char = text[i]
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
            yield i, char, False
        elif char in "\"'":
            quote = char
            yield i, char, False
        else:
            yield i, char, True


def _balanced(text: str, start: int) -> str | None:
    """``text`` from the ``{`` at ``start`` to the ``}`` closing it (braces in quoted strings skipped)."""
    depth = 0
    for i, char, outside in _scan(text, start):
        if outside and char == "{":
            depth += 1
        elif outside and char == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _without_trailing_commas(chunk: str) -> str:
    """``chunk`` without the commas that directly precede a ``}`` or ``]`` (outside quoted strings)."""
    return "".join(
        char
        for i, char, outside in _scan(chunk)
        if not (outside and char == "," and chunk[i + 1 :].lstrip()[:1] in ("}", "]"))
    )


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of JSON's types only (string keys, finite numbers)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int | bool)


def relaxed_object(chunk: str) -> dict[str, Any] | None:
    """The object a not-quite-JSON ``{...}`` spells unambiguously, else None: trailing commas dropped,
    then strict JSON, else a Python literal (single quotes, ``True``/``False``/``None``) made of JSON's
    types only. Nothing is evaluated (``ast.literal_eval``)."""
    if len(chunk) > 100_000:
        return None
    text = _without_trailing_commas(chunk)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) and _plain(value) else None


LABEL_SEPARATORS = (":", "=")
"""A labelled line may use either separator, whichever the format asks for (``total: 5`` for
``total = 5``): the label says which field it is either way."""


def _label_key(label: str) -> str:
    """A label's spelling-free form: case folded, spaces / underscores / hyphens as one ``_``."""
    return re.sub(r"[ \t_-]+", "_", label.strip()).casefold()


def labelled_fields(reply: str, labels: Sequence[str], sep: str = ":") -> dict[str, str]:
    """``{label: value}`` of the reply's ``LABEL<sep> value`` lines (labels in the given spelling).

    ``sep`` and the other :data:`LABEL_SEPARATORS` are accepted; a label matches in any case and with
    spaces, underscores and hyphens interchanged. Markdown emphasis, list bullets and quotes around the
    label are ignored. When a fenced block holds such lines only the last such block is read (prose
    around an answer often repeats a label); a label given more than once keeps its last value.
    """
    names = "|".join(
        r"[ \t_-]+".join(re.escape(word) for word in re.split(r"[ \t_-]+", label.strip())) for label in labels
    )
    seps = "".join(re.escape(s) for s in dict.fromkeys((sep, *LABEL_SEPARATORS)))
    line = re.compile(
        rf"^[ \t*_>#`-]*({names})[ \t*_`]*[{seps}][ \t*_`]*(.*?)[ \t\r*_`]*$",
        re.IGNORECASE | re.MULTILINE,
    )
    spelling = {_label_key(label): label for label in labels}
    for text in [*reversed(fenced_blocks(reply)), reply]:
        found = {spelling[_label_key(m.group(1))]: m.group(2).strip() for m in line.finditer(text)}
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

    def __init__(self, domain: DomainView) -> None:
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

    def reply_form(self, task: Task, kind: str) -> str | None:
        """The exact shape of the reply a ``draft``/``revise`` (artifact) or ``tool`` request wants, with
        placeholder values, shown after the instruction: the task states its format far above, and a small
        model follows what it read last. ``None``: the instruction says enough."""
        return None

    def artifact_schema(self, task: Task) -> dict[str, Any]:
        """The JSON schema of an artifact reply in structured mode (default: the text in ``artifact``)."""
        return object_schema({"artifact": STRING})

    def artifact_text(self, task: Task, obj: dict[str, Any]) -> str:
        """A structured artifact reply as the text :meth:`artifact` reads."""
        return str(obj["artifact"])

    def tool_schema(self, task: Task) -> dict[str, Any]:
        """The JSON schema of a tool-call reply in structured mode (default: the call's text)."""
        return object_schema({"call": STRING})

    def tool_call_text(self, task: Task, obj: dict[str, Any]) -> str:
        """A structured tool-call reply as the text :meth:`tool_call` reads."""
        return str(obj["call"])

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
        parts.append(f"{INSTRUCTION_HEADING}\n" + self._instruction(request))
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

    def reply_schema(self, request: ExecutorRequest) -> tuple[str, dict[str, Any]]:
        """``(name, JSON schema)`` of the reply a request wants in structured mode."""
        if request.kind == "judge":
            return "submit_verdict", JUDGE_SCHEMA
        if request.kind == "tool":
            return "submit_tool_call", self.tool_schema(request.task)
        return "submit_artifact", self.artifact_schema(request.task)

    def structured_text(self, request: ExecutorRequest, obj: Any) -> str:
        """A structured reply (the decoded JSON object) as the text :meth:`parse` reads; ParseError when
        it lacks a field or has the wrong shape."""
        if not isinstance(obj, dict):
            raise ParseError(f"the structured reply is not a JSON object but {type(obj).__name__}")
        try:
            if request.kind == "judge":
                verdict = str(obj["verdict"]).strip().upper()
                return "PASS" if verdict == "PASS" else f"FAIL: {obj.get('reason') or 'no reason given'}"
            if request.kind == "tool":
                return self.tool_call_text(request.task, obj)
            return self.artifact_text(request.task, obj)
        except ParseError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"{type(exc).__name__}: {exc}"
            raise ParseError(f"the structured reply does not fit its schema ({why})") from None

    def structured_note(self, request: ExecutorRequest, mode: str) -> str:
        """What the request says about the reply's form in structured mode (appended to its last message)."""
        name, schema = self.reply_schema(request)
        if mode == "tools":
            return f"Reply by calling the function `{name}`: its arguments are your reply."
        return "Reply with one JSON object matching this JSON schema:\n" + json.dumps(schema)

    def _instruction(self, request: ExecutorRequest) -> str:
        text = {
            "draft": self.artifact_instruction,
            "revise": self.revise_instruction,
            "judge": JUDGE_INSTRUCTION,
            "tool": self.tool_instruction,
        }[request.kind]
        form = self.reply_form(request.task, request.kind) if request.kind != "judge" else None
        return text if form is None else f"{text}\n{REPLY_FORM_INTRO}\n{form.strip()}"

    @staticmethod
    def _localized(request: ExecutorRequest) -> bool:

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
