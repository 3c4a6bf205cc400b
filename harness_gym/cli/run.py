"""roll a scripted policy and print G, HMS_norm and event rates

``harness-gym run``: a scripted policy on one environment id (or all of them) for ``--episodes`` seeds or
the paper's protocol, on the simulated executor or a real LLM; ``--episodes-out`` keeps the episodes for
``harness-gym view``.
"""

from __future__ import annotations

import argparse

import gymnasium as gym

from harness_gym.cli.common import (
    add_engine_args,
    add_executor_args,
    endpoint_errors,
    engine_config,
    episode_outcome,
    executor_config,
    finish_run,
    first_line,
    make_policy,
    print_usage,
    scripted_names,
)
from harness_gym.core.task import SELECTABLE
from harness_gym.envs.registry import ALL_ENV_IDS, ENV_IDS
from harness_gym.evaluation.paper import BASE_G, EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import protocol_episodes, run_episode, summarize
from harness_gym.executors.openai_executor import OpenAIConfig


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("run", help=first_line(__doc__))
    parser.add_argument("--env", required=True, help="environment id (e.g. HarnessCoding-v0) or 'all'")
    parser.add_argument("--policy", default="base", choices=scripted_names())
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0, help="episode i uses seed S + i")
    parser.add_argument(
        "--protocol",
        action="store_true",
        help="the paper's protocol instead of --episodes: every task of the split x 3 seeds x 3 rollouts",
    )
    parser.add_argument("--split", default="eval", choices=SELECTABLE)
    parser.add_argument("--show", action="store_true", help="print the first episode's trajectory")
    parser.add_argument(
        "--executor-profile", default=None, help="simulated executor profile: weak | default | strong | JSON"
    )
    parser.add_argument(
        "--episodes-out", default=None, help="write each episode's final info as JSON lines (for 'view')"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_engine_args(parser)
    add_executor_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    env_ids = ENV_IDS if args.env == "all" else (args.env,)
    for env_id in env_ids:
        if env_id not in ALL_ENV_IDS:
            raise SystemExit(f"unknown env id {env_id!r}; known: all, {', '.join(ALL_ENV_IDS)}")
    if args.episodes < 1:
        raise SystemExit("--episodes must be at least 1")
    config = executor_config(args)
    if args.episodes_out:
        open(args.episodes_out, "w").close()  # every env id of this run appends to it
    for env_id in env_ids:
        _run_one(env_id, args, config)
    return 0


def _final_summary(item: tuple, final: dict) -> dict:
    """What ``summarize`` and the spend summary read of a final info (the step records stay in the
    worker): G, HMS, usage, the executor calls and the episode's outcome record."""
    from harness_gym.evaluation.spend import calls_of

    summary = {key: final[key] for key in ("G", "hms_norm", "hms", "usage")}
    summary["calls"] = calls_of(final["trajectory"]["steps"])
    summary["outcome"] = episode_outcome(final["task_id"], item[0], final)
    return summary


def _run_one(env_id: str, args: argparse.Namespace, config: OpenAIConfig | None) -> None:
    from harness_gym.policies.scripted import bind_policy

    policy = make_policy(args.policy, env_id)
    kwargs: dict = {}
    if config is not None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        kwargs["executor"] = OpenAIExecutor(config)  # one client per process: --max-concurrency bounds it
    if args.executor_profile is not None:
        kwargs["executor_profile"] = args.executor_profile
    env = gym.make(env_id, split=args.split, render_mode="ansi" if args.show else None, **kwargs)
    policy = bind_policy(policy, env)  # hindsight-submit reads this env's hidden state; others are unchanged
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
    except endpoint_errors() as exc:
        why = " ".join(str(exc).split())
        failure = f"harness-gym run: {env_id} episode 1/{len(episodes)} stopped the run: {why}"
    env.close()
    from tqdm import tqdm

    from harness_gym.evaluation.engine import run as run_engine
    from harness_gym.evaluation.rollout import EpisodeJob

    rest = episodes[len(finals) :] if failure is None else []
    by_item: dict = {}
    job = EpisodeJob(env_id, policy, args.split, kwargs, keep=keep)
    bar = tqdm(total=len(episodes), initial=len(finals), desc=f"run {env_id}", unit="ep", disable=args.quiet)

    def done(item: tuple, final: dict) -> None:
        by_item[item] = final
        bar.update(1)

    try:
        with bar:
            run_engine(job, rest, done, engine_config(args))
    except endpoint_errors() as exc:
        stopped = len(finals) + len(by_item) + 1
        why = " ".join(str(exc).split())
        failure = f"harness-gym run: {env_id} episode {stopped}/{len(episodes)} stopped the run: {why}"
    played = list(zip(episodes, finals, strict=False)) + [(i, by_item[i]) for i in rest if i in by_item]
    finals = [  # full final infos (the shown episode, --episodes-out) summarised as the slots do
        dict(_final_summary(item, final), full=final) if "trajectory" in final else final
        for item, final in played
    ]
    if args.episodes_out:
        from harness_gym.bench.viewer import write_infos

        write_infos([f["full"] for f in finals], args.episodes_out, append=True)
    if failure is not None:
        if finals:
            print(f"summary of the {len(finals)} finished episode(s):")
            _print_summary(env_id, args, finals, config)
        raise SystemExit(failure)
    _print_summary(env_id, args, finals, config)
    outcome = {"env_id": env_id, "episodes": [f["outcome"] for f in finals]}
    finish_run(args, config, outcome)


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
    from harness_gym.evaluation.spend import distinct_episodes

    calls = [call for final in finals for call in final["calls"]]
    distinct = distinct_episodes((f["outcome"]["task_id"], f["outcome"]["trace"]) for f in finals)
    print_usage(summary["usage"], config, calls, distinct)
    if config is not None and config.temperature == 0 and args.protocol:
        print("executor note: at temperature 0 the protocol's 3 rollouts per (task, seed) repeat each other")
    print()
