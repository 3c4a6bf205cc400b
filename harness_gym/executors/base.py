"""The executor protocol: the frozen LLM that drafts and revises, seen through typed requests.

Executors know nothing of a domain's internals: the environment hands them the task, what the harness
has gathered so far and the latest feedback, and gets back an artifact (text) and its usage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from harness_gym.core.task import Task

RequestKind = Literal["draft", "revise", "judge", "tool"]


@dataclass(frozen=True)
class Flawed:
    flaw: str
    source: str


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

    def pool(self, task: Task) -> ArtifactPool: ...

    def tool_pool(self, task: Task, context: Context) -> ArtifactPool: ...

    def informedness(self, task: Task, context: Context) -> float: ...


@dataclass(frozen=True)
class Feedback:
    """What a check, test run or tool reported about one draft."""

    source: str
    """``check``, ``tests`` or ``tool``."""
    draft_hash: str
    issues: tuple[str, ...]
    """Problems found; empty when the verifier found nothing wrong."""

    def localizes(self, draft_hash: str | None) -> bool:
        """True when this feedback points at concrete problems in that draft."""
        return bool(self.issues) and self.draft_hash == draft_hash


@dataclass
class Context:
    """What the harness has gathered for the executor so far."""

    observed: bool = False
    evidence: list[str] = field(default_factory=list)
    tool_results: list[str] = field(default_factory=list)


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


def error_kind(error: str) -> str:
    """The usage counter (``REPLY_KINDS`` value) of an executor error; unknown prefixes are parse
    failures."""
    for prefix, counter in REPLY_KINDS.items():
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
