"""measure an executor profile by probe episodes on the train split

``harness-gym calibrate``: ``harness_gym.evaluation.calibrate.calibrate_profile`` from the command line;
the profile JSON it writes is what ``gym.make(id, executor_profile=PATH)`` reads, with the calibration's
report beside the profile under ``"calibration"`` (per parameter: measured with its estimate, interval
and share of replies without an answer, ``unmeasured`` when its probes all went unanswered, or ``not
measured (from PROFILE)``; the validation on held-out train tasks, with its verdict).

Every probe answer goes to ``OUT.checkpoint.jsonl`` as it comes: an endpoint failure (its deadline
passed, a spend guard, the early check) ends the command with one line, and rerunning the same command
resumes there. A progress bar follows the probes; with a chat LLM the spend is printed as ``run`` does.
Exit status 1 when a parameter is ``unmeasured`` (the profile is written, those parameters keep the base
profile's values and say so).
"""

from __future__ import annotations

import argparse

from harness_gym.cli.common import add_executor_args, endpoint_errors, executor_config, first_line
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
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_executor_args(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from dataclasses import replace
    from pathlib import Path

    from tqdm import tqdm

    from harness_gym.evaluation.calibrate import UNMEASURED, ProbeLog, calibrate_profile, report_json

    env_ids = ENV_IDS if args.env == "all" else (args.env,)
    if any(env_id not in ENV_IDS for env_id in env_ids):
        raise SystemExit(f"unknown env id {args.env!r}; known: all, {', '.join(ENV_IDS)}")
    config = executor_config(args)
    executor: object = "simulated"
    if config is not None:
        from harness_gym.executors.openai_executor import OpenAIExecutor

        if args.fail_on_error_rate is None:  # a probe kind never answered is measured as such
            config = replace(config, fail_on_error_rate=False)
        executor = OpenAIExecutor(config)  # one client, counters and guards for every probe
    out = Path(args.out)
    manifest = {
        "env_ids": list(env_ids),
        "probes": args.probes,
        "seed": args.seed,
        "holdout": args.holdout,
        "executor": config.content_key() if config is not None else "simulated",
        "executor_profile": args.executor_profile,
    }
    try:
        log = ProbeLog(out.with_name(out.name + ".checkpoint.jsonl"), manifest)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"harness-gym calibrate: {exc}") from None
    bars: dict[str, tqdm] = {}

    def progress(env_id: str, done: int, total: int) -> None:
        bar = bars.get(env_id)
        if bar is None:
            bar = bars[env_id] = tqdm(
                total=total, desc=f"calibrate {env_id}", unit="probe", disable=args.quiet
            )
        bar.update(done - bar.n)
        if done == total:
            bar.close()

    try:
        profile, reports = calibrate_profile(
            env_ids,
            executor=executor,
            executor_profile=args.executor_profile,
            probes=args.probes,
            seed=args.seed,
            name=out.stem,
            concurrency=args.concurrency,
            holdout=args.holdout,
            checkpoint=log,
            progress=progress,
        )
    except ValueError as exc:
        if not len(log):  # bad settings, nothing asked: nothing to resume
            log.remove()
        raise SystemExit(f"harness-gym calibrate: {exc}") from None
    except endpoint_errors() as exc:
        why = " ".join(str(exc).split())
        raise SystemExit(
            f"harness-gym calibrate: stopped: {why}; {len(log)} probe answers are kept in {log.path}: "
            "rerun the same command to resume there"
        ) from None
    finally:
        for bar in bars.values():
            bar.close()
        _print_spend(executor, config)
    data = {**profile.to_dict(), "calibration": report_json(reports)}
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    log.remove()
    for env_id in reports:
        validation = log.path.with_name(f"{log.path.name}.validation-{env_id}")
        if validation.exists():
            import shutil

            shutil.rmtree(validation, ignore_errors=True)
    print(f"wrote {args.out} (use: gym.make(id, executor_profile={args.out!r}))")
    unmeasured = [
        f"{env_id} {name}"
        for env_id, report in reports.items()
        for name, source in report["sources"].items()
        if source.startswith(UNMEASURED)
    ]
    if unmeasured:
        raise SystemExit(
            f"harness-gym calibrate: {len(unmeasured)} parameter(s) unmeasured, every probe of them went "
            f"unanswered ({', '.join(unmeasured)}): {args.out} keeps the base profile's values for them, "
            "marked unmeasured; see the 'no answer' column and fix the endpoint's replies"
        )
    return 0


def _print_spend(executor: object, config: object) -> None:
    """The chat LLM's spend, as ``run`` prints it: requests, calls sent, tokens, cost, cache, errors."""
    stats = getattr(executor, "stats", None)
    if stats is None or config is None:
        return
    s = stats()
    print(
        f"executor {config.model} @ {config.base_url}: {s['requests']} requests: {s['api_calls']} sent "
        f"({s['sent_tokens']} tokens, ${s['cost_usd']:.4f}), {s['cache_hits']} from the cache, "
        f"{s['shared']} shared with an identical call in flight"
    )
    print(
        f"executor replies without an answer: {s['parse_failures']} parse failures, {s['truncations']} "
        f"truncations ({s['context_overflows']} of them context overflows), {s['no_content']} no content, "
        f"{s['tool_calls']} tool calls, {s['refusals']} refusals"
    )
