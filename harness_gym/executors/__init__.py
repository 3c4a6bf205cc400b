"""Executors: the frozen LLM behind DRAFT, REVISE, judge-type CHECK and executor-chosen tool calls."""

from harness_gym.executors.base import (
    Context,
    Executor,
    ExecutorRequest,
    ExecutorResponse,
    Feedback,
    Usage,
)
from harness_gym.executors.cache import CacheMissError, ResponseCache
from harness_gym.executors.openai_client import LLMError, OpenAIChatClient
from harness_gym.executors.openai_executor import OpenAIConfig, OpenAIExecutor
from harness_gym.executors.prompts import ParseError, Prompts
from harness_gym.executors.simulated import Competence, SimulatedExecutor

__all__ = [
    "CacheMissError",
    "Competence",
    "Context",
    "Executor",
    "ExecutorRequest",
    "ExecutorResponse",
    "Feedback",
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
