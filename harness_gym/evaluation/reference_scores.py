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

import hashlib
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


def reference_table_version() -> str:
    """The table's identity: the first 12 hex digits of the SHA-256 of its canonical JSON (sorted keys, no
    whitespace). Datasets and their manifest record it, so a normalised score names the table it used."""
    canonical = json.dumps(reference_table(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def reference_episode_count(env_id: str) -> int:
    """Episodes each reference score averages: the protocol's tasks of its split x seeds x rollouts (every
    eval task x 3 seeds x 3 rollouts = 180 for the eight settings). Minari's
    ``num_episodes_average_score``."""
    from harness_gym.envs.registry import env_class

    protocol = reference_table()["protocol"]
    split = protocol["split"]
    tasks = sum(task.split == split for task in env_class(env_id).domain_cls().tasks())
    if protocol.get("tasks") is not None:
        tasks = min(tasks, int(protocol["tasks"]))
    return tasks * len(protocol["seeds"]) * int(protocol["rollouts"])
