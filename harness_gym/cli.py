"""The ``harness-gym`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import gymnasium as gym

import harness_gym
from harness_gym.paper import BASE_G, EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.rollout import protocol_episodes, run_episode, summarize
from harness_gym.state import feature_table
from harness_gym.task import SPLITS


def _cmd_envs(args: argparse.Namespace) -> int:
    print(f"{'id':<24} {'domain':<15} {'train':>5} {'eval':>5}  max_steps")
    for env_id in harness_gym.ENV_IDS:
        domain = harness_gym.registry.env_class(env_id).domain_cls()
        tasks = domain.tasks()
        counts = {split: sum(t.split == split for t in tasks) for split in SPLITS}
        print(f"{env_id:<24} {domain.name:<15} {counts['train']:>5} {counts['eval']:>5}  {domain.max_steps}")
    print("\nObservation layout (harness_gym.FEATURES):\n")
    print(feature_table())
    return 0


def _make_policy(name: str, env_id: str):
    from baselines.scripted import BasePolicy, RandomPolicy

    if name == "base":
        return BasePolicy(env_id)
    if name == "random":
        return RandomPolicy()
    raise SystemExit(f"unknown policy {name!r}: expected 'base' or 'random'")


def _cmd_run(args: argparse.Namespace) -> int:
    env_ids = harness_gym.ENV_IDS if args.env == "all" else (args.env,)
    for env_id in env_ids:
        if env_id not in harness_gym.ENV_IDS:
            raise SystemExit(f"unknown env id {env_id!r}; known: all, {', '.join(harness_gym.ENV_IDS)}")
    if args.episodes < 1:
        raise SystemExit("--episodes must be at least 1")
    for env_id in env_ids:
        _run_one(env_id, args)
    return 0


def _run_one(env_id: str, args: argparse.Namespace) -> None:
    policy = _make_policy(args.policy, env_id)
    env = gym.make(env_id, split=args.split, render_mode="ansi" if args.show else None)
    if args.protocol:
        task_ids = [task.task_id for task in env.unwrapped.tasks]
        episodes = [
            (s, task_id) for _, task_id, _, s in protocol_episodes(task_ids, EVAL_SEEDS, EVAL_ROLLOUTS)
        ]
    else:
        episodes = [(args.seed + i, None) for i in range(args.episodes)]
    finals = []
    for i, (seed, task_id) in enumerate(episodes):
        finals.append(run_episode(env, policy, seed=seed, task_id=task_id))
        if args.show and i == 0:
            print(env.render())
    env.close()
    summary = summarize(finals)
    mode = "protocol (tasks x 3 seeds x 3 rollouts)" if args.protocol else f"seeds {args.seed}.."
    print(f"{env_id}  policy={args.policy}  split={args.split}  episodes={summary['episodes']}  {mode}")
    reference = f"   (paper's Base G {BASE_G[env_id]:.3f})" if args.policy == "base" else ""
    print(f"mean G        {summary['G']:.3f}{reference}")
    print(f"mean HMS_norm {summary['hms_norm']:+.3f}")
    print(f"{'event':<22} {'fired':>6} {'applicable':>10}")
    for event, rates in summary["events"].items():
        print(f"{event:<22} {rates['fired']:>6.1%} {rates['applicable']:>10.1%}")
    print()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness-gym", description=harness_gym.__doc__)
    parser.add_argument("--version", action="version", version=harness_gym.__version__)
    sub = parser.add_subparsers(dest="command", required=True)

    envs = sub.add_parser("envs", help="list environment ids, task counts and the observation layout")
    envs.set_defaults(func=_cmd_envs)

    run = sub.add_parser("run", help="roll a scripted policy and print G, HMS_norm and event rates")
    run.add_argument("--env", required=True, help="environment id (e.g. HarnessCoding-v0) or 'all'")
    run.add_argument("--policy", default="base", choices=["base", "random"])
    run.add_argument("--episodes", type=int, default=20)
    run.add_argument("--seed", type=int, default=0, help="episode i uses seed S + i")
    run.add_argument(
        "--protocol",
        action="store_true",
        help="the paper's protocol instead of --episodes: every task of the split x 3 seeds x 3 rollouts",
    )
    run.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    run.add_argument("--show", action="store_true", help="print the first episode's trajectory")
    run.set_defaults(func=_cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
