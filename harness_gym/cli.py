"""The ``harness-gym`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import gymnasium as gym

import harness_gym
from harness_gym.executors.cache import MODES as CACHE_MODES
from harness_gym.executors.openai_executor import CACHE_MODE_ALIASES, OpenAIConfig
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


_LLM_FLAGS = ("model", "base_url", "temperature", "max_tokens", "max_concurrency", "timeout", "cache")


def _add_executor_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("executor (default: the embedded simulated LLM)")
    group.add_argument("--executor", default="simulated", choices=["simulated", "openai"])
    group.add_argument("--model", default=None, help="openai: model name (default $HARNESS_GYM_LLM_MODEL)")
    group.add_argument(
        "--base-url",
        default=None,
        help="openai: endpoint root, e.g. http://127.0.0.1:8000/v1 ($HARNESS_GYM_LLM_BASE_URL)",
    )
    group.add_argument("--temperature", type=float, default=None, help="openai: sampling temperature (0)")
    group.add_argument("--max-tokens", type=int, default=None, help="openai: reply length limit (1024)")
    group.add_argument(
        "--max-concurrency",
        type=int,
        default=None,
        help="openai: requests in flight per process (default: the larger of 4 and --concurrency)",
    )
    group.add_argument("--timeout", type=float, default=None, help="openai: seconds per request (60)")
    group.add_argument("--cache", default=None, help="openai: response-cache SQLite file (record/replay)")
    group.add_argument(
        "--cache-mode",
        default="read_write",
        choices=[*CACHE_MODES, *CACHE_MODE_ALIASES],
        help="record = read_write, replay = read_only (a miss is an error, no network)",
    )


def _add_engine_args(parser: argparse.ArgumentParser, workers: bool = True, backend: bool = True) -> None:
    group = parser.add_argument_group("episode engine (results never depend on these)")
    group.add_argument(
        "--concurrency", type=int, default=1, help="episodes in flight per process (threads; default 1)"
    )
    if workers:
        group.add_argument(
            "--workers", type=int, default=1, help="processes (or Ray tasks with --backend ray)"
        )
    if backend:
        group.add_argument("--backend", default="local", choices=["local", "ray"])
        group.add_argument(
            "--ray-address",
            default=None,
            help="ray: cluster to join, e.g. ray://head:10001 (default $RAY_ADDRESS, else a local instance)",
        )


def _engine_config(args: argparse.Namespace):
    from harness_gym.engine import EngineConfig, EngineError

    try:
        return EngineConfig(args.concurrency, args.workers, args.backend, args.ray_address)
    except EngineError as exc:
        raise SystemExit(f"harness-gym {args.command}: {exc}") from None


_RESUME_HINT: list[str] = []
"""Where the running command keeps its resumable state, for the Ctrl-C message."""


def _executor_config(args: argparse.Namespace) -> OpenAIConfig | None:
    """The chat-LLM settings from the command line, or None for the simulated executor.

    The API key is read from $HARNESS_GYM_LLM_API_KEY or $OPENAI_API_KEY only, never from a flag.
    """
    if args.executor == "simulated":
        given = [f"--{name.replace('_', '-')}" for name in _LLM_FLAGS if getattr(args, name) is not None]
        if given:
            raise SystemExit(f"{', '.join(given)} only apply with --executor openai")
        return None
    settings = {
        "model": args.model,
        "base_url": args.base_url,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "max_concurrency": args.max_concurrency,
        "timeout_s": args.timeout,
        "cache": args.cache,
    }
    concurrency = getattr(args, "concurrency", 1)
    if args.max_concurrency is None and concurrency > OpenAIConfig.max_concurrency:
        settings["max_concurrency"] = concurrency  # the client's bound never throttles --concurrency
    try:
        config = OpenAIConfig(
            cache_mode=args.cache_mode, **{k: v for k, v in settings.items() if v is not None}
        ).resolved()
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if config.model is None or config.base_url is None:
        raise SystemExit(
            "--executor openai needs --model and --base-url (or $HARNESS_GYM_LLM_MODEL and "
            "$HARNESS_GYM_LLM_BASE_URL)"
        )
    return config


def _print_usage(usage: dict, config: OpenAIConfig | None) -> None:
    if config is None:
        return
    cache = (
        f"cache {config.cache} ({config.cache_mode}): {usage['cache_hits']:.0f} hits, "
        f"{usage['cache_misses']:.0f} misses"
        if config.cache
        else "no response cache"
    )
    print(
        f"executor {config.model} @ {config.base_url}: {usage['executor_calls']:.0f} calls, "
        f"{usage['prompt_tokens']:.0f} prompt + {usage['completion_tokens']:.0f} completion tokens, "
        f"${usage['cost_usd']:.4f}; {cache}"
    )


def _make_policy(name: str, env_id: str):
    from baselines.scripted import make_policy

    try:
        return make_policy(name, env_id)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def _cmd_run(args: argparse.Namespace) -> int:
    env_ids = harness_gym.ENV_IDS if args.env == "all" else (args.env,)
    for env_id in env_ids:
        if env_id not in harness_gym.ENV_IDS:
            raise SystemExit(f"unknown env id {env_id!r}; known: all, {', '.join(harness_gym.ENV_IDS)}")
    if args.episodes < 1:
        raise SystemExit("--episodes must be at least 1")
    config = _executor_config(args)
    for env_id in env_ids:
        _run_one(env_id, args, config)
    return 0


def _final_summary(item: object, final: dict) -> dict:
    """What ``summarize`` reads of a final info (the step records stay in the worker)."""
    return {key: final[key] for key in ("G", "hms_norm", "hms", "usage")}


def _run_one(env_id: str, args: argparse.Namespace, config: OpenAIConfig | None) -> None:
    policy = _make_policy(args.policy, env_id)
    kwargs: dict = {}
    if config is not None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        kwargs["executor"] = OpenAIExecutor(config)  # one client per process: --max-concurrency bounds it
    env = gym.make(env_id, split=args.split, render_mode="ansi" if args.show else None, **kwargs)
    if args.protocol:
        task_ids = [task.task_id for task in env.unwrapped.tasks]
        episodes = [
            (s, task_id) for _, task_id, _, s in protocol_episodes(task_ids, EVAL_SEEDS, EVAL_ROLLOUTS)
        ]
    else:
        episodes = [(args.seed + i, None) for i in range(args.episodes)]
    finals: list = []
    if args.show:  # the first episode on the rendering env, the rest on the engine
        finals.append(run_episode(env, policy, seed=episodes[0][0], task_id=episodes[0][1]))
        print(env.render())
    env.close()
    from harness_gym.engine import run as run_engine
    from harness_gym.rollout import EpisodeJob

    rest = episodes[len(finals) :]
    by_item: dict = {}
    job = EpisodeJob(env_id, policy, args.split, kwargs, keep=_final_summary)
    run_engine(job, rest, by_item.__setitem__, _engine_config(args))
    finals += [by_item[item] for item in rest]
    summary = summarize(finals)
    mode = "protocol (tasks x 3 seeds x 3 rollouts)" if args.protocol else f"seeds {args.seed}.."
    print(f"{env_id}  policy={args.policy}  split={args.split}  episodes={summary['episodes']}  {mode}")
    reference = f"   (paper's Base G {BASE_G[env_id]:.3f})" if args.policy == "base" else ""
    print(f"mean G        {summary['G']:.3f}{reference}")
    print(f"mean HMS_norm {summary['hms_norm']:+.3f}")
    print(f"{'event':<22} {'fired':>6} {'applicable':>10}")
    for event, rates in summary["events"].items():
        print(f"{event:<22} {rates['fired']:>6.1%} {rates['applicable']:>10.1%}")
    _print_usage(summary["usage"], config)
    print()


def _cmd_collect(args: argparse.Namespace) -> int:
    from harness_gym.collect import CollectConfig, CollectError, collect

    config = CollectConfig(
        env_id=args.env,
        policy=args.policy,
        episodes=args.episodes,
        dataset_id=args.dataset_id,
        seed=args.seed,
        split=args.split,
        epsilon=args.epsilon,
        executor=_executor_config(args),
        workers=args.workers,
        concurrency=args.concurrency,
        backend=args.backend,
        ray_address=args.ray_address,
        overwrite=args.overwrite,
        root=args.root,
        show_progress=not args.quiet,
    )
    from harness_gym.collect import checkpoint_dir

    _RESUME_HINT[:] = [
        f"finished episodes are checkpointed in {checkpoint_dir(config)}; rerun the same command to resume"
    ]
    try:
        report = collect(config)
    except CollectError as exc:
        raise SystemExit(f"harness-gym collect: {exc}") from None
    stats = report.stats
    resumed = f", {report.resumed_episodes} resumed from checkpoints" if report.resumed_episodes else ""
    print(f"wrote {report.dataset_id} to {report.path} in {report.seconds:.1f}s{resumed}")
    print(
        f"episodes {stats['episodes']}  steps {stats['steps']}  mean G {stats['mean_G']:.3f}  "
        f"buffer slack {stats['buffer_slack']:.3f}  mean HMS_norm {stats['mean_hms_norm']:+.3f}"
    )
    _print_usage(report.usage, config.executor)
    return 0


def _cmd_datasets(args: argparse.Namespace) -> int:
    import minari

    from harness_gym.collect import dataset_root, dataset_stats

    root = dataset_root(args.root)
    ids = sorted(p.parent.relative_to(root).as_posix() for p in root.glob("harness/*/*/data"))
    if not ids:
        print(f"no harness datasets under {root}")
        return 0
    head = ("dataset", "env", "behaviour", "episodes", "steps", "mean G", "slack")
    print("{:<36} {:<24} {:<12} {:>8} {:>7} {:>7} {:>6}".format(*head))
    for dataset_id in ids:
        dataset = minari.load_dataset(str(root / dataset_id))
        meta = dataset.storage.metadata
        stats = dataset_stats(dataset)
        env_id, behaviour = meta.get("harness_env_id", "?"), meta.get("algorithm_name", "?")
        print(
            f"{dataset_id:<36} {env_id:<24} {behaviour:<12} {stats['episodes']:>8} {stats['steps']:>7} "
            f"{stats['mean_G']:>7.3f} {stats['buffer_slack']:>6.3f}"
        )
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    import minari

    from baselines.train import ALGOS, quiet_d3rlpy, train
    from harness_gym.collect import dataset_root

    quiet_d3rlpy()
    if args.algo not in ALGOS:
        raise SystemExit(f"unknown algorithm {args.algo!r}; expected one of {', '.join(ALGOS)}")
    path = dataset_root(args.root) / args.dataset
    if not (path / "data").is_dir():
        raise SystemExit(f"no dataset {args.dataset!r} under {dataset_root(args.root)}")
    model = train(args.algo, minari.load_dataset(str(path)), seed=args.seed, n_epochs=args.epochs)
    model.save(args.out)
    print(f"trained {args.algo} (seed {args.seed}, {args.epochs} epochs) on {args.dataset}; saved {args.out}")
    return 0


def _load_policy(spec: str, env_id: str):
    """A scripted policy by name, or a saved d3rlpy learnable by path (masked at inference)."""
    from pathlib import Path

    if not Path(spec).exists():
        return _make_policy(spec, env_id)
    import d3rlpy

    import baselines.awr  # noqa: F401  (registers DiscreteAWR with d3rlpy.load_learnable)
    from baselines.masked import MaskedPolicy

    return MaskedPolicy(d3rlpy.load_learnable(spec), Path(spec).stem)


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import json

    from harness_gym.evaluation import evaluate

    if args.env not in harness_gym.ENV_IDS:
        raise SystemExit(f"unknown env id {args.env!r}; known: {', '.join(harness_gym.ENV_IDS)}")
    policy = _load_policy(args.policy, args.env)
    config = _executor_config(args)
    engine = _engine_config(args)
    kwargs = {}
    if config is not None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        kwargs["executor"] = OpenAIExecutor(config)
    checkpoint = args.checkpoint or (f"{args.out}.partial" if args.out else None)
    _RESUME_HINT[:] = [
        f"finished episodes are checkpointed in {checkpoint}; rerun the same command to resume"
        if checkpoint
        else "nothing was kept (pass --out or --checkpoint to make an evaluation resumable)"
    ]
    from tqdm.auto import tqdm

    from harness_gym.engine import ResumeError
    from harness_gym.rollout import USAGE_KEYS

    usage = dict.fromkeys(USAGE_KEYS, 0.0)

    def on_episode(record: dict) -> None:
        for key in USAGE_KEYS:
            usage[key] += record["usage"][key]
        bar.update(1)

    n_tasks = len(gym.make(args.env, split=args.split).unwrapped.tasks)
    total = n_tasks * len(EVAL_SEEDS) * EVAL_ROLLOUTS
    desc = f"evaluate {args.policy} on {args.env}"
    with tqdm(total=total, desc=desc, unit="ep", disable=args.quiet) as bar:
        try:
            results = evaluate(
                policy,
                args.env,
                split=args.split,
                engine=engine,
                checkpoint=checkpoint,
                fingerprint=_fingerprint(args.policy),
                on_episode=on_episode,
                **kwargs,
            )
        except ResumeError as exc:
            raise SystemExit(f"harness-gym evaluate: {exc}") from None
    n = len(results)
    mean_g = sum(r.G for r in results) / n
    mean_hms = sum(r.hms_norm for r in results) / n
    print(f"{args.env}  policy={args.policy}  split={args.split}  episodes={n}")
    print(f"mean G {mean_g:.3f}   mean HMS_norm {mean_hms:+.3f}")
    if config is not None and engine.workers == 1 and engine.backend == "local":
        stats = kwargs["executor"].stats()  # this process played every episode
        print(
            f"executor {config.model}: {stats['requests']} requests, {stats['api_calls']} endpoint calls, "
            f"{stats['parse_failures']} parse failures; cache {stats['cache_hits']} hits, "
            f"{stats['cache_misses']} misses"
        )
    _print_usage(usage, config)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump([r.to_dict() for r in results], handle, indent=1)
        print(f"wrote {args.out}")
    if checkpoint is not None and (args.out or args.checkpoint is None):
        import shutil

        shutil.rmtree(checkpoint, ignore_errors=True)
    return 0


def _fingerprint(spec: str) -> str | None:
    """A saved model's content hash (a resume with a retrained model is refused); None for a name."""
    import hashlib
    from pathlib import Path

    path = Path(spec)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _cmd_bench(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from harness_gym.bench import QUICK, BenchConfig, run

    base = QUICK if args.quick else BenchConfig()
    settings = tuple(args.settings) if args.settings else base.settings
    config = replace(
        base,
        settings=settings,
        out=args.out,
        show_progress=not args.quiet,
        executor=_executor_config(args),
        workers=args.workers if args.workers is not None else base.workers,
        concurrency=args.concurrency,
        keep_datasets=args.keep_datasets,
    )
    _RESUME_HINT[:] = [
        f"finished settings and episodes are checkpointed in {args.out}/checkpoints; rerun the same "
        "command to resume"
    ]
    try:
        results = run(config)
    except ValueError as exc:
        raise SystemExit(f"harness-gym bench: {exc}") from None
    timings = results["timings"]
    if config.executor is not None:
        for env_id, setting in results["settings"].items():
            used = setting["executor"]
            print(
                f"{env_id}: executor calls {used['collect']['executor_calls']:.0f} (collection) + "
                f"{used['evaluate']['requests']} (evaluation); endpoint calls in evaluation "
                f"{used['evaluate']['api_calls']}; cache hits {used['collect']['cache_hits']:.0f} + "
                f"{used['evaluate']['cache_hits']}, misses {used['collect']['cache_misses']:.0f} + "
                f"{used['evaluate']['cache_misses']}"
            )
    print(
        f"wrote {args.out}/ in {timings['total_s']:.0f}s (largest process {timings['peak_rss_mb']:.0f} MB; "
        "benchmarks/protocol.py measures all processes together)"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness-gym", description=harness_gym.__doc__)
    parser.add_argument("--version", action="version", version=harness_gym.__version__)
    sub = parser.add_subparsers(dest="command", required=True)

    envs = sub.add_parser("envs", help="list environment ids, task counts and the observation layout")
    envs.set_defaults(func=_cmd_envs)

    run = sub.add_parser("run", help="roll a scripted policy and print G, HMS_norm and event rates")
    run.add_argument("--env", required=True, help="environment id (e.g. HarnessCoding-v0) or 'all'")
    run.add_argument("--policy", default="base", choices=["base", "exploratory", "forced-check", "random"])
    run.add_argument("--episodes", type=int, default=20)
    run.add_argument("--seed", type=int, default=0, help="episode i uses seed S + i")
    run.add_argument(
        "--protocol",
        action="store_true",
        help="the paper's protocol instead of --episodes: every task of the split x 3 seeds x 3 rollouts",
    )
    run.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    run.add_argument("--show", action="store_true", help="print the first episode's trajectory")
    _add_engine_args(run)
    _add_executor_args(run)
    run.set_defaults(func=_cmd_run)

    col = sub.add_parser("collect", help="roll a behaviour policy and write a Minari dataset")
    col.add_argument("--env", required=True, help="environment id")
    col.add_argument(
        "--policy", default="mixed", choices=["base", "exploratory", "forced-check", "mixed", "random"]
    )
    col.add_argument("--episodes", type=int, required=True)
    col.add_argument("--dataset-id", required=True, help="harness/<domain>/<name>-v<N>")
    col.add_argument("--seed", type=int, default=0, help="episode i uses seed S + i")
    col.add_argument("--split", default="train", choices=["train", "eval", "all"])
    col.add_argument("--epsilon", type=float, default=0.3, help="exploratory: P(random legal action)")
    col.add_argument("--overwrite", action="store_true", help="replace an existing dataset of that id")
    col.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    col.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_engine_args(col)
    _add_executor_args(col)
    col.set_defaults(func=_cmd_collect)

    dsets = sub.add_parser("datasets", help="list local harness datasets with their statistics")
    dsets.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    dsets.set_defaults(func=_cmd_datasets)

    tr = sub.add_parser("train", help="train an offline controller on a harness dataset")
    tr.add_argument("--algo", required=True, help="awr | bc | bc-d3rlpy | cql | bcq | dqn | double-dqn | sac")
    tr.add_argument("--dataset", required=True, help="dataset id, e.g. harness/coding/mixed-v0")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--epochs", type=int, default=20)
    tr.add_argument("--out", required=True, help="where to save the d3rlpy learnable (.d3)")
    tr.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    tr.set_defaults(func=_cmd_train)

    ev = sub.add_parser("evaluate", help="the evaluation protocol (tasks x 3 seeds x 3 rollouts)")
    ev.add_argument("--env", required=True)
    ev.add_argument("--policy", required=True, help="base | forced-check | exploratory | random | PATH.d3")
    ev.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    ev.add_argument("--out", default=None, help="write per-episode results as JSON")
    ev.add_argument(
        "--checkpoint",
        default=None,
        help="resume directory, one file per finished episode (default: OUT.partial with --out; "
        "removed once OUT is written)",
    )
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_engine_args(ev)
    _add_executor_args(ev)
    ev.set_defaults(func=_cmd_evaluate)

    be = sub.add_parser("bench", help="the whole protocol: buffers, training, evaluation, report")
    be.add_argument("--quick", action="store_true", help="a small version for a fast check")
    be.add_argument("--settings", nargs="*", default=None, help="env ids (default: all)")
    be.add_argument("--out", default="results", help="output directory")
    be.add_argument("--quiet", action="store_true")
    be.add_argument(
        "--keep-datasets",
        action="store_true",
        help="keep the buffers in OUT/datasets (default: removed after the report; a rerun rebuilds them)",
    )
    be.add_argument("--workers", type=int, default=None, help="settings run in parallel processes (2)")
    _add_engine_args(be, workers=False, backend=False)
    _add_executor_args(be)
    be.set_defaults(func=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _RESUME_HINT.clear()
    try:
        return args.func(args)
    except KeyboardInterrupt:
        hint = _RESUME_HINT[0] if _RESUME_HINT else "nothing to resume"
        sys.stdout.flush()
        print(f"\nharness-gym {args.command}: interrupted; {hint}", file=sys.stderr, flush=True)
        return 130


if __name__ == "__main__":
    sys.exit(main())
