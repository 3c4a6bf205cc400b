"""reference policies (random to expert) on the eval protocol

``harness-gym headroom``: measure every reference policy with ``harness_gym.evaluation.headroom``, print the
headroom and ceiling tables, the state-dependence gap (best of expert and online - open-loop) and CHECK's
false-alarm and detection rates; optionally write them, the packaged reference-score table and the
open-loop strings. ``--train-online`` first trains the online reference
(``harness_gym.evaluation.online_training``: MaskablePPO per seed until its validation curve is flat)
and writes its scores with their provenance to ``--online-file``; ``--policies ... online`` reads them back.
"""

from __future__ import annotations

import argparse
from typing import Any

from harness_gym.cli.common import first_line
from harness_gym.envs.registry import ENV_IDS, EXTRA_ENV_ENTRY_POINTS
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("headroom", help=first_line(__doc__))
    parser.add_argument("--env", default="all", help="environment id or 'all'")
    parser.add_argument(
        "--out", default=None, help="also write the table (Markdown) and the raw numbers (JSON)"
    )
    parser.add_argument("--policies", nargs="*", default=None, help="a subset of the reference policies")
    parser.add_argument("--seeds", type=int, nargs="*", default=None, help="protocol seeds (default 0 1 2)")
    parser.add_argument("--rollouts", type=int, default=None, help="rollouts per task and seed (default 3)")
    parser.add_argument("--tasks", type=int, default=None, help="only the first N eval tasks (a quick check)")
    parser.add_argument(
        "--write-reference-scores",
        action="store_true",
        help="rewrite harness_gym/data/reference_scores.json from this run (full protocol, every env id)",
    )
    parser.add_argument(
        "--search-open-loop",
        action="store_true",
        help="rerun the open-loop search on the train split and rewrite harness_gym/data/open_loop.json "
        "(the --obs-layout table)",
    )
    parser.add_argument(
        "--no-check-rates", action="store_true", help="skip CHECK's false-alarm / detection measurement"
    )
    parser.add_argument(
        "--obs-layout", default=None, choices=("v1", "v2"), help="observation layout (default: the env's)"
    )
    parser.add_argument(
        "--token-price",
        type=float,
        default=0.0,
        help="G per thousand executor tokens (docs/priced.md): the open-loop search ranks strings by G net "
        "of their tokens' price and writes that price's table; open-loop plays that price's string",
    )
    online = parser.add_argument_group("online reference")
    online.add_argument(
        "--train-online",
        action="store_true",
        help="train MaskablePPO per --seeds seed on the train split until flat, play the eval protocol, "
        "and write the scores to --online-file",
    )
    online.add_argument(
        "--online-file",
        default=None,
        help="the online reference's scores (default harness_gym/data/online.json)",
    )
    online.add_argument("--online-steps", type=int, default=None, help="env steps at most per seed")
    online.add_argument("--online-eval-every", type=int, default=None, help="env steps between curve points")
    online.add_argument("--online-min-steps", type=int, default=None, help="no flat stop before these steps")
    online.add_argument("--online-envs", type=int, default=None, help="vectorised environments (default 8)")
    online.add_argument(
        "--online-vec", default=None, choices=("dummy", "subproc"), help="vectorised env kind"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from harness_gym.evaluation import reference_scores
    from harness_gym.evaluation.headroom import (
        REFERENCE_POLICY_NAMES,
        Protocol,
        check_rates,
        headroom_markdown,
        measure,
        policy_names,
        reference_table_from,
        summarize_setting,
        write_reference_scores,
    )

    known = (*ENV_IDS, *EXTRA_ENV_ENTRY_POINTS)
    env_ids = ENV_IDS if args.env == "all" else (args.env,)
    if any(env_id not in known for env_id in env_ids):
        raise SystemExit(f"unknown env id {args.env!r}; known: all, {', '.join(known)}")
    # an id beyond the paper's eight (e.g. HumanEval) adds its own row to the existing table
    extra_only = all(env_id in EXTRA_ENV_ENTRY_POINTS for env_id in env_ids)
    protocol = Protocol(
        seeds=tuple(args.seeds) if args.seeds else EVAL_SEEDS,
        rollouts=args.rollouts if args.rollouts is not None else EVAL_ROLLOUTS,
        max_tasks=args.tasks,
    )
    if protocol.rollouts < 1 or (protocol.max_tasks is not None and protocol.max_tasks < 1):
        raise SystemExit("--rollouts and --tasks must be at least 1")
    names = tuple(args.policies) if args.policies else policy_names()
    if args.write_reference_scores:
        missing = [name for name in REFERENCE_POLICY_NAMES if name not in names]
        if not protocol.is_full or not (extra_only or len(env_ids) == len(ENV_IDS)) or missing:
            raise SystemExit(
                "--write-reference-scores needs the full eval protocol on every env id (--env all, or one "
                "id beyond the paper's eight; no --seeds / --rollouts / --tasks) and the random and expert "
                "policies"
            )
    env_kwargs: dict[str, Any] = {} if args.obs_layout is None else {"obs_layout": args.obs_layout}
    if args.token_price:
        from harness_gym.envs.env import check_token_price

        try:
            check_token_price(args.token_price)
        except ValueError as exc:
            raise SystemExit(f"harness-gym headroom: {exc}") from None
        env_kwargs["token_price"] = args.token_price
        if args.train_online:
            raise SystemExit("harness-gym headroom: --train-online trains at price 0 only (--token-price 0)")
    if args.train_online:
        train_online_references(args, env_ids, protocol)
    if args.search_open_loop:
        from harness_gym.evaluation.open_loop import write_open_loop
        from harness_gym.policies.open_loop import open_loop_table

        layout = args.obs_layout or "v1"
        print(f"wrote {write_open_loop(env_ids, log=print, obs_layout=layout, token_price=args.token_price)}")
        open_loop_table.cache_clear()
    try:
        chosen = tuple(args.policies) if args.policies else None  # None: open-loop where a string is shipped
        results = {
            env_id: measure(env_id, chosen, protocol, log=print, online_file=args.online_file, **env_kwargs)
            for env_id in env_ids
        }
    except ValueError as exc:
        raise SystemExit(f"harness-gym headroom: {exc}") from None
    summaries = {env_id: summarize_setting(by_policy) for env_id, by_policy in results.items()}
    if not args.no_check_rates:
        for env_id in env_ids:
            summaries[env_id]["check_rates"] = check_rates(env_id)
    table = headroom_markdown(summaries)
    print(f"\nprotocol: {protocol.describe()}\n")
    print(table)
    if args.out:
        out = Path(args.out)
        raw_path = (
            out.with_suffix(".json") if out.suffix != ".json" else out.with_name(out.stem + ".raw.json")
        )
        out.write_text(table + "\n")
        raw = {"protocol": protocol.describe(), "summaries": summaries, "episodes": results}
        raw_path.write_text(json.dumps(raw, indent=1) + "\n")
        print(f"wrote {out} and {raw_path}")
    if args.write_reference_scores:
        layout = args.obs_layout or "v1"
        table = reference_table_from(results, protocol, layout)
        if extra_only:
            published = reference_scores.reference_table(layout)
            table = {**published, "scores": {**published["scores"], **table["scores"]}}
        path = write_reference_scores(table, obs_layout=layout)
        print(f"wrote {path}")
    return 0


def train_online_references(args: argparse.Namespace, env_ids: tuple[str, ...], protocol: Any) -> None:
    """``--train-online``: each env id's online reference, written to ``--online-file`` after each."""
    if protocol.max_tasks is not None or protocol.rollouts != EVAL_ROLLOUTS:
        raise SystemExit(
            "--train-online plays the eval protocol's tasks and rollouts: drop --tasks / --rollouts"
        )
    from harness_gym.evaluation.online import write_online
    from harness_gym.evaluation.online_training import METHOD, OnlineConfig, train_online

    budget = {
        "max_steps": args.online_steps,
        "eval_every": args.online_eval_every,
        "min_steps": args.online_min_steps,
        "n_envs": args.online_envs,
        "vec_env": args.online_vec,
        "obs_layout": args.obs_layout,
    }
    for env_id in env_ids:
        try:
            config = OnlineConfig(
                env_id, seeds=protocol.seeds, **{k: v for k, v in budget.items() if v is not None}
            )
        except ValueError as exc:
            raise SystemExit(f"harness-gym headroom: {exc}") from None
        entry = train_online(config, log=print)
        path = write_online({env_id: entry}, METHOD, args.online_file, args.obs_layout or "v1")
        print(
            f"{env_id}: online eval G {entry['mean_G']:.3f} after {entry['env_steps']:,} env steps, "
            f"{entry['cpu_s']:.0f} CPU-s; wrote {path}"
        )
