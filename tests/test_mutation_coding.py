"""The coding verifier's decisions outside the sandbox run: the verdict cache key changes with every input
of a verdict (a stale verdict is never reused) and with nothing else."""

from __future__ import annotations

import pytest

from harness_gym.domains.coding import verifier
from harness_gym.sandbox.runner import SandboxLimits

SOURCE = "def f(x):\n    return x + 1\n"
TESTS = [{"args": [1], "expected": 2}]
BASE = (SOURCE, "f", TESTS, SandboxLimits(), ("math.sqrt",))


@pytest.mark.parametrize(
    ("index", "other"),
    [
        (0, SOURCE + "\n# changed\n"),
        (1, "g"),
        (2, [{"args": [1], "expected": 3}]),
        (2, [*TESTS, {"args": [2], "expected": 3}]),
        (3, SandboxLimits(cpu_time_s=2)),
        (4, ("math.sqrt", "os.getcwd")),
        (4, ()),
    ],
)
def test_the_verdict_key_changes_with_every_input(index: int, other: object) -> None:
    changed = list(BASE)
    changed[index] = other
    assert verifier.cache_key(*changed) != verifier.cache_key(*BASE)


def test_the_verdict_key_ignores_the_order_of_allowed_calls_only() -> None:
    key = verifier.cache_key(*BASE[:4], ("b.c", "a.b"))
    assert key == verifier.cache_key(*BASE[:4], ("a.b", "b.c"))
    assert key == verifier.cache_key(*BASE[:4], ["a.b", "b.c"])
    assert verifier.cache_key(*BASE) == verifier.cache_key(*BASE)
