"""The ``harness-gym`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import gymnasium as gym

from harness_gym._version import __version__
from harness_gym.core.state import feature_table
from harness_gym.core.task import SPLITS
from harness_gym.envs.registry import ALL_ENV_IDS, ENV_IDS, env_class
from harness_gym.evaluation.paper import BASE_G, EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import protocol_episodes, run_episode, summarize
from harness_gym.executors.cache import MODES as CACHE_MODES
from harness_gym.executors.openai_executor import CACHE_MODE_ALIASES, OpenAIConfig


def _cmd_envs(args: argparse.Namespace) -> int:
    print(f"{'id':<24} {'domain':<15} {'train':>5} {'eval':>5}  max_steps")
    for env_id in ENV_IDS:
        domain = env_class(env_id).domain_cls()
        tasks = domain.tasks()
        counts = {split: sum(t.split == split for t in tasks) for split in SPLITS}
        print(f"{env_id:<24} {domain.name:<15} {counts['train']:>5} {counts['eval']:>5}  {domain.max_steps}")
    print("\nObservation layout (harness_gym.FEATURES):\n")
    print(feature_table())
    return 0


_LLM_FLAGS = (
    "model",
    "base_url",
    "temperature",
    "max_tokens",
    "context_tokens",
    "max_concurrency",
    "timeout",
    "cache",
    "fold_system",
)


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
        "--context-tokens",
        type=int,
        default=None,
        help="openai: the model's context window as served; a call whose prompt leaves less than "
        "--max-tokens of it is a truncated reply (default: rely on the server's refusal)",
    )
    group.add_argument(
        "--max-concurrency",
        type=int,
        default=None,
        help="openai: requests in flight per process (default: the larger of 4 and --concurrency)",
    )
    group.add_argument("--timeout", type=float, default=None, help="openai: seconds per request (60)")
    group.add_argument(
        "--fold-system",
        action="store_const",
        const=True,
        default=None,
        help="openai: send the system prompt inside the first user message (templates without a system role)",
    )
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
    from harness_gym.evaluation.engine import EngineConfig, EngineError

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
        "context_tokens": args.context_tokens,
        "max_concurrency": args.max_concurrency,
        "timeout_s": args.timeout,
        "cache": args.cache,
        "fold_system": args.fold_system,
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
        f"${usage['cost_usd']:.4f}; {usage.get('parse_failures', 0):.0f} parse failures, "
        f"{usage.get('truncations', 0):.0f} truncated replies; {cache}"
    )


def _make_policy(name: str, env_id: str):
    from harness_gym.policies.scripted import make_policy

    try:
        return make_policy(name, env_id)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def _cmd_run(args: argparse.Namespace) -> int:
    env_ids = ENV_IDS if args.env == "all" else (args.env,)
    for env_id in env_ids:
        if env_id not in ALL_ENV_IDS:
            raise SystemExit(f"unknown env id {env_id!r}; known: all, {', '.join(ALL_ENV_IDS)}")
    if args.episodes < 1:
        raise SystemExit("--episodes must be at least 1")
    config = _executor_config(args)
    if args.episodes_out:
        open(args.episodes_out, "w").close()  # every env id of this run appends to it
    for env_id in env_ids:
        _run_one(env_id, args, config)
    return 0


def _final_summary(item: object, final: dict) -> dict:
    """What ``summarize`` reads of a final info (the step records stay in the worker)."""
    return {key: final[key] for key in ("G", "hms_norm", "hms", "usage")}


def _run_one(env_id: str, args: argparse.Namespace, config: OpenAIConfig | None) -> None:
    from harness_gym.policies.scripted import bind_policy

    policy = _make_policy(args.policy, env_id)
    kwargs: dict = {}
    if config is not None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        kwargs["executor"] = OpenAIExecutor(config)  # one client per process: --max-concurrency bounds it
    if args.executor_profile is not None:
        kwargs["executor_profile"] = args.executor_profile
    env = gym.make(env_id, split=args.split, render_mode="ansi" if args.show else None, **kwargs)
    policy = bind_policy(policy, env)  # the oracle reads this env's hidden state; others are unchanged
    if args.protocol:
        task_ids = [task.task_id for task in env.unwrapped.tasks]
        episodes = [
            (s, task_id) for _, task_id, _, s in protocol_episodes(task_ids, EVAL_SEEDS, EVAL_ROLLOUTS)
        ]
    else:
        episodes = [(args.seed + i, None) for i in range(args.episodes)]
    finals: list = []
    failure: str | None = None
    keep = None if args.episodes_out else _final_summary  # the viewer needs the step records
    try:
        if args.show:  # the first episode on the rendering env, the rest on the engine
            finals.append(run_episode(env, policy, seed=episodes[0][0], task_id=episodes[0][1]))
            print(env.render())
    except _endpoint_errors() as exc:
        why = " ".join(str(exc).split())
        failure = f"harness-gym run: {env_id} episode 1/{len(episodes)} stopped the run: {why}"
    env.close()
    from harness_gym.evaluation.engine import run as run_engine
    from harness_gym.evaluation.rollout import EpisodeJob

    rest = episodes[len(finals) :] if failure is None else []
    by_item: dict = {}
    job = EpisodeJob(env_id, policy, args.split, kwargs, keep=keep)
    try:
        run_engine(job, rest, by_item.__setitem__, _engine_config(args))
    except _endpoint_errors() as exc:
        stopped = len(finals) + len(by_item) + 1
        why = " ".join(str(exc).split())
        failure = f"harness-gym run: {env_id} episode {stopped}/{len(episodes)} stopped the run: {why}"
    finals += [by_item[item] for item in rest if item in by_item]
    if args.episodes_out:
        from harness_gym.bench.viewer import write_infos

        write_infos(finals, args.episodes_out, append=True)
    if failure is not None:
        if finals:
            print(f"summary of the {len(finals)} finished episode(s):")
            _print_summary(env_id, args, finals, config)
        raise SystemExit(failure)
    _print_summary(env_id, args, finals, config)


def _endpoint_errors() -> tuple[type[BaseException], ...]:
    """What a real-LLM run may end with: the endpoint failing for good, or a replay miss."""
    from harness_gym.executors.cache import CacheError
    from harness_gym.executors.openai_client import LLMError

    return (LLMError, CacheError)


def _print_summary(env_id: str, args: argparse.Namespace, finals: list, config: OpenAIConfig | None) -> None:
    summary = summarize(finals)
    mode = "protocol (tasks x 3 seeds x 3 rollouts)" if args.protocol else f"seeds {args.seed}.."
    print(f"{env_id}  policy={args.policy}  split={args.split}  episodes={summary['episodes']}  {mode}")
    paper = BASE_G.get(env_id)
    reference = f"   (paper's Base G {paper:.3f})" if args.policy == "base" and paper is not None else ""
    print(f"mean G        {summary['G']:.3f}{reference}")
    print(f"mean HMS_norm {summary['hms_norm']:+.3f}")
    print(f"{'event':<22} {'fired':>6} {'applicable':>10}")
    for event, rates in summary["events"].items():
        print(f"{event:<22} {rates['fired']:>6.1%} {rates['applicable']:>10.1%}")
    _print_usage(summary["usage"], config)
    print()


def _cmd_collect(args: argparse.Namespace) -> int:
    from harness_gym.datasets.collect import CollectConfig, CollectError, collect

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
    from harness_gym.datasets.collect import checkpoint_dir

    _RESUME_HINT[:] = [
        f"finished episodes are checkpointed in {checkpoint_dir(config)}; rerun the same command to resume"
    ]
    try:
        report = collect(config)
    except CollectError as exc:
        raise SystemExit(f"harness-gym collect: {exc}") from None
    except _endpoint_errors() as exc:
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
    _print_usage(report.usage, config.executor)
    return 0


def _cmd_datasets(args: argparse.Namespace) -> int:
    from harness_gym.datasets.collect import dataset_root, dataset_stats
    from harness_gym.datasets.files import DatasetError, local_ids, open_dataset

    if args.datasets_command == "combine":
        return _cmd_datasets_combine(args)
    root = dataset_root(args.root)
    ids = local_ids(root)
    if not ids:
        print(f"no harness datasets under {root}")
        return 0
    head = ("dataset", "env", "behaviour", "episodes", "steps", "mean G", "slack")
    print("{:<36} {:<24} {:<12} {:>8} {:>7} {:>7} {:>6}".format(*head))
    unreadable = 0
    for dataset_id in ids:
        try:
            dataset = open_dataset(dataset_id, root)
            stats = dataset_stats(dataset)
        except (DatasetError, OSError, KeyError) as exc:  # a corrupt file: name it, list the others
            unreadable += 1
            print(f"{dataset_id:<36} unreadable: {str(exc).splitlines()[0]}")
            continue
        meta = dataset.storage.metadata
        env_id, behaviour = meta.get("harness_env_id", "?"), meta.get("algorithm_name", "?")
        print(
            f"{dataset_id:<36} {env_id:<24} {behaviour:<12} {stats['episodes']:>8} {stats['steps']:>7} "
            f"{stats['mean_G']:>7.3f} {stats['buffer_slack']:>6.3f}"
        )
    if unreadable:
        print(f"{unreadable} of {len(ids)} datasets could not be read", file=sys.stderr)
    return 1 if unreadable else 0


def _cmd_datasets_combine(args: argparse.Namespace) -> int:
    from harness_gym.datasets.collect import CollectError
    from harness_gym.datasets.combine import combine
    from harness_gym.datasets.files import DatasetError

    try:
        path = combine(args.sources, args.new_id, root=args.root, overwrite=args.overwrite)
    except (CollectError, DatasetError) as exc:
        raise SystemExit(f"harness-gym datasets combine: {exc}") from None
    print(f"wrote {args.new_id} to {path} ({' + '.join(args.sources)})")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy, to_d3rlpy
    from harness_gym.datasets.files import DatasetError, open_dataset
    from harness_gym.evaluation.model_files import Provenance, save_model
    from harness_gym.policies.algorithms import TrainingData
    from harness_gym.policies.algorithms import get as get_algorithm

    quiet_d3rlpy()
    try:
        algorithm = get_algorithm(args.algo)
    except ValueError as exc:
        raise SystemExit(f"harness-gym train: {exc}") from None
    try:
        dataset = open_dataset(args.dataset, args.root)
    except DatasetError as exc:
        raise SystemExit(f"harness-gym train: {exc}") from None
    env_id = dataset.storage.metadata.get("harness_env_id")
    if env_id is None:
        raise SystemExit(
            f"harness-gym train: {args.dataset!r} is not a harness-gym dataset (no harness_env_id)"
        )
    trained = algorithm.train(
        TrainingData(env_id, dataset, to_d3rlpy(dataset)), seed=args.seed, n_steps=args.steps
    )
    model = trained.model
    if model is None or not hasattr(model, "grad_step"):
        raise SystemExit(f"harness-gym train: {args.algo} produced no d3rlpy model to save")
    try:
        save_model(model, args.out, Provenance(env_id, args.dataset, algorithm.name, args.seed))
    except OSError as exc:
        raise SystemExit(f"harness-gym train: cannot write {args.out}: {exc.strerror or exc}") from None
    steps = model.grad_step
    print(f"trained {algorithm.name} (seed {args.seed}, {steps} steps) on {args.dataset}; saved {args.out}")
    return 0


def _load_policy(spec: str, env_id: str, force: bool = False, act: str = "greedy"):
    """A scripted policy by name, or a saved d3rlpy learnable by path (masked at inference).

    ``act``: ``sample`` draws from a stochastic learnable's softmax over legal actions, ``greedy`` takes
    its argmax; Q-learners are always greedy."""
    from pathlib import Path

    if not (spec.endswith(".d3") or "/" in spec or Path(spec).exists()):
        return _make_policy(spec, env_id)
    from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy
    from harness_gym.evaluation.model_files import ModelError, load_model

    try:
        learner, overridden = load_model(spec, env_id, force=force)
    except ModelError as exc:
        raise SystemExit(f"harness-gym evaluate: {exc}") from None
    for why in overridden:
        print(f"warning: evaluating {spec} on {env_id} although {why} (--force)", file=sys.stderr)
    name = Path(spec).stem
    if act == "sample" and not MaskedPolicy(learner, name).stochastic:
        raise SystemExit(f"--act sample needs a stochastic policy; {type(learner).__name__} is greedy")
    return MaskedPolicy(learner, name, sample=act == "sample")


def _cmd_evaluate(args: argparse.Namespace) -> int:
    import json

    from harness_gym.evaluation.protocol import evaluate

    if args.env not in ALL_ENV_IDS:
        raise SystemExit(f"unknown env id {args.env!r}; known: {', '.join(ALL_ENV_IDS)}")
    policy = _load_policy(args.policy, args.env, force=args.force, act=args.act)
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

    from harness_gym.evaluation.engine import ResumeError
    from harness_gym.evaluation.rollout import USAGE_KEYS

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
        except _endpoint_errors() as exc:
            hint = _RESUME_HINT[0] if _RESUME_HINT else ""
            raise SystemExit(f"harness-gym evaluate: {args.env}: the run stopped: {exc} ({hint})") from None
    n = len(results)
    mean_g = sum(r.G for r in results) / n
    mean_hms = sum(r.hms_norm for r in results) / n
    print(f"{args.env}  policy={args.policy}  split={args.split}  episodes={n}")
    print(f"mean G {mean_g:.3f}   mean HMS_norm {mean_hms:+.3f}")
    if config is not None and engine.workers == 1 and engine.backend == "local":
        stats = kwargs["executor"].stats()  # this process played every episode
        print(
            f"executor {config.model}: {stats['requests']} requests, {stats['api_calls']} endpoint calls, "
            f"{stats['parse_failures']} parse failures, {stats['truncations']} truncated replies; "
            f"cache {stats['cache_hits']} hits, "
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

    from harness_gym.bench.runner import QUICK, BenchConfig, run

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
        backend=args.backend,
        ray_address=args.ray_address,
        ray_tasks=args.ray_tasks,
        keep_datasets=args.keep_datasets,
        curves=not args.no_curves,
    )
    config = replace(config, train_profile=args.train_profile, eval_profiles=tuple(args.eval_profile or ()))
    if args.references:
        unknown = [name for name in args.references if name not in _scripted_names()]
        if unknown:
            raise SystemExit(f"unknown reference policy {unknown}; known: {', '.join(_scripted_names())}")
        config = replace(config, references=tuple(args.references))
    if args.act is not None:
        config = replace(config, act=(args.act,))
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


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harness_gym.evaluation.calibrate import calibrate_profile

    env_ids = ENV_IDS if args.env == "all" else (args.env,)
    if any(env_id not in ENV_IDS for env_id in env_ids):
        raise SystemExit(f"unknown env id {args.env!r}; known: all, {', '.join(ENV_IDS)}")
    config = _executor_config(args)
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


def _cmd_view(args: argparse.Namespace) -> int:
    from pathlib import Path

    from harness_gym.bench.viewer import ViewError, write_view

    out = args.out or (Path(args.target) / "view.html" if Path(args.target).is_dir() else Path("view.html"))
    try:
        path = write_view(args.target, out, root=args.root, limit=args.max_episodes)
    except ViewError as exc:
        raise SystemExit(f"harness-gym view: {exc}") from None
    print(f"wrote {path} (open it in a browser; it needs no server)")
    return 0


def _scripted_names() -> tuple[str, ...]:
    from harness_gym.policies.scripted import SCRIPTED

    return SCRIPTED


def _behavior_names() -> tuple[str, ...]:
    from harness_gym.datasets.collect import BEHAVIORS

    return BEHAVIORS


def _cmd_headroom(args: argparse.Namespace) -> int:
    from harness_gym.evaluation.headroom import cli_main

    return cli_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness-gym", description="Gymnasium environments for learning to control LLM agent harnesses."
    )
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)

    envs = sub.add_parser("envs", help="list environment ids, task counts and the observation layout")
    envs.set_defaults(func=_cmd_envs)

    run = sub.add_parser("run", help="roll a scripted policy and print G, HMS_norm and event rates")
    run.add_argument("--env", required=True, help="environment id (e.g. HarnessCoding-v0) or 'all'")
    run.add_argument("--policy", default="base", choices=_scripted_names())
    run.add_argument("--episodes", type=int, default=20)
    run.add_argument("--seed", type=int, default=0, help="episode i uses seed S + i")
    run.add_argument(
        "--protocol",
        action="store_true",
        help="the paper's protocol instead of --episodes: every task of the split x 3 seeds x 3 rollouts",
    )
    run.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    run.add_argument("--show", action="store_true", help="print the first episode's trajectory")
    run.add_argument(
        "--executor-profile", default=None, help="simulated executor profile: weak | default | strong | JSON"
    )
    run.add_argument(
        "--episodes-out", default=None, help="write each episode's final info as JSON lines (for 'view')"
    )
    _add_engine_args(run)
    _add_executor_args(run)
    run.set_defaults(func=_cmd_run)

    col = sub.add_parser("collect", help="roll a behaviour policy and write a Minari dataset")
    col.add_argument("--env", required=True, help="environment id")
    col.add_argument("--policy", default="mixed", choices=_behavior_names())
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
    dsets_sub = dsets.add_subparsers(dest="datasets_command")
    comb = dsets_sub.add_parser(
        "combine", help="combine datasets of one env into a new one, keeping the harness metadata"
    )
    comb.add_argument("new_id", help="id of the combined dataset, harness/<domain>/<name>-v<N>")
    comb.add_argument("sources", nargs="+", help="ids of the datasets to combine, in order")
    comb.add_argument("--root", default=argparse.SUPPRESS, help="datasets directory (default: Minari's)")
    comb.add_argument("--overwrite", action="store_true", help="replace an existing dataset of that id")

    tr = sub.add_parser("train", help="train an offline controller on a harness dataset")
    tr.add_argument(
        "--algo",
        required=True,
        help="a registered algorithm (baselines: awr | awr-converged | bc | bc-converged | iql | bc-d3rlpy | "
        "cql | bcq | dqn | double-dqn | sac) or module:attribute",
    )
    tr.add_argument("--dataset", required=True, help="dataset id, e.g. harness/coding/mixed-v0")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument(
        "--steps", type=int, default=None, help="gradient steps (default: the budget in baselines/budgets.py)"
    )
    tr.add_argument("--out", required=True, help="where to save the d3rlpy learnable (.d3)")
    tr.add_argument("--root", default=None, help="datasets directory (default: Minari's)")
    tr.set_defaults(func=_cmd_train)

    ev = sub.add_parser("evaluate", help="the evaluation protocol (tasks x 3 seeds x 3 rollouts)")
    ev.add_argument("--env", required=True)
    ev.add_argument("--policy", required=True, help=f"{' | '.join(_scripted_names())} | PATH.d3")
    ev.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    ev.add_argument("--out", default=None, help="write per-episode results as JSON")
    ev.add_argument(
        "--force",
        action="store_true",
        help="evaluate a model trained on another env id or observation layout",
    )
    ev.add_argument(
        "--act",
        default="greedy",
        choices=["sample", "greedy"],
        help="a learnable's action choice: sample from its legal softmax, or its argmax (Q-learners: greedy)",
    )
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
    be.add_argument("--train-profile", default=None, help="executor profile to collect and train against")
    be.add_argument(
        "--eval-profile", nargs="+", default=None, help="also evaluate against these profiles (transfer gap)"
    )
    be.add_argument(
        "--references", nargs="*", default=None, help="reference policies to evaluate too, e.g. expert oracle"
    )
    be.add_argument(
        "--act",
        default=None,
        choices=["sample", "greedy"],
        help="evaluate stochastic learners one way only (default: both, each reported)",
    )
    be.add_argument(
        "--keep-datasets",
        action="store_true",
        help="keep the buffers in OUT/datasets (default: removed after the report; a rerun rebuilds them)",
    )
    be.add_argument(
        "--no-curves", action="store_true", help="skip the learning curves (their evaluation episodes)"
    )
    be.add_argument("--workers", type=int, default=None, help="settings run in parallel processes (2)")
    _add_engine_args(be, workers=False)
    be.add_argument(
        "--ray-tasks", type=int, default=1, help="ray: tasks per collection or evaluation in a setting (1)"
    )
    _add_executor_args(be)
    be.set_defaults(func=_cmd_bench)

    cal = sub.add_parser("calibrate", help="measure an executor profile by probe episodes on the train split")
    cal.add_argument("--env", required=True, help="environment id or 'all'")
    cal.add_argument("--probes", type=int, default=200, help="requests per probe kind and environment")
    cal.add_argument("--seed", type=int, default=0)
    cal.add_argument("--out", required=True, help="where to write the profile JSON")
    cal.add_argument(
        "--executor-profile",
        default=None,
        help="simulated executor: the profile to measure (name or JSON; default 'default')",
    )
    _add_executor_args(cal)
    cal.set_defaults(func=_cmd_calibrate)
    vw = sub.add_parser("view", help="a static HTML page of episodes: results dir, episodes file or dataset")
    vw.add_argument("target", help="bench results directory, JSONL from 'run --episodes-out', or dataset id")
    vw.add_argument("--out", default=None, help="page to write (default: TARGET/view.html or ./view.html)")
    vw.add_argument("--root", default=None, help="datasets directory for a dataset id (default: Minari's)")
    vw.add_argument("--max-episodes", type=int, default=40, help="episodes shown per setting")
    vw.set_defaults(func=_cmd_view)
    hr = sub.add_parser(
        "headroom", help="reference policies (random to expert, and the oracle) on the eval protocol"
    )
    hr.add_argument("--env", default="all", help="environment id or 'all'")
    hr.add_argument("--out", default=None, help="also write the table (Markdown) and the raw numbers (JSON)")
    hr.add_argument("--policies", nargs="*", default=None, help="a subset of the reference policies")
    hr.add_argument("--seeds", type=int, nargs="*", default=None, help="protocol seeds (default 0 1 2)")
    hr.add_argument("--rollouts", type=int, default=None, help="rollouts per task and seed (default 3)")
    hr.add_argument("--tasks", type=int, default=None, help="only the first N eval tasks (a quick check)")
    hr.add_argument(
        "--write-reference-scores",
        action="store_true",
        help="rewrite harness_gym/data/reference_scores.json from this run (full protocol, every env id)",
    )
    hr.set_defaults(func=_cmd_headroom)
    return parser


def _user_errors() -> tuple[type[BaseException], ...]:
    """Errors a user causes (bad files, ids, settings): reported in one line, never as a traceback."""
    from harness_gym.core.task import TaskFileError
    from harness_gym.datasets.collect import CollectError
    from harness_gym.datasets.files import DatasetError
    from harness_gym.evaluation.model_files import ModelError
    from harness_gym.executors.cache import CacheError

    return (CacheError, CollectError, DatasetError, ModelError, TaskFileError, OSError)


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
    except _user_errors() as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        print(f"harness-gym {args.command}: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
