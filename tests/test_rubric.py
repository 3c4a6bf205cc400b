"""Rubric normalisation and its boundaries (``harness_gym/core/rubric.py``), computed by hand."""

from __future__ import annotations

import pytest

from harness_gym.core.rubric import MISSING_BELOW, SOLVED_G, g_norm, missing_fraction, validate_rubric, zero


def test_constants():
    assert MISSING_BELOW == 0.5 and SOLVED_G == 0.99


def test_g_norm_weighs_criteria_by_their_maxima():
    assert g_norm({"a": (1.0, 1.0), "b": (0.0, 3.0)}) == 0.25
    assert g_norm({"a": (0.0, 1.0), "b": (3.0, 3.0)}) == 0.75
    assert g_norm({"a": (2.0, 4.0)}) == 0.5
    assert g_norm({"a": (0.0, 2.0), "b": (0.0, 2.0)}) == 0.0


def test_a_criterion_at_exactly_half_its_maximum_is_not_missing():
    assert missing_fraction({"a": (1.0, 2.0)}) == 0.0
    assert missing_fraction({"a": (0.999, 2.0)}) == 1.0
    assert missing_fraction({"a": (1.5, 3.0), "b": (1.49, 3.0), "c": (0.0, 1.0), "d": (1.0, 1.0)}) == 0.5
    assert missing_fraction({"a": (0.0, 1.0), "b": (0.0, 5.0), "c": (0.2, 1.0)}) == 1.0


@pytest.mark.parametrize(
    ("rubric", "message"),
    [
        ({}, "^a rubric needs at least one criterion$"),
        ({"a": (0.0, 0.0)}, "^criterion 'a': max score must be positive, got 0.0$"),
        ({"a": (0.0, -1.0)}, "^criterion 'a': max score must be positive, got -1.0$"),
        ({"a": (-0.1, 1.0)}, r"^criterion 'a': score -0.1 outside \[0, 1.0\]$"),
        ({"a": (1.01, 1.0)}, r"^criterion 'a': score 1.01 outside \[0, 1.0\]$"),
    ],
)
def test_bad_rubrics_are_refused_in_one_line(rubric, message):
    for fn in (validate_rubric, g_norm, missing_fraction):
        with pytest.raises(ValueError, match=message):
            fn(rubric)


def test_scores_at_both_ends_of_the_range_are_valid():
    validate_rubric({"a": (0.0, 1.0), "b": (1.0, 1.0), "c": (1e-9, 1e-9)})
    assert g_norm({"a": (0.0, 1.0), "b": (2.0, 2.0)}) == pytest.approx(2 / 3)


def test_zero_keeps_the_criteria_and_their_maxima():
    assert zero({"a": (1.0, 2.0), "b": (3.0, 3.0)}) == {"a": (0.0, 2.0), "b": (0.0, 3.0)}
    assert g_norm(zero({"a": (1.0, 2.0)})) == 0.0
