"""Support diagnostics of an offline buffer: can an offline learner find anything better than Base in it?

Three numbers per dataset (all on whole episodes):

- ``check_revise_share``: share of episodes with a CHECK directly followed by REVISE, the paper's
  repair pattern; a learner cannot favour it if the buffer never shows it.
- ``explore_beats_base_share``: share of exploratory episodes whose G exceeds the mean G of the Base
  episodes of the same task (tasks without Base episodes are left out); the room a per-task advantage
  has to point away from Base. None without such pairs.
- ``advantage_r2_by_actions``: share of the variance of the per-task advantage (G minus its task's
  mean G) explained by the exact action sequence (between-sequence sum of squares / total). An
  upper bound on what any policy of the actions alone can exploit; sequences seen once explain their
  own episode fully, so ``distinct_sequence_share`` is reported beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from harness_gym.core.actions import Action

__all__ = ["support_diagnostics"]


def support_diagnostics(
    actions: Sequence[np.ndarray], G: Sequence[float], task_index: Sequence[int], behavior: Sequence[str]
) -> dict[str, float | None]:
    """The diagnostics above from one entry per episode (its actions, G, task and behaviour name).

    An undefined share is None (not NaN), so equal buffers give equal dicts."""
    n = len(actions)
    if not n or not (len(G) == len(task_index) == len(behavior) == n):
        raise ValueError(
            f"need equal non-empty lengths, got {n}, {len(G)}, {len(task_index)}, {len(behavior)}"
        )
    g = np.asarray(G, dtype=np.float64)
    tasks = np.asarray(task_index)
    behav = np.asarray(behavior)
    seqs = [tuple(int(a) for a in np.asarray(acts).reshape(-1)) for acts in actions]

    def check_revise(seq: tuple[int, ...]) -> bool:
        return any(a == Action.CHECK and b == Action.REVISE for a, b in pairwise(seq))

    beats = []
    for t in np.unique(tasks):
        base = g[(tasks == t) & (behav == "base")]
        explore = g[(tasks == t) & (behav == "exploratory")]
        if base.size and explore.size:
            beats.extend((explore > base.mean()).tolist())

    _, task_inv = np.unique(tasks, return_inverse=True)
    adv = g - (np.bincount(task_inv, weights=g) / np.bincount(task_inv))[task_inv]
    index = {s: i for i, s in enumerate(dict.fromkeys(seqs))}
    seq_inv = np.array([index[s] for s in seqs])
    seq_mean = (np.bincount(seq_inv, weights=adv) / np.bincount(seq_inv))[seq_inv]
    total = float(((adv - adv.mean()) ** 2).sum())
    between = float(((seq_mean - adv.mean()) ** 2).sum())
    return {
        "check_revise_share": float(np.mean([check_revise(s) for s in seqs])),
        "explore_beats_base_share": float(np.mean(beats)) if beats else None,
        "advantage_r2_by_actions": between / total if total > 0 else None,
        "distinct_sequence_share": len(set(seqs)) / n,
    }
