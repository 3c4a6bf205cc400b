"""measure an executor profile by probe episodes on the train split

``harness-gym calibrate``: ``harness_gym.evaluation.calibrate.calibrate_profile`` from the command line;
the profile JSON it writes is what ``gym.make(id, executor_profile=PATH)`` reads.
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import add_executor_args, executor_config, first_line
from harness_gym.envs.registry import ENV_IDS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("calibrate", help=first_line(__doc__))
    parser.add_argument("--env", required=True, help="environment id or 'all'")
    parser.add_argument("--probes", type=int, default=200, help="requests per probe kind and environment")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="where to write the profile JSON")
    parser.add_argument(
        "--executor-profile",
        default=None,
        help="simulated executor: the profile to measure (name or JSON; default 'default')",
    )
    add_executor_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harness_gym.evaluation.calibrate import calibrate_profile

    env_ids = ENV_IDS if args.env == "all" else (args.env,)
    if any(env_id not in ENV_IDS for env_id in env_ids):
        raise SystemExit(f"unknown env id {args.env!r}; known: all, {', '.join(ENV_IDS)}")
    config = executor_config(args)
    try:
        profile, _ = calibrate_profile(
            env_ids,
            executor=config or "simulated",
            executor_profile=args.executor_profile,
            probes=args.probes,
            seed=args.seed,
            name=Path(args.out).stem,
        )
    except ValueError as exc:
        raise SystemExit(f"harness-gym calibrate: {exc}") from None
    profile.save(args.out)
    print(f"wrote {args.out} (use: gym.make(id, executor_profile={args.out!r}))")
    return 0
