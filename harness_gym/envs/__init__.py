"""The Gymnasium environment: the domain contract, the generic MDP loop and the id registry.

``domain`` says what every setting provides (tasks, action semantics, masks, verifier, Base script)
and what it sees of a running episode; ``env`` is :class:`HarnessEnv`, the loop shared by every id;
``registry`` registers the ids with Gymnasium by string entry point, so it imports no setting.
"""

from harness_gym.envs.domain import Domain, Episode, Outcome, Verdict
from harness_gym.envs.env import HarnessEnv, InvalidActionError
from harness_gym.envs.registry import ALL_ENV_IDS, ENV_IDS, env_class

__all__ = [
    "ALL_ENV_IDS",
    "ENV_IDS",
    "Domain",
    "Episode",
    "HarnessEnv",
    "InvalidActionError",
    "Outcome",
    "Verdict",
    "env_class",
]
