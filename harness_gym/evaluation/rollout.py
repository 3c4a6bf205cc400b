"""Rolling a policy through an environment: the loop every command and the evaluation share."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from harness_gym.core.hms import EVENTS
from harness_gym.envs.domain import EPISODE_USAGE_KEYS

USAGE_KEYS = EPISODE_USAGE_KEYS
"""The executor usage an episode's final ``info["usage"]`` reports."""


class PolicyError(ValueError):
    """A policy cannot be played as asked, or failed while playing (``act`` raised, or returned what
    ``env.step`` refuses); the message says why and, from the episode engine, in which episode."""


class _Policy(Protocol):
    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int: ...


def start_episode(policy: Any) -> None:
    """Call the policy's optional ``reset()``: a policy that keeps per-episode state clears it here.

    With this, an episode never depends on the episodes the same policy object played before, which
    the episode engine relies on (it also gives every in-flight slot its own copy of the policy).
    """
    reset = getattr(policy, "reset", None)
    if callable(reset):
        reset()


POLICY_STREAM = 1
"""Spawn key of the policy's generator: ``default_rng([seed, POLICY_STREAM])``."""


def policy_rng(seed: int) -> np.random.Generator:
    """The policy's generator for the episode seeded ``seed``: a stream independent of the env's.

    ``env.reset(seed=seed)`` seeds the executor with ``default_rng(seed)``'s stream; a policy drawing
    from that same stream would make its random choices (an exploratory action, a sampled action) the
    executor's own draws, so which action it explores would be correlated with whether the executor
    succeeds. A separate stream keeps episodes reproducible from ``seed`` without that coupling.
    """
    return np.random.default_rng([seed, POLICY_STREAM])


def run_episode(env: gym.Env, policy: _Policy, *, seed: int, task_id: str | None = None) -> dict[str, Any]:
    """One episode: the env on ``reset(seed=seed)``, the policy on ``policy_rng(seed)``; the final info.

    The policy's ``name`` (if it has one) tags the episode's id (``trajectory["episode_id"]``)."""
    options: dict[str, Any] = {} if task_id is None else {"task_id": task_id}
    name = getattr(policy, "name", None)
    if isinstance(name, str):
        options["episode_tag"] = name
    start_episode(policy)
    obs, info = env.reset(seed=seed, options=options or None)
    rng = policy_rng(seed)
    while True:
        action = policy.act(obs, info["action_mask"], rng)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return info


PROTOCOL_VERSION = 1
"""Version of the evaluation protocol's episodes: which episode seed ``protocol_episodes`` gives each
(seed, task, rollout), and the order it lists them in. Results files record it; bump it whenever either
changes, so that numbers played on different episodes are never merged
(``harness_gym.evaluation.results``)."""


def protocol_episodes(
    task_ids: Sequence[str], seeds: Sequence[int], rollouts: int
) -> list[tuple[int, str, int, int]]:
    """``(seed, task_id, rollout, episode_seed)`` for every task x seed x rollout of a protocol.

    Episode seeds come from ``SeedSequence((seed, task index, rollout))`` so that the pairs compared
    across policies (same task, seed and rollout) share their seed.
    """
    return [
        (seed, task_id, r, int(np.random.SeedSequence((seed, i, r)).generate_state(1)[0]))
        for seed in seeds
        for i, task_id in enumerate(task_ids)
        for r in range(rollouts)
    ]


def run_protocol(env: gym.Env, policy: _Policy, seeds: Sequence[int], rollouts: int) -> list[dict[str, Any]]:
    """Final infos of every protocol episode on the env's task list."""
    task_ids = [task.task_id for task in env.unwrapped.tasks]
    return [
        run_episode(env, policy, seed=episode_seed, task_id=task_id)
        for _, task_id, _, episode_seed in protocol_episodes(task_ids, seeds, rollouts)
    ]


@dataclass(frozen=True)
class EpisodeJob:
    """Episodes of ``policy`` on ``gym.make(env_id, split=split, **env_kwargs)`` for the episode engine.

    Items are ``(episode_seed, task_id)`` (``task_id`` None: the env's seeded choice); each in-flight
    slot plays on its own env with its own deep copy of the policy. ``keep`` post-processes the final
    info in the slot (e.g. into a small record), so only what the caller keeps crosses processes.
    """

    env_id: str
    policy: Any
    split: str = "eval"
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    keep: Callable[[Any, dict[str, Any]], Any] | None = None

    def slot(self) -> Callable[[Any], Any]:

        env = gym.make(self.env_id, split=self.split, **self.env_kwargs)
        policy = copy.deepcopy(self.policy)
        bind_env = getattr(policy, "bind_env", None)  # a policy reading hidden state (hindsight-submit)
        if callable(bind_env):
            policy = bind_env(env)

        def play(item: Any) -> Any:
            seed, task_id = item[0], item[1]
            try:
                final = run_episode(env, policy, seed=seed, task_id=task_id)
            except PolicyError as exc:  # which episode, so that it can be replayed alone
                task = "" if task_id is None else f" task {task_id},"
                raise PolicyError(f"{exc} ({self.env_id}{task} episode seed {seed})") from exc
            return self.keep(item, final) if self.keep is not None else final

        return play


def summarize(finals: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean G, mean HMS_norm, per event the fraction of episodes in which it fired / applied, and the
    executor usage (calls, tokens, cost, response-cache hits and misses) summed over the episodes."""
    n = len(finals)
    if n == 0:
        raise ValueError("no episodes to summarize")
    return {
        "episodes": n,
        "G": float(np.mean([f["G"] for f in finals])),
        "hms_norm": float(np.mean([f["hms_norm"] for f in finals])),
        "events": {
            event: {
                "fired": sum(f["hms"][event]["fired"] for f in finals) / n,
                "applicable": sum(f["hms"][event]["applicable"] for f in finals) / n,
            }
            for event in EVENTS
        },
        "usage": {key: sum(f["usage"][key] for f in finals) for key in USAGE_KEYS},
    }
