"""``open-loop``: the best fixed action string of a setting, a reference that never reads the state.

An open-loop policy plays a string over ``ORTDCVS`` (OBSERVE RETRIEVE CALL_TOOL DRAFT CHECK REVISE
SUBMIT): at step t it takes the string's t-th action if the mask allows it and SUBMIT otherwise, and
SUBMIT once the string is used up. The only feature it reads is ``progress`` (which step it is at). The
shipped strings (``harness_gym/data/open_loop.json``) are the best found on the train split by the
deterministic search of ``harness_gym.evaluation.open_loop`` (``harness-gym headroom
--search-open-loop`` writes them, with the search's provenance). The expert's lead over it is the
state-dependence gap: what reading the state is worth in that setting.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import FEATURE_INDEX

OPEN_LOOP_FILE = Path(__file__).parents[1] / "data" / "open_loop.json"
LETTERS = "ORTDCVS"
"""One letter per action, in ``Action`` order."""
_PROGRESS = FEATURE_INDEX["progress"]


@cache
def open_loop_table() -> dict[str, Any]:
    """The shipped strings: ``{"search": provenance, "strings": {env_id: {"string", "train_G", ...}}}``."""
    if not OPEN_LOOP_FILE.is_file():
        return {"search": {}, "strings": {}}
    return json.loads(OPEN_LOOP_FILE.read_text())


class OpenLoopPolicy:
    """Plays a fixed action string (the shipped one of ``env_id`` unless ``string`` is given)."""

    name = "open-loop"

    def __init__(self, env_id: str, string: str | None = None, max_steps: int | None = None) -> None:
        from harness_gym.envs.registry import env_class

        if string is None:
            strings = open_loop_table()["strings"]
            if env_id not in strings:
                known = ", ".join(sorted(strings)) or "none"
                raise ValueError(f"no open-loop string shipped for {env_id!r}; shipped: {known}")
            string = strings[env_id]["string"]
        unknown = sorted(set(string) - set(LETTERS))
        if unknown:
            raise ValueError(f"open-loop string {string!r}: unknown letters {unknown}; use {LETTERS}")
        self.env_id, self.string = env_id, string
        self.actions = [LETTERS.index(c) for c in string]
        self.max_steps = int(max_steps if max_steps is not None else env_class(env_id).domain_cls.max_steps)

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        t = round(float(obs[_PROGRESS]) * self.max_steps)
        if t < len(self.actions) and mask[self.actions[t]]:
            return self.actions[t]
        return int(Action.SUBMIT)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        probs = np.zeros(N_ACTIONS)
        probs[self.choose(obs, mask)] = 1.0
        return probs
