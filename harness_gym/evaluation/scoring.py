"""Score any policy on the standard protocol in one call: ``harness_gym.evaluate_policy``.

``evaluate_policy`` plays a policy on every eval task x seed x rollout (the paper's 180 episodes per
setting), plays Base on the same episodes, and returns a :class:`PolicyScore`: mean G, the normalised
score (random = 0, expert = 100) with its episode-level interval, per-seed scores, the paired change
against Base (interval and p-value over the same tasks, seeds and rollouts), HMS and every episode.
``PolicyScore.write_results`` writes it in the results schema (``harness_gym.evaluation.results``), so
``harness-gym leaderboard`` ranks it beside the bench's algorithms. ``env_id="all"`` scores it on every one
of the eight settings in turn and returns a :class:`SuiteScore`, whose results file ranks beside the
shipped reference results (``REFERENCE_RESULTS``, the bench's ``docs/bench/results.json``): what
``harness-gym submit`` does.

A policy is any of:

- an object with ``act(obs, mask, rng) -> action`` (the ``Policy`` protocol of
  ``harness_gym.policies.scripted``; ``rng`` is the episode's policy generator);
- a plain callable ``f(obs, mask) -> action``;
- a trained d3rlpy algorithm (wrapped in ``harness_gym.evaluation.d3rlpy_policy.MaskedPolicy``: only legal
  actions; ``act="sample"`` draws from a stochastic learner's softmax over legal actions, the paper's
  controller, ``"greedy"`` takes its argmax; Q-learners are greedy either way);
- a ``harness_gym.policies.algorithms.Trained`` (its policy for ``act``);
- a sequence of any of these, one per seed: the model trained with seed ``s`` plays the episodes of seed
  ``s``, as in the bench;
- with ``env_id="all"`` also a mapping from each setting's env id to any of the above (models trained per
  setting).

The kind of interval follows from what plays, the same on every route: one policy for every seed is
scored with intervals over episodes, one model per seed with intervals over seeds (the leaderboard's
``Interval over`` column).

``protocol_seeds`` lists the protocol's episodes, so that a plain Gymnasium / Minari loop plays exactly
the same ones (``env.reset(seed=ep.seed, options=ep.options)``; a sampling policy draws from
``ep.rng()``) and reaches the same numbers.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from harness_gym.evaluation.engine import EngineConfig
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.protocol import EpisodeResult, Interval, compare, env_settings, evaluate, mean_ci
from harness_gym.evaluation.reference_scores import normalized_score
from harness_gym.evaluation.rollout import PolicyError, policy_rng, protocol_episodes, start_episode
from harness_gym.policies.algorithms import ACT_MODES, Trained
from harness_gym.policies.scripted import BasePolicy

__all__ = [
    "ALL",
    "REFERENCE_RESULTS",
    "FactoryError",
    "PolicyError",
    "PolicyScore",
    "ProtocolEpisode",
    "SuiteScore",
    "evaluate_policy",
    "from_factory",
    "protocol_seeds",
    "results_document",
]

BASE = "base"
ALL = "all"
"""``evaluate_policy``'s env id for every one of the eight settings (``ENV_IDS``), in order."""
REFERENCE_RESULTS = Path(__file__).resolve().parents[1] / "data" / "reference_results.json"
"""The bench's recorded results (``docs/bench/results.json``, shipped as package data): what a policy
scored with ``env_id="all"`` is ranked against."""


# -- the protocol's episodes -----------------------------------------------------------------------
class ProtocolEpisode(NamedTuple):
    """One episode of the protocol: ``env.reset(seed=ep.seed, options=ep.options)`` plays it."""

    # Napoleon reads a first line "X: Y" of an attribute docstring as type X, so none starts that way.
    seed: int
    """The episode seed to reset with, shared by every policy (what makes episodes pairs)."""
    task_id: str
    """The task the episode plays, passed to ``reset`` in ``options``."""
    protocol_seed: int
    """The protocol's seed (0, 1 or 2), which is the training seed of the model that plays it."""
    rollout: int
    """The rollout's index among the episodes of one task and seed."""

    @property
    def options(self) -> dict[str, str]:
        """The ``options`` of ``reset`` that select the episode's task."""
        return {"task_id": self.task_id}

    def rng(self) -> np.random.Generator:
        """The generator ``evaluate_policy`` gives a policy for this episode (its own stream, not the
        executor's), for a sampling policy that should draw exactly as it does."""
        return policy_rng(self.seed)


def _task_ids(env_id: str, split: str, env_kwargs: Mapping[str, Any]) -> list[str]:
    import gymnasium as gym

    env = gym.make(env_id, split=split, **env_kwargs)
    try:
        return [task.task_id for task in env.unwrapped.tasks]
    finally:
        env.close()


def protocol_seeds(
    env_id: str,
    seeds: Sequence[int] = EVAL_SEEDS,
    rollouts: int = EVAL_ROLLOUTS,
    split: str = "eval",
    **env_kwargs: Any,
) -> list[ProtocolEpisode]:
    """Every episode of the protocol in its order (seed, then task, then rollout).

    The same list ``evaluate_policy`` plays: with a deterministic policy (or one drawing from
    ``ep.rng()``), the mean G of a plain loop over it equals ``evaluate_policy(...).G``::

        env = gym.make(env_id, split="eval")  # or minari's dataset.recover_environment(eval_env=True)
        for ep in harness_gym.protocol_seeds(env_id):
            obs, info = env.reset(seed=ep.seed, options=ep.options)
            ...  # step until terminated or truncated; info["G"] is the episode's score
    """
    tasks = _task_ids(env_id, split, env_kwargs)
    return [
        ProtocolEpisode(episode_seed, task_id, seed, rollout)
        for seed, task_id, rollout, episode_seed in protocol_episodes(tasks, seeds, rollouts)
    ]


# -- what can play ---------------------------------------------------------------------------------
class CallablePolicy:
    """A plain function ``f(obs, mask) -> action`` as a ``Policy`` (its action as it is: ``CheckedPolicy``
    refuses what ``env.step`` refuses, where ``int()`` would have taken a float or a bool)."""

    def __init__(self, function: Callable[[np.ndarray, np.ndarray], Any], name: str) -> None:
        self.function = function
        self.name = name

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> Any:
        return self.function(obs, mask)


def checked_action(action: Any, label: str) -> Any:
    """``action`` if ``env.step`` takes it (``HarnessEnv.step``'s rule: an int in Discrete(N_ACTIONS),
    numpy integers included, never a bool or a float), else a ``PolicyError`` naming the policy."""
    from harness_gym.core.actions import N_ACTIONS

    if isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer):
        raise PolicyError(
            f"policy {label!r} returned {action!r} ({type(action).__name__}): an action is an int in "
            f"Discrete({N_ACTIONS}), as env.step requires"
        )
    if not 0 <= action < N_ACTIONS:
        raise PolicyError(f"policy {label!r} returned action {action!r}, not in Discrete({N_ACTIONS})")
    return action


class CheckedPolicy:
    """A policy whose failures name it: ``act`` (or ``reset``) raising, or returning an action that
    ``env.step`` refuses, is a ``PolicyError``; the episode engine adds the episode. Otherwise it plays
    exactly as the policy (same actions, same ``name`` for the episode tag, its ``bind_env``)."""

    def __init__(self, policy: Any, label: str) -> None:
        self.policy = policy
        self.label = label
        self.name = getattr(policy, "name", None)

    def _failed(self, method: str, exc: Exception) -> PolicyError:
        text = " ".join(str(exc).split())
        return PolicyError(f"policy {self.label!r}: {method} raised {type(exc).__name__}: {text}")

    def reset(self) -> None:
        try:
            start_episode(self.policy)
        except Exception as exc:
            raise self._failed("reset()", exc) from exc

    def bind_env(self, env: Any) -> CheckedPolicy:
        bind = getattr(self.policy, "bind_env", None)
        return CheckedPolicy(bind(env), self.label) if callable(bind) else self

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> Any:
        try:
            action = self.policy.act(obs, mask, rng)
        except Exception as exc:
            raise self._failed("act", exc) from exc
        return checked_action(action, self.label)


MASKED_STEP_TEXT = "not legal in this state"
"""The text ``HarnessEnv.step`` records for a masked action (a no-op that costs a step and counts as an
error): how a step record says the policy took one."""


def masked_steps(record: Mapping[str, Any]) -> int:
    """How many masked actions an episode record's steps (``step_records``) took."""
    steps = record.get("step_records") or ()
    return sum(not step.get("valid", True) and step.get("text") == MASKED_STEP_TEXT for step in steps)


def _seeds(seeds: Any) -> tuple[int, ...]:
    """The protocol seeds as ints; anything but a sequence of distinct integers is a ``PolicyError``
    (``int()`` would have made seed 0.5 seed 0)."""
    if isinstance(seeds, str | bytes | Mapping) or not isinstance(seeds, Iterable):
        raise PolicyError(f"seeds must be a sequence of integers, got {seeds!r}")
    given = list(seeds)
    for seed in given:
        if isinstance(seed, bool | np.bool_) or not isinstance(seed, int | np.integer):
            raise PolicyError(f"seeds must be integers, got {seed!r} in seeds={given!r}")
    out = tuple(int(s) for s in given)
    if not out or len(set(out)) != len(out):
        raise PolicyError(f"need distinct seeds, at least one, got seeds={list(out)}")
    return out


def _is_d3rlpy(obj: Any) -> bool:
    d3rlpy = sys.modules.get("d3rlpy")  # a d3rlpy algorithm exists only once d3rlpy is imported
    return d3rlpy is not None and isinstance(obj, d3rlpy.base.LearnableBase)


def _default_name(obj: Any) -> str:
    name = getattr(obj, "name", None)
    if isinstance(name, str) and name:
        return name
    if _is_d3rlpy(obj):
        return type(obj).__name__
    function = getattr(obj, "__name__", None)
    if isinstance(function, str) and function.isidentifier():
        return function
    return type(obj).__name__ if not callable(obj) or hasattr(obj, "act") else "policy"


def as_policy(obj: Any, act: str, name: str) -> tuple[Any, str | None]:
    """``obj`` as a ``Policy`` and the action choice it makes (None where the policy decides itself)."""
    if isinstance(obj, Trained):
        mode = act if act in obj.policies else "greedy"
        return obj.policies[mode], mode
    if _is_d3rlpy(obj):
        from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy

        sample = act == "sample" and MaskedPolicy(obj, name).stochastic
        return MaskedPolicy(obj, name, sample=sample), "sample" if sample else "greedy"
    if callable(getattr(obj, "act", None)):
        return obj, None
    if callable(obj):
        return CallablePolicy(obj, name), None
    raise PolicyError(
        f"cannot evaluate {obj!r}: expected an object with act(obs, mask, rng), a function f(obs, mask), "
        "a trained d3rlpy algorithm, or a sequence of these (one per seed)"
    )


def from_factory(factory: Callable[..., Any], seeds: Sequence[int], env_id: str | None = None) -> Any:
    """What a factory makes for the protocol's seeds, as ``evaluate_policy`` takes it (the CLI's
    ``module:factory``): ``factory(seed)``, or ``factory(seed, env_id=...)`` when it has an ``env_id``
    parameter, for each seed. The same object for every seed is one policy (intervals over episodes, as
    ``evaluate_policy(policy)``); different objects are one model per seed (intervals over seeds)."""
    import inspect

    try:
        takes_env = "env_id" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        takes_env = False
    made = []
    for seed in seeds:
        try:
            made.append(factory(seed, env_id=env_id) if takes_env else factory(seed))
        except Exception as exc:
            raise FactoryError(seed, exc) from exc
    return made[0] if all(m is made[0] for m in made) else made


class FactoryError(PolicyError):
    """A policy factory raised for ``seed``; ``cause`` is what it raised."""

    def __init__(self, seed: int, cause: BaseException) -> None:
        self.seed, self.cause = seed, cause
        super().__init__(f"the policy factory failed for seed {seed}: {type(cause).__name__}: {cause}")


# -- the result ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolicyScore:
    """A policy's score on the protocol, against Base on the same episodes."""

    name: str
    env_id: str
    split: str
    seeds: tuple[int, ...]
    rollouts: int
    act: str | None
    """How the policy chose (``sample`` / ``greedy`` for a learner that can do both), None if its own."""
    per_seed_models: bool
    """One model per seed (seed ``s`` played by the model trained with ``s``), else one policy for all."""
    G: float
    """Mean G over every episode."""
    score: Interval
    """Normalised score (random = 0, expert = 100) of the mean G, with the 95% BCa bootstrap interval
    over episodes: the uncertainty of evaluating these very policies on the protocol. When episodes
    repeat each other call for call (a chat LLM at temperature 0), whole tasks are resampled instead,
    so copies never count as independent draws (``score_unit``)."""
    seed_scores: dict[int, float]
    """Normalised score of each seed's episodes."""
    hms_norm: float
    base_G: float | None
    delta_G: Interval | None
    """G minus Base's G on the same (task, seed, rollout) episodes, with the paired 95% BCa interval."""
    p_value: float | None
    """Paired sign-flip permutation test of ``delta_G`` = 0."""
    delta_hms: float | None
    episodes: tuple[EpisodeResult, ...] = field(repr=False)
    base_episodes: tuple[EpisodeResult, ...] | None = field(repr=False)
    simulator: dict[str, Any] = field(repr=False, default_factory=dict)
    """The executor the episodes were played with (``harness_gym.evaluation.results.simulator``)."""
    score_unit: str = "episodes"
    """What ``score``'s interval resamples: ``episodes``, or ``tasks`` when some episodes are copies."""
    masked_actions: int = 0
    """Masked actions the policy took over its episodes: each a no-op that costs a step and counts as an
    error (the protocol's env is not strict), so a policy that ignores the mask scores low with no error."""
    masked_episodes: int = 0
    """Of the policy's episodes, how many took a masked action."""

    def summary(self) -> str:
        """The result as a few lines of text (what ``harness-gym evaluate`` prints)."""
        seeds = " ".join(map(str, self.seeds))
        lines = [
            f"{self.env_id}  policy={self.name}  split={self.split}  seeds={seeds}  "
            f"rollouts={self.rollouts}  episodes={len(self.episodes)}",
            f"mean G {self.G:.3f}   normalised score {self.score.estimate:.1f} "
            f"[{self.score.low:.1f}, {self.score.high:.1f}] (random = 0, expert = 100; 95% interval "
            + (
                "over episodes)"
                if self.score_unit == "episodes"
                else "resampling whole tasks: some episodes repeat each other's calls)"
            ),
            "per seed: "
            + "  ".join(f"{seed}: {score:.1f}" for seed, score in self.seed_scores.items())
            + ("  (one model per seed)" if self.per_seed_models else "  (one policy for every seed)"),
        ]
        if self.delta_G is not None:
            d = self.delta_G
            lines.append(
                f"vs Base (G {self.base_G:.3f}): ΔG {d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}] "
                f"paired over {len(self.episodes)} episodes, p = {self.p_value:.3f}"
            )
        hms = f"mean HMS_norm {self.hms_norm:+.3f}"
        lines.append(hms if self.delta_hms is None else f"{hms}   ΔHMS {self.delta_hms:+.3f}")
        if self.masked_actions:
            lines.append(
                f"masked actions: {self.masked_actions} taken in {self.masked_episodes} of "
                f"{len(self.episodes)} episodes (each a no-op that costs a step; the mask is "
                'info["action_mask"])'
            )
        return "\n".join(lines)

    def policy_meta(self) -> dict[str, Any]:
        """How the results schema describes this policy."""
        from harness_gym.evaluation.results import policy_meta

        return policy_meta("outside", self.per_seed_models, self.act)

    def to_results(self) -> dict[str, Any]:
        """This score as a results document (``harness_gym.evaluation.results``), Base beside it."""
        return results_document([self])

    def write_results(self, path: str | os.PathLike) -> Path:
        """Write ``to_results()`` to ``path`` (JSON, schema ``results-v1``)."""
        from harness_gym.evaluation.results import write

        return write(self.to_results(), path)


@dataclass(frozen=True)
class SuiteScore:
    """A policy's scores on every setting (``evaluate_policy(..., env_id="all")``), one per setting."""

    scores: tuple[PolicyScore, ...]

    @property
    def name(self) -> str:
        return self.scores[0].name

    def __getitem__(self, env_id: str) -> PolicyScore:
        for score in self.scores:
            if score.env_id == env_id:
                return score
        raise KeyError(env_id)

    def summary(self) -> str:
        """One line per setting: G, normalised score and the paired change against Base."""
        lines = [f"{self.name} on {len(self.scores)} settings (normalised score: random = 0, expert = 100)"]
        for s in self.scores:
            line = f"{s.env_id:<24} G {s.G:.3f}  score {s.score.estimate:6.1f}"
            if s.delta_G is not None:
                d = s.delta_G
                line += f"  ΔG vs Base {d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}] p = {s.p_value:.3f}"
            lines.append(line)
        return "\n".join(lines)

    def to_results(self) -> dict[str, Any]:
        """Every setting in one results document (``harness_gym.evaluation.results``), Base beside it."""
        return results_document(self.scores)

    def write_results(self, path: str | os.PathLike) -> Path:
        """Write ``to_results()`` to ``path``: ``harness-gym leaderboard`` ranks it beside
        ``REFERENCE_RESULTS``."""
        from harness_gym.evaluation.results import write

        return write(self.to_results(), path)


def results_document(scores: Sequence[PolicyScore], smoke: bool = False) -> dict[str, Any]:
    """One results document from several scores (settings or policies) of one protocol and simulator;
    each needs its Base episodes."""
    from harness_gym.evaluation import results

    if not scores:
        raise ValueError("no scores to write")
    docs = []
    for s in scores:
        if s.base_episodes is None:
            raise PolicyError(f"{s.name} on {s.env_id} was scored without Base: a results file needs Base")
        tasks = list(dict.fromkeys(r.task_id for r in s.base_episodes))
        layout = s.simulator.get("obs_layout", "v1")
        entry = results.setting(s.env_id, tasks, layout)
        for name, episodes in ((BASE, s.base_episodes), (s.name, s.episodes)):
            entry["policies"][name] = results.runs(s.env_id, episodes, tasks, s.seeds, s.rollouts, layout)
        policies = {BASE: results.policy_meta("scripted"), s.name: s.policy_meta()}
        protocol = results.protocol(s.split, s.seeds, s.rollouts)
        docs.append(results.document(protocol, s.simulator, policies, {s.env_id: entry}, smoke))
    return results.merge([(f"{s.name} on {s.env_id}", doc) for s, doc in zip(scores, docs, strict=True)])


# -- scoring ---------------------------------------------------------------------------------------
_BASE_RUNS: dict[str, list[EpisodeResult]] = {}
"""Base's episodes per protocol and env settings, kept for the process (simulated executor only): every
policy scored on the same protocol pairs with the same Base run."""


def _base_key(
    env_id: str, split: str, seeds: Sequence[int], rollouts: int, env_kwargs: Mapping
) -> str | None:
    if "executor" in env_kwargs:  # a chat LLM: Base is played (or replayed from its cache) every time
        return None
    settings = env_settings(env_kwargs)
    return json.dumps(
        [env_id, split, [int(s) for s in seeds], rollouts, settings], sort_keys=True, default=repr
    )


def evaluate_policy(
    policy: Any,
    env_id: str,
    *,
    seeds: Sequence[int] = EVAL_SEEDS,
    rollouts: int = EVAL_ROLLOUTS,
    act: str = "sample",
    split: str = "eval",
    name: str | None = None,
    base: bool = True,
    engine: EngineConfig | None = None,
    checkpoint: str | os.PathLike | None = None,
    fingerprint: str | None = None,
    on_episode: Callable[[dict[str, Any]], None] | None = None,
    **env_kwargs: Any,
) -> PolicyScore | SuiteScore:
    """Play ``policy`` on the protocol and score it against Base on the same episodes.

    Args:
        policy: a ``Policy`` (``act(obs, mask, rng)``), a function ``f(obs, mask) -> action``, a trained
            d3rlpy algorithm, a ``Trained``, or a sequence of these with one per seed (seed ``s`` played by
            the one trained with ``s``).
        env_id: a registered id, e.g. ``"HarnessPlanning-v0"``, or ``"all"``: every one of the eight
            settings in turn.
        seeds: the protocol's seeds (default 0, 1, 2).
        rollouts: episodes per task and seed (default 3: 180 episodes per setting).
        act: for d3rlpy algorithms and ``Trained``: ``"sample"`` from a stochastic learner's softmax over
            legal actions (the paper's controller) or ``"greedy"`` (argmax; Q-learners always).
        split: ``"eval"`` (the held-out tasks; once, at the end), or ``"validation"`` for model selection.
        name: the policy's name in results (default: its ``name`` attribute, function or class name).
        base: also play Base on the same episodes (the paired ΔG; needed for ``write_results``).
        engine: episodes in flight, processes, backend (results never depend on it).
        checkpoint: a directory keeping finished episodes: the same call resumes there.
        fingerprint: identifies the policy's parameters (e.g. a hash of its weights): a resume with
            another one is refused.
        on_episode: called with every finished episode's record (progress bars).
        **env_kwargs: passed to ``gym.make`` (``executor=...``, ``executor_profile=...``).

    Returns:
        A :class:`PolicyScore`; for ``env_id="all"`` a :class:`SuiteScore` with one per setting, each
        played as above (``checkpoint`` then keeps one subdirectory per setting).
    """
    if env_id == ALL:
        return _evaluate_all(
            policy,
            seeds=seeds,
            rollouts=rollouts,
            act=act,
            split=split,
            name=name,
            base=base,
            engine=engine,
            checkpoint=checkpoint,
            fingerprint=fingerprint,
            on_episode=on_episode,
            **env_kwargs,
        )
    from harness_gym.envs.registry import ALL_ENV_IDS
    from harness_gym.evaluation.results import simulator

    if not isinstance(env_id, str) or env_id not in ALL_ENV_IDS:
        raise PolicyError(f"unknown env id {env_id!r}; known: {', '.join(ALL_ENV_IDS)}")
    if act not in ACT_MODES:
        raise PolicyError(f"act must be one of {ACT_MODES}, got {act!r}")
    seeds = _seeds(seeds)
    if isinstance(rollouts, bool | np.bool_) or not isinstance(rollouts, int | np.integer) or rollouts < 1:
        raise PolicyError(f"rollouts must be an integer of at least 1, got {rollouts!r}")
    rollouts = int(rollouts)
    per_seed = isinstance(policy, list | tuple)
    players = list(policy) if per_seed else [policy] * len(seeds)
    if len(players) != len(seeds):
        raise PolicyError(f"{len(players)} policies for {len(seeds)} seeds: give one policy per seed")
    name = name or _default_name(players[0])
    wrapped = [(CheckedPolicy(p, name), mode) for p, mode in (as_policy(p, act, name) for p in players)]
    modes = {mode for _, mode in wrapped}
    masked = {"actions": 0, "episodes": 0}

    def counted(record: dict[str, Any]) -> None:
        """``on_episode`` for the policy's episodes (resumed ones too): its masked actions counted."""
        n = masked_steps(record)
        masked["actions"] += n
        masked["episodes"] += n > 0
        if on_episode is not None:
            on_episode(record)

    record = simulator(
        env_kwargs.get("executor"), env_kwargs.get("executor_profile"), env_kwargs.get("obs_layout", "v1")
    )

    def play(
        player: Any, label: str, which: Sequence[int], tag: str, fp: str | None = None
    ) -> list[EpisodeResult]:
        where = None if checkpoint is None else Path(checkpoint) / tag
        return evaluate(
            player,
            env_id,
            split=split,
            seeds=which,
            rollouts=rollouts,
            policy_name=label,
            engine=engine,
            checkpoint=where,
            fingerprint=fp,
            on_episode=on_episode if tag == BASE else counted,
            **env_kwargs,
        )

    if per_seed:
        episodes = [
            r
            for (p, _), s in zip(wrapped, seeds, strict=True)
            for r in play(p, name, (s,), f"seed-{s}", fingerprint)
        ]
    else:
        episodes = play(wrapped[0][0], name, seeds, "policy", fingerprint)
    base_episodes = None
    if base:
        if not per_seed and isinstance(players[0], BasePolicy) and players[0].env_id == env_id:
            base_episodes = episodes
        else:
            key = _base_key(env_id, split, seeds, rollouts, env_kwargs)
            base_episodes = _BASE_RUNS.get(key) if key is not None else None
            if base_episodes is None:
                base_episodes = play(BasePolicy(env_id), BASE, seeds, BASE)
                if key is not None:
                    _BASE_RUNS[key] = base_episodes
    score = _score(name, env_id, split, seeds, rollouts, modes, per_seed, episodes, base_episodes, record)
    return replace(score, masked_actions=masked["actions"], masked_episodes=masked["episodes"])


def _score_interval(
    env_id: str, episodes: Sequence[EpisodeResult], obs_layout: str = "v1"
) -> tuple[Interval, str]:
    """The normalised score's interval and its unit: over episodes, or over whole tasks (the mean of
    the resampled tasks' episodes) when some episodes repeat another of the same task call for call."""
    from harness_gym.evaluation.protocol import clustered_mean_ci
    from harness_gym.evaluation.spend import distinct_episodes

    scores = np.asarray([normalized_score(env_id, r.G, obs_layout) for r in episodes], dtype=float)
    distinct, total = distinct_episodes((r.task_id, r.trace) for r in episodes)
    if distinct == total:
        return mean_ci(scores, rng=0), "episodes"
    return clustered_mean_ci(scores, [r.task_id for r in episodes], rng=0), "tasks"


def _evaluate_all(policy: Any, *, name: str | None, checkpoint: str | os.PathLike | None, **kwargs: Any):
    """``evaluate_policy`` on every setting in ``ENV_IDS`` order under one name (``env_id="all"``)."""
    from harness_gym.envs.registry import ENV_IDS

    per_setting = isinstance(policy, Mapping)
    if per_setting and set(policy) != set(ENV_IDS):
        missing = ", ".join(sorted(set(ENV_IDS) - set(policy))) or "none"
        extra = ", ".join(sorted(set(policy) - set(ENV_IDS))) or "none"
        raise PolicyError(f"a policy per setting needs every setting: missing {missing}; unknown {extra}")
    if name is None:
        first = policy[ENV_IDS[0]] if per_setting else policy
        name = _default_name(first[0] if isinstance(first, list | tuple) and first else first)
    scores = tuple(
        evaluate_policy(
            policy[env_id] if per_setting else policy,
            env_id,
            name=name,
            checkpoint=None if checkpoint is None else Path(checkpoint) / env_id,
            **kwargs,
        )
        for env_id in ENV_IDS
    )
    return SuiteScore(scores)


def _score(
    name: str,
    env_id: str,
    split: str,
    seeds: tuple[int, ...],
    rollouts: int,
    modes: set[str | None],
    per_seed: bool,
    episodes: list[EpisodeResult],
    base_episodes: list[EpisodeResult] | None,
    record: dict[str, Any],
) -> PolicyScore:
    G = np.array([r.G for r in episodes])
    layout = record.get("obs_layout", "v1")  # the MDP played: its reference scores normalise
    score, score_unit = _score_interval(env_id, episodes, layout)
    seed_scores = {
        s: normalized_score(env_id, float(np.mean([r.G for r in episodes if r.seed == s])), layout)
        for s in seeds
    }
    delta = p_value = delta_hms = base_G = None
    if base_episodes is not None:
        table = compare({BASE: base_episodes, "policy": episodes}, base=BASE)
        entry = table["policies"]["policy"]
        base_G = entry["base_G"]
        delta = Interval(entry["delta_G"], entry["ci_low"], entry["ci_high"])
        p_value, delta_hms = entry["p_value"], entry["delta_hms"]
    act = next(iter(modes)) if len(modes) == 1 else None
    return PolicyScore(
        name=name,
        env_id=env_id,
        split=split,
        seeds=seeds,
        rollouts=rollouts,
        act=act,
        per_seed_models=per_seed,
        G=float(G.mean()),
        score=score,
        seed_scores=seed_scores,
        hms_norm=float(np.mean([r.hms_norm for r in episodes])),
        base_G=base_G,
        delta_G=delta,
        p_value=p_value,
        delta_hms=delta_hms,
        episodes=tuple(episodes),
        base_episodes=None if base_episodes is None else tuple(base_episodes),
        simulator=record,
        score_unit=score_unit,
    )
