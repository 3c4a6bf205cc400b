"""The paper's protocol end to end: buffers, offline training, evaluation, statistics, report.

For every setting: collect the mixed Base + Exploratory buffer on the train split; train every
algorithm with each seed (budgets: ``baselines.budgets``); evaluate Base, Forced-CHECK and every trained
policy on every eval task x seed x rollout (the policy trained with seed ``s`` plays the episodes of
evaluation seed ``s``, so all policies share their episode pairs); compare against Base; write
``results/`` (report.md, results.json, summary.csv, figures).

Stochastic learners (AWR, BC, IQL, SAC) are evaluated in each mode of ``act``: ``sample`` draws from
the softmax over legal actions (the paper's controller; reported under the algorithm's name) and
``greedy`` takes its argmax (reported as ``<algo>-greedy``); Q-learners act greedily. Settings run in
``workers`` processes at once.

Imports torch and d3rlpy: never imported by ``import harness_gym``.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import harness_gym
from harness_gym.executors.openai_executor import OpenAIConfig
from harness_gym.paper import EVAL_ROLLOUTS, EVAL_SEEDS


@dataclass(frozen=True)
class BenchConfig:
    """What to run. The defaults are the paper's protocol; ``QUICK`` is a small smoke version."""

    settings: tuple[str, ...] = harness_gym.ENV_IDS
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
    """Algorithms trained with every seed (``awr``/``bc``: the paper's configuration)."""
    n_steps: int | None = None
    """Gradient steps of the fixed-budget algorithms; ``None`` is ``baselines.budgets.Schedule``'s."""
    act: tuple[str, ...] = ("sample", "greedy")
    """Evaluation modes of stochastic learners (``sample``, ``greedy``)."""
    references: tuple[str, ...] = ()
    """Reference policies (``baselines.scripted`` names) evaluated beside Base, e.g. expert, oracle."""
    workers: int = 2
    """Settings evaluated in parallel processes."""
    n_boot: int = 10_000
    executor: OpenAIConfig | None = None
    """A chat LLM executor's settings for buffers and evaluation; ``None`` is the simulated executor."""
    out: str = "results"
    show_progress: bool = True
    train_profile: str | None = None
    """Simulated executor profile (name or JSON path) for the buffer, training and main evaluation."""
    eval_profiles: tuple[str, ...] = ()
    """Profiles the trained controllers and Base are evaluated against as well (``harness_gym.shift``)."""


QUICK = BenchConfig(
    seeds=(0,), rollouts=1, episodes_per_task=2, algos=("awr", "bc", "iql", "dqn"), n_steps=100, n_boot=2_000
)


def _peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


ACT_MODES = ("sample", "greedy")


def acting_policies(model: Any, algo: str, act: tuple[str, ...]) -> list[tuple[str, Any]]:
    """(name, policy) per evaluation mode: ``algo`` samples, ``algo-greedy`` takes the argmax.

    A Q-learner has one mode, greedy, reported as ``algo``."""
    from baselines.masked import MaskedPolicy

    unknown = [mode for mode in act if mode not in ACT_MODES]
    if unknown or not act:
        raise ValueError(f"act must be a non-empty subset of {ACT_MODES}, got {act}")
    if not MaskedPolicy(model, algo).stochastic:
        return [(algo, MaskedPolicy(model, algo))]
    named = {"sample": algo, "greedy": f"{algo}-greedy"}
    return [(named[mode], MaskedPolicy(model, named[mode], sample=mode == "sample")) for mode in act]


def run_setting(env_id: str, config: BenchConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """One setting's buffer, models, evaluations and comparison (runs in a worker process)."""
    import torch

    from baselines.train import quiet_d3rlpy

    quiet_d3rlpy()
    torch.set_num_threads(1)  # settings already run in parallel: more threads only contend for the cores
    import minari

    from baselines.budgets import Schedule
    from baselines.d3rlpy_bridge import to_d3rlpy
    from baselines.scripted import BasePolicy, ForcedCheckPolicy, make_policy
    from baselines.train import train
    from harness_gym.aggregate import seed_scores
    from harness_gym.collect import CollectConfig, collect, dataset_root, iter_episodes
    from harness_gym.evaluation import buffer_arrays, buffer_stats, compare, evaluate
    from harness_gym.executors.openai_executor import OpenAIExecutor
    from harness_gym.registry import env_class
    from harness_gym.shift import evaluate_shift, training_profile

    leave_training_profile = training_profile(config.train_profile)

    env_kwargs: dict[str, Any] = {}
    executor = None
    if config.executor is not None:
        executor = env_kwargs["executor"] = OpenAIExecutor(config.executor)

    timings: dict[str, float] = {}
    start = time.perf_counter()
    domain = env_class(env_id).domain_cls
    n_train = sum(task.split == "train" for task in domain().tasks())
    root = str(Path(config.out) / "datasets")
    dataset_id = f"harness/{domain.name}/bench-mixed-v0"
    collected = collect(
        CollectConfig(
            env_id,
            "mixed",
            config.episodes_per_task * n_train,
            dataset_id,
            executor=config.executor,
            workers=1,
            overwrite=True,
            root=root,
            show_progress=False,
        )
    )
    dataset = minari.load_dataset(str(dataset_root(root) / dataset_id))
    buffer = buffer_stats(**buffer_arrays(iter_episodes(dataset)))
    data = to_d3rlpy(dataset)
    timings["collect_s"] = time.perf_counter() - start

    results: dict[str, list] = {
        "base": evaluate(
            BasePolicy(env_id), env_id, seeds=config.seeds, rollouts=config.rollouts, **env_kwargs
        ),
        "forced-check": evaluate(
            ForcedCheckPolicy(env_id), env_id, seeds=config.seeds, rollouts=config.rollouts, **env_kwargs
        ),
    }
    for name in config.references:  # evaluate binds the oracle to its env
        policy = make_policy(name, env_id)
        results[name] = evaluate(policy, env_id, seeds=config.seeds, rollouts=config.rollouts, **env_kwargs)
    trained: dict[str, list[tuple[int, Any]]] = {"base": [(s, BasePolicy(env_id)) for s in config.seeds]}
    timings["evaluate_s"] = time.perf_counter() - start - timings["collect_s"]
    timings["train_s"] = 0.0
    schedule = Schedule() if config.n_steps is None else Schedule(n_steps=config.n_steps)
    for algo in config.algos:
        for seed in config.seeds:
            mark = time.perf_counter()
            model = train(algo, data, seed=seed, schedule=schedule)
            timings["train_s"] += time.perf_counter() - mark
            mark = time.perf_counter()
            for name, policy in acting_policies(model, algo, config.act):
                trained.setdefault(name, []).append((seed, policy))
                results.setdefault(name, []).extend(
                    evaluate(
                        policy,
                        env_id,
                        seeds=(seed,),
                        rollouts=config.rollouts,
                        policy_name=name,
                        **env_kwargs,
                    )
                )
            timings["evaluate_s"] += time.perf_counter() - mark
    mark = time.perf_counter()
    comparison = compare(results, n_boot=config.n_boot, n_perm=config.n_boot)
    timings["statistics_s"] = time.perf_counter() - mark
    timings["total_s"] = time.perf_counter() - start
    aw = comparison["policies"]["awr"]
    log(
        f"{env_id:<24} base G {aw['base_G']:.3f}  AW G {aw['G']:.3f}  ΔG {aw['delta_G']:+.3f} "
        f"[{aw['ci_low']:+.3f}, {aw['ci_high']:+.3f}]  ΔHMS {aw['delta_hms']:+.3f}  CBS {aw['cbs']:.1%}  "
        f"({timings['total_s']:.0f}s)"
    )
    out: dict[str, Any] = {
        "compare": comparison,
        "buffer": buffer,
        "timings": timings,
        "seed_scores": seed_scores(results, env_id),
    }
    if config.eval_profiles:
        train_profile = config.train_profile or "default"
        profiles = [train_profile, *(p for p in config.eval_profiles if p != train_profile)]
        out["shift"] = {
            "train_profile": train_profile,
            "G": evaluate_shift(trained, env_id, profiles, config.rollouts, evaluate, **env_kwargs),
        }
    if executor is not None:
        out["executor"] = {"collect": collected.usage, "evaluate": executor.stats()}
    leave_training_profile()
    return out


def run(config: BenchConfig) -> dict[str, Any]:
    """Every setting, then the report; returns the results dict (also written to ``config.out``)."""
    unknown = [env_id for env_id in config.settings if env_id not in harness_gym.ENV_IDS]
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; known: {', '.join(harness_gym.ENV_IDS)}")
    from harness_gym.shift import check_profiles

    check_profiles(config.train_profile, config.eval_profiles, llm=config.executor is not None)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm.auto import tqdm

    done: dict[str, dict[str, Any]] = {}
    progress = tqdm(
        total=len(config.settings), desc="bench", unit="setting", disable=not config.show_progress
    )
    # a fresh process per setting: caches and models of one setting never add to the next one's memory
    pool_kwargs = {"max_workers": config.workers, "max_tasks_per_child": 1}
    with ProcessPoolExecutor(**pool_kwargs) as pool, progress as bar:
        futures = {pool.submit(run_setting, env_id, config): env_id for env_id in config.settings}
        for future in as_completed(futures):
            done[futures[future]] = future.result()
            bar.update(1)
    settings = {env_id: done[env_id] for env_id in config.settings}
    results = {
        "config": asdict(config),
        "timings": {"total_s": time.perf_counter() - start, "peak_rss_mb": _peak_rss_mb()},
        "settings": settings,
    }
    try:
        from harness_gym.report import write_report
    except ImportError:  # the report module is optional for a results-only run
        (out / "results.json").write_text(json.dumps(results, indent=1, default=float))
    else:
        write_report(results, out)
    return results


def quick(out: str = "results-quick", settings: tuple[str, ...] | None = None) -> BenchConfig:
    return replace(QUICK, out=out, settings=settings or QUICK.settings)
