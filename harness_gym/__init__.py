"""harness-gym: Gymnasium environments in which a controller learns to run an LLM agent's harness.

Importing the package registers every environment id (``harness_gym.ENV_IDS``) with Gymnasium. The
package is built in layers, each importing only those below it (``CONTRIBUTING.md``):

- ``core``: the MDP's pieces (actions, observation layout, tasks, step records, rubric, HMS);
- ``sandbox``: running untrusted code;
- ``executors``: the frozen LLM (protocol, simulated executor and its profiles, OpenAI-compatible client);
- ``envs``: the domain contract, the generic environment loop and the id registry;
- ``domains``: one package per setting;
- ``policies``: the scripted reference controllers;
- ``evaluation``: playing and scoring policies, statistics, headroom, calibration;
- ``datasets``: rollout buffers as Minari datasets;
- ``bench``: the whole benchmark, its algorithm registry and report;
- ``cli``: the ``harness-gym`` command.

``evaluate_policy`` scores any policy on the standard protocol and ``protocol_seeds`` lists that protocol's
episodes (``harness_gym.evaluation.scoring``); both load on first use, so the import stays light.
"""

from harness_gym import _compat
from harness_gym._version import __version__
from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import FEATURES
from harness_gym.envs.env import HarnessEnv, InvalidActionError
from harness_gym.envs.registry import ALL_ENV_IDS, ENV_IDS, register_all

register_all()
_compat.install()

__all__ = [
    "ALL_ENV_IDS",
    "ENV_IDS",
    "FEATURES",
    "N_ACTIONS",
    "Action",
    "HarnessEnv",
    "InvalidActionError",
    "PolicyScore",
    "__version__",
    "evaluate_policy",
    "protocol_seeds",
]


def __getattr__(name: str) -> object:
    """``evaluate_policy``, ``protocol_seeds`` and ``PolicyScore``, imported when first asked for."""
    if name in ("evaluate_policy", "protocol_seeds", "PolicyScore"):
        from harness_gym.evaluation import scoring

        return getattr(scoring, name)
    raise AttributeError(f"module 'harness_gym' has no attribute {name!r}")
