"""The executor protocol: the frozen LLM that drafts and revises, seen through typed requests.

Executors know nothing of a domain's internals: the environment hands them the task, what the harness
has gathered so far and the latest feedback, and gets back an artifact (text) and its usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from harness_gym.core.task import Task

RequestKind = Literal["draft", "revise", "judge", "tool"]


@dataclass(frozen=True)
class Flawed:
    flaw: str
    source: str


FLAW_CLASSES: tuple[str, ...] = ("form", "content")
"""What a flaw gets wrong: its ``form`` (malformed output, a syntax error, a missing field, the format:
fixable from the draft and the task statement alone) or its ``content`` (a wrong value, logic or step)."""


@dataclass(frozen=True)
class FlawKind:
    """How the simulated executor treats one flaw kind of a domain's pools (``Domain.flaws``)."""

    cls: str
    """``form`` or ``content`` (``FLAW_CLASSES``): sets the localised fix rate a REVISE can reach."""
    named_by: frozenset[str]
    """Check components whose findings concern the part of the artifact this flaw gets wrong: feedback
    naming one of them is localised feedback on this flaw; feedback naming only others is a verdict."""
    needs: str = "informedness"
    """What a fix needs the harness to have gathered (``Domain.evidence``): ``none`` (a form flaw),
    ``observed``, ``informedness`` (the domain's measure, as for a first draft) or a domain's own."""

    def __post_init__(self) -> None:
        if self.cls not in FLAW_CLASSES:
            raise ValueError(f"a flaw kind's class is one of {FLAW_CLASSES}, got {self.cls!r}")
        object.__setattr__(self, "named_by", frozenset(self.named_by))


UNDECLARED_FLAW = FlawKind("content", frozenset())
"""What a draft outside the pool (never produced by the simulated executor) counts as."""


@dataclass(frozen=True)
class ArtifactPool:
    """The artifacts a simulated executor can produce for one task."""

    reference: str
    flawed: tuple[Flawed, ...]


class DomainView(Protocol):
    """What an executor may read of a domain (``harness_gym.envs.Domain`` implements it).

    Executors sit below the domains: they see this much and no more, so a new domain needs no
    change here.
    """

    name: str
    env_id: str
    draft_params: Any
    """``harness_gym.executors.profiles.DraftParams`` of the simulated executor here."""
    prompts_cls: Any
    """The domain's ``harness_gym.executors.prompts.Prompts`` subclass, or None."""

    flaws: Mapping[str, FlawKind]
    """Every flaw kind of the domain's pools: its class, the check components that name it and the
    evidence its fix needs (``harness_gym.envs.Domain.flaws``)."""

    def pool(self, task: Task) -> ArtifactPool: ...

    def tool_pool(self, task: Task, context: Context) -> ArtifactPool: ...

    def informedness(self, task: Task, context: Context) -> float: ...

    def evidence(self, task: Task, context: Context, needs: str) -> float:
        """How much of what a fix needing ``needs`` (``FlawKind.needs``) the harness gathered, in [0, 1]."""
        ...


JUDGE = "judge"
"""The component of an LLM judge's finding: it names no part of the artifact."""


class Finding(str):
    """One problem a check, a test run or a tool reported: the issue text, tagged with the component of the
    check that found it (``Finding("unit", "unit: the answer must be in EUR")``).

    It is a ``str`` (the text), so every reader of issues (step records, prompts, the viewer) is unchanged;
    the simulated executor reads ``component`` to tell whether feedback names the draft's own flaw.
    """

    component: str

    def __new__(cls, component: str, text: str) -> Finding:
        self = super().__new__(cls, text)
        self.component = component
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Finding, (self.component, str(self)))


@dataclass(frozen=True)
class Feedback:
    """What a check, test run or tool reported about one draft."""

    source: str
    """``check``, ``tests`` or ``tool``."""
    draft_hash: str
    issues: tuple[str, ...]
    """Problems found (``Finding`` where the reporter tags them); empty when nothing was found wrong."""

    def localizes(self, draft_hash: str | None) -> bool:
        """True when this feedback points at concrete problems in that draft."""
        return bool(self.issues) and self.draft_hash == draft_hash

    @property
    def components(self) -> frozenset[str]:
        """The check components of the tagged issues (``Finding.component``)."""
        return frozenset(issue.component for issue in self.issues if isinstance(issue, Finding))


@dataclass(slots=True)
class Context:
    """What the harness has gathered for the executor so far."""

    observed: bool = False
    evidence: list[str] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """What a domain reads off this context, kept for the episode by the domain's own keys (the lists
    above only grow, by appending)."""


@dataclass(slots=True)
class ExecutorRequest:
    """One call to the executor (built for every DRAFT/REVISE/judge/tool call; treat as read-only)."""

    kind: RequestKind
    task: Task
    context: Context
    draft: str | None = None
    feedback: Feedback | None = None
    sample_index: int = 0
    """How many executor calls preceded this one in the episode (part of a response-cache key)."""
    revision: int = 0
    """How many REVISE calls preceded this one in the episode."""
    episode_key: int = 0
    """Identifies the episode's stream of chance (a function of the reset seed): a greedy simulated call
    is a function of it and of what the request holds."""
    episode: str | None = None
    """The episode's id (``trajectory["episode_id"]``), for audit records; never part of a request."""
    step: int = 0
    """The step (1-based ``t`` of its step record) this call belongs to, for audit records."""


@dataclass(frozen=True)
class Usage:
    """What one executor call cost: tokens, money and time (a replayed cache hit costs nothing sent)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    """Seconds from request to reply (measured for a real endpoint, modelled for the simulated one)."""


TRUNCATED_REPLY = "truncated reply"
"""How an executor error caused by a reply cut at ``max_tokens`` begins (other errors are format errors)."""

REPLY_KINDS: dict[str, str] = {
    "parse failure": "parse_failures",
    TRUNCATED_REPLY: "truncations",
    "no content": "no_content",
    "tool call": "tool_calls",
    "refused": "refusals",
}
"""How an executor error begins -> the usage counter it adds to. ``parse failure``: a reply without an
artifact in the required form; ``truncated reply``: cut at ``max_tokens`` (a reasoning model that ran out
mid-thought, with empty content, included) or leaving no room in the context; ``no content``: an empty
reply, or a reply with no choice at all; ``tool call``: ``tool_calls`` where text was asked for;
``refused``: a refusal or a content filter. Each is a failure signal for one step, never a stopped run."""


CONTEXT_OVERFLOW = "context overflow"
"""How the executor error of a prompt the server refused as longer than the model's context (HTTP 400)
begins: counted with the truncated replies (the reply was cut to nothing), named apart in the error."""

_ERROR_PREFIXES: dict[str, str] = {**REPLY_KINDS, CONTEXT_OVERFLOW: REPLY_KINDS[TRUNCATED_REPLY]}


def error_kind(error: str) -> str:
    """The usage counter (``REPLY_KINDS`` value) of an executor error; unknown prefixes are parse
    failures."""
    for prefix, counter in _ERROR_PREFIXES.items():
        if error.startswith(prefix):
            return counter
    return "parse_failures"


@dataclass(frozen=True)
class ExecutorResponse:
    text: str
    usage: Usage = Usage()
    error: str | None = None
    """Set when the executor failed to produce a usable artifact; the harness sees a failure signal."""
    cached: bool | None = None
    """For executors behind a response cache: whether the reply was replayed from it."""
    io: dict[str, Any] | None = None
    """For chat executors: the audit record of the call (messages, raw reply, finish_reason, cache key,
    error), stored as the step record's ``executor_io``; JSON values only."""


@runtime_checkable
class Executor(Protocol):
    """Anything that turns a request into an artifact. Randomness must come from ``rng`` only."""

    name: str

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse: ...
