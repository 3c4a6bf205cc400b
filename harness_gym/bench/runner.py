"""The paper's protocol end to end: buffers, offline training, evaluation, statistics, report.

For every setting: collect the mixed Base + Exploratory buffer on the train split; train every registered
algorithm (``harness_gym.policies.algorithms``) with each seed; evaluate Base, Forced-CHECK and every trained
policy on every eval task x seed x rollout (the policy trained with seed ``s`` plays the episodes of
evaluation seed ``s``, so all policies share their episode pairs); compare against Base; write ``results/``
(report.md, results.json, summary.csv, figures). ``results.json`` follows the results schema
(``harness_gym.evaluation.results``: per-setting, per-seed scores and every episode's G, with the protocol
and simulator versions) beside the bench's own keys, so ``harness-gym leaderboard`` can merge it with
anyone's results; its ``smoke`` flag marks a reduced run (``QUICK``).

Stochastic learners (``Algorithm.stochastic``: AWR, BC, IQL, SAC) are evaluated in each mode of ``act``:
``sample`` draws from the softmax over legal actions (the paper's controller; reported under the algorithm's
name) and ``greedy`` takes its argmax (reported as ``<algo>-greedy``); Q-learners act greedily. Settings run
in ``workers`` processes at once. Learning curves (``LearningCurves``): every training run's policy is also
evaluated at ``BenchConfig.curve_points`` checkpoints on the validation tasks (a fixed fifth of the train
tasks, ``harness_gym.core.task.validation_ids``), never on the eval split, which is played once, at the
end. ``timings`` holds the wall time of each phase (collect_s, evaluate_s, train_s, curves_s,
statistics_s).

Evaluation episodes (``EPISODES``): per setting, ``out/episodes/<env id>.jsonl`` keeps the records of the
first ``BenchConfig.view_episodes`` evaluation episodes of every evaluated policy (in protocol order), and
of all of them with a chat-LLM executor (the audit trail: step records with each call's cache key,
latency, tokens and cache flag; the state-dependence references' episodes included, so their calls count
in the evaluation's spend); ``harness-gym view OUT`` shows them.

State dependence and token cost: the expert and the open-loop reference (``GAP_POLICIES``, where an
open-loop string is shipped) play the same evaluation episodes as Base; ``state_dependence`` holds
expert minus open-loop with its paired bootstrap interval (``harness_gym.evaluation.headroom``) and
``tokens`` every evaluated policy's mean G and mean executor tokens per episode. Neither joins the
comparison tables unless named in ``references``.

Learner diagnostics (``diagnostics``): per evaluated policy (Base, Forced-CHECK, the references, expert
and open-loop, every learner), from all its evaluation episodes, ``harness_gym.evaluation.diagnostics``'
``policy_diagnostics``: the share of episodes playing its most common action string (``top_share``,
``top_string``) and the plug-in mutual information in bits between its action and the last check
verdict (``mi_bits``, with its small-count bias ``mi_bias_bits`` and the ``steps`` it is over; and
``mi_checked_bits`` over the ``checked_steps`` after a check, free of the before/after-check position).

Off-policy evaluation (``off_policy_evaluation``): every trained acting policy is also valued from the
buffer alone (FQE, IS, WIS, PDIS, DR; ``harness_gym.bench.ope``) and by playing it on the train tasks the
buffer's episodes start from, so each estimator's error is measured against the simulator's truth.

Imports torch and d3rlpy: never imported by ``import harness_gym``.
"""

from __future__ import annotations

import contextlib
import json
import math
import resource
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from harness_gym.bench.processes import run_each
from harness_gym.core.state import LAYOUTS
from harness_gym.envs.env import check_token_price, simulator_kwargs
from harness_gym.envs.registry import ENV_IDS, env_class
from harness_gym.evaluation.diagnostics import episode_play, policy_diagnostics
from harness_gym.evaluation.engine import EngineConfig, check_manifest, config_key, write_atomic
from harness_gym.evaluation.paper import CURVE_SPLIT, EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import USAGE_KEYS
from harness_gym.executors.openai_executor import OpenAIConfig
from harness_gym.policies.algorithms import ACT_MODES, Algorithm, Trained, TrainingData, train_seeds
from harness_gym.policies.algorithms import get as get_algorithm
from harness_gym.sandbox import require


@dataclass(frozen=True)
class BenchConfig:
    """What to run. The defaults are the paper's protocol; ``QUICK`` is a small smoke version."""

    settings: tuple[str, ...] = ENV_IDS
    seeds: tuple[int, ...] = EVAL_SEEDS
    """Training seeds of AWR and BC; evaluation seed ``s`` is played by the model trained with ``s``."""
    rollouts: int = EVAL_ROLLOUTS
    episodes_per_task: int = 20
    """Buffer size: episodes per train task (the paper's buffers: base + exploratory)."""
    algos: tuple[str, ...] = (
        "awr",
        "bc",
        "awr-converged",
        "bc-converged",
        "iql",
        "cql",
        "bcq",
        "dqn",
        "double-dqn",
        "sac",
    )
    """Algorithms trained with every seed: registered names (``harness_gym.policies.algorithms``;
    ``awr``/``bc`` are the paper's configuration) or ``module:attribute`` of an outside algorithm."""
    n_steps: int | None = None
    """Gradient steps of the fixed-budget algorithms; ``None`` is each algorithm's own budget."""
    act: tuple[str, ...] = ("sample", "greedy")
    """Evaluation modes of stochastic learners (``sample``, ``greedy``)."""
    references: tuple[str, ...] = ()
    """Reference policies (``harness_gym.policies.scripted`` names) evaluated beside Base, e.g. expert,
    hindsight-submit."""
    workers: int = 2
    """Settings evaluated in parallel processes."""
    n_boot: int = 10_000
    executor: OpenAIConfig | None = None
    """A chat LLM executor's settings for buffers and evaluation; ``None`` is the simulated executor."""
    out: str = "results"
    show_progress: bool = True
    train_profile: str | None = None
    """Simulated executor profile (name or JSON path) of the buffer and the main evaluation, passed to every
    environment explicitly; ``None`` is ``default``."""
    eval_profiles: tuple[str, ...] = ()
    """Profiles the trained controllers and Base are evaluated against as well
    (``harness_gym.evaluation.shift``)."""
    concurrency: int = 1
    """Episodes in flight per setting process (results never depend on it)."""
    curves: bool = True
    """Learning curves (``LearningCurves``): each run's policy evaluated at its training checkpoints."""
    curve_points: int = 5
    """Checkpoints per training run at which the learning curve is measured (evenly spaced)."""
    backend: str = "local"
    """Engine backend of each setting's collection and evaluations: ``local`` (threads in the setting
    process) or ``ray`` (``ray_tasks`` Ray tasks; results never depend on it)."""
    ray_address: str | None = None
    """Ray cluster every setting process joins; default ``$RAY_ADDRESS``, else a running local
    instance (``ray start --head``), else a new one per setting process."""
    ray_tasks: int = 1
    """Ray tasks per collection or evaluation, each with ``concurrency`` episodes in flight."""
    keep_datasets: bool = False
    """Keep the buffers under ``out/datasets`` after the report (50-65 MB per setting at full size);
    by default they are removed: the report holds their statistics, and a rerun rebuilds them exactly."""
    smoke: bool = False
    """A smoke run: a check that everything runs, whose numbers are not the protocol's. The report and
    results.json say so everywhere (``QUICK`` sets it)."""
    view_episodes: int = 5
    """Evaluation episodes per policy and setting kept under ``out/episodes`` for ``harness-gym view``
    (all of them with a chat-LLM executor)."""
    token_budget: int | None = None
    """Executor tokens an episode may spend, in the buffer and every evaluation (``gym.make``'s
    ``token_budget``); ``None``: no limit."""
    token_price: float = 0.0
    """G per thousand executor tokens charged in the buffer's rewards and every evaluation's returns
    (``gym.make``'s ``token_price``); 0: the paper's protocol."""
    obs_layout: str = "v1"
    """The MDP every buffer and evaluation plays (``gym.make``'s ``obs_layout``): ``v1``, the paper's, or
    ``v2`` (``docs/mdp-v2.md``): its observation, task set and reference scores."""
    track: str = "paper"
    """``paper``: the paper's protocol (price 0); ``priced``: the same question at three token prices
    (``harness_gym.bench.priced``; MDP v2), written to ``priced.json`` and ``priced.md``."""

    NEUTRAL: ClassVar[frozenset[str]] = frozenset(
        {
            *("workers", "concurrency", "backend", "ray_address", "ray_tasks"),  # scheduling
            *("out", "show_progress", "keep_datasets", "view_episodes"),  # where output goes, what is shown
        }
    )
    """Fields that change no result; every other field is in ``content_key``."""

    def content_key(self) -> dict[str, Any]:
        """The settings that change results; a resume with different ones is refused."""
        return config_key(self, self.NEUTRAL)

    def env_kwargs(self) -> dict[str, Any]:
        """The ``gym.make`` keywords of every episode but the executor: the profile, always explicit,
        and the token budget when there is one."""
        return simulator_kwargs(self.train_profile, self.token_budget, self.token_price, self.obs_layout)

    @property
    def engine(self) -> EngineConfig:
        """How each setting plays its episodes (a local setting process cannot fork workers of its own,
        so ``ray_tasks`` applies to the Ray backend only)."""
        workers = self.ray_tasks if self.backend == "ray" else 1
        return EngineConfig(self.concurrency, workers, self.backend, self.ray_address)


QUICK = BenchConfig(
    seeds=(0,),
    rollouts=1,
    episodes_per_task=2,
    algos=("awr", "bc", "iql", "dqn"),
    n_steps=100,
    n_boot=2_000,
    smoke=True,
)


def _peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def acting_policies(algorithm: Algorithm, trained: Trained, act: tuple[str, ...]) -> list[tuple[str, Any]]:
    """(name, policy) per evaluation mode: ``algo`` samples, ``algo-greedy`` takes the argmax.

    A greedy-only learner has one mode, reported as ``algo``."""
    unknown = [mode for mode in act if mode not in ACT_MODES]
    if unknown or not act:
        raise ValueError(f"act must be a non-empty subset of {ACT_MODES}, got {act}")
    return [(name, trained.policies[mode]) for name, mode in acting_names(algorithm, act)]


def acting_names(algorithm: Algorithm, act: tuple[str, ...]) -> list[tuple[str, str]]:
    """(name, mode) of each policy ``acting_policies`` reports for ``algorithm``."""
    if not algorithm.stochastic:
        return [(algorithm.name, "greedy")]
    return [(algorithm.name if mode == "sample" else f"{algorithm.name}-greedy", mode) for mode in act]


def policy_metas(config: BenchConfig) -> dict[str, dict[str, Any]]:
    """How the results document describes every policy the bench evaluates."""
    from harness_gym.evaluation.results import policy_meta

    metas = {name: policy_meta("scripted") for name in ("base", "forced-check")}
    metas |= {name: policy_meta("reference") for name in config.references}
    for algorithm in map(get_algorithm, config.algos):
        metas |= {
            name: policy_meta("learner", True, mode) for name, mode in acting_names(algorithm, config.act)
        }
    return metas


def results_document(config: BenchConfig, settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The results-schema part of results.json from the settings' outputs (their ``tasks`` and ``runs``
    move into it)."""
    from harness_gym.evaluation import results

    scores = {}
    for env_id, setting in settings.items():
        entry = results.setting(env_id, setting.pop("tasks"), config.obs_layout)
        entry["policies"] = setting.pop("runs")
        scores[env_id] = entry
    return results.document(
        results.protocol("eval", config.seeds, config.rollouts),
        results.simulator(config.executor, config.train_profile or "default", config.obs_layout),
        policy_metas(config),
        scores,
        smoke=config.smoke,
    )


CHECKPOINTS = "checkpoints"
TRACKS = ("paper", "priced")
"""Under ``out``: the bench manifest, finished settings and per-episode evaluation checkpoints."""
EPISODES = "episodes"
"""Under ``out``: per setting, the kept evaluation episodes' records (``<env id>.jsonl``)."""


def episode_count(env_id: str, config: BenchConfig) -> int:
    """Episodes one setting plays: the buffer and every evaluation (for the progress bar)."""
    from harness_gym.core.task import VALIDATION, select
    from harness_gym.envs.registry import env_class

    tasks = env_class(env_id).domain_cls().tasks(config.obs_layout)
    n_train = sum(task.split == "train" for task in tasks)
    n_eval = sum(task.split == "eval" for task in tasks)
    modes = sum(len(config.act) if get_algorithm(algo).stochastic else 1 for algo in config.algos)
    per_policy = n_eval * len(config.seeds) * config.rollouts
    gap_only = len(
        set(gap_policy_names(env_id, config.obs_layout, config.token_price)) - set(config.references)
    )
    evaluated = (2 + len(config.references) + gap_only + modes) * per_policy
    truth = n_train * len(config.seeds) * modes  # ``off_policy_evaluation``'s true values
    curves = curve_episode_count(len(select(tasks, VALIDATION)), config)
    return config.episodes_per_task * n_train + evaluated + truth + curves


# -- the state-dependence gap and the token cost -----------------------------------------------------
GAP_POLICIES = ("expert", "open-loop")
"""The state-dependence gap is expert minus open-loop (``harness_gym.evaluation.headroom``): both play the
protocol's evaluation episodes beside Base, reported in their own section (absent from the comparison
tables unless named in ``BenchConfig.references``)."""


def gap_policy_names(env_id: str, obs_layout: str = "v1", token_price: float = 0.0) -> tuple[str, ...]:
    """``GAP_POLICIES`` where ``env_id`` has an open-loop string shipped for ``obs_layout`` at
    ``token_price`` (a string searched at another price is not that price's reference), else none."""
    from harness_gym.policies.open_loop import open_loop_table

    return GAP_POLICIES if env_id in open_loop_table(obs_layout, token_price)["strings"] else ()


def gap_policies(env_id: str, obs_layout: str = "v1", token_price: float = 0.0) -> dict[str, Any]:
    """The gap's two policies, by name (empty where no open-loop string is shipped for ``obs_layout`` at
    ``token_price``)."""
    from harness_gym.policies.open_loop import OpenLoopPolicy
    from harness_gym.policies.scripted import make_policy

    if not gap_policy_names(env_id, obs_layout, token_price):
        return {}
    return {
        "expert": make_policy("expert", env_id),
        "open-loop": OpenLoopPolicy(env_id, obs_layout=obs_layout, token_price=token_price),
    }


def state_dependence(
    env_id: str, results: dict[str, list[Any]], obs_layout: str = "v1", token_price: float = 0.0
) -> dict[str, Any] | None:
    """Expert and open-loop mean G and their paired gap with its bootstrap interval
    (``headroom.paired_gap``, over the protocol's episode pairs, resampling whole tasks); None without
    both."""
    if not all(name in results for name in GAP_POLICIES):
        return None
    from harness_gym.evaluation.headroom import paired_gap
    from harness_gym.policies.open_loop import open_loop_table

    expert, open_loop = (results[name] for name in GAP_POLICIES)
    if [r.key for r in expert] != [r.key for r in open_loop]:
        raise ValueError(f"{env_id}: expert and open-loop did not play the same episodes")
    tasks = [r.task_id for r in expert]  # the interval resamples whole tasks, as ``harness-gym headroom``'s
    gap, low, high = paired_gap([r.G for r in expert], [r.G for r in open_loop], clusters=tasks)
    return {
        "expert_G": statistics.fmean(r.G for r in expert),
        "open_loop_G": statistics.fmean(r.G for r in open_loop),
        "gap": gap,
        "ci_low": low,
        "ci_high": high,
        "pairs": len(expert),
        "string": open_loop_table(obs_layout, token_price)["strings"][env_id]["string"],
    }


def token_points(
    results: dict[str, list[Any]], tokens: dict[str, list[float]], references: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    """Per evaluated policy: mean G and mean executor tokens (prompt + completion) per episode, and
    whether it is a reference (else a learner): the G-versus-tokens figure's points."""
    return {
        name: {
            "G": statistics.fmean(r.G for r in episodes),
            "tokens": statistics.fmean(tokens[name]),
            "kind": "reference" if name in references else "learner",
        }
        for name, episodes in results.items()
    }


# -- learning curves -------------------------------------------------------------------------------
CURVE_EPISODES = 16
"""A learning-curve point plays every validation task ``curve_rollouts`` times, at least this many
episodes in all (16 validation tasks x 1 in a controlled domain, 3 x 6 in tau-bench retail)."""


def curve_rollouts(n_validation: int) -> int:
    """Rollouts per validation task of a learning-curve point."""
    return max(1, math.ceil(CURVE_EPISODES / n_validation))


def curve_episode_count(n_validation: int, config: BenchConfig) -> int:
    """Episodes one setting's learning curves play (at most; a run shorter than its points has fewer)."""
    if not config.curves:
        return 0
    per_point = n_validation * curve_rollouts(n_validation)
    return len(config.algos) * len(config.seeds) * config.curve_points * per_point


@contextlib.contextmanager
def random_states_kept() -> Any:
    """Python's, numpy's global and torch's random states as they were on entry, restored on exit.

    Evaluating at a training checkpoint must not change the batches the rest of the run draws, so a
    run trains the same model with or without its learning curve."""
    import random

    import numpy as np
    import torch

    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])


class LearningCurves:
    """Validation G of every training run at its checkpoints (``BenchConfig.curve_points``, evenly spaced).

    A point is the mean G over every validation task (``CURVE_SPLIT``) x ``curve_rollouts`` with the
    run's seed as evaluation seed: the same episodes at every checkpoint (deterministic: episode seeds
    come from ``protocol_episodes``), so a curve moves only with the policy. The eval split never enters
    a curve: choosing a checkpoint or a budget from these curves does not tune on the numbers reported.
    Stochastic learners play their ``sample`` mode (the paper's controller), Q-learners greedily.
    ``points`` is ``{algo: {str(seed): [[step, G], ...]}}``; ``seconds`` the wall time spent evaluating.
    """

    def __init__(
        self,
        env_id: str,
        engine: EngineConfig,
        env_kwargs: dict[str, Any],
        on_episode: Callable[[dict[str, Any]], None] | None = None,
        enabled: bool = True,
    ) -> None:
        self.env_id = env_id
        self.engine = engine
        self.env_kwargs = env_kwargs
        self.on_episode = on_episode
        self.enabled = enabled
        self.points: dict[str, dict[str, list[list[float]]]] = {}
        self.seconds = 0.0

    def recorder(self, algorithm: Algorithm, seed: int) -> Callable[[Trained, int], None] | None:
        """``on_checkpoint`` for ``Algorithm.train``: adds the run's points (None when disabled)."""
        if not self.enabled:
            return None
        import gymnasium as gym

        from harness_gym.evaluation.protocol import evaluate

        points = self.points.setdefault(algorithm.name, {})[str(seed)] = []
        env_kwargs = {k: v for k, v in self.env_kwargs.items() if k != "executor"}
        n_validation = len(gym.make(self.env_id, split=CURVE_SPLIT, **env_kwargs).unwrapped.tasks)

        def on_checkpoint(trained: Trained, step: int) -> None:
            start = time.perf_counter()
            name, policy = acting_policies(algorithm, trained, ("sample",))[0]
            with random_states_kept():
                results = evaluate(
                    policy,
                    self.env_id,
                    split=CURVE_SPLIT,
                    seeds=(seed,),
                    rollouts=curve_rollouts(n_validation),
                    policy_name=name,
                    engine=self.engine,
                    on_episode=self.on_episode,
                    **self.env_kwargs,
                )
            points.append([int(step), sum(r.G for r in results) / len(results)])
            self.seconds += time.perf_counter() - start

        return on_checkpoint

    def recorders(
        self, algorithm: Algorithm, seeds: tuple[int, ...]
    ) -> Callable[[int, Trained, int], None] | None:
        """``on_checkpoint(seed, trained, step)`` for ``train_seeds``: each seed's ``recorder``, created in
        seed order (the order of ``points``); None when disabled."""
        if not self.enabled:
            return None
        by_seed = {seed: self.recorder(algorithm, seed) for seed in seeds}

        def on_checkpoint(seed: int, trained: Trained, step: int) -> None:
            record = by_seed[seed]
            assert record is not None
            record(trained, step)

        return on_checkpoint


def off_policy_evaluation(
    env_id: str,
    trained: dict[str, list[tuple[int, Any, str | None]]],
    data: Any,
    engine: EngineConfig,
    checkpoints: Path,
    tick: Callable[[int], None],
    env_kwargs: dict[str, Any],
) -> dict[str, dict[str, dict[str, float | None]]]:
    """Off-policy estimates of every trained acting policy beside its true value (``harness_gym.bench.ope``).

    The buffer's episodes start on the train-split tasks, round robin, so every estimate is of the
    value on the train split, and so is the truth: the policy plays every train task once
    (``rollouts=1``; evaluation seed = its training seed), the same number of episodes per task as
    each task's share of the buffer, ``true_se`` the standard error of that mean.
    ``{policy: {str(seed): {"true", "true_se", "fqe", "is", "wis", "pdis", "dr", "own_q", "ess"}}}``;
    an estimate that is undefined (WIS when no logged episode follows the policy) is None.
    """
    from harness_gym.bench.ope import LoggedBuffer, off_policy_values
    from harness_gym.evaluation.protocol import evaluate

    runs = [
        (name, seed, policy, fp)
        for name, entries in trained.items()
        if name != "base"
        for seed, policy, fp in entries
    ]
    if not runs:
        return {}
    estimates = off_policy_values(
        [p for _, _, p, _ in runs], LoggedBuffer.from_offline(data), [s for _, s, _, _ in runs]
    )
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for (name, seed, policy, fp), values in zip(runs, estimates, strict=True):
        records = evaluate(
            policy,
            env_id,
            split="train",
            seeds=(seed,),
            rollouts=1,
            policy_name=name,
            engine=engine,
            checkpoint=checkpoints / f"ope-{name}-s{seed}",
            fingerprint=fp,
            on_episode=lambda record: tick(1),
            **env_kwargs,
        )
        g = [r.G for r in records]
        se = statistics.stdev(g) / math.sqrt(len(g)) if len(g) > 1 else None
        entry = {"true": statistics.fmean(g), "true_se": se, **values}
        out.setdefault(name, {})[str(seed)] = {
            k: None if v is None or not math.isfinite(v) else float(v) for k, v in entry.items()
        }
    return out


# -- one setting, phase by phase -------------------------------------------------------------------
class SettingRun:
    """What the phases of one setting share: its config and engine, the environment keywords every
    episode is played with, the checkpoint directory, the phases' wall times, and per evaluated policy
    every evaluation episode's executor tokens and the records kept for ``write_episodes``."""

    def __init__(self, env_id: str, config: BenchConfig, progress: Callable[[int], None] | None) -> None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        self.env_id = env_id
        self.config = config
        self.engine = config.engine
        self.env_kwargs: dict[str, Any] = config.env_kwargs()
        self.executor = None
        if config.executor is not None:
            self.executor = self.env_kwargs["executor"] = OpenAIExecutor(config.executor)
        self.checkpoints = Path(config.out) / CHECKPOINTS / env_id
        self.tick = progress or (lambda n: None)
        self.timings: dict[str, float] = {}
        self.kept: dict[str, list[dict[str, Any]]] = {}
        self.tokens: dict[str, list[float]] = {}
        self.plays: dict[str, list[Any]] = {}
        self.start = time.perf_counter()

    def keep(self, name: str, record: dict[str, Any], view: bool = True) -> None:
        """Count an evaluation episode's tokens, note its actions and verdicts (``diagnostics``), and
        keep its record for ``write_episodes`` if ``view``."""
        self.tick(1)
        usage = record["usage"]
        self.tokens.setdefault(name, []).append(usage["prompt_tokens"] + usage["completion_tokens"])
        self.plays.setdefault(name, []).append(episode_play(record["step_records"]))
        if view:
            self.kept.setdefault(name, []).append({"policy": name, **record})

    def evaluate(
        self,
        policy: Any,
        name: str,
        seeds: tuple[int, ...],
        tag: str,
        fingerprint: str | None = None,
        view: bool = True,
    ) -> list[Any]:
        """The protocol's evaluation of ``policy`` on the eval split, checkpointed under ``tag``."""
        from harness_gym.evaluation.protocol import evaluate

        return evaluate(
            policy,
            self.env_id,
            seeds=seeds,
            rollouts=self.config.rollouts,
            policy_name=name,
            engine=self.engine,
            checkpoint=self.checkpoints / tag,
            fingerprint=fingerprint,
            on_episode=lambda record: self.keep(name, record, view),
            **self.env_kwargs,
        )

    def elapsed(self) -> float:
        """Seconds since the setting started."""
        return time.perf_counter() - self.start

    @contextlib.contextmanager
    def timed(self, key: str) -> Any:
        """Adds the wall time of the block to ``timings[key]``."""
        mark = time.perf_counter()
        try:
            yield
        finally:
            self.timings[key] = self.timings.get(key, 0.0) + time.perf_counter() - mark


@dataclass(frozen=True)
class Buffer:
    """A setting's training buffer: the Minari dataset, its d3rlpy form and its statistics."""

    dataset: Any
    data: Any
    stats: dict[str, Any]
    collected: Any
    """The ``CollectReport`` of this process's collection; None when an earlier run's buffer was reused."""


def collect_buffer(setting: SettingRun) -> Buffer:
    """The mixed Base + Exploratory buffer on the train split, collected with per-episode checkpoints;
    one finished before an interruption (same manifest) is read back instead."""
    import minari

    from harness_gym.datasets.collect import CollectConfig, collect, dataset_root, iter_episodes
    from harness_gym.datasets.d3rlpy_bridge import to_d3rlpy
    from harness_gym.evaluation.protocol import buffer_arrays, buffer_stats

    config, engine = setting.config, setting.engine
    domain = env_class(setting.env_id).domain_cls
    n_episodes = config.episodes_per_task * sum(
        task.split == "train" for task in domain().tasks(config.obs_layout)
    )
    root = str(Path(config.out) / "datasets")
    dataset_id = f"harness/{domain.dataset_domain()}/bench-mixed-v0"
    collect_config = CollectConfig(
        setting.env_id,
        "mixed",
        n_episodes,
        dataset_id,
        executor=config.executor,
        workers=engine.workers,
        concurrency=engine.concurrency,
        backend=engine.backend,
        ray_address=engine.ray_address,
        root=root,
        show_progress=False,
        executor_profile=config.train_profile,
        token_budget=config.token_budget,
        token_price=config.token_price,
        obs_layout=config.obs_layout,
    )
    episodes: list[Any] = []  # the written episodes (~30 MB for 1,600): read back only on a resume
    if (dataset_root(root) / dataset_id).exists():  # collected before an interruption: same manifest
        collected = None
        setting.tick(n_episodes)
    else:
        collected = collect(collect_config, progress=setting.tick, episodes_out=episodes)
    dataset = minari.load_dataset(str(dataset_root(root) / dataset_id))
    episodes = episodes or list(iter_episodes(dataset))
    stats = buffer_stats(**buffer_arrays(episodes))
    data = to_d3rlpy(dataset, episodes)
    setting.timings["collect_s"] = setting.elapsed()
    return Buffer(dataset, data, stats, collected)


TrainedRuns = dict[str, list[tuple[int, Any, str | None]]]
"""Per acting policy name, its (evaluation seed, policy, model fingerprint) runs; Base's first."""


def evaluate_references(setting: SettingRun) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """Base, Forced-CHECK and ``references`` on the protocol's episodes; and the state-dependence gap's
    two ends (``gap_policies``, kept out of the comparison unless also references). Returns both."""
    from harness_gym.policies.scripted import BasePolicy, ForcedCheckPolicy, make_policy

    env_id, seeds = setting.env_id, setting.config.seeds
    results: dict[str, list[Any]] = {
        "base": setting.evaluate(BasePolicy(env_id), "base", seeds, "base"),
        "forced-check": setting.evaluate(ForcedCheckPolicy(env_id), "forced-check", seeds, "forced-check"),
    }
    for name in setting.config.references:  # the engine binds hindsight-submit to each env it plays on
        results[name] = setting.evaluate(make_policy(name, env_id), name, seeds, name)
    gap_refs = {  # with a chat LLM their calls join the audit trail and the spend summary like every other's
        name: results.get(name)
        or setting.evaluate(policy, name, seeds, name, view=setting.executor is not None)
        for name, policy in gap_policies(
            env_id, setting.config.obs_layout, setting.config.token_price
        ).items()
    }
    setting.timings["evaluate_s"] = setting.elapsed() - setting.timings["collect_s"]
    return results, gap_refs


def train_and_evaluate(
    setting: SettingRun, buffer: Buffer, results: dict[str, list[Any]]
) -> tuple[TrainedRuns, LearningCurves]:
    """Train every algorithm with every seed on the buffer and evaluate each acting policy (seed ``s``
    plays evaluation seed ``s``), adding its episodes to ``results``; the learning curves are measured
    during training. Returns the trained policies (Base's entry first) and the curves."""
    from harness_gym.policies.scripted import BasePolicy

    config, env_id = setting.config, setting.env_id
    trained: TrainedRuns = {"base": [(s, BasePolicy(env_id), None) for s in config.seeds]}
    setting.timings["train_s"] = 0.0
    training_data = TrainingData(env_id, buffer.dataset, buffer.data)
    curves = LearningCurves(
        env_id, setting.engine, setting.env_kwargs, lambda record: setting.tick(1), config.curves
    )
    for algorithm in map(get_algorithm, config.algos):
        with setting.timed("train_s"):
            runs = train_seeds(
                algorithm,
                training_data,
                seeds=config.seeds,
                n_steps=config.n_steps,
                curve_points=config.curve_points if config.curves else 0,
                on_checkpoint=curves.recorders(algorithm, config.seeds),
            )
        for seed, trained_run in zip(config.seeds, runs, strict=True):
            with setting.timed("evaluate_s"):
                for name, policy in acting_policies(algorithm, trained_run, config.act):
                    trained.setdefault(name, []).append((seed, policy, trained_run.fingerprint))
                    results.setdefault(name, []).extend(
                        setting.evaluate(policy, name, (seed,), f"{name}-s{seed}", trained_run.fingerprint)
                    )
    setting.timings["train_s"] -= curves.seconds  # the curves' evaluations ran inside training
    setting.timings["curves_s"] = curves.seconds
    return trained, curves


def log_headline(
    setting: SettingRun, comparison: dict[str, Any], trained: TrainedRuns, log: Callable[[str], None]
) -> None:
    """One line per setting: Base and the first learner (AWR if trained) with its interval."""
    learners = [name for name in trained if name != "base"]  # ``trained`` opens with Base's entry
    shown = next((name for name in ("awr", *learners) if name in comparison["policies"]), "base")
    entry = comparison["policies"][shown]
    interval = "" if shown == "base" else f" [{entry['ci_low']:+.3f}, {entry['ci_high']:+.3f}]"
    log(
        f"{setting.env_id:<24} base G {entry['base_G']:.3f}  {shown} G {entry['G']:.3f}  "
        f"ΔG {entry['delta_G']:+.3f}{interval}  ΔHMS {entry['delta_hms']:+.3f}  CBS {entry['cbs']:.1%}  "
        f"({setting.timings['total_s']:.0f}s)"
    )


def executor_shift(setting: SettingRun, trained: TrainedRuns) -> dict[str, Any]:
    """Every trained policy and Base under every evaluation profile (``harness_gym.evaluation.shift``)."""
    from harness_gym.evaluation.protocol import evaluate
    from harness_gym.evaluation.shift import evaluate_shift

    config = setting.config
    train_profile = config.train_profile or "default"
    profiles = [train_profile, *(p for p in config.eval_profiles if p != train_profile)]
    return {
        "train_profile": train_profile,
        "G": evaluate_shift(
            {name: [(seed, policy) for seed, policy, _ in runs] for name, runs in trained.items()},
            setting.env_id,
            profiles,
            config.rollouts,
            evaluate,
            **setting.env_kwargs,
        ),
    }


def executor_spend(setting: SettingRun, buffer: Buffer) -> dict[str, Any]:
    """A chat-LLM executor's usage: the collection's (zero when the buffer was reused) and the
    evaluations' with the spend summary of their calls."""
    from harness_gym.evaluation.spend import calls_of, summarize_calls

    collected = buffer.collected
    used = {**collected.usage, **collected.spend} if collected else dict.fromkeys(USAGE_KEYS, 0.0)
    calls = [
        c for records in setting.kept.values() for r in records for c in calls_of(r.get("step_records", []))
    ]
    return {"collect": used, "evaluate": {**setting.executor.stats(), **summarize_calls(calls)}}


def setting_output(
    setting: SettingRun,
    buffer: Buffer,
    results: dict[str, list[Any]],
    gap_refs: dict[str, list[Any]],
    curves: LearningCurves,
    ope: dict[str, Any],
    comparison: dict[str, Any],
) -> dict[str, Any]:
    """The setting's entry of results.json (its ``tasks`` and ``runs`` later move into the results
    schema's part, ``results_document``)."""
    from harness_gym.evaluation import results as results_schema
    from harness_gym.evaluation.aggregate import pass_k

    config, env_id = setting.config, setting.env_id
    tasks = list(dict.fromkeys(r.task_id for r in results["base"]))
    references = ("base", "forced-check", *gap_refs, *config.references)
    return {
        "compare": comparison,
        "buffer": buffer.stats,
        "timings": setting.timings,
        "tasks": tasks,
        "runs": {
            name: results_schema.runs(
                env_id, episodes, tasks, config.seeds, config.rollouts, config.obs_layout
            )
            for name, episodes in results.items()
        },
        "curves": curves.points,
        "pass_k": pass_k(results, range(1, config.rollouts + 1)),
        "ope": ope,
        "state_dependence": state_dependence(env_id, gap_refs, config.obs_layout, config.token_price),
        "tokens": token_points(results | gap_refs, setting.tokens, references=references),
        "diagnostics": {name: policy_diagnostics(setting.plays[name]) for name in results | gap_refs},
    }


def run_setting(
    env_id: str,
    config: BenchConfig,
    log: Callable[[str], None] = print,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """One setting's buffer, models, evaluations and comparison (runs in a worker process).

    Resumable: the buffer is collected with per-episode checkpoints (an existing one is reused) and
    every evaluation checkpoints its episodes under ``out/checkpoints/<env id>/``. ``progress(n)``
    is told of every ``n`` episodes played or resumed.
    """
    import torch

    from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy
    from harness_gym.evaluation.protocol import compare

    quiet_d3rlpy()
    torch.set_num_threads(1)  # settings already run in parallel: more threads only contend for the cores
    setting = SettingRun(env_id, config, progress)
    buffer = collect_buffer(setting)
    results, gap_refs = evaluate_references(setting)
    trained, curves = train_and_evaluate(setting, buffer, results)
    with setting.timed("ope_s"):
        ope = off_policy_evaluation(
            env_id,
            trained,
            buffer.data,
            setting.engine,
            setting.checkpoints,
            setting.tick,
            setting.env_kwargs,
        )
    with setting.timed("statistics_s"):
        comparison = compare(results, n_boot=config.n_boot, n_perm=config.n_boot)
    setting.timings["total_s"] = setting.elapsed()
    log_headline(setting, comparison, trained, log)
    out = setting_output(setting, buffer, results, gap_refs, curves, ope, comparison)
    if config.eval_profiles:
        out["shift"] = executor_shift(setting, trained)
    write_episodes(config, env_id, setting.kept)
    if setting.executor is not None:
        out["executor"] = executor_spend(setting, buffer)
    return out


def write_episodes(config: BenchConfig, env_id: str, kept: dict[str, list[dict[str, Any]]]) -> str:
    """``out/episodes/<env id>.jsonl``: per policy its first ``view_episodes`` evaluation records in
    protocol order (seed, task, rollout), or all of them with a chat LLM; the file's path."""
    path = Path(config.out) / EPISODES / f"{env_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    limit = None if config.executor is not None else config.view_episodes
    with path.open("w", encoding="utf-8") as handle:
        for records in kept.values():
            ordered = sorted(records, key=lambda r: (r["seed"], r["task_id"], r["rollout"]))
            for record in ordered[:limit]:
                handle.write(json.dumps(record, default=float) + "\n")
    return str(path)


def _run_setting_in_process(
    config: BenchConfig, env_id: str, report: Callable[[int], None]
) -> dict[str, Any]:
    result = run_setting(env_id, config, progress=report)
    path = Path(config.out) / CHECKPOINTS / f"setting-{env_id}.json"
    write_atomic(path, json.dumps(result, default=float).encode())
    return result


PRELOADED = ("torch", "torch._dynamo", "d3rlpy", "minari")
"""Imported by the bench process before it forks its setting processes, which inherit them: each would
import them anyway (about 5 CPU-s per process; ``torch._dynamo`` comes with the first torch optimizer)."""


def _preload(start_method: str) -> None:
    """Import ``PRELOADED`` (those installed) when setting processes are forked; nothing runs in them."""
    if start_method != "fork":
        return
    import importlib

    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def run(config: BenchConfig) -> dict[str, Any]:
    """Every setting, then the report; returns the results dict (also written to ``config.out``).

    Resumable: rerun with the same settings after an interruption and finished settings are read
    back, unfinished ones resume from their checkpoints (``out/checkpoints``, removed at the end).
    """
    from harness_gym.envs.registry import EXTRA_ENV_ENTRY_POINTS

    known = (*ENV_IDS, *EXTRA_ENV_ENTRY_POINTS)
    unknown = [env_id for env_id in config.settings if env_id not in known]
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; known: {', '.join(known)}")
    if config.track != "paper":
        raise ValueError(
            f"this runs the paper's track; track {config.track!r} runs through harness_gym.bench.priced.run "
            f"(harness-gym bench --track priced)" if config.track in TRACKS else
            f"unknown track {config.track!r}; expected one of {', '.join(TRACKS)}"
        )  # fmt: skip
    from harness_gym.evaluation.shift import check_profiles

    check_profiles(config.train_profile, config.eval_profiles, llm=config.executor is not None)
    budget = config.token_budget
    if budget is not None and not (isinstance(budget, int) and not isinstance(budget, bool) and budget > 0):
        raise ValueError(f"token_budget must be a positive integer, got {budget!r}")
    check_token_price(config.token_price)
    if config.obs_layout not in LAYOUTS:
        raise ValueError(f"unknown obs_layout {config.obs_layout!r}; expected one of {', '.join(LAYOUTS)}")
    if config.ray_tasks < 1:
        raise ValueError(f"ray_tasks must be at least 1, got {config.ray_tasks}")
    config.engine  # noqa: B018  (an EngineError names a bad concurrency, backend or Ray address)
    # refused here, in one line, if a setting runs model-written code and the boundary cannot be had
    runs_code = any(env_class(env_id).domain_cls.runs_code for env_id in config.settings)
    sandbox = require().mode if runs_code else "none"
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoints = out / CHECKPOINTS
    if not (checkpoints / "manifest.json").exists():  # a fresh run: no buffer of an older run is reused
        shutil.rmtree(out / "datasets", ignore_errors=True)
    check_manifest(checkpoints, config.content_key(), f"bench in {out}")
    start = time.perf_counter()
    import multiprocessing

    from tqdm.auto import tqdm

    done: dict[str, dict[str, Any]] = {}
    for env_id in config.settings:
        path = checkpoints / f"setting-{env_id}.json"
        if path.exists():
            done[env_id] = json.loads(path.read_text())
    total = sum(episode_count(env_id, config) for env_id in config.settings)
    initial = sum(episode_count(env_id, config) for env_id in done)
    # smoothing=0: the ETA uses the mean rate so far, which includes the training between episodes
    bar = tqdm(
        total=total, initial=initial, desc="bench", unit="ep", smoothing=0, disable=not config.show_progress
    )
    if config.algos and any(env_id not in done for env_id in config.settings):
        _preload(multiprocessing.get_start_method())

    def finished(env_id: str, result: dict[str, Any]) -> None:
        done[env_id] = result
        bar.set_postfix_str(f"{len(done)}/{len(config.settings)} settings")

    try:
        run_each(
            partial(_run_setting_in_process, config),
            [env_id for env_id in config.settings if env_id not in done],
            config.workers,
            finished,
            bar.update,
        )
    finally:
        bar.close()
    settings = {env_id: done[env_id] for env_id in config.settings}
    results: dict[str, Any] = results_document(config, settings)
    results |= {"config": asdict(config), "sandbox": sandbox, "settings": settings}
    # IQM etc. across settings x seeds (rliable); the bench's n_boot, capped to bound the time it takes
    from harness_gym.evaluation.aggregate import POI_REPS, REPS, summarize

    mark = time.perf_counter()
    results["aggregate"] = summarize(
        results, min(config.n_boot, REPS), min(config.n_boot, POI_REPS), workers=config.workers
    )
    results["timings"] = {
        "aggregate_s": time.perf_counter() - mark,
        "total_s": time.perf_counter() - start,
        "peak_rss_mb": _peak_rss_mb(),
    }
    try:
        from harness_gym.bench.report import write_report
    except ImportError:  # the report module is optional for a results-only run
        from harness_gym.evaluation.results import write

        write(results, out / "results.json")
    else:
        write_report(results, out)
    shutil.rmtree(checkpoints)
    if not config.keep_datasets:
        shutil.rmtree(out / "datasets", ignore_errors=True)
    return results


def quick(out: str = "results-quick", settings: tuple[str, ...] | None = None) -> BenchConfig:
    return replace(QUICK, out=out, settings=settings or QUICK.settings)
