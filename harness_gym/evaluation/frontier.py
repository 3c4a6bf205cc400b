"""The G-versus-tokens frontier: which (mean tokens, mean G) points no other beats, and the hypervolume.

A point is a policy's (or a fixed action string's) mean executor tokens per episode and its mean G. One
point *dominates* another when it spends no more tokens and scores no less G, and is better in one of
the two. The frontier of a set is its non-dominated points; its hypervolume up to a token limit ``T`` is
the area under the frontier's step function over tokens ``[0, T]`` (G below the frontier's best point
within each budget), divided by ``T``: the mean, over budgets ``t`` spread evenly on ``[0, T]``, of the
best G reachable with at most ``t`` tokens. It lies in ``[0, max G]``, so classes compare on G's scale
(a class of one point at ``(tokens, G)`` has ``G * (T - tokens) / T``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

Point = tuple[float, float]
"""(mean tokens per episode, mean G)."""


def _checked(points: Iterable[Point]) -> list[Point]:
    out = []
    for point in points:
        tokens, g = (float(v) for v in point)
        if not (math.isfinite(tokens) and math.isfinite(g)) or tokens < 0:
            raise ValueError(f"a frontier point needs finite tokens >= 0 and a finite G, got {point!r}")
        out.append((tokens, g))
    return out


def pareto_front(points: Iterable[Point]) -> list[Point]:
    """The non-dominated points, fewest tokens first (each next one spends more and scores more);
    duplicates appear once."""
    front: list[Point] = []
    for tokens, g in sorted(set(_checked(points)), key=lambda p: (p[0], -p[1])):
        if not front or g > front[-1][1]:
            front.append((tokens, g))
    return front


def hypervolume(points: Iterable[Point], token_limit: float) -> float:
    """Area under the frontier's step function over tokens ``[0, token_limit]``, over ``token_limit``
    (module docstring); points spending more than the limit count for nothing, G below 0 as 0."""
    if not (math.isfinite(token_limit) and token_limit > 0):
        raise ValueError(f"token_limit must be a finite number > 0, got {token_limit!r}")
    front = [(t, g) for t, g in pareto_front(points) if t < token_limit and g > 0]
    if not front:
        return 0.0
    ends = [t for t, _ in front[1:]] + [token_limit]
    return sum(g * (end - tokens) for (tokens, g), end in zip(front, ends, strict=True)) / token_limit
