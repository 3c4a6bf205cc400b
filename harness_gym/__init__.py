"""harness-gym: Gymnasium environments in which a controller learns to run an LLM agent's harness.

Importing the package registers every environment id (``harness_gym.ENV_IDS``) with Gymnasium.
"""

from harness_gym.actions import N_ACTIONS, Action
from harness_gym.env import HarnessEnv, InvalidActionError
from harness_gym.registry import ENV_ENTRY_POINTS, register_all
from harness_gym.state import FEATURES

__version__ = "0.1.0"

ENV_IDS: tuple[str, ...] = tuple(ENV_ENTRY_POINTS)

register_all()

__all__ = ["ENV_IDS", "FEATURES", "N_ACTIONS", "Action", "HarnessEnv", "InvalidActionError", "__version__"]
