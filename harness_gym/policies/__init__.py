"""Reference controllers: the scripted harnesses every comparison is made against.

``scripted`` holds the ``Policy`` protocol and the named reference policies (random, Base, Exploratory,
Forced-CHECK, check-revise, expert, hindsight-submit); ``profile`` the state-dependent reference that reads an
executor profile. Learned controllers live outside this package (``baselines`` or your own) and join
the bench through ``harness_gym.bench.algorithms``.
"""

from harness_gym.policies.scripted import (
    BasePolicy,
    ExploratoryPolicy,
    ForcedCheckPolicy,
    Policy,
    RandomPolicy,
    make_policy,
)

__all__ = ["BasePolicy", "ExploratoryPolicy", "ForcedCheckPolicy", "Policy", "RandomPolicy", "make_policy"]
