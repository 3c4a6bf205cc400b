"""Executors: the frozen LLM behind DRAFT, REVISE, judge-type CHECK and executor-chosen tool calls."""

from harness_gym.executors.base import (
    Context,
    Executor,
    ExecutorRequest,
    ExecutorResponse,
    Feedback,
    Finding,
    FlawKind,
    Usage,
)
from harness_gym.executors.simulated import SimulatedExecutor

_LAZY = {
    "CacheMissError": "cache",
    "ResponseCache": "cache",
    "LLMError": "openai_client",
    "OpenAIChatClient": "openai_client",
    "OpenAIConfig": "openai_executor",
    "OpenAIExecutor": "openai_executor",
    "ParseError": "prompts",
    "Prompts": "prompts",
}
"""The chat-LLM names, imported on first use so ``import harness_gym`` does not load HTTP and SQLite."""


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


__all__ = [
    "CacheMissError",
    "Context",
    "Executor",
    "ExecutorRequest",
    "ExecutorResponse",
    "Feedback",
    "Finding",
    "FlawKind",
    "LLMError",
    "OpenAIChatClient",
    "OpenAIConfig",
    "OpenAIExecutor",
    "ParseError",
    "Prompts",
    "ResponseCache",
    "SimulatedExecutor",
    "Usage",
]
