"""Controllers for harness-gym environments: scripted harnesses and (with the ``rl`` extra) learners."""

from baselines.scripted import BasePolicy, Policy, RandomPolicy

__all__ = ["BasePolicy", "Policy", "RandomPolicy"]
