"""Rebuild the published buffers and their cards.

Each buffer is the paper's: Base and Exploratory (epsilon 0.3) episodes alternating, on the train split,
20 episodes per task (80 tasks -> 1,600 episodes for a controlled domain, 16 -> 320 for an adapter),
seeds from 0, simulated executor. The card's statistics are recomputed from the written dataset alone.

    python datasets/build.py [--root DIR] [--workers 2] [--only coding planning]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import minari

import harness_gym
from harness_gym.datasets.collect import CollectConfig, collect, dataset_root, dataset_stats
from harness_gym.envs.registry import env_class

EPISODES_PER_TASK = 20
HERE = Path(__file__).parent


def recipe(env_id: str) -> CollectConfig:
    domain = env_class(env_id).domain_cls
    episodes = EPISODES_PER_TASK * sum(task.split == "train" for task in domain().tasks())
    return CollectConfig(env_id, "mixed", episodes, f"harness/{domain.name}/mixed-v0")


def command(config: CollectConfig) -> str:
    return (
        f"harness-gym collect --env {config.env_id} --policy {config.policy} --episodes {config.episodes} "
        f"--dataset-id {config.dataset_id} --split {config.split} --seed {config.seed} --workers 2"
    )


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def card(config: CollectConfig, dataset: minari.MinariDataset, seconds: float) -> str:
    stats = dataset_stats(dataset)
    meta = dataset.storage.metadata
    support = stats["support"]
    events = "\n".join(
        f"| {event} | {stats['hms_fired'][event]:.1%} | {stats['hms_applicable'][event]:.1%} |"
        for event in meta["harness_hms_events"]
    )
    return f"""# `{config.dataset_id}`

Rollouts of the Base harness and its exploratory variant (epsilon {config.epsilon}: a uniformly random
legal action instead of the scripted one), alternating so that every task gets both
(`harness_gym.datasets.collect.mixed_behavior`), on the **train** split of `{config.env_id}` with the embedded
simulated executor. Episode *i* runs task *i* mod {len(meta["harness_task_ids"])} with seed
{config.seed} + *i*. This is the kind of buffer the paper trains its offline controllers on.

Rebuild (identical arrays for any `--workers`):

```bash
{command(config)}
```

Load:

```python
import minari
dataset = minari.load_dataset("{config.dataset_id}")
```

| statistic | value |
|---|---|
| episodes | {stats["episodes"]} |
| steps | {stats["steps"]} |
| mean G | {stats["mean_G"]:.3f} |
| max G | {stats["max_G"]:.3f} |
| buffer slack (max G - mean G) | {stats["buffer_slack"]:.3f} |
| mean HMS_norm | {stats["mean_hms_norm"]:+.3f} |
| ref_min_score (random controller of the env id, `reference_scores.py`) | {meta["ref_min_score"]:.3f} |
| ref_max_score (expert reference of the env id) | {meta["ref_max_score"]:.3f} |
| task set | {meta["harness_task_set_version"]}, {len(meta["harness_task_ids"])} train tasks |
| build time (this machine, 2 workers) | {seconds:.0f} s |

Support (`harness_gym/datasets/support.py`): can an offline learner see anything better than Base here?

| diagnostic | value |
|---|---|
| episodes with CHECK then REVISE | {support["check_revise_share"]:.1%} |
| exploratory episodes beating their task's Base mean G | {_pct(support["explore_beats_base_share"])} |
| per-task advantage variance explained by the action sequence | {_pct(support["advantage_r2_by_actions"])} |
| distinct action sequences / episodes | {support["distinct_sequence_share"]:.1%} |

| HMS event | fired | applicable |
|---|---|---|
{events}

Per-step infos: `action_mask`, `behavior_logp`, `task_index`, `behavior` (index into
`harness_behaviors`); on the last row `G`, `hms_norm`, `hms_fired` / `hms_applicable`
(`harness_hms_events` order) and `rubric_score` / `rubric_max` (`harness_rubric_criteria`:
{", ".join(meta["harness_rubric_criteria"])}). See `harness_gym/datasets/collect.py` for the full layout.
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="domain names to rebuild")
    args = parser.parse_args()
    for env_id in harness_gym.ENV_IDS:
        base = recipe(env_id)
        domain = base.dataset_id.split("/")[1]
        if args.only and domain not in args.only:
            continue
        config = CollectConfig(
            base.env_id,
            base.policy,
            base.episodes,
            base.dataset_id,
            workers=args.workers,
            overwrite=True,
            root=args.root,
        )
        report = collect(config)
        dataset = minari.load_dataset(str(dataset_root(args.root) / config.dataset_id))
        (HERE / f"{domain}-mixed-v0.md").write_text(card(config, dataset, report.seconds))
        print(f"{config.dataset_id}: {report.stats['episodes']} episodes in {report.seconds:.1f}s")


if __name__ == "__main__":
    main()
