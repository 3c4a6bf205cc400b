"""Rubrics: criterion-level scores of a terminal artifact and their normalisation to G.

A rubric maps each criterion name to ``(score, max_score)``. The task reward is
``G_norm = sum(score) / sum(max_score)`` (paper, App. C), so criteria with larger maxima weigh more.
"""

from __future__ import annotations

from collections.abc import Mapping

Rubric = dict[str, tuple[float, float]]

MISSING_BELOW = 0.5
"""A criterion counts as missing when it earns less than this fraction of its maximum."""

SOLVED_G = 0.99
"""An episode succeeds (solves its task) when its G reaches this: the rubric's maximum up to rounding.
The one definition of success: the headroom table's "tasks solved" and pass^k use it."""


def validate_rubric(rubric: Mapping[str, tuple[float, float]]) -> None:
    if not rubric:
        raise ValueError("a rubric needs at least one criterion")
    for name, (score, max_score) in rubric.items():
        if max_score <= 0:
            raise ValueError(f"criterion {name!r}: max score must be positive, got {max_score}")
        if not 0.0 <= score <= max_score:
            raise ValueError(f"criterion {name!r}: score {score} outside [0, {max_score}]")


def g_norm(rubric: Mapping[str, tuple[float, float]]) -> float:
    """Normalised task quality in [0, 1] (every episode end: validated and summed in one pass, in the
    order ``sum`` would add them)."""
    if not rubric:
        validate_rubric(rubric)
    earned = total = 0
    for score, max_score in rubric.values():
        if max_score <= 0 or not 0.0 <= score <= max_score:
            validate_rubric(rubric)
        earned += score
        total += max_score
    return earned / total


def missing_fraction(rubric: Mapping[str, tuple[float, float]]) -> float:
    """Fraction of criteria that earn less than ``MISSING_BELOW`` of their maximum."""
    validate_rubric(rubric)
    missing = sum(score < MISSING_BELOW * max_score for score, max_score in rubric.values())
    return missing / len(rubric)


def zero(rubric: Mapping[str, tuple[float, float]]) -> Rubric:
    """The same criteria with every score at 0 (nothing submitted)."""
    return {name: (0.0, max_score) for name, (_, max_score) in rubric.items()}
