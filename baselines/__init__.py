"""Controllers for harness-gym environments: scripted harnesses and (with the ``rl`` extra) learners.

With d3rlpy installed, importing this package registers the learnables defined here (``DiscreteAWR``,
``DiscreteIQL``) with d3rlpy, so ``d3rlpy.load_learnable`` can read their saved models.
"""

from importlib.util import find_spec

from baselines.scripted import (
    BasePolicy,
    ExploratoryPolicy,
    ForcedCheckPolicy,
    Policy,
    RandomPolicy,
    make_policy,
)

if find_spec("d3rlpy") is not None:
    import baselines.awr
    import baselines.iql  # noqa: F401  (register_learnable on import)

__all__ = ["BasePolicy", "ExploratoryPolicy", "ForcedCheckPolicy", "Policy", "RandomPolicy", "make_policy"]
