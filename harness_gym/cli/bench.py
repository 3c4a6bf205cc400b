"""the whole protocol: buffers, training, evaluation, report

``harness-gym bench``: ``harness_gym.bench.runner.run`` from the command line. Finished settings and
episodes are checkpointed under ``--out``; after a stop or Ctrl-C the same command resumes.
``harness-gym bench --tiers T...`` runs the algorithm x dataset-tier suite instead
(``harness_gym.bench.tiers``).
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import (
    RESUME_HINT,
    add_engine_args,
    add_executor_args,
    add_simulator_args,
    executor_config,
    first_line,
    scripted_names,
)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("bench", help=first_line(__doc__))
    parser.add_argument("--quick", action="store_true", help="a small version for a fast check")
    parser.add_argument("--settings", nargs="*", default=None, help="env ids (default: all)")
    parser.add_argument(
        "--algos",
        nargs="+",
        default=None,
        help="algorithms to train: registered names or module:attribute (default: all of the bench's)",
    )
    parser.add_argument("--out", default=None, help="output directory (results; --tiers: results-tiers)")
    parser.add_argument(
        "--tiers",
        nargs="+",
        default=None,
        help="run the algorithm x dataset-tier suite on these tiers instead, e.g. random medium expert "
        "medium-expert mixed coverage",
    )
    parser.add_argument(
        "--track",
        default="paper",
        choices=("paper", "priced"),
        help="paper: the paper's protocol; priced: the question at three token prices (MDP v2; "
        "docs/priced.md), written to OUT/priced.md",
    )
    parser.add_argument("--quiet", action="store_true")
    add_simulator_args(parser, "--train-profile")
    parser.add_argument(
        "--eval-profile", nargs="+", default=None, help="also evaluate against these profiles (transfer gap)"
    )
    parser.add_argument(
        "--references",
        nargs="*",
        default=None,
        help="reference policies to evaluate too, e.g. expert hindsight-submit",
    )
    parser.add_argument(
        "--act",
        default=None,
        choices=["sample", "greedy"],
        help="evaluate stochastic learners one way only (default: both, each reported)",
    )
    parser.add_argument(
        "--keep-datasets",
        action="store_true",
        help="keep the buffers in OUT/datasets (default: removed after the report; a rerun rebuilds them)",
    )
    parser.add_argument(
        "--no-curves", action="store_true", help="skip the learning curves (their evaluation episodes)"
    )
    parser.add_argument("--workers", type=int, default=None, help="settings run in parallel processes (2)")
    add_engine_args(parser, workers=False)
    parser.add_argument(
        "--ray-tasks", type=int, default=1, help="ray: tasks per collection or evaluation in a setting (1)"
    )
    add_executor_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    if args.tiers is not None:
        return _run_tiers(args)
    args.out = args.out or "results"
    from harness_gym.bench.runner import QUICK, BenchConfig
    from harness_gym.bench.runner import run as run_bench

    base = QUICK if args.quick else BenchConfig()
    settings = tuple(args.settings) if args.settings else base.settings
    config = replace(
        base,
        settings=settings,
        out=args.out,
        show_progress=not args.quiet,
        executor=executor_config(args),
        workers=args.workers if args.workers is not None else base.workers,
        concurrency=args.concurrency,
        backend=args.backend,
        ray_address=args.ray_address,
        ray_tasks=args.ray_tasks,
        keep_datasets=args.keep_datasets,
        curves=not args.no_curves,
    )
    config = replace(
        config,
        train_profile=args.train_profile,
        eval_profiles=tuple(args.eval_profile or ()),
        token_budget=args.token_budget,
        token_price=args.token_price,
        # the priced track plays MDP v2 (its buffers store per-step tokens) unless a layout is named
        obs_layout="v2" if args.track == "priced" and "--obs-layout" not in args.argv else args.obs_layout,
        track=args.track,
    )
    if args.references:
        unknown = [name for name in args.references if name not in scripted_names()]
        if unknown:
            raise SystemExit(f"unknown reference policy {unknown}; known: {', '.join(scripted_names())}")
        config = replace(config, references=tuple(args.references))
    if args.act is not None:
        config = replace(config, act=(args.act,))
    if args.algos:
        from harness_gym.policies.algorithms import get

        try:
            for spec in args.algos:  # a bad name or module:attribute fails here, in one line
                get(spec)
        except ValueError as exc:
            raise SystemExit(f"harness-gym bench: {exc}") from None
        config = replace(config, algos=tuple(args.algos))
    RESUME_HINT[:] = [
        f"finished settings and episodes are checkpointed in {args.out}/checkpoints; rerun the same "
        "command to resume"
    ]
    if config.track == "priced":
        from harness_gym.bench.priced import run as run_bench
    try:
        results = run_bench(config)
    except ValueError as exc:
        raise SystemExit(f"harness-gym bench: {exc}") from None
    timings = results["timings"]
    if config.track == "priced":
        print(f"wrote {args.out}/priced.md and priced.json in {timings['total_s']:.0f}s")
        return 0
    if config.executor is not None:
        from harness_gym.evaluation.spend import spend_lines

        model = f"{config.executor.model} @ {config.executor.base_url}"
        for env_id, setting in results["settings"].items():
            used = setting["executor"]
            print(
                f"{env_id}: executor calls {used['collect']['executor_calls']:.0f} (collection) + "
                f"{used['evaluate']['requests']} (evaluation); endpoint calls in evaluation "
                f"{used['evaluate']['api_calls']}; cache hits {used['collect']['cache_hits']:.0f} + "
                f"{used['evaluate']['cache_hits']}, misses {used['collect']['cache_misses']:.0f} + "
                f"{used['evaluate']['cache_misses']}"
            )
            policies = setting["compare"]["policies"].values()
            distinct = (sum(p["distinct_episodes"] for p in policies), sum(p["episodes"] for p in policies))
            for part in ("collect", "evaluate"):
                if "sent" in used[part]:
                    print(f"  {part}:")
                    episodes = distinct if part == "evaluate" else None
                    print("\n".join("  " + line for line in spend_lines(used[part], model, episodes)))
    print(
        f"wrote {args.out}/ in {timings['total_s']:.0f}s (largest process {timings['peak_rss_mb']:.0f} MB; "
        "benchmarks/protocol.py measures all processes together)"
    )
    return 0


def _run_tiers(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from harness_gym.bench.tiers import QUICK_TIERS, TierBenchConfig
    from harness_gym.bench.tiers import run as run_tiers

    unsupported = [
        flag
        for flag, value in (
            (
                "--train-profile (or $HARNESS_GYM_EXECUTOR_PROFILE)",
                args.train_profile not in (None, "default"),
            ),
            ("--token-budget", args.token_budget),
            ("--token-price", args.token_price),
            ("--obs-layout v2 (no v2 tiers are published yet)", args.obs_layout != "v1"),
            ("--eval-profile", args.eval_profile),
            ("--references", args.references),
            ("--executor openai", args.executor != "simulated"),
            ("--backend ray", args.backend != "local"),
        )
        if value
    ]
    if unsupported:
        raise SystemExit(
            f"harness-gym bench: --tiers runs on the published data; drop {', '.join(unsupported)}"
        )
    base = QUICK_TIERS if args.quick else TierBenchConfig()
    config = replace(
        base,
        tiers=tuple(args.tiers),
        settings=tuple(args.settings) if args.settings else base.settings,
        algos=tuple(args.algos) if args.algos else base.algos,
        out=args.out or "results-tiers",
        show_progress=not args.quiet,
        workers=args.workers if args.workers is not None else base.workers,
    )
    RESUME_HINT[:] = [
        f"finished settings are kept in {config.out}/checkpoints; rerun the same command to resume"
    ]
    try:
        results = run_tiers(config)
    except ValueError as exc:
        raise SystemExit(f"harness-gym bench: {exc}") from None
    seconds = results["timings"]["total_s"]
    print(f"wrote {config.out}/ (report.md, results.json, fig_tiers.png) in {seconds:.0f}s")
    return 0
