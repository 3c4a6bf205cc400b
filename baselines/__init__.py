"""Controllers for harness-gym environments: scripted harnesses and (with the ``rl`` extra) learners.

Importing the package registers its d3rlpy learnables (``baselines.learnables``) so that
``d3rlpy.load_learnable`` can load a saved AWR, IQL, masked SAC or masked BCQ model, without importing
d3rlpy itself.
"""

from baselines import learnables
from baselines.scripted import (
    BasePolicy,
    ExploratoryPolicy,
    ForcedCheckPolicy,
    Policy,
    RandomPolicy,
    make_policy,
)

learnables.install()

__all__ = ["BasePolicy", "ExploratoryPolicy", "ForcedCheckPolicy", "Policy", "RandomPolicy", "make_policy"]
