"""The Harness MDP's pieces, with no executor, domain or experiment in sight.

``actions`` (the seven operations), ``state`` (the observation layout ``FEATURES``), ``task`` (task
records and splits), ``trajectory`` (step records), ``rubric`` (criteria to G) and ``hms`` (the Harness
Maturity Score). Everything above builds on these; nothing here imports anything above.
"""

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import FEATURES

__all__ = ["FEATURES", "N_ACTIONS", "Action"]
