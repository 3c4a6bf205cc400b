"""What several commands share: the executor and engine option groups, usage printing, policy names.

Importing this stays light (no torch, d3rlpy, minari or HTTP client): every command module imports it,
and ``harness-gym --help`` imports every command module.
"""

from __future__ import annotations

import argparse

from harness_gym.executors.cache import MODES as CACHE_MODES
from harness_gym.executors.openai_executor import CACHE_MODE_ALIASES, OpenAIConfig

RESUME_HINT: list[str] = []
"""Where the running command keeps its resumable state, for the Ctrl-C message ``main`` prints."""

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


def first_line(doc: str | None) -> str:
    """A command's help: the first line of its module docstring."""
    return (doc or "").strip().splitlines()[0]


def add_executor_args(parser: argparse.ArgumentParser) -> None:
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


def print_usage(usage: dict, config: OpenAIConfig | None) -> None:
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
