"""Offline learners for harness-gym: AWR, BC, discrete IQL, masked SAC and BCQ, and d3rlpy's Q-learners.

They join the bench through the ``harness_gym.algorithms`` entry point (``baselines.algorithms``).
Importing the package registers its d3rlpy learnables (``baselines.learnables``) so that
``d3rlpy.load_learnable`` can load a saved AWR, IQL, masked SAC or masked BCQ model, without importing
d3rlpy itself. The scripted reference policies moved to ``harness_gym.policies``.
"""

import harness_gym  # noqa: F401  (its import finder keeps the moved baselines.* paths for one release)
from baselines import learnables

learnables.install()
