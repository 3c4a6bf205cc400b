"""Executors: the frozen LLM behind DRAFT, REVISE and judge-type CHECK."""

from harness_gym.executors.base import (
    Context,
    Executor,
    ExecutorRequest,
    ExecutorResponse,
    Feedback,
    Usage,
)
from harness_gym.executors.simulated import Competence, SimulatedExecutor

__all__ = [
    "Competence",
    "Context",
    "Executor",
    "ExecutorRequest",
    "ExecutorResponse",
    "Feedback",
    "SimulatedExecutor",
    "Usage",
]
