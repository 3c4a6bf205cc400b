"""Reference scores per env id: the fixed ends of every normalised score the suite reports.

``random`` is the uniformly random legal controller and ``expert`` the best observation-only scripted
harness (``harness_gym.policies.scripted.ExpertPolicy``), each the mean G over the eval protocol (every eval
task x seeds 0, 1, 2 x 3 rollouts) with the default simulated executor. They are properties of the env id, not
of a dataset: every dataset of an id, every normalised score (random = 0, expert = 100) and Minari's
``ref_min_score`` / ``ref_max_score`` use these, whatever executor collected the data.

The table lives in ``data/reference_scores.json`` and is produced by measurement only
(``harness-gym headroom --write-reference-scores``, ``harness_gym.evaluation.headroom``), never edited by
hand; rerun it whenever the simulator changes. MDP v2 (``obs_layout="v2"``) plays other tasks, so its ends
are measured on it and kept in a file of their own, ``data/reference_scores_v2.json`` (``headroom
--write-reference-scores --obs-layout v2``): layout v1's table, and the version every published dataset
records, stay as they were.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

REFERENCE_FILE = Path(__file__).parents[1] / "data" / "reference_scores.json"
REFERENCE_FILES: dict[str, Path] = {
    "v1": REFERENCE_FILE,
    "v2": REFERENCE_FILE.with_name("reference_scores_v2.json"),
}
"""The measured table of each observation layout (``harness_gym.core.state.LAYOUTS``)."""


def reference_file(obs_layout: str = "v1") -> Path:
    """The table file of ``obs_layout``."""
    try:
        return REFERENCE_FILES[obs_layout]
    except KeyError:
        raise ValueError(
            f"unknown obs_layout {obs_layout!r}; expected one of {', '.join(REFERENCE_FILES)}"
        ) from None


@cache
def reference_table(obs_layout: str = "v1") -> dict[str, Any]:
    """The whole measured table of ``obs_layout``: ``{"protocol", "policies", "scores": {env_id: {random,
    expert}}}``."""
    path = reference_file(obs_layout)
    if not path.exists():
        raise FileNotFoundError(
            f"no reference scores measured for obs_layout {obs_layout!r} ({path.name}); measure them: "
            f"harness-gym headroom --env all --policies random expert --write-reference-scores "
            f"--obs-layout {obs_layout}"
        )
    return json.loads(path.read_text())


def reference_scores(env_id: str, obs_layout: str = "v1") -> tuple[float, float]:
    """(random, expert) mean G of ``env_id`` on the eval protocol of ``obs_layout``."""
    scores = reference_table(obs_layout)["scores"]
    try:
        row = scores[env_id]
    except KeyError:
        known = ", ".join(sorted(scores))
        raise KeyError(f"no reference scores for env id {env_id!r}; known ids: {known}") from None
    return float(row["random"]), float(row["expert"])


def normalized_score(env_id: str, G: float, obs_layout: str = "v1") -> float:
    """100 x (G - random) / (expert - random): 0 is the random controller, 100 the expert harness."""
    low, high = reference_scores(env_id, obs_layout)
    return 100.0 * (G - low) / (high - low)


def reference_table_version(obs_layout: str = "v1") -> str:
    """The table's identity: the first 12 hex digits of the SHA-256 of its canonical JSON (sorted keys, no
    whitespace). Datasets and their manifest record it, so a normalised score names the table it used."""
    canonical = json.dumps(reference_table(obs_layout), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def reference_episode_count(env_id: str, obs_layout: str = "v1") -> int:
    """Episodes each reference score averages: the protocol's tasks of its split x seeds x rollouts (every
    eval task x 3 seeds x 3 rollouts = 180 for the eight settings). Minari's
    ``num_episodes_average_score``."""
    from harness_gym.envs.registry import env_class

    protocol = reference_table(obs_layout)["protocol"]
    split = protocol["split"]
    tasks = sum(task.split == split for task in env_class(env_id).domain_cls().tasks(obs_layout))
    if protocol.get("tasks") is not None:
        tasks = min(tasks, int(protocol["tasks"]))
    return tasks * len(protocol["seeds"]) * int(protocol["rollouts"])
