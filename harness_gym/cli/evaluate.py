"""score a policy on the evaluation protocol (tasks x seeds x rollouts), against Base on the same episodes

``harness-gym evaluate``: ``harness_gym.evaluate_policy`` from the command line. The policy is a scripted
policy by name, a saved d3rlpy learnable (``PATH.d3``: one file plays every seed; one file per seed: the
model trained with seed ``s`` plays seed ``s``), or ``module:factory``, a function of the seed returning
anything ``evaluate_policy`` takes (a ``Policy``, a function of (obs, mask), a d3rlpy algorithm): the same
object for every seed is one policy, different ones one model per seed (``scoring.from_factory``). It prints
mean G, the normalised score with its interval, the per-seed scores and the paired change against Base;
``--results-out`` writes the results schema for ``harness-gym leaderboard``, ``--out`` the episodes. With
``--out``, ``--results-out`` or ``--checkpoint`` finished episodes are kept and the same command resumes.
``--out`` holds one record per episode of the policy (``EpisodeResult`` fields, its usage, its episode id
and its step records without prompts and replies, which the response cache holds by each call's key).
"""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym

from harness_gym.cli.common import (
    RESUME_HINT,
    add_engine_args,
    add_executor_args,
    add_simulator_args,
    endpoint_errors,
    engine_config,
    executor_config,
    finish_run,
    first_line,
    make_policy,
    print_usage,
    scripted_names,
    simulator_kwargs,
)
from harness_gym.core.task import SELECTABLE
from harness_gym.envs.registry import ALL_ENV_IDS
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("evaluate", help=first_line(__doc__))
    parser.add_argument("--env", required=True)
    parser.add_argument(
        "--policy",
        required=True,
        nargs="+",
        help=f"{' | '.join(scripted_names())} | PATH.d3 [PATH.d3 ...] (one per seed) | module:factory "
        "(called with each seed)",
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=list(EVAL_SEEDS), help="protocol seeds (0 1 2)"
    )
    parser.add_argument("--rollouts", type=int, default=EVAL_ROLLOUTS, help="episodes per task and seed (3)")
    parser.add_argument("--split", default="eval", choices=SELECTABLE)
    parser.add_argument("--name", default=None, help="the policy's name in the output and the results file")
    parser.add_argument("--out", default=None, help="write the policy's per-episode results as JSON")
    parser.add_argument(
        "--results-out",
        default=None,
        help="write the score in the results schema (for harness-gym leaderboard)",
    )
    parser.add_argument("--no-base", action="store_true", help="skip Base (no paired ΔG, no --results-out)")
    parser.add_argument(
        "--force",
        action="store_true",
        help="evaluate a model trained on another env id or observation layout",
    )
    parser.add_argument(
        "--act",
        default="sample",
        choices=["sample", "greedy"],
        help="a learner's action choice: sample from its legal softmax (the paper's controller), or its "
        "argmax (Q-learners: always greedy)",
    )
    parser.add_argument(
        "--checkpoint",
        default=None,
        help="resume directory, one file per finished episode (default: OUT.partial with --out or "
        "--results-out; removed once written)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_simulator_args(parser)
    add_engine_args(parser)
    add_executor_args(parser)
    parser.set_defaults(func=run)


def _is_model(spec: str) -> bool:
    from pathlib import Path

    return spec.endswith(".d3") or "/" in spec or Path(spec).exists()


def _load_model(spec: str, env_id: str, force: bool, obs_layout: str = "v1") -> object:
    """A saved d3rlpy learnable, refused (one line) when made for another env id or layout."""
    from harness_gym.evaluation.model_files import ModelError, load_model

    try:
        learner, overridden = load_model(spec, env_id, force=force, obs_layout=obs_layout)
    except ModelError as exc:
        raise SystemExit(f"harness-gym evaluate: {exc}") from None
    for why in overridden:
        print(f"warning: evaluating {spec} on {env_id} although {why} (--force)", file=sys.stderr)
    return learner


def _failure(exc: BaseException) -> str:
    """An exception in one line: its type and its text."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _factory(spec: str):
    """``module:attribute`` imported (the working directory first on the path, as ``python -m`` has it);
    a module that fails to import (a syntax error, an exception at import) is one line naming it."""
    import importlib
    import os

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SystemExit(
            f"harness-gym evaluate: --policy {spec!r} names no {'module' if not module_name else 'factory'}"
            " (expected module:factory, e.g. my_policies:make)"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SystemExit(f"harness-gym evaluate: cannot load policy factory {spec!r}: {exc}") from None
    except Exception as exc:  # the module's own error: a syntax error, or its code raising at import
        raise SystemExit(
            f"harness-gym evaluate: cannot import module {module_name!r} of policy factory {spec!r}: "
            f"{_failure(exc)}"
        ) from None
    try:
        factory = getattr(module, attribute)
    except AttributeError as exc:
        raise SystemExit(f"harness-gym evaluate: cannot load policy factory {spec!r}: {exc}") from None
    if not callable(factory):
        raise SystemExit(f"harness-gym evaluate: {spec} is not callable (a factory receives the seed)")
    return factory


def load_policies(
    specs: list[str], env_id: str, seeds: list[int], force: bool = False, obs_layout: str = "v1"
) -> tuple[object, str]:
    """What ``evaluate_policy`` plays (one policy, or a list with one per seed) and its default name."""
    from pathlib import Path

    if all(_is_model(spec) for spec in specs):
        models = [_load_model(spec, env_id, force, obs_layout) for spec in specs]
        if len(models) == 1:
            return models[0], Path(specs[0]).stem
        if len(models) != len(seeds):
            raise SystemExit(
                f"harness-gym evaluate: {len(models)} model files for seeds {seeds}: give one, or one "
                "per seed"
            )
        return models, Path(specs[0]).stem
    if len(specs) != 1:
        raise SystemExit(
            "harness-gym evaluate: several --policy values must all be model files (one per seed)"
        )
    spec = specs[0]
    if ":" in spec:
        from harness_gym.cli.submit import default_name
        from harness_gym.evaluation.scoring import FactoryError, from_factory

        factory = _factory(spec)
        try:  # the same object for every seed is one policy, as evaluate_policy(policy) scores it
            return from_factory(factory, seeds, env_id), default_name(spec)
        except FactoryError as exc:
            raise SystemExit(
                f"harness-gym evaluate: policy factory {spec} failed for seed {exc.seed} (it is called with "
                f"each seed): {_failure(exc.cause)}"
            ) from None
    return make_policy(spec, env_id), spec


def run(args: argparse.Namespace) -> int:
    import json

    from harness_gym.evaluation.scoring import PolicyError, evaluate_policy

    if args.env not in ALL_ENV_IDS:
        raise SystemExit(f"unknown env id {args.env!r}; known: {', '.join(ALL_ENV_IDS)}")
    if args.results_out and args.no_base:
        raise SystemExit("harness-gym evaluate: --results-out needs Base (drop --no-base)")
    policy, default_name = load_policies(
        args.policy, args.env, args.seeds, force=args.force, obs_layout=args.obs_layout
    )
    name = args.name or default_name
    config = executor_config(args)
    engine = engine_config(args)
    simulator = simulator_kwargs(args)
    kwargs = dict(simulator)
    if config is not None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        kwargs["executor"] = OpenAIExecutor(config)
    kept = args.out or args.results_out
    checkpoint = args.checkpoint or (f"{kept}.partial" if kept else None)
    RESUME_HINT[:] = [
        f"finished episodes are checkpointed in {checkpoint}; rerun the same command to resume"
        if checkpoint
        else "nothing was kept (pass --out or --checkpoint to make an evaluation resumable)"
    ]
    from tqdm.auto import tqdm

    from harness_gym.evaluation.engine import ResumeError
    from harness_gym.evaluation.rollout import USAGE_KEYS
    from harness_gym.evaluation.spend import calls_of

    usage = dict.fromkeys(USAGE_KEYS, 0.0)
    calls: list[dict] = []
    outcomes: dict[tuple, dict] = {}
    records: dict[tuple, dict] = {}

    def on_episode(record: dict) -> None:
        for key in USAGE_KEYS:
            usage[key] += record["usage"][key]
        steps = record.get("step_records", [])
        calls.extend(calls_of(steps))
        bar.update(1)
        if record["policy"] != name:  # Base, played on the same episodes for the paired comparison
            return
        outcome = {
            "task_id": record["task_id"],
            "seed": record["episode_seed"],
            "G": record["G"],
            "actions": [s["action"] for s in steps],
            "trace": record.get("trace"),
        }
        outcomes[(record["seed"], record["task_id"], record["rollout"])] = outcome
        records[(record["task_id"], record["seed"], record["rollout"])] = record

    n_tasks = len(gym.make(args.env, split=args.split, **simulator).unwrapped.tasks)
    runs = 1 if args.no_base or args.policy == ["base"] else 2
    total = n_tasks * len(args.seeds) * args.rollouts * runs
    desc = f"evaluate {name} on {args.env}"
    with tqdm(total=total, desc=desc, unit="ep", disable=args.quiet) as bar:
        try:
            score = evaluate_policy(
                policy,
                args.env,
                seeds=args.seeds,
                rollouts=args.rollouts,
                act=args.act,
                split=args.split,
                name=name,
                base=not args.no_base,
                engine=engine,
                checkpoint=checkpoint,
                fingerprint=_fingerprint(args.policy),
                on_episode=on_episode,
                **kwargs,
            )
        except ResumeError as exc:
            raise SystemExit(f"harness-gym evaluate: {exc}") from None
        except PolicyError as exc:  # the policy, its act or its actions, with the episode
            raise SystemExit(f"harness-gym evaluate: {' '.join(str(exc).split())}") from None
        except endpoint_errors() as exc:
            hint = RESUME_HINT[0] if RESUME_HINT else ""
            raise SystemExit(f"harness-gym evaluate: {args.env}: the run stopped: {exc} ({hint})") from None
    print(score.summary())
    if config is not None and engine.workers == 1 and engine.backend == "local":
        stats = kwargs["executor"].stats()  # this process played every episode
        print(
            f"executor {config.model}: {stats['requests']} requests, {stats['api_calls']} endpoint calls, "
            f"{stats['parse_failures']} parse failures, {stats['truncations']} truncated replies; "
            f"cache {stats['cache_hits']} hits, "
            f"{stats['cache_misses']} misses"
        )
    from harness_gym.evaluation.spend import distinct_episodes

    distinct = distinct_episodes((r.task_id, r.trace) for r in score.episodes)
    print_usage(usage, config, calls, distinct)
    if config is not None and config.temperature == 0 and args.rollouts > 1:
        print(
            f"executor note: at temperature 0 the protocol's {args.rollouts} rollouts per (task, seed) "
            "differ only where the policy samples: a deterministic policy's are copies"
        )
    finish_run(args, config, {"env_id": args.env, "episodes": [outcomes[k] for k in sorted(outcomes)]})
    if args.out:
        with open(args.out, "w") as handle:
            json.dump([records[r.key] for r in score.episodes], handle, indent=1)
        print(f"wrote {args.out}")
    if args.results_out:
        score.write_results(args.results_out)
        print(f"wrote {args.results_out} (harness-gym leaderboard {args.results_out} ...)")
    if checkpoint is not None and (kept or args.checkpoint is None):
        import shutil

        shutil.rmtree(checkpoint, ignore_errors=True)
    return 0


def _fingerprint(specs: list[str]) -> str | None:
    """The saved models' content hash (a resume with a retrained model is refused); None for a name."""
    import hashlib
    from pathlib import Path

    paths = [Path(spec) for spec in specs if Path(spec).is_file()]
    if not paths:
        return None
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()
