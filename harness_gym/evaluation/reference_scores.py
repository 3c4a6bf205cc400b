"""Reference scores per env id: the fixed ends of every normalised score the suite reports.

``random`` is the uniformly random legal controller and ``expert`` the best observation-only scripted
harness (``harness_gym.policies.scripted.ExpertPolicy``), each the mean G over the eval protocol (every eval
task x seeds 0, 1, 2 x 3 rollouts) with the default simulated executor. They are properties of the env id, not
of a dataset: every dataset of an id, every normalised score (random = 0, expert = 100) and Minari's
``ref_min_score`` / ``ref_max_score`` use these, whatever executor collected the data.

The table lives in ``data/reference_scores.json`` and is produced by measurement only
(``harness-gym headroom --write-reference-scores``, ``harness_gym.evaluation.headroom``), never edited by
hand; rerun it whenever the simulator changes.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

REFERENCE_FILE = Path(__file__).parents[1] / "data" / "reference_scores.json"


@cache
def reference_table() -> dict[str, Any]:
    """The whole measured table: ``{"protocol", "policies", "scores": {env_id: {random, expert}}}``."""
    return json.loads(REFERENCE_FILE.read_text())


def reference_scores(env_id: str) -> tuple[float, float]:
    """(random, expert) mean G of ``env_id`` on the eval protocol."""
    scores = reference_table()["scores"]
    try:
        row = scores[env_id]
    except KeyError:
        known = ", ".join(sorted(scores))
        raise KeyError(f"no reference scores for env id {env_id!r}; known ids: {known}") from None
    return float(row["random"]), float(row["expert"])


def normalized_score(env_id: str, G: float) -> float:
    """100 x (G - random) / (expert - random): 0 is the random controller, 100 the expert harness."""
    low, high = reference_scores(env_id)
    return 100.0 * (G - low) / (high - low)
