"""the evaluation protocol (tasks x 3 seeds x 3 rollouts)

``harness-gym evaluate``: a scripted policy by name or a saved d3rlpy learnable by path, on every task of a
split; with ``--out`` or ``--checkpoint`` finished episodes are kept and the same command resumes. ``--out``
holds one record per episode (``EpisodeResult`` fields, its usage, its episode id and its step records
without prompts and replies, which the response cache holds by each call's key).
"""

from __future__ import annotations

import argparse
import sys

import gymnasium as gym

from harness_gym.cli.common import (
    RESUME_HINT,
    add_engine_args,
    add_executor_args,
    endpoint_errors,
    engine_config,
    executor_config,
    finish_run,
    first_line,
    make_policy,
    print_usage,
    scripted_names,
)
from harness_gym.envs.registry import ALL_ENV_IDS
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("evaluate", help=first_line(__doc__))
    parser.add_argument("--env", required=True)
    parser.add_argument("--policy", required=True, help=f"{' | '.join(scripted_names())} | PATH.d3")
    parser.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    parser.add_argument("--out", default=None, help="write per-episode results as JSON")
    parser.add_argument(
        "--force",
        action="store_true",
        help="evaluate a model trained on another env id or observation layout",
    )
    parser.add_argument(
        "--act",
        default="greedy",
        choices=["sample", "greedy"],
        help="a learnable's action choice: sample from its legal softmax, or its argmax (Q-learners: greedy)",
    )
    parser.add_argument(
        "--checkpoint",
        default=None,
        help="resume directory, one file per finished episode (default: OUT.partial with --out; "
        "removed once OUT is written)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_engine_args(parser)
    add_executor_args(parser)
    parser.set_defaults(func=run)


def _load_policy(spec: str, env_id: str, force: bool = False, act: str = "greedy"):
    """A scripted policy by name, or a saved d3rlpy learnable by path (masked at inference).

    ``act``: ``sample`` draws from a stochastic learnable's softmax over legal actions, ``greedy`` takes
    its argmax; Q-learners are always greedy."""
    from pathlib import Path

    if not (spec.endswith(".d3") or "/" in spec or Path(spec).exists()):
        return make_policy(spec, env_id)
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


def run(args: argparse.Namespace) -> int:
    import json

    from harness_gym.evaluation.protocol import evaluate

    if args.env not in ALL_ENV_IDS:
        raise SystemExit(f"unknown env id {args.env!r}; known: {', '.join(ALL_ENV_IDS)}")
    policy = _load_policy(args.policy, args.env, force=args.force, act=args.act)
    config = executor_config(args)
    engine = engine_config(args)
    kwargs = {}
    if config is not None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        kwargs["executor"] = OpenAIExecutor(config)
    checkpoint = args.checkpoint or (f"{args.out}.partial" if args.out else None)
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
        outcome = {
            "task_id": record["task_id"],
            "seed": record["episode_seed"],
            "G": record["G"],
            "actions": [s["action"] for s in steps],
            "trace": record.get("trace"),
        }
        outcomes[(record["seed"], record["task_id"], record["rollout"])] = outcome
        records[(record["task_id"], record["seed"], record["rollout"])] = record
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
        except endpoint_errors() as exc:
            hint = RESUME_HINT[0] if RESUME_HINT else ""
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
    from harness_gym.evaluation.spend import distinct_episodes

    distinct = distinct_episodes((r.task_id, r.trace) for r in results)
    print_usage(usage, config, calls, distinct)
    if config is not None and config.temperature == 0 and EVAL_ROLLOUTS > 1:
        print(
            f"executor note: at temperature 0 the protocol's {EVAL_ROLLOUTS} rollouts per (task, seed) "
            "differ only where the policy samples: a deterministic policy's are copies"
        )
    finish_run(args, config, {"env_id": args.env, "episodes": [outcomes[k] for k in sorted(outcomes)]})
    if args.out:
        with open(args.out, "w") as handle:
            json.dump([records[r.key] for r in results], handle, indent=1)
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
