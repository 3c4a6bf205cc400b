"""list environment ids, task counts and the observation layout

``harness-gym envs``: one row per environment id (domain, train and eval task counts, step limit), then
the observation table generated from ``harness_gym.FEATURES`` and what layout v2 appends to it.
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import first_line
from harness_gym.core.state import N_FEATURES, feature_table
from harness_gym.core.task import SPLITS
from harness_gym.envs.registry import ENV_IDS, env_class


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("envs", help=first_line(__doc__))
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(f"{'id':<24} {'domain':<15} {'train':>5} {'eval':>5}  max_steps")
    for env_id in ENV_IDS:
        domain = env_class(env_id).domain_cls()
        tasks = domain.tasks()
        counts = {split: sum(t.split == split for t in tasks) for split in SPLITS}
        print(f"{env_id:<24} {domain.name:<15} {counts['train']:>5} {counts['eval']:>5}  {domain.max_steps}")
    print("\nObservation layout (harness_gym.FEATURES):\n")
    print(feature_table())
    print('\nLayout v2 (gym.make(id, obs_layout="v2")) appends (harness_gym.core.state.FEATURES_V2):\n')
    print(feature_table("v2", start=N_FEATURES))
    return 0
