"""roll a behaviour policy and write a Minari dataset

``harness-gym collect``: ``harness_gym.datasets.collect.collect`` from the command line. Finished episodes
are checkpointed; after a stop or Ctrl-C the same command resumes.
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import (
    RESUME_HINT,
    add_engine_args,
    add_executor_args,
    add_simulator_args,
    endpoint_errors,
    executor_config,
    finish_run,
    first_line,
    print_usage,
)


def _behavior_names() -> tuple[str, ...]:
    from harness_gym.datasets.collect import BEHAVIORS

    return BEHAVIORS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("collect", help=first_line(__doc__))
    parser.add_argument("--env", required=True, help="environment id")
    parser.add_argument("--policy", default="mixed", choices=_behavior_names())
    parser.add_argument("--episodes", type=int, required=True)
    parser.add_argument("--dataset-id", required=True, help="harness/<domain>/<name>-v<N>")
    parser.add_argument("--seed", type=int, default=0, help="episode i uses seed S + i")
    parser.add_argument("--split", default="train", choices=["train", "eval", "all"])
    parser.add_argument("--epsilon", type=float, default=0.3, help="exploratory: P(random legal action)")
    parser.add_argument(
        "--max-steps", type=int, default=None, help="episode step budget (default: the setting's own)"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset of that id")
    parser.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_simulator_args(parser)
    add_engine_args(parser)
    add_executor_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness_gym.datasets.collect import CollectConfig, CollectError, checkpoint_dir, collect

    config = CollectConfig(
        env_id=args.env,
        policy=args.policy,
        episodes=args.episodes,
        dataset_id=args.dataset_id,
        seed=args.seed,
        split=args.split,
        epsilon=args.epsilon,
        max_steps=args.max_steps,
        executor=executor_config(args),
        workers=args.workers,
        concurrency=args.concurrency,
        backend=args.backend,
        ray_address=args.ray_address,
        overwrite=args.overwrite,
        root=args.root,
        show_progress=not args.quiet,
        executor_profile=args.executor_profile,
        token_budget=args.token_budget,
        token_price=args.token_price,
        obs_layout=args.obs_layout,
    )
    RESUME_HINT[:] = [
        f"finished episodes are checkpointed in {checkpoint_dir(config)}; rerun the same command to resume"
    ]
    try:
        report = collect(config)
    except CollectError as exc:
        raise SystemExit(f"harness-gym collect: {exc}") from None
    except endpoint_errors() as exc:
        raise SystemExit(
            f"harness-gym collect: the run stopped: {exc} (finished episodes are kept as checkpoints; "
            "rerun the same command to resume)"
        ) from None
    stats = report.stats
    resumed = f", {report.resumed_episodes} resumed from checkpoints" if report.resumed_episodes else ""
    print(f"wrote {report.dataset_id} to {report.path} in {report.seconds:.1f}s{resumed}")
    print(
        f"episodes {stats['episodes']}  steps {stats['steps']}  mean G {stats['mean_G']:.3f}  "
        f"buffer slack {stats['buffer_slack']:.3f}  mean HMS_norm {stats['mean_hms_norm']:+.3f}"
    )
    print_usage(report.usage, config.executor, episodes=report.distinct, spend=report.spend)
    outcome = {"env_id": args.env, "dataset_id": args.dataset_id, "episodes": report.outcome}
    finish_run(args, config.executor, outcome)
    return 0
