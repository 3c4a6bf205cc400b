"""Controllers for harness-gym environments: scripted harnesses and (with the ``rl`` extra) learners."""

from baselines.scripted import (
    BasePolicy,
    ExploratoryPolicy,
    ForcedCheckPolicy,
    Policy,
    RandomPolicy,
    make_policy,
)

__all__ = ["BasePolicy", "ExploratoryPolicy", "ForcedCheckPolicy", "Policy", "RandomPolicy", "make_policy"]
