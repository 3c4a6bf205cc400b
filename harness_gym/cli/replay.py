"""rerun every command recorded into a response cache, offline, and check the episodes come out the same

``harness-gym replay CACHE [--env ID]``: each ``run``, ``evaluate`` or ``collect`` that recorded into the
cache (``--executor openai --cache CACHE``) left its command line, executor settings and episodes in the
cache's ``runs`` table; this reruns each one in replay mode (``--cache-mode replay``: no network, a
request never recorded is an error naming what differs) with those settings, its outputs in a temporary
directory, and compares every episode (task, seed, G, actions and executor calls) with the recording.
Exit status 0 when every episode matches, 1 otherwise. ``--list`` only shows the recorded runs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from harness_gym.cli.common import OUTCOMES, endpoint_errors, first_line

_DROPPED_VALUE_FLAGS = frozenset(
    {
        "--executor",
        "--config",
        "--model",
        "--base-url",
        "--temperature",
        "--top-p",
        "--llm-seed",
        "--stop",
        "--max-tokens",
        "--context-tokens",
        "--reasoning-effort",
        "--extra-body",
        "--structured",
        "--max-concurrency",
        "--request-timeout",
        "--timeout",
        "--retries",
        "--deadline",
        "--price-in",
        "--price-out",
        "--cache",
        "--cache-mode",
        "--out",
        "--episodes-out",
        "--checkpoint",
        "--root",
        "--max-spend",
        "--max-tokens-total",
        "--max-calls",
    }
)
"""Flags (with a value) a replay replaces: the executor's settings come from the recording, outputs go
to a temporary directory."""
_DROPPED_SWITCHES = frozenset(
    {
        "--fold-system",
        "--overwrite",
        "--show",
        "--fail-on-error-rate",
        "--no-fail-on-error-rate",
        "--preflight",
        "--no-preflight",
    }
)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("replay", help=first_line(__doc__))
    parser.add_argument("cache", help="response-cache SQLite file recorded by run / evaluate / collect")
    parser.add_argument("--env", default=None, help="only the runs on this environment id")
    parser.add_argument("--run", type=int, action="append", default=None, help="only this run (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the recorded runs and exit")
    parser.set_defaults(func=run)


def replay_argv(argv: list[str], cache: str, config: Path, scratch: Path) -> list[str]:
    """A recorded command line with the executor taken from ``config`` and ``cache`` in replay mode and
    its outputs under ``scratch``."""
    kept: list[str] = []
    tokens = iter(argv)
    for token in tokens:
        flag = token.split("=", 1)[0]
        if flag in _DROPPED_VALUE_FLAGS:
            if "=" not in token:
                next(tokens, None)
            continue
        if flag not in _DROPPED_SWITCHES:
            kept.append(token)
    kept += ["--executor", "openai", "--config", str(config), "--cache", cache, "--cache-mode", "replay"]
    command = kept[0] if kept else ""
    if command == "collect":
        kept += ["--root", str(scratch / "datasets"), "--overwrite", "--quiet"]
    elif command == "evaluate":
        kept += ["--quiet"]
    return kept


def toml_of(settings: dict) -> str:
    """Executor settings as TOML (``OpenAIConfig.from_toml`` reads it back)."""
    lines = []
    for name, value in sorted(settings.items()):
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | float):
            text = repr(value)
        elif isinstance(value, list | tuple):
            text = "[" + ", ".join(json.dumps(str(v)) for v in value) + "]"
        else:
            text = json.dumps(str(value))
        lines.append(f"{name} = {text}")
    return "\n".join(lines) + "\n"


def differences(recorded: list[dict], replayed: list[dict]) -> list[str]:
    """What differs between a recorded run's episodes and the replay's (fields present in both)."""
    if len(recorded) != len(replayed):
        return [f"{len(replayed)} episodes replayed, {len(recorded)} recorded"]
    found = []
    for i, (was, now) in enumerate(zip(recorded, replayed, strict=True)):
        for field in sorted(set(was) & set(now)):
            if was[field] != now[field]:
                found.append(f"episode {i} {field}: recorded {was[field]!r}, replayed {now[field]!r}")
    return found


def run(args: argparse.Namespace) -> int:
    from harness_gym.executors.cache import ResponseCache

    with ResponseCache(args.cache, "read_only") as cache:
        runs = cache.runs()
        errors = cache.recorded_errors()
    if not runs:
        raise SystemExit(
            f"harness-gym replay: {args.cache} holds no recorded command (run, evaluate or collect with "
            "--executor openai --cache FILE record theirs); to replay it with settings of your own, rerun "
            "a command with --cache FILE --cache-mode replay"
        )
    chosen = [
        r
        for r in runs
        if (args.env is None or (r["outcome"] or {}).get("env_id") == args.env)
        and (args.run is None or r["id"] in args.run)
    ]
    if not chosen:
        raise SystemExit(f"harness-gym replay: no recorded run matches (runs: {_listing(runs)})")
    if args.list:
        for r in chosen:
            print(f"run {r['id']}: harness-gym {' '.join(r['argv'])}")
        return 0
    failed = 0
    episodes = 0
    for r in chosen:
        outcome = r["outcome"] or {}
        with tempfile.TemporaryDirectory(prefix="harness-replay-") as tmp:
            scratch = Path(tmp)
            config = scratch / "executor.toml"
            config.write_text(toml_of(outcome.get("executor", {})), encoding="utf-8")
            argv = replay_argv(list(r["argv"]), str(args.cache), config, scratch)
            head = f"run {r['id']} (harness-gym {' '.join(r['argv'])})"
            try:
                sub = args.parse(argv)
                sub.argv = argv
                OUTCOMES.clear()
                code = sub.func(sub)
            except (SystemExit, *endpoint_errors()) as exc:
                failed += 1
                print(f"{head}: failed: {' '.join(str(exc).split())}")
                continue
            replayed = OUTCOMES[-1]["episodes"] if OUTCOMES else []
            found = differences(outcome.get("episodes", []), replayed)
            episodes += len(replayed)
            if code or found:
                failed += 1
                shown = "; ".join(found[:5]) + (f" (+{len(found) - 5} more)" if len(found) > 5 else "")
                print(f"{head}: DIFFERS: {shown or f'exit status {code}'}")
            else:
                print(f"{head}: {len(replayed)} episode(s) identical")
    print(
        f"replayed {len(chosen)} recorded run(s), {episodes} episodes, from {args.cache}: "
        + ("all identical" if not failed else f"{failed} differ or failed")
    )
    if errors:
        print(
            f"{errors} recorded error replies (empty, no choice or context overflow) were replayed as the "
            "step errors they were, never as answers; --cache-mode reask asks them again when recording"
        )
    return 1 if failed else 0


def _listing(runs: list[dict]) -> str:
    return ", ".join(f"{r['id']} ({(r['outcome'] or {}).get('env_id', '?')})" for r in runs)
