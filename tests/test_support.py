"""Support diagnostics on hand-made buffers whose answers are known."""

import numpy as np
import pytest

from harness_gym.core.actions import Action
from harness_gym.datasets.support import support_diagnostics

C, R, S, D = Action.CHECK, Action.REVISE, Action.SUBMIT, Action.DRAFT


def test_known_buffer() -> None:
    actions = [np.array([D, S]), np.array([D, C, R, S]), np.array([D, S]), np.array([D, C, R, S])]
    G = [0.2, 0.8, 0.4, 0.6]
    tasks = [0, 0, 1, 1]
    behavior = ["base", "exploratory", "base", "exploratory"]
    d = support_diagnostics(actions, G, tasks, behavior)
    assert d["check_revise_share"] == 0.5
    assert d["explore_beats_base_share"] == 1.0  # 0.8 > 0.2 and 0.6 > 0.4
    # advantages: -0.3, +0.3, -0.1, +0.1; the two sequences' means are -0.2 and +0.2
    assert d["advantage_r2_by_actions"] == pytest.approx(4 * 0.2**2 / 0.2)
    assert d["distinct_sequence_share"] == 0.5


def test_no_pairs_and_no_variance_give_none() -> None:
    d = support_diagnostics([np.array([S]), np.array([S])], [0.5, 0.5], [0, 1], ["base", "exploratory"])
    assert d["explore_beats_base_share"] is None and d["advantage_r2_by_actions"] is None
    with pytest.raises(ValueError, match="equal non-empty"):
        support_diagnostics([], [], [], [])
