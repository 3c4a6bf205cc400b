"""What a domain provides to the generic Harness MDP loop, and what it sees of a running episode.

A domain owns its task set, the meaning of OBSERVE / RETRIEVE / CALL_TOOL / CHECK, the action-mask
rule, the verifier that turns a submitted artifact into a rubric, the Base script, and the artifact
pool and first-draft parameters (``draft_params``) of the simulated executor. DRAFT, REVISE and SUBMIT
are handled by the environment itself, identically for every domain.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.rubric import Rubric
from harness_gym.core.state import COUNT_CAPS, FEATURE_INDEX, HarnessState
from harness_gym.core.task import Task, TaskFileError, packaged_task_file, read_jsonl
from harness_gym.core.trajectory import StepRecord, artifact_hash
from harness_gym.executors.base import (
    JUDGE,
    REPLY_KINDS,
    ArtifactPool,
    Context,
    Executor,
    ExecutorRequest,
    ExecutorResponse,
    Feedback,
    Finding,
    Flawed,
    FlawKind,
    RequestKind,
    error_kind,
)
from harness_gym.executors.profiles import DraftParams

if TYPE_CHECKING:
    from harness_gym.envs.features import DomainFeatures
    from harness_gym.executors.prompts import Prompts


@dataclass(slots=True)
class Outcome:
    """The observable result of one harness operation, in the terms the environment tracks.

    Built on every step, so a plain slotted record rather than a frozen one; treat it as read-only.
    """

    text: str
    valid: bool = True
    """False only for an illegal (masked) action, which the environment turns into a no-op. A legal tool
    call with bad arguments was carried out: its validity is ``tool["valid"]``."""
    evidence: tuple[str, ...] = ()
    tool: Mapping[str, Any] | None = None
    """``{"name", "valid", "ok"}`` for a tool call."""
    check: Mapping[str, float] | None = None
    """``{"coverage", "missing"}`` for a check."""
    tests: Mapping[str, int] | None = None
    """``{"passed", "total"}`` for a test run."""
    issues: tuple[str, ...] = ()
    failure: bool = False
    """A failure signal the harness can see (failing tests, a check that found problems, an error)."""
    feedback: Feedback | None = None
    """Feedback on the current draft, handed to the executor's next REVISE."""


@dataclass(frozen=True)
class Verdict:
    """The verifier's judgement of a terminal artifact."""

    rubric: Rubric
    signals: Mapping[str, float] = field(default_factory=dict)
    """Measurements HMS reads (``pass_rate``, ``claim_support``, ...)."""


def episode_key(rng: np.random.Generator) -> int:
    """A key for the episode about to start: a hash of the generator's state, so it is a function of the
    reset seed (and of the episodes since) without consuming a draw."""
    bit_generator = rng.bit_generator
    state = bit_generator.state
    if type(bit_generator) is np.random.PCG64:  # the env's own: repr(state) written out, no dict walk
        inner = state["state"]
        text = (
            f"{{'bit_generator': 'PCG64', 'state': {{'state': {inner['state']}, 'inc': {inner['inc']}}}, "
            f"'has_uint32': {state['has_uint32']}, 'uinteger': {state['uinteger']}}}"
        )
    else:
        text = repr(state)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


@dataclass(slots=True)
class Episode:
    """The running episode as domains see it."""

    task: Task
    state: HarnessState
    rng: np.random.Generator
    executor: Executor
    context: Context = field(default_factory=Context)
    draft: str | None = None
    draft_hash: str | None = None
    draft_version: int = 0
    feedback: Feedback | None = None
    steps: list[StepRecord] = field(default_factory=list)
    episode_id: str | None = None
    """``<env id>/<task id>/seed=<seed>[/<tag>]`` (``trajectory["episode_id"]``): what audit records and
    response-cache rows name the episode by."""
    usage: dict[str, float] = field(default_factory=lambda: dict.fromkeys(EPISODE_USAGE_KEYS, 0))
    """The episode's executor usage so far (``EPISODE_USAGE_KEYS``), the final info's ``usage``."""
    pending_io: dict[str, Any] | None = None
    """The latest executor call's audit record (``ExecutorResponse.io``), until the step records it."""
    pending_usage: dict[str, float] | None = None
    """What this step's executor calls cost so far (``STEP_USAGE_KEYS``), until the step records it."""
    key: int = 0
    """The episode's key (``ExecutorRequest.episode_key``): set from the environment's generator at reset."""

    def ask(self, kind: RequestKind) -> ExecutorResponse:
        """One executor call about the current draft, with its usage added to the episode's."""
        usage = self.usage
        state = self.state
        request = ExecutorRequest(  # positionally: sample_index, revision, episode_key, episode, step
            kind,
            self.task,
            self.context,
            self.draft,
            self.feedback,
            int(usage["executor_calls"]),
            state.revisions,
            self.key,
            self.episode_id,
            state.t + 1,
        )
        response = self.executor.complete(request, self.rng)
        self.pending_io = response.io
        if response.error is not None:
            usage[error_kind(response.error)] += 1
        spent, cached = response.usage, response.cached
        prompt, completion, latency = spent.prompt_tokens, spent.completion_tokens, spent.latency_s
        usage["executor_calls"] += 1
        usage["prompt_tokens"] += prompt
        usage["completion_tokens"] += completion
        usage["cost_usd"] += spent.cost_usd
        usage["latency_s"] += latency
        if cached is not None:
            usage["cache_hits"] += cached
            usage["cache_misses"] += not cached
        if not cached:  # sent to the model (a simulated executor's calls all are)
            usage["sent_calls"] += 1
            usage["sent_prompt_tokens"] += prompt
            usage["sent_completion_tokens"] += completion
        step = self.pending_usage
        if step is None:
            step = self.pending_usage = dict.fromkeys(STEP_USAGE_KEYS, 0)
        step["calls"] += 1
        step["prompt_tokens"] += prompt
        step["completion_tokens"] += completion
        step["latency_s"] += latency
        step["cached"] += bool(cached)
        return response

    def judge(self) -> tuple[bool, Finding | None]:
        """A judge-type check of the current draft: (passed, the issue it reported or None)."""
        response = self.ask("judge")
        if response.error is not None:
            return False, Finding(JUDGE, f"judge error: {response.error}")
        verdict = response.text.strip()
        passed = verdict.upper().startswith("PASS")
        return passed, None if passed else Finding(JUDGE, f"judge: {verdict}")


STEP_USAGE_KEYS = ("calls", "prompt_tokens", "completion_tokens", "latency_s", "cached")
"""A step record's ``usage``: its executor calls, their tokens and seconds, and how many were cache hits."""

EPISODE_USAGE_KEYS = (
    "executor_calls",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
    "cache_hits",
    "cache_misses",
    "sent_calls",
    "sent_prompt_tokens",
    "sent_completion_tokens",
    *REPLY_KINDS.values(),
)
"""An episode's ``usage``: every executor call with its tokens, the cost and seconds of those sent to the
model, response-cache hits and misses, the calls sent (not replayed from a cache) with their tokens, and
the executor errors by kind (``REPLY_KINDS``: parse_failures, truncations, no_content, tool_calls,
refusals). A cache hit costs no money and no seconds."""


BASE_MAX_ERRORS = 3
"""Executor errors (with no draft yet) after which the Base script stops asking for a draft and submits."""


DEFAULT_STEP_COSTS: Mapping[Action, float] = {
    Action.OBSERVE: 1.0,
    Action.RETRIEVE: 1.0,
    Action.CALL_TOOL: 2.0,
    Action.DRAFT: 3.0,
    Action.CHECK: 2.0,
    Action.REVISE: 3.0,
    Action.SUBMIT: 0.0,
}


class VerifierCache:
    """Verifier results keyed by (what, task, artifact hash): a verifier runs once per distinct artifact.
    A task is its task set's version and its id: MDP v2's task sets reuse v1's ids for other tasks.

    Bounded (oldest entries are dropped first) so a long run with a real LLM cannot grow it without
    limit. One instance per process, shared by every environment of that process.
    """

    def __init__(self, max_entries: int = 50_000) -> None:
        self.max_entries = max_entries
        self._store: dict[tuple[str, str, str, str | tuple[str, ...]], Any] = {}
        self.hits = self.misses = 0

    def get(self, what: str, task: Task, artifact: str | tuple[str, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``, or what it returned before for this (what, task, artifact). A tuple of texts (the
        tool results so far, say) is a key as it is: cheaper than hashing one text joined from them."""
        key = (
            what,
            task.version,
            task.task_id,
            artifact if type(artifact) is tuple else artifact_hash(artifact),
        )
        try:
            value = self._store[key]
        except KeyError:
            self.misses += 1
            value = compute()
            if len(self._store) >= self.max_entries:
                del self._store[next(iter(self._store))]
            self._store[key] = value
            return value
        self.hits += 1
        return value


VERIFIER_CACHE = VerifierCache()


@cache
def _load_tasks(path: str) -> tuple[Task, ...]:
    return tuple(read_jsonl(path))


class Domain(ABC):
    """Base class of every domain and adapter. Subclasses set the class attributes and hooks."""

    name: ClassVar[str]
    env_id: ClassVar[str]
    task_file: ClassVar[str]
    draft_params: ClassVar[DraftParams] = DraftParams()
    """The simulated executor's first-draft parameters here (fitted to the paper's Base G); the rest of
    its mechanism comes from the executor profile (``harness_gym.executors.profiles``)."""
    max_steps: ClassVar[int] = 12
    cost_budget: ClassVar[float] = 14.0
    step_costs: ClassVar[Mapping[Action, float]] = DEFAULT_STEP_COSTS
    supported: ClassVar[frozenset[Action]]
    """Actions that do something here; the others are always masked (SUBMIT is always legal)."""
    tool_needs_draft: ClassVar[bool] = False
    criteria: ClassVar[Mapping[str, float]]
    """Rubric criteria and their maximum scores."""
    events: ClassVar[frozenset[str]]
    """HMS events that apply to this domain."""
    evidence_required: ClassVar[bool] = False
    base_script: ClassVar[tuple[tuple[Action, str | None], ...]]
    """Base harness: the first (action, done-feature) whose feature is still 0 and which is legal."""
    dataset_name: ClassVar[str | None] = None
    """The ``<domain>`` of dataset ids ``harness/<domain>/...``; ``name`` unless a task source of the same
    domain needs its own (HumanEval's datasets must not mix with coding's)."""
    prompts_cls: ClassVar[type[Prompts] | None] = None
    """How a chat LLM executor is prompted here and its replies parsed (``<domain>/prompts.py``)."""
    calls: ClassVar[Mapping[Action, RequestKind]] = {Action.DRAFT: "draft", Action.REVISE: "revise"}
    """The actions that make an executor call here, and its kind (``token_budget`` prices them ahead)."""
    flaws: ClassVar[Mapping[str, FlawKind]] = {}
    """Every flaw kind of this domain's artifact pools, in one place: its class (``form`` or ``content``),
    the check components whose findings name it (feedback naming one of them is localised feedback on
    that flaw) and what its fix needs gathered (``evidence``). The simulated executor reads it; the
    environment pages list it."""
    mdp2_task_file: ClassVar[str | None] = None
    """The task set of MDP v2 (``obs_layout="v2"``): tasks generated to differ in what they need
    (``<name>-v1.jsonl``, written by the domain's generator). None: MDP v2 plays the v0 tasks here."""
    features: ClassVar[DomainFeatures | None] = None
    """What observation layout v2 reads off this domain's task text and check findings
    (``harness_gym.envs.features``; each setting declares its ``<domain>/features.py``)."""
    runs_code: ClassVar[bool] = False
    """Whether the verifier runs model-written code (in ``harness_gym.sandbox``): an environment then
    requires the isolation in force when it is made (a one-line refusal where the boundary cannot be had)
    and records it in every final info as ``sandbox``."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"unknown argument(s) for {self.env_id}: {', '.join(sorted(kwargs))}")
        self._pools: dict[str, ArtifactPool] = {}
        self._supported = tuple(Action(a) in self.supported for a in range(N_ACTIONS))
        self._per_task: dict[tuple[str, str], Any] = {}
        self._masks: dict[tuple[bool, bool, bool], np.ndarray] = {}

    @classmethod
    def dataset_domain(cls) -> str:
        return cls.dataset_name or cls.name

    # -- tasks ---------------------------------------------------------------------------------
    def tasks(self, obs_layout: str = "v1") -> list[Task]:
        """The whole task set (both splits) the MDP of ``obs_layout`` plays, validated."""
        path = packaged_task_file(
            self.mdp2_task_file if obs_layout == "v2" and self.mdp2_task_file else self.task_file
        )
        tasks = _load_tasks(str(path))
        for task in tasks:
            if task.domain != self.name:
                raise TaskFileError(f"{path}: task {task.task_id} belongs to domain {task.domain!r}")
        return list(tasks)

    def pool(self, task: Task) -> ArtifactPool:
        pool = self._pools.get(task.task_id)
        if pool is None:
            payload = task.payload
            pool = ArtifactPool(
                reference=payload["reference"],
                flawed=tuple(Flawed(item["flaw"], item["source"]) for item in payload["pool"]),
            )
            self._pools[task.task_id] = pool
        return pool

    def per_task(self, what: str, task: Task, build: Callable[[], Any]) -> Any:
        """A per-task object (search index, gold set, ...) built on first use and kept."""
        key = (what, task.task_id)
        value = self._per_task.get(key)
        if value is None:
            value = self._per_task[key] = build()
        return value

    def tool_pool(self, task: Task, context: Context) -> ArtifactPool:
        """Candidate next tool calls (right one + wrong ones) for a simulated executor's tool request."""
        raise NotImplementedError(f"{self.name} has no executor-chosen tool calls")

    # -- action semantics ----------------------------------------------------------------------
    def informedness(self, task: Task, context: Context) -> float:
        """How much of what the executor needs the harness has gathered, in [0, 1]."""
        return float(context.observed)

    def action_mask(self, ep: Episode) -> np.ndarray:
        """Generic rule: each supported operation once it makes sense (runs on every step: the masks of
        the eight (observed, can retrieve, has a draft) cases are built once and shared, read-only; copy
        one to change it)."""
        s = ep.state
        key = (bool(s.observed), bool(self.can_retrieve(ep)), bool(s.has_draft))
        mask = self._masks.get(key)
        if mask is None:
            observed, retrieve, has_draft = key
            sup = self._supported
            mask = self._masks[key] = np.array(
                (
                    sup[0] and not observed,
                    sup[1] and retrieve,
                    sup[2] and (has_draft or not self.tool_needs_draft),
                    sup[3] and not has_draft,
                    sup[4] and has_draft,
                    sup[5] and has_draft,
                    True,
                ),
                dtype=np.int8,
            )
            mask.flags.writeable = False
        return mask

    def evidence(self, task: Task, context: Context, needs: str) -> float:
        """How much of what a fix needing ``needs`` (``FlawKind.needs``) the harness gathered, in [0, 1]:
        ``none`` 1, ``observed`` whether the task was read, ``informedness`` the domain's measure. A domain
        with needs of its own overrides this and defers to it for these three."""
        if needs == "none":
            return 1.0
        if needs == "observed":
            return float(context.observed)
        if needs == "informedness":
            return self.informedness(task, context)
        raise ValueError(f"{self.name}: unknown evidence need {needs!r}")

    def can_retrieve(self, ep: Episode) -> bool:
        return True

    def observe(self, ep: Episode) -> Outcome:
        return Outcome(text="read the task statement and inputs")

    def retrieve(self, ep: Episode) -> Outcome:
        raise NotImplementedError(f"{self.name} has no RETRIEVE")

    def call_tool(self, ep: Episode) -> Outcome:
        raise NotImplementedError(f"{self.name} has no CALL_TOOL")

    @abstractmethod
    def check(self, ep: Episode) -> Outcome:
        """Verify the current draft with what a harness may see (never hidden references)."""

    @abstractmethod
    def score(self, ep: Episode, artifact: str) -> Verdict:
        """Score a terminal artifact with the domain's real verifier; criteria as in ``criteria``."""

    def verdict(self, ep: Episode, artifact: str | None) -> Verdict:
        """Score what was submitted; nothing drafted scores 0 on every criterion."""
        if artifact is None:
            return Verdict(rubric={name: (0.0, top) for name, top in self.criteria.items()})
        return self.score(ep, artifact)

    # -- Base harness --------------------------------------------------------------------------
    @classmethod
    def base_action(cls, obs: np.ndarray, mask: np.ndarray) -> int:
        """The next step of ``base_script``. On executor errors (an unparsable or truncated reply) the
        script asks for a draft again, but once ``BASE_MAX_ERRORS`` errors have piled up with no draft it
        submits (nothing drafted scores 0) rather than re-issue the same request until the budget ends."""
        for action, done in cls.base_script:
            if (done is None or obs[FEATURE_INDEX[done]] <= 0) and mask[action]:
                if action == Action.DRAFT and obs[FEATURE_INDEX["errors"]] * COUNT_CAPS["errors"] >= (
                    BASE_MAX_ERRORS - 1e-6
                ):
                    return int(Action.SUBMIT)
                return int(action)
        return int(Action.SUBMIT)
