"""Rollouts of a policy written as a Minari dataset: deterministic, parallel, resumable and atomic.

Episode ``i`` runs task ``task_ids[i % len(task_ids)]`` of the split (round robin, so every task gets
its share and per-task advantages are well defined) with seed ``seed + i``; its content depends on
nothing else, so any number of worker processes produces identical arrays. Finished episodes are
checkpointed one file each under ``<root>/.harness-collect/``; an interrupted run resumes from them to
the identical dataset. The dataset is built in a staging directory and moved into place in one rename.

Dataset layout (every episode, ``T`` steps; infos have ``T + 1`` rows, row ``k`` belonging to
observation ``k``):

- ``observations`` (T+1, 31) float32, ``actions`` (T,) int64, ``rewards`` (T,) (0 except the last = G),
  ``terminations`` / ``truncations`` (T,) bool;
- infos ``action_mask`` int8 (T+1, 7); ``behavior_logp`` (log-probability of ``actions[k]`` under the
  behaviour policy, NaN at row T); ``task_index`` (into metadata ``harness_task_ids``); ``behavior``
  (into ``harness_behaviors``); and, NaN / -1 except at row T: ``G``, ``hms_norm``, ``hms_fired`` and
  ``hms_applicable`` int8 (T+1, 7) in ``harness_hms_events`` order, ``rubric_score`` / ``rubric_max``
  (T+1, K) in ``harness_rubric_criteria`` order (NaN for a criterion a task does not have);
- with a chat-LLM executor, action ``k``'s executor call in row ``k`` (row T and steps without a call:
  empty key, -1): ``llm_cache_key`` (bytes, ``S64``: the response-cache key, which gives the prompt and
  the reply), ``llm_prompt_tokens`` / ``llm_completion_tokens`` int64 and ``llm_error`` int8 (index into
  metadata ``harness_llm_errors``; -1: the reply gave an artifact). A simulated MDP v2 collection
  (``obs_layout="v2"``) stores ``llm_prompt_tokens`` / ``llm_completion_tokens`` too (``token_arrays``),
  so a token price is a relabel. What depends on the run rather than on the episode (each call's
  latency, whether it was a cache hit, its cost) is kept beside the arrays, in the dataset directory's
  ``AUDIT_FILE`` (JSON lines: episode, episode id, step, key, cached, latency_s, tokens, cost_usd, kind),
  so the arrays stay identical for any scheduling. The cache's table
  ``calls`` also maps each (episode id ``<env id>/<task id>/seed=<seed>/<behaviour>``, step) to its key.

Behaviours (``--policy``) other than the scripted policies of ``harness_gym.policies.scripted``:

- ``mixed``: Base and exploratory (epsilon-perturbed Base) alternating so that every task gets both in equal
  numbers (``alternating``); the paper's buffer.
- ``medium-expert``: Base and expert alternating the same way (half and half, on the same tasks).
- ``medium-replay``: exploratory whose epsilon rises linearly over the collection, episode ``i`` of ``N``
  having ``epsilon * i / (N - 1)`` (``replay_epsilon``): episode 0 is Base, the last uniformly random for
  ``epsilon = 1``. D4RL's medium-replay holds what a learner saw on its way to medium; read from its last
  episode to its first, this is that path from random to Base. Each episode's epsilon is in its episode
  metadata (``epsilon``).
- ``coverage``: forks of Base episodes (``coverage_plans``). Parent ``p`` is the Base episode of task
  ``p mod n`` with seed ``seed + p`` (episode ``p`` of a ``base`` collection with the same seed). The
  dataset holds each parent, then, for every step ``k`` of it and every action legal there other than
  the one Base took, a fork: the parent's first ``k`` steps replayed exactly (same seed, same actions, so
  the same states), the forced action, then Base to the end. Parents are taken in order until
  ``episodes`` are written (the last one's forks may be cut). Episode metadata: ``parent_id`` (``p``),
  ``fork_step`` (``k``; -1 for the parent itself) and ``forced_action`` (-1 for the parent). The forced
  step's ``behavior_logp`` is log(1 / legal actions), the share of that state's forks taking it: a design
  weight, not a policy's probability (no single policy collected this data; FQE is its estimator).

Per-episode metadata, where a behaviour has any, is Minari's episode metadata
(``dataset.storage.get_episode_metadata``) beside ``seed``.

Minari is imported only here, never by ``import harness_gym``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np

from harness_gym._version import __version__
from harness_gym.core.actions import Action
from harness_gym.core.hms import EVENTS
from harness_gym.core.state import LAYOUT_VERSIONS, LAYOUTS
from harness_gym.core.task import SPLITS
from harness_gym.envs.env import check_token_price, simulator_kwargs
from harness_gym.envs.registry import ALL_ENV_IDS, env_class
from harness_gym.evaluation.engine import EngineConfig, EngineError, config_key, differences
from harness_gym.evaluation.engine import run as run_engine
from harness_gym.evaluation.reference_scores import (
    reference_episode_count,
    reference_scores,
    reference_table_version,
)
from harness_gym.evaluation.rollout import USAGE_KEYS, policy_rng
from harness_gym.evaluation.spend import calls_of, distinct_episodes, episode_trace, summarize_calls
from harness_gym.executors.base import REPLY_KINDS

if TYPE_CHECKING:
    from gymnasium.envs.registration import EnvSpec

    from harness_gym.executors.openai_executor import OpenAIConfig

BEHAVIORS = (
    "base",
    "exploratory",
    "forced-check",
    "check-revise",
    "expert",
    "random",
    "mixed",
    "medium-expert",
    "medium-replay",
    "coverage",
)
"""Behaviours a collection can follow: the observation-only scripted policies and the schedules over them
described in the module docstring (``mixed``, ``medium-expert``, ``medium-replay``, ``coverage``)."""
ALTERNATING = {"mixed": ("base", "exploratory"), "medium-expert": ("base", "expert")}
"""Behaviours that alternate two scripted policies episode by episode (``alternating``)."""

DATASET_ID = re.compile(r"^harness/(?P<domain>[a-z_]+)/(?P<name>[a-z0-9][a-z0-9_-]*)-v(?P<version>\d+)$")
FORMAT_VERSION = 1
CHECKPOINTS = ".harness-collect"


class CollectError(ValueError):
    """A collection request that cannot be carried out; the message names the problem."""


@dataclass(frozen=True)
class CollectConfig:
    """What to collect. Every field changes the dataset's content (of ``executor``, the settings that
    change replies: model, endpoint, sampling) but those in ``NEUTRAL``; the resume check and the
    dataset's recorded ``harness_config`` are ``content_key``, built from the fields themselves."""

    env_id: str
    policy: str
    episodes: int
    dataset_id: str
    seed: int = 0
    split: str = "train"
    epsilon: float = 0.3
    """Exploratory policy: probability of a uniformly random legal action (``medium-replay``: the top of
    its ramp)."""
    executor: OpenAIConfig | None = None
    """A chat LLM executor's settings; ``None`` is the embedded simulated executor."""
    max_steps: int | None = None
    """Step budget of every episode; ``None`` is the env id's own (recorded in the dataset's env spec)."""
    workers: int = 1
    concurrency: int = 1
    """Episodes in flight per process (the dataset does not depend on it)."""
    backend: str = "local"
    """``local`` (threads in ``workers`` processes) or ``ray`` (``workers`` Ray tasks)."""
    ray_address: str | None = None
    overwrite: bool = False
    root: str | None = None
    """Minari datasets directory; default ``$MINARI_DATASETS_PATH`` or ``~/.minari/datasets``."""
    show_progress: bool = True
    executor_profile: str | None = None
    """The simulated executor's profile: a shipped name or a JSON path; ``None`` is ``default`` (never
    ``$HARNESS_GYM_EXECUTOR_PROFILE``, which only the command line reads)."""
    token_budget: int | None = None
    """Executor tokens an episode may spend (``gym.make``'s ``token_budget``); ``None``: no limit."""
    token_price: float = 0.0
    """G per thousand executor tokens charged in the rewards (``gym.make``'s ``token_price``); 0: the
    paper's rewards."""
    obs_layout: str = "v1"
    """The MDP's observation layout and task set (``gym.make``'s ``obs_layout``): ``v1``, the paper's, or
    ``v2`` (``docs/mdp-v2.md``)."""

    NEUTRAL: ClassVar[frozenset[str]] = frozenset(
        {"workers", "concurrency", "backend", "ray_address", "overwrite", "root", "show_progress"}
    )
    """Fields that never change the dataset: scheduling, where it goes, whether to replace it, display."""
    ADDED: ClassVar[frozenset[str]] = frozenset(
        {"executor_profile", "token_budget", "token_price", "obs_layout"}
    )
    """Fields added after datasets were published: in the key only when set, so published datasets'
    ``harness_config`` (and their digests) stay as they were."""

    def content_key(self) -> dict[str, Any]:
        return config_key(self, self.NEUTRAL, self.ADDED)

    @property
    def engine(self) -> EngineConfig:
        return EngineConfig(self.concurrency, self.workers, self.backend, self.ray_address)

    def env_kwargs(self) -> dict[str, Any]:
        """What ``gym.make`` needs besides the id and split; the profile always explicit."""
        kwargs: dict[str, Any] = {} if self.executor is None else {"executor": self.executor}
        if self.max_steps is not None:
            kwargs["max_steps"] = self.max_steps
        return kwargs | simulator_kwargs(
            self.executor_profile, self.token_budget, self.token_price, self.obs_layout
        )


@dataclass
class CollectReport:
    """What was collected, with the statistics any reader can recompute from the dataset alone."""

    dataset_id: str
    path: str
    stats: dict[str, Any]
    resumed_episodes: int = 0
    seconds: float = 0.0
    usage: dict[str, float] = field(default_factory=dict)
    """Executor calls, tokens, cost and response-cache hits/misses summed over the episodes run now."""
    spend: dict[str, Any] = field(default_factory=dict)
    """``spend.summarize_calls`` of the chat-LLM calls of the episodes run now (empty: simulated)."""
    distinct: tuple[int, int] = (0, 0)
    """(distinct, total) episodes of the dataset (``spend.distinct_episodes``)."""
    outcome: list[dict[str, Any]] = field(default_factory=list)
    """Per episode in dataset order: task, seed, G, actions and trace (what a replay must reproduce)."""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CollectedEpisode:
    """A written episode with the fields ``minari.EpisodeData`` reads back, straight from memory."""

    id: int
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict[str, np.ndarray]


# -- validation ------------------------------------------------------------------------------------
def dataset_root(root: str | os.PathLike | None) -> Path:
    """The datasets directory as an absolute path (Minari mis-joins relative ones)."""
    if root is None:
        env_root = os.environ.get("MINARI_DATASETS_PATH")
        root = env_root if env_root else Path.home() / ".minari" / "datasets"
    return Path(root).expanduser().absolute()


def validate(config: CollectConfig) -> Path:
    """Check the request before any work; returns the dataset's final directory."""
    if config.env_id not in ALL_ENV_IDS:
        known = ", ".join(ALL_ENV_IDS)
        raise CollectError(f"unknown env id {config.env_id!r}; known: {known}")
    if config.policy not in BEHAVIORS:
        raise CollectError(f"unknown policy {config.policy!r}; expected one of {', '.join(BEHAVIORS)}")
    if config.episodes < 1:
        raise CollectError(f"episodes must be at least 1, got {config.episodes}")
    if config.workers < 1:
        raise CollectError(f"workers must be at least 1, got {config.workers}")
    try:
        config.engine  # noqa: B018  (validates concurrency, workers and backend)
    except EngineError as exc:
        raise CollectError(str(exc)) from None
    if config.split not in (*SPLITS, "all"):
        raise CollectError(f"unknown split {config.split!r}; expected train, eval or all")
    if not 0.0 <= config.epsilon <= 1.0:
        raise CollectError(f"epsilon must lie in [0, 1], got {config.epsilon}")
    if config.max_steps is not None and config.max_steps < 1:
        raise CollectError(f"max_steps must be at least 1, got {config.max_steps}")
    if config.token_budget is not None and not (
        isinstance(config.token_budget, int) and config.token_budget > 0
    ):
        raise CollectError(f"token_budget must be a positive integer, got {config.token_budget!r}")
    try:
        check_token_price(config.token_price)
    except ValueError as exc:
        raise CollectError(str(exc)) from None
    if config.obs_layout not in LAYOUTS:
        raise CollectError(f"unknown obs_layout {config.obs_layout!r}; expected one of {', '.join(LAYOUTS)}")
    if config.executor_profile is not None:
        from harness_gym.envs.registry import executor_profile

        try:
            executor_profile(config.executor_profile)
        except ValueError as exc:
            raise CollectError(str(exc)) from None
    if config.executor is not None:
        resolved = config.executor.resolved()
        if resolved.model is None or resolved.base_url is None:
            raise CollectError(
                "the openai executor needs a model and a base URL (--model/--base-url or "
                "HARNESS_GYM_LLM_MODEL/HARNESS_GYM_LLM_BASE_URL)"
            )
    match = DATASET_ID.match(config.dataset_id)
    if match is None:
        raise CollectError(
            f"malformed dataset id {config.dataset_id!r}: expected harness/<domain>/<name>-v<N>, "
            "e.g. harness/coding/mixed-v0"
        )
    domain = env_class(config.env_id).domain_cls.dataset_domain()
    if match["domain"] != domain:
        raise CollectError(
            f"dataset id {config.dataset_id!r} names domain {match['domain']!r}, "
            f"but {config.env_id} is {domain!r}"
        )
    root = dataset_root(config.root)
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".write-probe-"):
            pass
    except OSError as exc:
        raise CollectError(f"cannot write datasets under {root}: {exc.strerror or exc}") from None
    target = root / config.dataset_id
    if target.exists() and not config.overwrite:
        raise CollectError(
            f"dataset {config.dataset_id!r} already exists at {target}; pass overwrite to replace it"
        )
    return target


# -- one episode -----------------------------------------------------------------------------------
_ENVS: dict[tuple[str, str, OpenAIConfig | None, int | None, str | None, int | None, float], gym.Env] = {}


def alternating(index: int, n_tasks: int) -> int:
    """0 or 1: which of two alternating behaviours episode ``index`` over ``n_tasks`` tasks follows.

    Alternating by episode parity alone would give task ``i mod n`` the same behaviour in every round
    when ``n`` is even, so no task's advantage would compare the two behaviours. For even ``n`` the
    parity of the round is added, so each task alternates between rounds (odd ``n`` already does):
    after two rounds every task has had both, and within a round the behaviours still alternate."""
    if n_tasks < 1:
        raise ValueError(f"n_tasks must be >= 1, got {n_tasks}")
    shift = index // n_tasks if n_tasks % 2 == 0 else 0
    return (index + shift) % 2


def mixed_behavior(index: int, n_tasks: int) -> str:
    """Behaviour of episode ``index`` of a ``mixed`` collection over ``n_tasks`` tasks (``alternating``)."""
    return ALTERNATING["mixed"][alternating(index, n_tasks)]


def replay_epsilon(index: int, episodes: int, epsilon: float) -> float:
    """Epsilon of episode ``index`` of a ``medium-replay`` collection of ``episodes``: a linear ramp from
    0 (the first, pure Base) to ``epsilon`` (the last)."""
    return epsilon * index / (episodes - 1) if episodes > 1 else 0.0


@dataclass(frozen=True)
class EpisodePlan:
    """What episode ``index`` of a collection runs: the scripted policy, its epsilon, the episode whose
    task and seed it uses (``source``) and, for a coverage fork, the step and the action it forces."""

    policy: str
    behavior: str
    """Its name in the dataset's ``harness_behaviors`` (``coverage`` for a fork)."""
    source: int
    epsilon: float = 0.0
    fork_step: int = -1
    forced_action: int = -1

    def metadata(self, config: CollectConfig) -> dict[str, Any]:
        """Episode metadata beside Minari's ``seed`` (none for a plain scripted behaviour)."""
        if config.policy == "medium-replay":
            return {"epsilon": self.epsilon}
        if config.policy == "coverage":
            fork = {"fork_step": self.fork_step, "forced_action": self.forced_action}
            return {"parent_id": self.source, **fork}
        return {}


def episode_plan(config: CollectConfig, index: int, n_tasks: int) -> EpisodePlan:
    """The plan of episode ``index`` for every behaviour but ``coverage`` (``coverage_plans``)."""
    if config.policy in ALTERNATING:
        name = ALTERNATING[config.policy][alternating(index, n_tasks)]
        return EpisodePlan(name, name, index, config.epsilon)
    if config.policy == "medium-replay":
        epsilon = replay_epsilon(index, config.episodes, config.epsilon)
        return EpisodePlan("exploratory", "exploratory", index, epsilon)
    if config.policy == "coverage":
        raise ValueError("coverage episodes are planned together (coverage_plans)")
    return EpisodePlan(config.policy, config.policy, index, config.epsilon)


def behaviors(config: CollectConfig) -> list[str]:
    """The dataset's ``harness_behaviors``: what the per-step ``behavior`` info indexes."""
    if config.policy in ALTERNATING:
        return list(ALTERNATING[config.policy])
    if config.policy == "medium-replay":
        return ["exploratory"]
    if config.policy == "coverage":
        return ["base", "coverage"]
    return [config.policy]


def behavior_versions(config: CollectConfig) -> dict[str, int]:
    """Versions of the scripted policies behind the data that carry one (the expert's, which changes as
    the simulator does): ``{policy: version}``, of its rules on the collection's layout (``version_v2``
    on v2 where a policy has one)."""
    from harness_gym.policies.scripted import make_policy

    names = {"coverage": ["base"], "medium-replay": ["exploratory"]}.get(config.policy, behaviors(config))
    policies = [make_policy(name, config.env_id, config.epsilon) for name in names]
    attribute = "version_v2" if config.obs_layout == "v2" else "version"
    versions = {p.name: getattr(p, attribute, getattr(p, "version", None)) for p in policies}
    return {name: version for name, version in versions.items() if version is not None}


def coverage_plans(config: CollectConfig, env: gym.Env | None = None) -> list[EpisodePlan]:
    """The ``episodes`` plans of a ``coverage`` collection: each parent, then its forks in (step, action)
    order, parent after parent (module docstring). Rolls the parents, which are Base episodes."""
    from harness_gym.policies.scripted import make_policy

    env = env if env is not None else _env(config)
    ids = [task.task_id for task in env.unwrapped.tasks]
    base = make_policy("base", config.env_id)
    plans: list[EpisodePlan] = []
    parent = 0
    while len(plans) < config.episodes:
        plans.append(EpisodePlan("base", "base", parent))
        obs, info = env.reset(seed=config.seed + parent, options={"task_id": ids[parent % len(ids)]})
        step = 0
        while True:
            mask = info["action_mask"]
            taken = base.act(obs, mask, policy_rng(config.seed + parent))
            plans += [
                EpisodePlan("base", "coverage", parent, fork_step=step, forced_action=int(action))
                for action in np.flatnonzero(mask)
                if action != taken
            ]
            obs, _, terminated, truncated, info = env.step(taken)
            step += 1
            if terminated or truncated:
                break
        parent += 1
    return plans[: config.episodes]


def task_ids(env_id: str, split: str, obs_layout: str = "v1") -> list[str]:
    """The ids of ``split``'s tasks in the task set ``obs_layout`` plays, in task-file order."""
    from harness_gym.core.task import select

    return [task.task_id for task in select(env_class(env_id).domain_cls().tasks(obs_layout), split)]


def _env(config: CollectConfig) -> gym.Env:
    """This process's environment for ``config`` (one per env id, split, executor, budgets and profile)."""
    key = (
        config.env_id,
        config.split,
        config.executor,
        config.max_steps,
        config.executor_profile,
        config.token_budget,
        config.token_price,
        config.obs_layout,
    )
    env = _ENVS.get(key)
    if env is None:
        env = _ENVS[key] = gym.make(config.env_id, split=config.split, **config.env_kwargs())
    return env


def rollout(
    config: CollectConfig, index: int, env: gym.Env | None = None, plan: EpisodePlan | None = None
) -> dict[str, np.ndarray]:
    """Episode ``index`` of a collection as flat arrays, on ``env`` (default: one cached per process).

    ``plan`` is the episode's (``episode_plan`` by default; a coverage collection passes its own). The
    behaviour policy is built afresh for every episode, so no state crosses episodes.
    """
    from harness_gym.policies.scripted import make_policy

    env = env if env is not None else _env(config)
    domain = env.unwrapped.domain
    ids = [task.task_id for task in env.unwrapped.tasks]
    plan = plan if plan is not None else episode_plan(config, index, len(ids))
    policy = make_policy(plan.policy, config.env_id, plan.epsilon)
    seed = config.seed + plan.source
    task_index = plan.source % len(ids)

    obs, info = env.reset(seed=seed, options={"task_id": ids[task_index], "episode_tag": plan.behavior})
    rng = policy_rng(seed)
    observations, masks = [obs], [info["action_mask"]]
    actions, logps, rewards, terms, truncs = [], [], [], [], []
    while True:
        mask = info["action_mask"]
        if len(actions) == plan.fork_step:
            action = plan.forced_action
            if not mask[action]:
                raise CollectError(
                    f"coverage episode {index}: action {action} is not legal at step {plan.fork_step} of "
                    f"parent {plan.source} (the replayed prefix diverged from the parent)"
                )
            logps.append(-float(np.log(mask.sum())))
        else:
            action = policy.act(obs, mask, rng)
            probs = policy.action_probs(obs, mask)
            logps.append(float(np.log(probs[action])))
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        masks.append(info["action_mask"])
        actions.append(action)
        rewards.append(reward)
        terms.append(terminated)
        truncs.append(truncated)
        if terminated or truncated:
            break

    n = len(observations)
    steps = info["trajectory"]["steps"]
    criteria = list(domain.criteria)
    last = np.full(n, np.nan)
    last[-1] = info["G"]
    hms_norm = np.full(n, np.nan)
    hms_norm[-1] = info["hms_norm"]
    fired = np.full((n, len(EVENTS)), -1, dtype=np.int8)
    applicable = np.full((n, len(EVENTS)), -1, dtype=np.int8)
    fired[-1] = [info["hms"][e]["fired"] for e in EVENTS]
    applicable[-1] = [info["hms"][e]["applicable"] for e in EVENTS]
    score = np.full((n, len(criteria)), np.nan)
    top = np.full((n, len(criteria)), np.nan)
    for j, name in enumerate(criteria):
        if name in info["rubric"]:
            score[-1, j], top[-1, j] = info["rubric"][name]
    return {
        "observations": np.asarray(observations, dtype=np.float32),
        "actions": np.asarray(actions, dtype=np.int64),
        "rewards": np.asarray(rewards, dtype=np.float64),
        "terminations": np.asarray(terms, dtype=bool),
        "truncations": np.asarray(truncs, dtype=bool),
        "seed": np.asarray(seed, dtype=np.int64),
        "infos/action_mask": np.asarray(masks, dtype=np.int8),
        "infos/behavior_logp": np.asarray([*logps, np.nan]),
        "infos/task_index": np.full(n, task_index, dtype=np.int64),
        "infos/behavior": np.full(n, behaviors(config).index(plan.behavior), dtype=np.int64),
        "infos/G": last,
        "infos/hms_norm": hms_norm,
        "infos/hms_fired": fired,
        "infos/hms_applicable": applicable,
        "infos/rubric_score": score,
        "infos/rubric_max": top,
        "usage": np.asarray([info["usage"][k] for k in USAGE_KEYS], dtype=np.float64),
        **{f"meta/{key}": np.asarray(value) for key, value in plan.metadata(config).items()},
        **(llm_arrays(steps, n) or (token_arrays(steps, n) if config.obs_layout == "v2" else {})),
    }


LLM_ERRORS = tuple(REPLY_KINDS.values())
"""``infos/llm_error`` indexes this (metadata ``harness_llm_errors``)."""
AUDIT_FILE = "harness_calls.jsonl"
"""In a chat-LLM dataset's directory: every executor call with what the run measured of it."""


def llm_arrays(steps: Sequence[dict[str, Any]], n: int) -> dict[str, np.ndarray]:
    """The per-step audit arrays of a chat-LLM episode (empty for a simulated executor's): ``infos/``
    ones go into the dataset, ``audit/`` ones (run-dependent) into ``AUDIT_FILE``."""
    calls = calls_of(steps)
    if not calls:
        return {}
    key = np.full(n, b"", dtype="S64")
    cached = np.full(n, -1, dtype=np.int8)
    error = np.full(n, -1, dtype=np.int8)
    latency, cost = np.full(n, np.nan), np.full(n, np.nan)
    prompt, completion = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    for call in calls:
        row = int(call["step"]) - 1
        key[row] = (call["key"] or "").encode()
        cached[row] = int(bool(call["cached"]))
        latency[row], cost[row] = call["latency_s"], call["cost_usd"]
        prompt[row], completion[row] = call["prompt_tokens"], call["completion_tokens"]
        error[row] = LLM_ERRORS.index(call["kind"]) if call["kind"] else -1
    return {
        "infos/llm_cache_key": key,
        "infos/llm_prompt_tokens": prompt,
        "infos/llm_completion_tokens": completion,
        "infos/llm_error": error,
        "audit/llm_cached": cached,
        "audit/llm_latency_s": latency,
        "audit/llm_cost_usd": cost,
    }


def token_arrays(steps: Sequence[dict[str, Any]], n: int) -> dict[str, np.ndarray]:
    """A simulated episode's per-step executor tokens, in the arrays a chat-LLM episode stores them in
    (row ``k``: action ``k``'s calls; -1 at row T and where no call was made), so a price is a relabel
    (``harness_gym.datasets.pricing``). Stored from MDP v2 on: layout v1's datasets keep their checksums."""
    prompt, completion = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    for row, record in enumerate(steps):
        if "usage" in record:
            prompt[row] = record["usage"]["prompt_tokens"]
            completion[row] = record["usage"]["completion_tokens"]
    return {"infos/llm_prompt_tokens": prompt, "infos/llm_completion_tokens": completion}


def calls_from_arrays(ep: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """The executor calls of a collected episode (``spend.calls_of``'s records) from its audit arrays."""
    if "infos/llm_cache_key" not in ep:
        return []
    out = []
    for row in np.flatnonzero(np.asarray(ep["audit/llm_cached"]) >= 0):
        error = int(ep["infos/llm_error"][row])
        out.append(
            {
                "step": int(row) + 1,
                "key": bytes(ep["infos/llm_cache_key"][row]).decode(),
                "cached": bool(ep["audit/llm_cached"][row]),
                "latency_s": float(ep["audit/llm_latency_s"][row]),
                "prompt_tokens": int(ep["infos/llm_prompt_tokens"][row]),
                "completion_tokens": int(ep["infos/llm_completion_tokens"][row]),
                "cost_usd": float(ep["audit/llm_cost_usd"][row]),
                "kind": LLM_ERRORS[error] if error >= 0 else None,
            }
        )
    return out


def episode_trace_of(ep: dict[str, np.ndarray]) -> str | None:
    """``spend.episode_trace`` of a collected episode, from its actions and audit arrays."""
    if "infos/llm_cache_key" not in ep:
        return None
    names = [action.name for action in Action]
    keys = [bytes(k).decode() or None for k in np.asarray(ep["infos/llm_cache_key"])[:-1]]
    steps = [
        {"action": names[int(a)], **({"executor_io": {"cache_key": k}} if k else {})}
        for a, k in zip(ep["actions"], keys, strict=True)
    ]
    return episode_trace(steps)


# -- checkpoints -----------------------------------------------------------------------------------
def checkpoint_dir(config: CollectConfig) -> Path:
    return dataset_root(config.root) / CHECKPOINTS / config.dataset_id.replace("/", "__")


MAX_TOKENS_CHANGES = "max_tokens_changes"
"""Manifest key: the chat LLM's ``max_tokens`` changes a resumed collection went through."""


def max_tokens_changes(config: CollectConfig) -> list[dict[str, int]]:
    """``[{"from", "to", "episodes_done"}]`` per ``max_tokens`` change on resume (dataset metadata)."""
    manifest = checkpoint_dir(config) / "config.json"
    try:
        return list(json.loads(manifest.read_text()).get(MAX_TOKENS_CHANGES, []))
    except (OSError, ValueError):
        return []


def _open_checkpoints(config: CollectConfig) -> tuple[Path, dict[int, Path]]:
    """The checkpoint directory for this request, refusing one left by a different request (a changed
    ``max_tokens`` alone is allowed: the change is recorded, :func:`max_tokens_changes`)."""
    directory = checkpoint_dir(config)
    manifest = directory / "config.json"
    wanted = config.content_key()
    if directory.exists() and config.overwrite:
        shutil.rmtree(directory)
    if manifest.exists():
        try:
            found = json.loads(manifest.read_text())
        except (OSError, ValueError) as exc:
            raise CollectError(
                f"the checkpoint manifest {manifest} cannot be read ({exc}); delete {directory} or pass "
                "overwrite to start again"
            ) from None
        changes = found.pop(MAX_TOKENS_CHANGES, [])
        changed = differences(found, wanted)
        if changed and changed[0].startswith("executor.max_tokens:") and len(changed) == 1:
            # only the reply budget changed (e.g. raised after truncated replies): the finished episodes
            # stay, the rest are played with the new budget, and the manifest and dataset record when
            done = len(list(directory.glob("episode-*.npz")))
            before, after = found["executor"]["max_tokens"], wanted["executor"]["max_tokens"]
            changes = [*changes, {"from": before, "to": after, "episodes_done": done}]
            _write_atomic(
                manifest, json.dumps({**wanted, MAX_TOKENS_CHANGES: changes}, sort_keys=True).encode()
            )
            print(
                f"resuming {config.dataset_id!r} with max_tokens {after} (was {before}) after {done} "
                "finished episode(s); the dataset records the change (harness_max_tokens_changes)"
            )
        elif changed:
            raise CollectError(
                f"an interrupted collection of {config.dataset_id!r} with different settings is at "
                f"{directory} ({'; '.join(changed)}); rerun with the same settings, "
                "delete it or pass overwrite to start again"
            )
    else:
        directory.mkdir(parents=True, exist_ok=True)
        _write_atomic(manifest, json.dumps(wanted, sort_keys=True).encode())
    done = {int(p.stem.split("-")[1]): p for p in directory.glob("episode-*.npz")}
    return directory, {i: p for i, p in done.items() if i < config.episodes}


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


@contextlib.contextmanager
def _ctrl_c_after() -> Iterator[None]:
    """Ctrl-C pressed inside the block takes effect when it ends. A ``KeyboardInterrupt`` inside
    ``np.savez`` can leave its zip archive with an open member, so closing it raises ``ValueError``
    in the interrupt's place: the command would end in a traceback instead of its resume hint.

    The SIGINT handler is swapped for one that only notes the signal (a signal mask would not do: the
    kernel hands a process's signal to any thread that does not block it, and Python then raises in the
    main thread all the same). Python runs handlers in the main thread only, so elsewhere this defers
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if pressed:
        if callable(previous):
            previous(signal.SIGINT, None)  # Python's default handler: KeyboardInterrupt, now
        elif previous == signal.SIG_DFL:
            signal.raise_signal(signal.SIGINT)


def _save_episode(directory: Path, index: int, arrays: dict[str, np.ndarray]) -> None:
    tmp = directory / f".episode-{index:06d}.{uuid.uuid4().hex}.npz"
    with _ctrl_c_after():
        with tmp.open("wb") as handle:
            np.savez(handle, **arrays)
        os.replace(tmp, directory / f"episode-{index:06d}.npz")


def _load_episode(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise CollectError(
            f"checkpoint {path} is corrupt ({type(exc).__name__}: {exc}); delete it and collect again "
            "(the other checkpoints are kept)"
        ) from None


# -- the whole collection --------------------------------------------------------------------------
@dataclass(frozen=True)
class CollectJob:
    """The engine's view of a collection: each in-flight slot rolls episodes on its own env."""

    config: CollectConfig
    plans: tuple[EpisodePlan, ...] | None = None
    """Every episode's plan when they are planned together (``coverage``); else each is planned alone."""

    def slot(self) -> Callable[[int], dict[str, np.ndarray]]:
        kwargs = self.config.env_kwargs()
        if self.config.executor is not None:
            kwargs["executor"] = _process_executor(self.config.executor)
        env = gym.make(self.config.env_id, split=self.config.split, **kwargs)
        if self.plans is None:
            return partial(rollout, self.config, env=env)
        plans = self.plans
        return lambda index: rollout(self.config, index, env=env, plan=plans[index])


_EXECUTORS: dict[OpenAIConfig, Any] = {}
_EXECUTORS_LOCK = threading.Lock()


def _process_executor(config: OpenAIConfig) -> Any:
    """One chat executor per process, shared by its slots: ``max_concurrency`` bounds the process."""
    from harness_gym.executors.openai_executor import OpenAIExecutor

    with _EXECUTORS_LOCK:
        if config not in _EXECUTORS:
            _EXECUTORS[config] = OpenAIExecutor(config)
        return _EXECUTORS[config]


def _run_all(
    config: CollectConfig, pending: Sequence[int], on_done: Callable[[int, dict[str, np.ndarray]], None]
) -> None:
    """Run the pending episodes on the engine; one task's episodes stay in one process (warm caches)."""
    n_tasks = len(task_ids(config.env_id, config.split, config.obs_layout))
    if config.policy == "coverage":
        plans = tuple(coverage_plans(config))
        job = CollectJob(config, plans)
        run_engine(job, pending, on_done, config.engine, group=lambda index: plans[index].source % n_tasks)
    else:
        run_engine(CollectJob(config), pending, on_done, config.engine, group=lambda index: index % n_tasks)


def collect(
    config: CollectConfig,
    progress: Callable[[int], None] | None = None,
    episodes_out: list[CollectedEpisode] | None = None,
) -> CollectReport:
    """Roll ``config.policy`` for ``config.episodes`` episodes and write the dataset.

    ``progress(n)`` hears of every ``n`` episodes done (resumed, collected and reference-score ones).
    ``episodes_out`` gets the written episodes, as reading the dataset back would give them (a reader
    in the same process saves that read: seconds for a 1,600-episode buffer).
    """
    start = time.perf_counter()
    target = validate(config)
    if config.executor is not None:
        config = replace(config, executor=config.executor.resolved())
    directory, done = _open_checkpoints(config)
    pending = [i for i in range(config.episodes) if i not in done]
    usage = np.zeros(len(USAGE_KEYS))

    from tqdm.auto import tqdm

    with tqdm(
        total=config.episodes,
        initial=len(done),
        desc=f"collect {config.dataset_id}",
        unit="ep",
        disable=not config.show_progress,
    ) as bar:

        def advance(n: int) -> None:
            bar.update(n)
            if progress is not None:
                progress(n)

        if progress is not None:
            progress(len(done))

        fresh: dict[int, dict[str, np.ndarray]] = {}
        calls: list[dict[str, Any]] = []

        def on_done(index: int, arrays: dict[str, np.ndarray]) -> None:
            nonlocal usage
            calls.extend(calls_from_arrays(arrays))
            _save_episode(directory, index, arrays)
            fresh[index] = {key: np.asarray(value) for key, value in arrays.items()}  # as a reload gives
            usage = usage + arrays["usage"]
            advance(1)

        _run_all(config, pending, on_done)
        episodes = [  # only resumed episodes are read back from their checkpoints
            fresh.pop(i) if i in fresh else _load_episode(directory / f"episode-{i:06d}.npz")
            for i in range(config.episodes)
        ]
        _write_dataset(config, episodes, target)
    shutil.rmtree(directory)
    if episodes_out is not None:
        episodes_out.extend(_collected_episode(i, ep) for i, ep in enumerate(episodes))
    report = CollectReport(
        dataset_id=config.dataset_id,
        path=str(target),
        stats=episode_stats(episodes, behaviors(config)),
        resumed_episodes=len(done),
        seconds=time.perf_counter() - start,
        usage=dict(zip(USAGE_KEYS, usage.tolist(), strict=True)),
        spend=summarize_calls(calls) if config.executor is not None else {},
        distinct=distinct_episodes((int(ep["infos/task_index"][0]), episode_trace_of(ep)) for ep in episodes),
        outcome=[episode_outcome(config, i, ep) for i, ep in enumerate(episodes)],
    )
    return report


def episode_outcome(config: CollectConfig, index: int, ep: dict[str, np.ndarray]) -> dict[str, Any]:
    """Episode ``index`` of a collection as a run's outcome records it (``cli.common.episode_outcome``)."""
    names = [action.name for action in Action]
    return {
        "task_index": int(ep["infos/task_index"][0]),
        "seed": int(ep["seed"]),
        "G": float(ep["infos/G"][-1]),
        "actions": [names[int(a)] for a in ep["actions"]],
        "trace": episode_trace_of(ep),
    }


def _collected_episode(index: int, ep: dict[str, np.ndarray]) -> CollectedEpisode:
    return CollectedEpisode(
        id=index,
        observations=ep["observations"],
        actions=ep["actions"],
        rewards=ep["rewards"],
        terminations=ep["terminations"],
        truncations=ep["truncations"],
        infos={key.split("/", 1)[1]: value for key, value in ep.items() if key.startswith("infos/")},
    )


def eval_env_spec(env_spec: EnvSpec) -> EnvSpec:
    """The dataset's evaluation environment: the same id and settings on the held-out eval split."""
    return dataclasses.replace(env_spec, kwargs={**env_spec.kwargs, "split": "eval"})


def _write_dataset(
    config: CollectConfig,
    episodes: list[dict[str, np.ndarray]],
    target: Path,
) -> None:
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    root = dataset_root(config.root)
    # the metadata (env spec, executor) records no scheduling: the client's bound on requests in
    # flight follows --concurrency, and the dataset must not depend on it
    recorded = _unscheduled(config)
    env = gym.make(recorded.env_id, split=recorded.split, **recorded.env_kwargs())
    # the default profile stays implicit in the env spec, as in datasets written before it was a field
    implicit = () if config.executor_profile is not None else ("executor_profile",)
    spec = dataclasses.replace(
        env.spec, kwargs={k: v for k, v in env.spec.kwargs.items() if k not in implicit}
    )
    domain = env.unwrapped.domain
    executor = env.unwrapped.executor
    describe = getattr(executor, "describe", lambda: {"name": executor.name})
    buffers = [
        EpisodeBuffer(
            id=i,
            seed=int(ep["seed"]),
            observations=ep["observations"],
            actions=ep["actions"],
            rewards=ep["rewards"],
            terminations=ep["terminations"],
            truncations=ep["truncations"],
            infos={key.split("/", 1)[1]: value for key, value in ep.items() if key.startswith("infos/")},
        )
        for i, ep in enumerate(episodes)
    ]
    ref_min, ref_max = reference_scores(config.env_id, config.obs_layout)
    seeds = [int(ep["seed"]) for ep in episodes]
    episode_meta = [
        {key.split("/", 1)[1]: value.item() for key, value in ep.items() if key.startswith("meta/")}
        for ep in episodes
    ]
    with staged(root) as staging:
        dataset = minari.create_dataset_from_buffers(
            dataset_id=config.dataset_id,
            buffer=buffers,
            env=spec,
            eval_env=eval_env_spec(spec),
            algorithm_name=config.policy,
            author="harness-gym",
            author_email="harness-gym@users.noreply.github.com",
            code_permalink=f"https://pypi.org/project/harness-gym/{__version__}/",
            ref_min_score=ref_min,
            ref_max_score=ref_max,
            num_episodes_average_score=reference_episode_count(config.env_id, config.obs_layout),
            description=(
                f"{config.policy} harness on the {config.split} split of {config.env_id}: "
                f"{config.episodes} episodes, seeds {min(seeds)}..{max(seeds)}, "
                + ("simulated executor." if config.executor is None else f"LLM {config.executor.model}.")
            ),
            requirements=[f"harness-gym=={__version__}"],
        )
        if any(episode_meta):
            dataset.storage.update_episode_metadata(episode_meta, range(len(episodes)))
        dataset.storage.update_metadata(
            {
                "harness_format_version": FORMAT_VERSION,
                "harness_env_id": config.env_id,
                "harness_split": config.split,
                "harness_task_set_version": env.unwrapped.tasks[0].version,
                "harness_task_ids": task_ids(config.env_id, config.split, config.obs_layout),
                "harness_hms_events": list(EVENTS),
                "harness_rubric_criteria": list(domain.criteria),
                "harness_behaviors": behaviors(config),
                **({"harness_llm_errors": list(LLM_ERRORS)} if config.executor is not None else {}),
                "harness_config": json.dumps(config.content_key(), sort_keys=True),
                **(
                    {"harness_max_tokens_changes": json.dumps(changes)}
                    if (changes := max_tokens_changes(config))
                    else {}
                ),
                "harness_executor": json.dumps(describe(), sort_keys=True, default=str),
                "harness_sandbox": env.unwrapped.sandbox or "none",
                "harness_version": __version__,
                "harness_layout_version": LAYOUT_VERSIONS[config.obs_layout],
                "harness_reference_table_version": reference_table_version(config.obs_layout),
                "harness_behavior_versions": json.dumps(behavior_versions(config), sort_keys=True),
            }
        )
        del dataset
        if config.executor is not None:
            _write_audit(config, episodes, staging / config.dataset_id / AUDIT_FILE)
        _install(staging, root, config.dataset_id, target, config.overwrite)


def namespace_metadata(namespace: str) -> dict[str, str]:
    """Minari namespace metadata (``display_name``, ``description``) of ``harness``, ``harness/<domain>``."""
    if namespace == "harness":
        return {
            "display_name": "harness-gym",
            "description": "Rollouts of LLM agent harness controllers in the harness-gym environments "
            "(Gymnasium): one namespace per setting, one dataset per behaviour or tier.",
            "homepage": "https://pypi.org/project/harness-gym/",
        }
    domain = namespace.split("/", 1)[1] if namespace.startswith("harness/") else namespace
    env_ids = [e for e in ALL_ENV_IDS if env_class(e).domain_cls.dataset_domain() == domain]
    env = env_ids[0] if env_ids else domain
    return {
        "display_name": env,
        "description": f"Rollout datasets of {env}: per-step action masks and behaviour log-probabilities, "
        "the task, G, HMS events and rubric on the last row (harness-gym's dataset format).",
    }


def _write_audit(config: CollectConfig, episodes: list[dict[str, np.ndarray]], path: Path) -> None:
    """``AUDIT_FILE``: one JSON line per executor call of the dataset, in episode and step order."""
    names = behaviors(config)
    ids = task_ids(config.env_id, config.split, config.obs_layout)
    with path.open("w", encoding="utf-8") as handle:
        for index, ep in enumerate(episodes):
            task = ids[int(ep["infos/task_index"][0])]
            behavior = names[int(ep["infos/behavior"][0])]
            episode_id = f"{config.env_id}/{task}/seed={int(ep['seed'])}/{behavior}"
            for call in calls_from_arrays(ep):
                handle.write(json.dumps({"episode": index, "episode_id": episode_id, **call}) + "\n")


@contextlib.contextmanager
def staged(root: Path) -> Iterator[Path]:
    """A staging directory under ``root`` that Minari writes new datasets into (removed afterwards)."""
    staging = root / f".staging-{uuid.uuid4().hex}"
    previous = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(staging)
    try:
        yield staging
    finally:
        if previous is None:
            del os.environ["MINARI_DATASETS_PATH"]
        else:
            os.environ["MINARI_DATASETS_PATH"] = previous
        shutil.rmtree(staging, ignore_errors=True)


def _unscheduled(config: CollectConfig) -> CollectConfig:
    if config.executor is None:
        return config
    default = type(config.executor).__dataclass_fields__["max_concurrency"].default
    return replace(config, executor=replace(config.executor, max_concurrency=default))


def _install(staging: Path, root: Path, dataset_id: str, target: Path, overwrite: bool) -> None:
    """Move the staged dataset into place in one rename, with Minari's namespace files."""
    parts = dataset_id.split("/")
    for depth in range(1, len(parts)):
        namespace = "/".join(parts[:depth])
        path = root / namespace / "namespace_metadata.json"
        try:
            empty = not json.loads(path.read_text())
        except (OSError, ValueError):
            empty = True
        if empty:  # Minari writes {}; a namespace that says nothing is no use on a remote
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, json.dumps(namespace_metadata(namespace), sort_keys=True).encode())
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        if not overwrite:
            raise CollectError(f"dataset {dataset_id!r} appeared at {target} while collecting")
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
        os.replace(target, old)
        os.replace(staging / dataset_id, target)
        shutil.rmtree(old)
    else:
        os.replace(staging / dataset_id, target)


# -- statistics ------------------------------------------------------------------------------------
def episode_stats(
    episodes: Sequence[dict[str, np.ndarray]], behavior_names: Sequence[str] | None = None
) -> dict[str, Any]:
    """Mean G, buffer slack, HMS rates: from the terminal rows of the episodes' infos.

    With ``behavior_names`` (``infos/behavior`` indexes it), also the support diagnostics of
    ``harness_gym.datasets.support`` under ``"support"``."""
    gs = np.array([float(ep["infos/G"][-1]) for ep in episodes])
    fired = np.array([ep["infos/hms_fired"][-1] for ep in episodes], dtype=float)
    applicable = np.array([ep["infos/hms_applicable"][-1] for ep in episodes], dtype=float)
    return {
        "episodes": len(episodes),
        "steps": int(sum(len(ep["actions"]) for ep in episodes)),
        "mean_G": float(gs.mean()),
        "max_G": float(gs.max()),
        "buffer_slack": float(gs.max() - gs.mean()),
        "mean_hms_norm": float(np.mean([float(ep["infos/hms_norm"][-1]) for ep in episodes])),
        "hms_fired": dict(zip(EVENTS, fired.mean(axis=0).tolist(), strict=True)),
        "hms_applicable": dict(zip(EVENTS, applicable.mean(axis=0).tolist(), strict=True)),
    } | ({"support": _support(episodes, gs, behavior_names)} if behavior_names is not None else {})


def _support(episodes: Sequence[dict[str, np.ndarray]], gs: np.ndarray, names: Sequence[str]) -> dict:
    from harness_gym.datasets.support import support_diagnostics

    return support_diagnostics(
        [ep["actions"] for ep in episodes],
        gs,
        [int(ep["infos/task_index"][-1]) for ep in episodes],
        [names[int(ep["infos/behavior"][-1])] for ep in episodes],
    )


def iter_episodes(dataset: Any, chunk: int = 100) -> Iterator[Any]:
    """Episodes of a ``minari.MinariDataset`` read ``chunk`` at a time.

    Minari 0.5's ``iterate_episodes()`` reads every episode into memory before yielding the first
    (about 220 MB for a 1,600-episode buffer); asking for chunks keeps memory flat.
    """
    indices = dataset.episode_indices
    for start in range(0, len(indices), chunk):
        yield from dataset.iterate_episodes(indices[start : start + chunk])


def dataset_stats(dataset: Any) -> dict[str, Any]:
    """The same statistics recomputed from a loaded ``minari.MinariDataset`` alone."""
    episodes = [
        {
            "actions": ep.actions,
            **{f"infos/{key}": value[-1:] for key, value in ep.infos.items()},
        }
        for ep in iter_episodes(dataset)
    ]
    return episode_stats(episodes, dataset.storage.metadata.get("harness_behaviors"))
