"""The priced track: the bench's question asked at three token prices (``harness-gym bench --track priced``).

At a price ``p`` (G per thousand executor tokens) an episode returns ``G - p * tokens / 1000``
(``docs/priced.md``). Per setting, the track

1. collects the bench's buffer once, at price 0, on MDP v2 (whose datasets store every step's tokens),
   and plays Base, Forced-CHECK and the expert once on the evaluation protocol: a price changes what an
   episode returns, never what happens in it, so their episodes serve every price;
2. per price, relabels the buffer at that price (``harness_gym.datasets.pricing``; bit for bit what a
   collection at that price gives), trains every learner on it with every seed (a cost-constrained one
   told the threshold below as ``TrainingData.token_limit``), and plays the open-loop
   string searched for that price (``harness-gym headroom --search-open-loop --token-price``; absent
   where none is shipped);
3. reports per price every policy's mean G, mean tokens and mean return, the state-dependence gap in
   return (expert minus that price's open-loop, paired, whole tasks resampled), each kind's frontier
   hypervolume, and a constrained evaluation in the manner of DSRL (Liu et al., DMLR 2024): a token
   threshold per setting, each policy's normalised reward and normalised cost, and whether it stays
   within the threshold.

The prices follow a rule, not any policy's result: one thousand tokens is worth 1%, 5% and 20% of a
perfect task (G = 1), from "cost barely matters" to "cost dominates" (an episode of Base spends a few
hundred to a few thousand tokens). The threshold is Base's mean tokens per episode in the setting:
the paper's fixed harness sets the budget a controller must live within.
"""

from __future__ import annotations

import json
import shutil
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any

from harness_gym.bench.processes import run_each
from harness_gym.bench.runner import (
    CHECKPOINTS,
    BenchConfig,
    SettingRun,
    acting_policies,
    collect_buffer,
)
from harness_gym.evaluation.engine import check_manifest, write_atomic
from harness_gym.evaluation.frontier import hypervolume
from harness_gym.policies.algorithms import TrainingData, train_seeds
from harness_gym.policies.algorithms import get as get_algorithm

PRICES: tuple[float, ...] = (0.01, 0.05, 0.2)
"""G per thousand tokens: one thousand executor tokens worth 1%, 5% and 20% of a perfect task."""
REFERENCES: tuple[str, ...] = ("base", "forced-check", "expert")
"""Played once per setting: their episodes do not depend on the price."""
TOKEN_LIMIT_PER_REFERENCE = 2
"""The hypervolume's token limit in multiples of the most expensive reference's mean tokens (as the
bench report's frontier table)."""
RESULTS_FILE = "priced.json"
REPORT_FILE = "priced.md"

_Key = tuple[str, int, int]  # (task id, seed, rollout): one evaluation episode, paired across policies


def price_tag(price: float) -> str:
    return f"{price:g}"


def check(config: BenchConfig) -> None:
    """What the track needs of ``config``, refused in one line each."""
    if config.obs_layout != "v2":
        raise ValueError(
            "the priced track relabels one buffer at every price, which needs per-step tokens: MDP v2 "
            "(--obs-layout v2)"
        )
    if config.token_price:
        raise ValueError("the priced track sets its own prices (PRICES); drop --token-price")
    if config.eval_profiles:
        raise ValueError("the priced track evaluates on the training profile only; drop --eval-profile")


class Episodes:
    """Per policy, every evaluation episode's G and tokens by its pairing key."""

    def __init__(self) -> None:
        self.by_policy: dict[str, dict[_Key, tuple[float, int]]] = {}

    def record(self, name: str, record: Mapping[str, Any]) -> None:
        usage = record["usage"]
        key = (record["task_id"], int(record["seed"]), int(record["rollout"]))
        self.by_policy.setdefault(name, {})[key] = (
            float(record["G"]),
            int(usage["prompt_tokens"] + usage["completion_tokens"]),
        )


def _evaluate(
    setting: SettingRun, episodes: Episodes, policy: Any, name: str, seeds, tag: str, fp=None
) -> None:
    from harness_gym.evaluation.protocol import evaluate

    evaluate(
        policy,
        setting.env_id,
        seeds=seeds,
        rollouts=setting.config.rollouts,
        policy_name=name,
        engine=setting.engine,
        checkpoint=setting.checkpoints / tag,
        fingerprint=fp,
        on_episode=lambda record: (setting.tick(1), episodes.record(name, record)),
        **setting.env_kwargs,
    )


def run_priced_setting(
    env_id: str, config: BenchConfig, progress: Callable[[int], None] | None = None
) -> dict:
    """One setting of the track (module docstring): per policy and price its episodes' G and tokens."""
    import torch

    from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy, to_d3rlpy
    from harness_gym.datasets.pricing import relabelled
    from harness_gym.policies.open_loop import OpenLoopPolicy, open_loop_table
    from harness_gym.policies.scripted import BasePolicy, ForcedCheckPolicy, make_policy

    quiet_d3rlpy()
    torch.set_num_threads(1)
    setting = SettingRun(env_id, config, progress)
    buffer = collect_buffer(setting)
    seeds = config.seeds
    shared, by_price = Episodes(), {}
    for name, policy in zip(
        REFERENCES,
        (BasePolicy(env_id), ForcedCheckPolicy(env_id), make_policy("expert", env_id)),
        strict=True,
    ):
        _evaluate(setting, shared, policy, name, seeds, name)
    threshold = statistics.fmean(tokens for _, tokens in shared.by_policy["base"].values())
    for price in PRICES:
        tag, priced = price_tag(price), Episodes()
        if env_id in open_loop_table(config.obs_layout, price)["strings"]:
            policy = OpenLoopPolicy(env_id, obs_layout=config.obs_layout, token_price=price)
            _evaluate(setting, priced, policy, "open-loop", seeds, f"open-loop@{tag}")
        data = TrainingData(
            env_id,
            buffer.dataset,
            to_d3rlpy(buffer.dataset, relabelled(buffer.dataset, price)),
            token_limit=threshold,
        )
        for algorithm in map(get_algorithm, config.algos):
            runs = train_seeds(algorithm, data, seeds=seeds, n_steps=config.n_steps)
            for seed, trained in zip(seeds, runs, strict=True):
                for name, policy in acting_policies(algorithm, trained, config.act):
                    _evaluate(
                        setting, priced, policy, name, (seed,), f"{name}@{tag}-s{seed}", trained.fingerprint
                    )
        by_price[tag] = priced.by_policy
    return {
        "references": {name: _pairs(eps) for name, eps in shared.by_policy.items()},
        "prices": {
            tag: {name: _pairs(eps) for name, eps in eps_by.items()} for tag, eps_by in by_price.items()
        },
        "seconds": setting.elapsed(),
    }


def _pairs(episodes: Mapping[_Key, tuple[float, int]]) -> list[list[Any]]:
    """JSON form: ``[task_id, seed, rollout, G, tokens]`` per episode, in key order."""
    return [[*key, g, tokens] for key, (g, tokens) in sorted(episodes.items())]


# -- the summary -----------------------------------------------------------------------------------
def summarize_setting(env_id: str, played: Mapping[str, Any], obs_layout: str = "v2") -> dict[str, Any]:
    """Per price: each policy's mean G, tokens and return, normalised reward and cost against the
    threshold, the gap in return and each kind's hypervolume."""
    from harness_gym.evaluation.headroom import paired_gap
    from harness_gym.evaluation.reference_scores import normalized_score

    references = played["references"]
    threshold = statistics.fmean(row[4] for row in references["base"])
    spent = max(statistics.fmean(row[4] for row in rows) for rows in references.values())
    limit = TOKEN_LIMIT_PER_REFERENCE * spent
    out: dict[str, Any] = {"threshold_tokens": threshold, "token_limit": limit, "prices": {}}
    for tag, learners in played["prices"].items():
        price = float(tag)
        rows_by_name = {**references, **learners}
        policies = {}
        for name, rows in rows_by_name.items():
            g = statistics.fmean(row[3] for row in rows)
            tokens = statistics.fmean(row[4] for row in rows)
            policies[name] = {
                "kind": "reference" if name in references or name == "open-loop" else "learner",
                "G": g,
                "tokens": tokens,
                "return": g - price * tokens / 1000,
                "normalized_reward": normalized_score(env_id, g, obs_layout) / 100,  # 0 random, 1 expert
                "normalized_cost": tokens / threshold if threshold else float("inf"),
            }
            policies[name]["within_threshold"] = policies[name]["normalized_cost"] <= 1.0
        gap = None
        if "open-loop" in learners:
            expert = {tuple(r[:3]): r[3] - price * r[4] / 1000 for r in references["expert"]}
            string = {tuple(r[:3]): r[3] - price * r[4] / 1000 for r in learners["open-loop"]}
            keys = sorted(expert)
            if sorted(string) != keys:
                raise ValueError(
                    f"{env_id} at price {tag}: expert and open-loop did not play the same episodes"
                )
            mean, low, high = paired_gap(
                [expert[k] for k in keys], [string[k] for k in keys], clusters=[k[0] for k in keys]
            )
            gap = {"gap": mean, "ci_low": low, "ci_high": high, "pairs": len(keys)}
        volume = {
            kind: hypervolume([(p["tokens"], p["G"]) for p in policies.values() if p["kind"] == kind], limit)
            for kind in ("reference", "learner")
        }
        out["prices"][tag] = {"policies": policies, "gap": gap, "hypervolume": volume}
    return out


def markdown(summary: Mapping[str, Any]) -> str:
    """The track's report: one table per setting and price, then the gaps and hypervolumes."""
    from harness_gym.bench.report.format import fmt_ci, fmt_num, fmt_signed, markdown_table

    parts = [
        "# The priced track",
        f"Prices (G per thousand executor tokens): {', '.join(summary['prices'])}: one thousand tokens "
        "worth 1%, 5% and 20% of a perfect task. Return: G minus the price of the episode's tokens. "
        "Threshold: Base's mean tokens per episode; normalised reward: (G - random) / (expert - random) "
        "on the layout's reference scores; normalised cost: mean tokens / threshold.",
    ]
    gap_rows, volume_rows = [], []
    for env_id, setting in summary["settings"].items():
        for tag, at in setting["prices"].items():
            rows = [
                [name, p["kind"], fmt_num(p["G"]), f"{p['tokens']:,.0f}", fmt_num(p["return"]),
                 fmt_num(p["normalized_reward"]), fmt_num(p["normalized_cost"]),
                 "yes" if p["within_threshold"] else "no"]
                for name, p in at["policies"].items()
            ]  # fmt: skip
            parts += [
                f"## {env_id} at {tag}",
                markdown_table(
                    ["Policy", "kind", "G", "tokens", "return", "norm. reward", "norm. cost", "within"],
                    rows,
                    left=2,
                ),
            ]
            gap = at["gap"]
            gap_rows.append(
                [env_id, tag]
                + (
                    ["–", "–", "–"]
                    if gap is None
                    else [fmt_signed(gap["gap"]), fmt_ci(gap["ci_low"], gap["ci_high"]), str(gap["pairs"])]
                )
            )
            volume_rows.append(
                [env_id, tag, fmt_num(at["hypervolume"]["reference"]), fmt_num(at["hypervolume"]["learner"])]
            )
    parts += [
        "## State-dependence gap in return",
        "Expert minus the open-loop string searched for the price, mean paired difference in return with a "
        "95% bootstrap interval resampling whole tasks; – where no string is shipped for the price.",
        markdown_table(["Setting", "price", "gap", "95% CI", "pairs"], gap_rows),
        "## Frontier hypervolume",
        markdown_table(["Setting", "price", "references", "learners"], volume_rows),
    ]
    return "\n\n".join(parts) + "\n"


# -- the run ---------------------------------------------------------------------------------------
def _run_in_process(config: BenchConfig, env_id: str, report: Callable[[int], None]) -> dict[str, Any]:
    played = run_priced_setting(env_id, config, report)
    write_atomic(Path(config.out) / CHECKPOINTS / f"priced-{env_id}.json", json.dumps(played).encode())
    return played


def run(config: BenchConfig) -> dict[str, Any]:
    """Every setting of the track, then ``priced.json`` and ``priced.md`` under ``config.out``.
    Resumable as the bench is (finished settings and evaluation episodes are checkpointed)."""
    config = replace(config, track="priced")
    check(config)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoints = out / CHECKPOINTS
    if not (checkpoints / "manifest.json").exists():
        shutil.rmtree(out / "datasets", ignore_errors=True)
    check_manifest(checkpoints, {**config.content_key(), "prices": list(PRICES)}, f"priced track in {out}")
    start = time.perf_counter()
    done: dict[str, dict[str, Any]] = {}
    for env_id in config.settings:
        path = checkpoints / f"priced-{env_id}.json"
        if path.exists():
            done[env_id] = json.loads(path.read_text())
    run_each(
        partial(_run_in_process, config),
        [env_id for env_id in config.settings if env_id not in done],
        config.workers,
        done.__setitem__,
    )
    summary = {
        "config": asdict(config),
        "prices": [price_tag(p) for p in PRICES],
        "settings": {
            env_id: summarize_setting(env_id, done[env_id], config.obs_layout) for env_id in config.settings
        },
        "episodes": {env_id: done[env_id] for env_id in config.settings},
        "timings": {"total_s": time.perf_counter() - start},
    }
    (out / RESULTS_FILE).write_text(json.dumps(summary, indent=1, default=float) + "\n")
    (out / REPORT_FILE).write_text(markdown(summary))
    shutil.rmtree(checkpoints)
    if not config.keep_datasets:
        shutil.rmtree(out / "datasets", ignore_errors=True)
    return summary
