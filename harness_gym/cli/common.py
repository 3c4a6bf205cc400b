"""What several commands share: the executor and engine option groups, usage printing, policy names.

Importing this stays light (no torch, d3rlpy, minari or HTTP client): every command module imports it,
and ``harness-gym --help`` imports every command module.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness_gym.executors.cache import MODES as CACHE_MODES
from harness_gym.executors.openai_executor import CACHE_MODE_ALIASES, OpenAIConfig
from harness_gym.executors.prompts import STRUCTURED_MODES

RESUME_HINT: list[str] = []
"""Where the running command keeps its resumable state, for the Ctrl-C message ``main`` prints."""

OUTCOMES: list[dict] = []
"""What the running command's episodes came to (``finish_run``), for ``harness-gym replay`` to compare."""

_LLM_FLAGS: dict[str, str] = {
    "model": "model",
    "base_url": "base_url",
    "temperature": "temperature",
    "top_p": "top_p",
    "llm_seed": "seed",
    "stop": "stop",
    "max_tokens": "max_tokens",
    "context_tokens": "context_tokens",
    "reasoning_effort": "reasoning_effort",
    "extra_body": "extra_body",
    "structured": "structured",
    "max_concurrency": "max_concurrency",
    "timeout": "timeout_s",
    "retries": "max_retries",
    "deadline": "deadline_s",
    "price_in": "price_in",
    "price_out": "price_out",
    "cache": "cache",
    "fold_system": "fold_system",
    "max_spend": "max_spend",
    "max_tokens_total": "max_tokens_total",
    "max_calls": "max_calls",
    "fail_on_error_rate": "fail_on_error_rate",
    "preflight": "preflight",
}
"""Executor flags (argparse dest) -> the ``OpenAIConfig`` field each sets."""


def first_line(doc: str | None) -> str:
    """A command's help: the first line of its module docstring."""
    return (doc or "").strip().splitlines()[0]


def add_executor_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "executor (default: the embedded simulated LLM; docs/real-llm.md for vLLM, SGLang, Ollama, llama.cpp)"
    )
    group.add_argument("--executor", default="simulated", choices=["simulated", "openai"])
    group.add_argument(
        "--config",
        default=None,
        metavar="TOML",
        help="openai: every executor setting in one file (OpenAIConfig field names, top level or under "
        "[executor]); flags override it; implies --executor openai",
    )
    group.add_argument("--model", default=None, help="openai: model name (default $HARNESS_GYM_LLM_MODEL)")
    group.add_argument(
        "--base-url",
        default=None,
        help="openai: endpoint root, e.g. http://127.0.0.1:8000/v1 ($HARNESS_GYM_LLM_BASE_URL)",
    )
    group.add_argument("--temperature", type=float, default=None, help="openai: sampling temperature (0)")
    group.add_argument("--top-p", type=float, default=None, help="openai: nucleus sampling (server default)")
    group.add_argument(
        "--llm-seed",
        type=int,
        default=None,
        help="openai: seed sent with every request, at temperature 0 too (above 0 added to the per-call "
        "seed); --seed stays the episodes' seed",
    )
    group.add_argument(
        "--stop", action="append", default=None, metavar="TEXT", help="openai: a stop sequence (repeatable)"
    )
    group.add_argument("--max-tokens", type=int, default=None, help="openai: reply length limit (1024)")
    group.add_argument(
        "--context-tokens",
        type=int,
        default=None,
        help="openai: the model's context window as served; a call whose prompt leaves less than "
        "--max-tokens of it is a truncated reply (default: rely on the server's refusal)",
    )
    group.add_argument(
        "--reasoning-effort",
        default=None,
        help="openai: a reasoning model's thinking budget, e.g. low | medium | high (reasoning_effort)",
    )
    group.add_argument(
        "--extra-body",
        default=None,
        metavar="JSON",
        help='openai: a JSON object merged into every request, e.g. \'{"chat_template_kwargs": '
        '{"enable_thinking": false}}\'',
    )
    group.add_argument(
        "--structured",
        default=None,
        choices=STRUCTURED_MODES,
        help="openai: ask for the reply as free text (off, parsed), as JSON with the artifact's schema "
        "(json-schema: response_format) or as a function call (tools)",
    )
    group.add_argument(
        "--max-concurrency",
        type=int,
        default=None,
        help="openai: requests in flight per process (default: the larger of 4 and --concurrency)",
    )
    group.add_argument(
        "--request-timeout",
        "--timeout",
        dest="timeout",
        type=float,
        default=None,
        help="openai: seconds per request before it is closed and retried (300)",
    )
    group.add_argument(
        "--retries", type=int, default=None, help="openai: retries per call (default: until --deadline)"
    )
    group.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="openai: seconds one call may take over all its retries (600: a server restart is waited for)",
    )
    group.add_argument(
        "--price-in", type=float, default=None, help="openai: USD per million prompt tokens sent (0)"
    )
    group.add_argument(
        "--price-out", type=float, default=None, help="openai: USD per million completion tokens sent (0)"
    )
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
        default=None,
        choices=[*CACHE_MODES, *CACHE_MODE_ALIASES],
        help="record = read_write (default), replay = read_only (a miss is an error, no network; without "
        "--config, settings not given are taken from the cache), reask = reask_errors (record, asking "
        "recorded error replies again: empty, no choice, context overflow)",
    )
    group.add_argument(
        "--max-spend",
        type=float,
        default=None,
        metavar="USD",
        help="openai: stop (resumably) before a call once this many dollars were sent, by --price-in/out "
        "(per process)",
    )
    group.add_argument(
        "--max-tokens-total",
        type=int,
        default=None,
        help="openai: stop (resumably) before a call once this many tokens were sent (per process)",
    )
    group.add_argument(
        "--max-calls",
        type=int,
        default=None,
        help="openai: stop (resumably) before a call once this many calls were sent (per process)",
    )
    group.add_argument(
        "--fail-on-error-rate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="openai: stop when nearly all of the first 20 replies fail one way (all cut at --max-tokens, "
        "all refusals, ...), naming the flag that fixes it (default: on)",
    )
    group.add_argument(
        "--preflight",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="openai: ask GET /models before the run, so an unreachable URL or an unknown model is one "
        "line within seconds (default: on; never in replay)",
    )


def add_simulator_args(parser: argparse.ArgumentParser, profile_flag: str = "--executor-profile") -> None:
    """The simulated executor's profile (default ``$HARNESS_GYM_EXECUTOR_PROFILE``, read here and nowhere
    deeper, so the run's config names its profile), the per-episode token budget, the token price and the
    observation layout."""
    import os

    from harness_gym.core.state import LAYOUTS
    from harness_gym.executors.profiles import PROFILE_ENV

    parser.add_argument(
        profile_flag,
        default=os.environ.get(PROFILE_ENV) or None,
        help=f"simulated executor profile: weak, default, strong or a JSON path (default ${PROFILE_ENV})",
    )
    parser.add_argument(
        "--token-budget",
        type=int,
        default=None,
        help="executor tokens an episode may spend (default: no limit)",
    )
    parser.add_argument(
        "--token-price",
        type=float,
        default=0.0,
        help="G per thousand executor tokens charged in the rewards (default 0: the paper's protocol)",
    )
    parser.add_argument(
        "--obs-layout",
        default="v1",
        choices=tuple(LAYOUTS),
        help="observation layout and task set: v1, the paper's (default), or v2 (docs/mdp-v2.md)",
    )


def simulator_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The ``gym.make`` keywords of ``add_simulator_args``'s flags: the profile always explicit, the rest
    when not at their defaults."""
    from harness_gym.envs.env import simulator_kwargs as env_kwargs

    return env_kwargs(args.executor_profile, args.token_budget, args.token_price, args.obs_layout)


def add_engine_args(parser: argparse.ArgumentParser, workers: bool = True, backend: bool = True) -> None:
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


def engine_config(args: argparse.Namespace):
    from harness_gym.evaluation.engine import EngineConfig, EngineError

    try:
        return EngineConfig(args.concurrency, args.workers, args.backend, args.ray_address)
    except EngineError as exc:
        raise SystemExit(f"harness-gym {args.command}: {exc}") from None


def executor_config(args: argparse.Namespace) -> OpenAIConfig | None:
    """The chat-LLM settings from the command line, or None for the simulated executor.

    Lowest to highest precedence: in replay mode without ``--config``, the settings the cache recorded;
    ``--config``'s file; the flags. The API key is read from $HARNESS_GYM_LLM_API_KEY or $OPENAI_API_KEY only,
    never from a flag or a file.
    """
    config_file = getattr(args, "config", None)
    given = {field: getattr(args, f) for f, field in _LLM_FLAGS.items() if getattr(args, f) is not None}
    if args.executor == "simulated" and config_file is None:
        flags = [f"--{flag.replace('_', '-')}" for flag in _LLM_FLAGS if getattr(args, flag) is not None]
        if args.cache_mode is not None:
            flags.append("--cache-mode")
        if flags:
            raise SystemExit(f"{', '.join(flags)} only apply with --executor openai")
        return None
    try:
        settings = config_file_settings(config_file) if config_file else {}
        settings.update(given)
        if args.cache_mode is not None:
            settings["cache_mode"] = args.cache_mode
        mode = CACHE_MODE_ALIASES.get(settings.get("cache_mode", ""), settings.get("cache_mode"))
        if mode == "read_only" and settings.get("cache") and not config_file:
            given = {k: v for k, v in settings.items() if k not in ("cache", "cache_mode")}
            settings = {**recorded_settings(settings["cache"], given), **settings}
        concurrency = getattr(args, "concurrency", 1)
        if "max_concurrency" not in settings and concurrency > OpenAIConfig.max_concurrency:
            settings["max_concurrency"] = concurrency  # the client's bound never throttles --concurrency
        config = OpenAIConfig(**settings).resolved()
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if config.model is None or config.base_url is None:
        raise SystemExit(
            "--executor openai needs --model and --base-url (or $HARNESS_GYM_LLM_MODEL and "
            "$HARNESS_GYM_LLM_BASE_URL, or $OPENAI_BASE_URL)"
        )
    if config.preflight and config.cache_mode != "read_only":
        from harness_gym.executors.cache import CacheError, ResponseCache
        from harness_gym.executors.openai_client import LLMError, preflight

        command = f"harness-gym {getattr(args, 'command', '')}".rstrip()
        if config.cache is not None:  # a local problem is named before the network is asked
            try:
                ResponseCache(config.cache, config.cache_mode).close()
            except (CacheError, OSError) as exc:
                raise SystemExit(f"{command}: {exc}") from None
        try:
            preflight(config.base_url, config.model)
        except LLMError as exc:
            raise SystemExit(f"{command}: {exc}") from None
    return config


_TOML_TYPES: dict[type, tuple[str, tuple[type, ...]]] = {
    float: ("a number", (int, float)),
    int: ("an integer", (int,)),
    str: ("a string", (str,)),
    bool: ("true or false", (bool,)),
}
"""A setting's Python type -> how TOML says it and the TOML values that are one (never a bool for a
number: TOML's true is not 1)."""


def _toml_type(hint: object) -> tuple[str, tuple[type, ...]]:
    """What TOML values an ``OpenAIConfig`` field's type annotation takes, and how to say it."""
    import typing

    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple:  # stop: a string is one
        return "a string or an array of strings", (str, list)
    if args:  # X | None: TOML has no null, so X
        return _toml_type(args[0])
    return _TOML_TYPES[hint]  # type: ignore[index]


def config_file_settings(path: str) -> dict:
    """``OpenAIConfig.toml_settings(path)``, each value first checked against its field's type: a wrong
    one (``temperature = "hot"``, ``max_tokens = 1.5``) is a ``ValueError`` naming the key and the type
    wanted, never a TypeError from deep inside or a value taken as it is."""
    import tomllib
    import typing
    from pathlib import Path

    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}  # toml_settings names the problem
    data = data.get("executor", data)
    hints = typing.get_type_hints(OpenAIConfig)
    for key, value in data.items() if isinstance(data, dict) else ():
        if key not in hints:
            continue  # toml_settings names unknown keys
        wanted, kinds = _toml_type(hints[key])
        if key == "extra_body":  # a table is taken too, as its canonical JSON
            wanted, kinds = "a table or a JSON object as a string", (str, dict)
        bad_item = isinstance(value, list) and not all(isinstance(v, str) for v in value)
        if isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds) or bad_item:
            raise ValueError(f"{path}: {key} must be {wanted}, got {_toml_value(value)}")
    return OpenAIConfig.toml_settings(path)


def _toml_value(value: object) -> str:
    """A value as TOML writes it (for messages)."""
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value, default=str)


def recorded_settings(cache: str, given: dict | None = None) -> dict:
    """The executor settings a response cache recorded that agree with ``given``: what a replay runs
    with where nothing else says. Several such configurations, differing in a setting not given, are an
    error naming the setting and its recorded values."""
    from harness_gym.executors.cache import ResponseCache

    given = given or {}
    fields = set(OpenAIConfig.__dataclass_fields__)

    def plain(value: object) -> object:
        return list(value) if isinstance(value, tuple | list) else value

    with ResponseCache(cache, "read_only") as opened:
        found = [
            {k: v for k, v in s.items() if k in fields}
            for s in opened.settings()
            if all(plain(s.get(k, v)) == plain(v) for k, v in given.items() if k in s)
        ]
    distinct = list({json.dumps(s, sort_keys=True): s for s in found}.values())
    if len(distinct) > 1:
        differ = sorted(
            k for k in set().union(*distinct) if len({json.dumps(s.get(k)) for s in distinct}) > 1
        )
        described = "; ".join(
            f"{k}: {', '.join(sorted({json.dumps(s.get(k)) for s in distinct}))}" for k in differ
        )
        raise ValueError(
            f"{cache} recorded several executor configurations that differ in {described}: say which "
            "(flags or --config)"
        )
    settings = dict(distinct[0]) if distinct else {}
    if isinstance(settings.get("stop"), list):
        settings["stop"] = tuple(settings["stop"])
    return settings


def print_usage(
    usage: dict,
    config: OpenAIConfig | None,
    calls: list | None = None,
    episodes: tuple | None = None,
    spend: dict | None = None,
) -> None:
    """A chat LLM's spend (``spend.spend_lines``) from the runs' per-call records (or their ``spend``
    summary), else its usage totals; ``episodes`` = (distinct, total) warns of copies."""
    if config is None:
        return
    from harness_gym.evaluation.spend import spend_lines, summarize_calls

    cache = (
        f"cache {config.cache} ({config.cache_mode}): {usage['cache_hits']:.0f} hits, "
        f"{usage['cache_misses']:.0f} misses"
        if config.cache
        else "no response cache"
    )
    if calls is None and spend is None:
        print(
            f"executor {config.model} @ {config.base_url}: {usage['executor_calls']:.0f} calls, "
            f"{usage['prompt_tokens']:.0f} prompt + {usage['completion_tokens']:.0f} completion tokens, "
            f"${usage['cost_usd']:.4f}; {usage.get('parse_failures', 0):.0f} parse failures, "
            f"{usage.get('truncations', 0):.0f} truncated replies; {cache}"
        )
        return
    summary = spend if spend is not None else summarize_calls(calls or [])
    for line in spend_lines(summary, f"{config.model} @ {config.base_url}", episodes):
        print(line)
    print(f"executor {cache}")


def episode_outcome(task_id: str, seed: int, final: dict) -> dict:
    """One episode as a run's outcome records it: task, seed, G, actions and its trace (executor calls)."""
    from harness_gym.evaluation.spend import episode_trace

    steps = final["trajectory"]["steps"]
    return {
        "task_id": task_id,
        "seed": int(seed),
        "G": float(final["G"]),
        "actions": [s["action"] for s in steps],
        "trace": episode_trace(steps),
    }


def finish_run(args: argparse.Namespace, config: OpenAIConfig | None, outcome: dict) -> None:
    """Keep what a command's episodes came to: in ``OUTCOMES``, and with a chat LLM recording into a
    response cache also in the cache's ``runs`` table (the command line and the executor settings with
    it), which ``harness-gym replay CACHE`` reruns and compares."""
    outcome = {"command": args.command, **outcome}
    OUTCOMES.append(outcome)
    if config is None or config.cache is None or config.cache_mode not in ("read_write", "reask_errors"):
        return
    from harness_gym.executors.cache import ResponseCache

    with ResponseCache(config.cache, "read_write") as cache:
        cache.add_run(getattr(args, "argv", []), {**outcome, "executor": config.recorded()})


def endpoint_errors() -> tuple[type[BaseException], ...]:
    """What a real-LLM run may end with: the endpoint failing for good, or a replay miss."""
    from harness_gym.executors.cache import CacheError
    from harness_gym.executors.openai_client import LLMError

    return (LLMError, CacheError)


def scripted_names() -> tuple[str, ...]:
    """Every scripted policy's name, and the deprecated names still accepted."""
    from harness_gym.policies.scripted import DEPRECATED_NAMES, SCRIPTED

    return (*SCRIPTED, *DEPRECATED_NAMES)


def make_policy(name: str, env_id: str):
    """A scripted policy by name; an unknown name is a one-line error."""
    from harness_gym.policies.scripted import make_policy

    try:
        return make_policy(name, env_id)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
