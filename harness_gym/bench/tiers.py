"""The algorithm x tier suite: every bench algorithm trained on each dataset tier, scored on the eval
protocol.

``harness-gym bench --tiers random medium expert medium-expert mixed coverage`` runs it; the default bench
(``harness_gym.bench.runner``) is a separate suite and unchanged. For every setting and tier the tier's
dataset is built exactly as published (``harness_gym.datasets.tiers``: 20 episodes per train task, so the
data are the published ones, checkable with ``harness-gym datasets verify``), converted for d3rlpy, and every
algorithm is trained on it with each seed; the policy trained with seed ``s`` plays every eval task x
``rollouts`` with evaluation seed ``s`` (stochastic learners sample, the paper's controller; Q-learners act
greedily). A run's score is the normalised score of its mean G (random 0, expert 100;
``harness_gym.evaluation.reference_scores``).

The table is the IQM of those scores with 95% stratified-bootstrap intervals (rliable, as the default bench's
aggregate) per algorithm x tier: per setting over the seeds, and aggregated over settings x seeds.

Coverage (``TierBenchConfig.ope``): on every tier the same fixed policies (the scripted references, which no
tier was tuned for) are valued from the tier's buffer alone with FQE, DR and WIS (``harness_gym.bench.ope``),
and BCQ's and CQL's own Q-values of their start states are read, each against the truth the simulator gives
by playing the policy on the train tasks the buffer starts from. The report shows how each tier, coverage
above all, changes those errors.

Budget: see ``TierBenchConfig``; ``docs/bench/tiers`` records the run's time. ``QUICK_TIERS`` is a smoke
version.
"""

from __future__ import annotations

import json
import math
import shutil
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from harness_gym.bench.processes import Report, run_each
from harness_gym.bench.runner import BenchConfig, acting_policies
from harness_gym.envs.registry import ENV_IDS
from harness_gym.evaluation.engine import config_key, write_atomic
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS

TIER_SUITE = ("random", "medium", "expert", "medium-expert", "mixed", "coverage")
"""The tiers of ``harness-gym bench --tiers`` when all are asked for: every tier but medium-replay."""
OPE_POLICIES = ("base", "forced-check", "check-revise", "expert", "random")
"""Fixed policies valued from every tier's buffer: the same policies on every tier."""
OWN_Q = ("bcq", "cql")
"""Q-learners whose own start-state values are compared with their true values on every tier."""
PROFILE = "default"
"""The executor profile of every episode: the published tiers' (``harness_gym.datasets.tiers``)."""
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class TierBenchConfig:
    """What the algorithm x tier suite runs (module docstring)."""

    tiers: tuple[str, ...] = TIER_SUITE
    settings: tuple[str, ...] = ENV_IDS
    algos: tuple[str, ...] = BenchConfig().algos
    """The default bench's algorithms."""
    seeds: tuple[int, ...] = EVAL_SEEDS
    """Training seeds; the policy trained with seed ``s`` plays evaluation seed ``s``."""
    rollouts: int = EVAL_ROLLOUTS
    episodes_per_task: int = 20
    """Buffer size per train task: 20 is the published tiers' size (others are not published data)."""
    n_steps: int | None = None
    """Gradient steps of every algorithm; ``None`` is each algorithm's own budget."""
    ope: bool = True
    """Value ``OPE_POLICIES`` and the ``OWN_Q`` learners from each buffer against the simulator's truth."""
    workers: int = 2
    """Settings run in parallel processes."""
    n_boot: int = 2000
    """Bootstrap replications of the IQM intervals."""
    out: str = "results-tiers"
    show_progress: bool = True

    NEUTRAL: ClassVar[frozenset[str]] = frozenset({"workers", "out", "show_progress"})
    """Fields that change no result (processes, where output goes, display); the others are the key."""

    def content_key(self) -> dict[str, Any]:
        """The settings that change results; a resume with different ones is refused."""
        return config_key(self, self.NEUTRAL)


QUICK_TIERS = TierBenchConfig(
    tiers=("random", "medium", "coverage"),
    settings=("HarnessPlanning-v0",),
    algos=("bc", "cql"),
    seeds=(0,),
    rollouts=1,
    episodes_per_task=2,
    n_steps=50,
    n_boot=200,
)
"""A smoke version: one setting, three tiers, two algorithms, one seed, tiny buffers and budgets."""


def validate(config: TierBenchConfig) -> None:
    """Refuse unknown tiers, settings or algorithms, and empty choices, before any work."""
    from harness_gym.datasets.tiers import TIERS
    from harness_gym.policies.algorithms import get

    unknown = [t for t in config.tiers if t not in TIERS]
    if unknown or not config.tiers:
        raise ValueError(f"unknown tier(s) {unknown}; expected some of {', '.join(TIERS)}")
    bad = [s for s in config.settings if s not in ENV_IDS]
    if bad or not config.settings:
        raise ValueError(f"unknown setting(s) {bad}; the tiers exist for {', '.join(ENV_IDS)}")
    for algo in config.algos:
        get(algo)
    if not config.seeds or config.rollouts < 1 or config.episodes_per_task < 1 or config.n_boot < 1:
        raise ValueError(f"need seeds, and rollouts, episodes_per_task and n_boot >= 1: {config}")


# -- one setting -----------------------------------------------------------------------------------
def _truth(env_id: str, policy: Any, name: str, seed: int, engine: Any) -> dict[str, float | None]:
    """The policy's mean G on every train task once (evaluation seed ``seed``): what OPE estimates."""
    from harness_gym.evaluation.protocol import evaluate

    g = [
        r.G
        for r in evaluate(
            policy,
            env_id,
            split="train",
            seeds=(seed,),
            rollouts=1,
            policy_name=name,
            engine=engine,
            executor_profile=PROFILE,
        )
    ]
    se = statistics.stdev(g) / math.sqrt(len(g)) if len(g) > 1 else None
    return {"true": statistics.fmean(g), "true_se": se}


def _finite(values: Mapping[str, Any]) -> dict[str, float | None]:
    return {k: None if v is None or not math.isfinite(v) else float(v) for k, v in values.items()}


def run_setting(env_id: str, config: TierBenchConfig, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every tier of one setting: buffer, training runs, evaluation and (``config.ope``) OPE errors."""
    import minari
    import torch

    from harness_gym.bench.ope import LoggedBuffer, off_policy_values
    from harness_gym.datasets.collect import collect, dataset_stats
    from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy, to_d3rlpy
    from harness_gym.datasets.tiers import tier_config
    from harness_gym.evaluation.engine import EngineConfig
    from harness_gym.evaluation.protocol import evaluate
    from harness_gym.evaluation.reference_scores import normalized_score
    from harness_gym.policies.algorithms import TrainingData, get
    from harness_gym.policies.scripted import make_policy

    quiet_d3rlpy()
    torch.set_num_threads(1)  # settings run in parallel processes: more threads only contend for the cores
    engine = EngineConfig()
    root = Path(config.out) / "datasets" / env_id
    out: dict[str, Any] = {"scores": {}, "G": {}, "buffers": {}, "ope": {}, "timings": {}}
    truth_cache: dict[tuple[str, int], dict[str, float | None]] = {}
    scripted = [(name, make_policy(name, env_id)) for name in OPE_POLICIES] if config.ope else []
    start = time.perf_counter()
    for tier in config.tiers:
        mark = time.perf_counter()
        collect_config = tier_config(env_id, tier, episodes_per_task=config.episodes_per_task, root=root)
        episodes: list[Any] = []
        collect(collect_config, episodes_out=episodes)
        dataset = minari.load_dataset(str(root / collect_config.dataset_id))
        data = to_d3rlpy(dataset, episodes)
        stats = dataset_stats(dataset)
        out["buffers"][tier] = {k: stats[k] for k in ("episodes", "steps", "mean_G", "max_G")}
        del episodes
        training = TrainingData(env_id, dataset, data)
        learned: list[tuple[str, int, Any]] = []
        for algo in config.algos:
            algorithm = get(algo)
            for seed in config.seeds:
                trained = algorithm.train(training, seed=seed, n_steps=config.n_steps)
                name, policy = acting_policies(algorithm, trained, ("sample",))[0]
                results = evaluate(
                    policy,
                    env_id,
                    seeds=(seed,),
                    rollouts=config.rollouts,
                    policy_name=name,
                    engine=engine,
                    executor_profile=PROFILE,
                )
                mean_g = statistics.fmean(r.G for r in results)
                out["G"].setdefault(algo, {}).setdefault(tier, {})[str(seed)] = mean_g
                out["scores"].setdefault(algo, {}).setdefault(tier, {})[str(seed)] = normalized_score(
                    env_id, mean_g
                )
                if algo in OWN_Q:
                    learned.append((algo, seed, policy))
        if config.ope:
            targets = [(name, 0, policy) for name, policy in scripted] + learned
            buffer = LoggedBuffer.from_offline(data)
            estimates = off_policy_values([p for *_, p in targets], buffer, [s for _, s, _ in targets])
            entries: dict[str, dict[str, Any]] = {}
            for (name, seed, policy), values in zip(targets, estimates, strict=True):
                key = (name, seed)
                if (
                    name in OWN_Q or key not in truth_cache
                ):  # a scripted policy's truth is the same on every tier
                    truth_cache[key] = _truth(env_id, policy, name, seed, engine)
                entries.setdefault(name, {})[str(seed)] = _finite({**truth_cache[key], **values})
            out["ope"][tier] = entries
        out["timings"][tier] = time.perf_counter() - mark
        shutil.rmtree(root / collect_config.dataset_id, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    out["timings"]["total_s"] = time.perf_counter() - start
    runs = f"{len(config.tiers)} tiers x {len(config.algos)} algorithms x {len(config.seeds)} seeds"
    log(f"{env_id:<24} {runs} ({out['timings']['total_s']:.0f}s)")
    return out


def _run_setting_in_process(config: TierBenchConfig, env_id: str, report: Report) -> dict[str, Any]:
    result = run_setting(env_id, config)
    write_atomic(Path(config.out) / CHECKPOINTS / f"setting-{env_id}.json", json.dumps(result).encode())
    return result


# -- the whole suite -------------------------------------------------------------------------------
def run(config: TierBenchConfig) -> dict[str, Any]:
    """Every setting (``workers`` at once), the IQM table and the report in ``config.out``.

    Resumable by setting: a finished setting is kept under ``out/checkpoints`` and read back by a rerun
    with the same configuration."""
    from harness_gym.evaluation.engine import check_manifest

    validate(config)
    out = Path(config.out)
    checkpoints = out / CHECKPOINTS
    check_manifest(checkpoints, config.content_key(), f"tier bench in {out}")
    start = time.perf_counter()
    done = {
        env_id: json.loads((checkpoints / f"setting-{env_id}.json").read_text())
        for env_id in config.settings
        if (checkpoints / f"setting-{env_id}.json").exists()
    }

    def finished(env_id: str, result: dict[str, Any]) -> None:
        done[env_id] = result
        if config.show_progress:
            print(f"{env_id}: done ({len(done)}/{len(config.settings)} settings)", flush=True)

    pending = [env_id for env_id in config.settings if env_id not in done]
    run_each(partial(_run_setting_in_process, config), pending, config.workers, finished)
    results: dict[str, Any] = {
        "config": asdict(config),
        "settings": {env_id: done[env_id] for env_id in config.settings},
    }
    results["table"] = iqm_table(results, config.n_boot)
    results["timings"] = {"total_s": time.perf_counter() - start}
    write_report(results, out)
    shutil.rmtree(checkpoints)
    shutil.rmtree(out / "datasets", ignore_errors=True)
    return results


def quick(out: str = "results-tiers-quick") -> TierBenchConfig:
    return replace(QUICK_TIERS, out=out)


# -- statistics ------------------------------------------------------------------------------------
def score_matrix(results: Mapping[str, Any], algo: str, tier: str, settings: Sequence[str]) -> Any:
    """(seeds x settings) normalised scores of ``algo`` trained on ``tier``."""
    import numpy as np

    seeds = [str(s) for s in results["config"]["seeds"]]
    return np.array(
        [[results["settings"][env]["scores"][algo][tier][seed] for env in settings] for seed in seeds],
        dtype=np.float64,
    )


def iqm_table(results: Mapping[str, Any], reps: int = 2000) -> dict[str, Any]:
    """``{"aggregate": {algo: {tier: {estimate, ci_low, ci_high}}}, "settings": {env: {algo: {tier: ...}}}}``:
    the IQM of the normalised scores with 95% stratified-bootstrap intervals (seeds x settings, and per
    setting over the seeds)."""
    from harness_gym.evaluation.aggregate import interval_estimates

    config = results["config"]
    settings = list(results["settings"])

    def table(envs: Sequence[str]) -> dict[str, dict[str, dict[str, float]]]:
        matrices = {
            f"{algo}@{tier}": score_matrix(results, algo, tier, envs)
            for algo in config["algos"]
            for tier in config["tiers"]
        }
        estimates = interval_estimates(matrices, reps=reps)
        return {
            algo: {tier: estimates[f"{algo}@{tier}"]["iqm"] for tier in config["tiers"]}
            for algo in config["algos"]
        }

    return {"aggregate": table(settings), "settings": {env: table([env]) for env in settings}}


def ope_errors(results: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float | None]]]:
    """``{tier: {estimator: mean |estimate - truth|}}`` over settings and the fixed policies (``fqe``,
    ``dr``, ``wis``), and over settings and seeds for each ``OWN_Q`` learner's own value
    (``own_q:<algo>``)."""
    tiers = results["config"]["tiers"]
    out: dict[str, dict[str, float | None]] = {}
    for tier in tiers:
        errors: dict[str, list[float]] = {}
        for setting in results["settings"].values():
            for name, by_seed in (setting.get("ope") or {}).get(tier, {}).items():
                for values in by_seed.values():
                    if name in OWN_Q:
                        keys = [(f"own_q:{name}", "own_q")]
                    else:
                        keys = [(k, k) for k in ("fqe", "dr", "wis")]
                    for label, key in keys:
                        if values.get(key) is not None and values.get("true") is not None:
                            errors.setdefault(label, []).append(abs(values[key] - values["true"]))
        out[tier] = {label: statistics.fmean(v) if v else None for label, v in sorted(errors.items())}
    return out


# -- the report ------------------------------------------------------------------------------------
def _cell(entry: Mapping[str, float]) -> str:
    return f"{entry['estimate']:.1f} [{entry['ci_low']:.1f}, {entry['ci_high']:.1f}]"


def markdown(results: Mapping[str, Any]) -> str:
    """The report: the aggregated table, one table per setting, buffer statistics and OPE errors."""
    from harness_gym.bench.report import markdown_table

    config = results["config"]
    tiers = config["tiers"]
    table = results["table"]
    head = ["algorithm", *tiers]
    parts = [
        "# Algorithm x tier\n",
        f"`harness-gym bench --tiers {' '.join(tiers)}`: {len(config['settings'])} settings, "
        f"{len(config['algos'])} algorithms, seeds {config['seeds']}, {config['rollouts']} rollouts per eval "
        f"task, {config['episodes_per_task']} episodes per train task in every buffer; "
        f"{results['timings']['total_s'] / 60:.1f} minutes.\n",
        "Normalised score (random 0, expert 100), IQM with 95% stratified-bootstrap intervals over "
        "settings x seeds:\n",
        markdown_table(
            head, [[algo, *(_cell(table["aggregate"][algo][t]) for t in tiers)] for algo in config["algos"]]
        ),
        "\nBuffers (mean G of the tier's own episodes):\n",
        markdown_table(
            ["setting", *tiers],
            [
                [env, *(f"{s['buffers'][t]['mean_G']:.3f}" for t in tiers)]
                for env, s in results["settings"].items()
            ],
        ),
    ]
    errors = ope_errors(results) if config.get("ope") else {}
    labels = sorted({label for by_tier in errors.values() for label in by_tier})
    if labels:
        parts += [
            "\nValue errors, mean |estimate - truth| of the start-state value on the train tasks (G units): "
            f"FQE, DR and WIS of the same fixed policies ({', '.join(OPE_POLICIES)}) on every tier, and "
            "BCQ's and CQL's own Q-values of their start states:\n",
            markdown_table(
                ["tier", *labels],
                [[t, *(_num(errors[t].get(label)) for label in labels)] for t in tiers],
            ),
        ]
    for env, per in table["settings"].items():
        parts += [
            f"\n## {env}\n",
            markdown_table(head, [[algo, *(_cell(per[algo][t]) for t in tiers)] for algo in config["algos"]]),
        ]
    return "\n".join(parts) + "\n"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def figure(results: Mapping[str, Any], path: Path) -> None:
    """A heatmap of the aggregated IQM, algorithms x tiers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    config = results["config"]
    tiers, algos = config["tiers"], config["algos"]
    values = np.array([[results["table"]["aggregate"][a][t]["estimate"] for t in tiers] for a in algos])
    fig, ax = plt.subplots(figsize=(1.3 * len(tiers) + 2, 0.45 * len(algos) + 1.5), dpi=120)
    image = ax.imshow(values, cmap="viridis", vmin=min(0.0, values.min()), vmax=max(100.0, values.max()))
    ax.set_xticks(range(len(tiers)), tiers, rotation=30, ha="right")
    ax.set_yticks(range(len(algos)), algos)
    for i in range(len(algos)):
        for j in range(len(tiers)):
            ax.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", color="w", fontsize=8)
    fig.colorbar(image, ax=ax, label="normalised score (IQM)")
    ax.set_title("Algorithm x dataset tier (all settings x seeds)")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def write_report(results: Mapping[str, Any], out: str | Path) -> dict[str, Path]:
    """``report.md``, ``results.json`` and ``fig_tiers.png`` in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"report": out / "report.md", "json": out / "results.json", "figure": out / "fig_tiers.png"}
    paths["report"].write_text(markdown(results))
    paths["json"].write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    figure(results, paths["figure"])
    return paths
