"""harness-gym: Gymnasium environments in which a controller learns to run an LLM agent's harness.

Importing the package registers every environment id (``harness_gym.ENV_IDS``) with Gymnasium.
"""

from harness_gym.actions import N_ACTIONS, Action
from harness_gym.env import HarnessEnv, InvalidActionError
from harness_gym.registry import ENV_ENTRY_POINTS, EXTRA_ENV_ENTRY_POINTS, register_all
from harness_gym.state import FEATURES

__version__ = "0.1.0"

ENV_IDS: tuple[str, ...] = tuple(ENV_ENTRY_POINTS)
"""The paper's eight settings (``--env all``)."""
ALL_ENV_IDS: tuple[str, ...] = ENV_IDS + tuple(EXTRA_ENV_ENTRY_POINTS)
"""Every registered id: the eight settings and other task sources (``HarnessHumanEval-v0``)."""

register_all()

__all__ = [
    "ALL_ENV_IDS",
    "ENV_IDS",
    "FEATURES",
    "N_ACTIONS",
    "Action",
    "HarnessEnv",
    "InvalidActionError",
    "__version__",
]
