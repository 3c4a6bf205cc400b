"""Per-seed normalised scores: the runs that aggregate statistics across settings are computed from.

One score per policy x evaluation seed (the model trained with seed ``s`` plays seed ``s``): 100 x
(mean G - random) / (expert - random) with the fixed per-env-id ends of ``harness_gym.reference_scores``,
so scores of different settings are on one scale (random = 0, expert = 100).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness_gym.reference_scores import normalized_score

__all__ = ["seed_scores"]


def seed_scores(results_by_policy: Mapping[str, Sequence[Any]], env_id: str) -> dict[str, dict[int, float]]:
    """{policy: {seed: normalised score of that seed's mean G}} from ``EpisodeResult`` lists."""
    out: dict[str, dict[int, float]] = {}
    for name, results in results_by_policy.items():
        by_seed: dict[int, list[float]] = {}
        for r in results:
            if r.env_id != env_id:
                raise ValueError(f"{name}: an episode of {r.env_id!r} among results for {env_id!r}")
            by_seed.setdefault(int(r.seed), []).append(float(r.G))
        out[name] = {s: normalized_score(env_id, float(np.mean(g))) for s, g in sorted(by_seed.items())}
    return out
