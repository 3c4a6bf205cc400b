"""measure an executor profile by probe episodes on the train split

``harness-gym calibrate``: ``harness_gym.evaluation.calibrate.calibrate_profile`` from the command line;
the profile JSON it writes is what ``gym.make(id, executor_profile=PATH)`` reads, with the calibration's
report beside the profile under ``"calibration"`` (per parameter: measured with its estimate, interval
and share of replies without an answer, or ``not measured (from PROFILE)``; the validation on held-out
train tasks).
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
        "--holdout",
        type=float,
        default=0.25,
        help="share of the train tasks kept out of the probes, on which Base is played through the "
        "executor and through the fitted profile to validate it (0: no validation)",
    )
    parser.add_argument(
        "--concurrency", type=int, default=1, help="probe requests (and validation episodes) in flight"
    )
    parser.add_argument(
        "--executor-profile",
        default=None,
        help="simulated executor: the profile to measure (name or JSON; default 'default')",
    )
    add_executor_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from harness_gym.evaluation.calibrate import calibrate_profile, report_json

    env_ids = ENV_IDS if args.env == "all" else (args.env,)
    if any(env_id not in ENV_IDS for env_id in env_ids):
        raise SystemExit(f"unknown env id {args.env!r}; known: all, {', '.join(ENV_IDS)}")
    config = executor_config(args)
    try:
        profile, reports = calibrate_profile(
            env_ids,
            executor=config or "simulated",
            executor_profile=args.executor_profile,
            probes=args.probes,
            seed=args.seed,
            name=Path(args.out).stem,
            concurrency=args.concurrency,
            holdout=args.holdout,
        )
    except ValueError as exc:
        raise SystemExit(f"harness-gym calibrate: {exc}") from None
    data = {**profile.to_dict(), "calibration": report_json(reports)}
    Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out} (use: gym.make(id, executor_profile={args.out!r}))")
    return 0
