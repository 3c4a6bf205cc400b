"""The G-versus-tokens frontier and its hypervolume (evaluation.frontier), on hand-built points."""

from __future__ import annotations

import math

import pytest

from harness_gym.evaluation.frontier import hypervolume, pareto_front

POINTS = [(100, 0.5), (200, 0.4), (300, 0.8), (300, 0.7), (50, 0.1), (100, 0.5)]


def test_the_front_keeps_only_points_nothing_beats_fewest_tokens_first():
    # (200, .4) spends more than (100, .5) for less G; (300, .7) ties (300, .8) on tokens and loses on G
    assert pareto_front(POINTS) == [(50, 0.1), (100, 0.5), (300, 0.8)]


def test_a_point_equal_on_tokens_and_better_on_g_replaces_the_other():
    assert pareto_front([(100, 0.5), (100, 0.6)]) == [(100, 0.6)]
    assert pareto_front([(100, 0.5), (90, 0.5)]) == [(90, 0.5)]


def test_hypervolume_is_the_area_under_the_step_function_over_the_limit():
    # 0.1 over [50, 100), 0.5 over [100, 300), 0.8 over [300, 400): (5 + 100 + 80) / 400
    assert hypervolume(POINTS, 400) == pytest.approx(185 / 400)


def test_a_single_point_covers_its_g_from_its_tokens_to_the_limit():
    assert hypervolume([(100, 0.6)], 400) == pytest.approx(0.6 * 300 / 400)


def test_points_past_the_limit_count_for_nothing_and_negative_g_as_zero():
    assert hypervolume(POINTS, 250) == pytest.approx((0.1 * 50 + 0.5 * 150) / 250)
    assert hypervolume([(500, 0.9)], 400) == 0.0
    assert hypervolume([(10, -0.2), (100, 0.5)], 200) == pytest.approx(0.5 * 100 / 200)


def test_more_points_never_shrink_the_hypervolume():
    assert hypervolume([*POINTS, (20, 0.05)], 400) > hypervolume(POINTS, 400)
    assert hypervolume([*POINTS, (250, 0.3)], 400) == hypervolume(POINTS, 400)


@pytest.mark.parametrize("bad", [(math.nan, 0.5), (100, math.inf), (-1, 0.5)])
def test_a_bad_point_is_named(bad):
    with pytest.raises(ValueError, match="frontier point"):
        pareto_front([bad])


@pytest.mark.parametrize("limit", [0, -5, math.nan])
def test_a_bad_limit_is_named(limit):
    with pytest.raises(ValueError, match="token_limit"):
        hypervolume(POINTS, limit)
