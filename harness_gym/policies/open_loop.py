"""``open-loop``: the best fixed action string of a setting, a reference that never reads the state.

An open-loop policy plays a string over ``ORTDCVS`` (OBSERVE RETRIEVE CALL_TOOL DRAFT CHECK REVISE
SUBMIT): at step t it takes the string's t-th action if the mask allows it and SUBMIT otherwise, and
SUBMIT once the string is used up. The only feature it reads is ``progress`` (which step it is at). The
shipped strings (``harness_gym/data/open_loop.json``) are the best found on the train split by the
deterministic search of ``harness_gym.evaluation.open_loop`` (``harness-gym headroom
--search-open-loop [--obs-layout v2] [--token-price P]`` writes them, with the search's provenance), one
table per observation layout and token price: MDP v2 (``obs_layout="v2"``) plays other tasks and
mechanics, so its strings are searched on v2 and a v2 episode plays the v2 string (never the v1 one); at
a price the best string is the one with the most G net of its tokens' price (``docs/priced.md``). The
expert's lead over it is the state-dependence gap: what reading the state is worth in that setting.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import FEATURE_INDEX, LAYOUTS

OPEN_LOOP_FILE = Path(__file__).parents[1] / "data" / "open_loop.json"
LETTERS = "ORTDCVS"
"""One letter per action, in ``Action`` order."""
_PROGRESS = FEATURE_INDEX["progress"]


_WIDTHS = {len(features): layout for layout, features in LAYOUTS.items()}


def read_layouts(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every layout's table in ``path`` (default: the shipped file): ``{layout: {"search": provenance,
    "strings": {...}}}``. A file of one table (``{"search", "strings"}``, as shipped before v2 existed)
    reads as layout v1's."""
    path = OPEN_LOOP_FILE if path is None else path
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return {"v1": data} if "strings" in data else data


def table_key(layout: str = "v1", token_price: float = 0.0) -> str:
    """The key of the table searched on ``layout`` at ``token_price`` (G per thousand tokens): the layout
    itself at price 0 (the paper's protocol), ``"<layout>/price=<price>"`` otherwise. A string searched
    at a price maximises G minus the price of its tokens, so each price has its own."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown observation layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    return layout if token_price == 0 else f"{layout}/price={float(token_price):g}"


@cache
def open_loop_table(layout: str = "v1", token_price: float = 0.0) -> dict[str, Any]:
    """The strings shipped for ``layout`` at ``token_price``: ``{"search": provenance, "strings": {env_id:
    {"string", "train_G", ...}}}`` (empty where none were searched)."""
    return read_layouts().get(table_key(layout, token_price), {"search": {}, "strings": {}})


def shipped_string(env_id: str, layout: str = "v1", token_price: float = 0.0) -> str:
    """The string searched for ``env_id`` on ``layout`` at ``token_price``; a clear error where none was."""
    strings = open_loop_table(layout, token_price)["strings"]
    if env_id not in strings:
        known = ", ".join(sorted(strings)) or "none"
        at, flag = (
            (f" at token_price {token_price:g}", f" --token-price {token_price:g}")
            if token_price
            else ("", "")
        )
        raise ValueError(
            f"no open-loop string shipped for {env_id!r} on obs_layout {layout!r}{at} (search it: "
            f"harness-gym headroom --search-open-loop --obs-layout {layout}{flag} --env {env_id}); "
            f"shipped: {known}"
        )
    return strings[env_id]["string"]


class OpenLoopPolicy:
    """Plays a fixed action string: ``string`` if given (on any layout), else the string shipped for
    ``env_id`` at ``token_price`` on the layout of the observation it is shown (``obs_layout`` names it up
    front, so a missing string fails at construction; unnamed, it is read off the observation's width)."""

    name = "open-loop"

    def __init__(
        self,
        env_id: str,
        string: str | None = None,
        max_steps: int | None = None,
        obs_layout: str | None = None,
        token_price: float = 0.0,
    ) -> None:
        from harness_gym.envs.registry import env_class

        self.env_id, self.obs_layout, self.token_price = env_id, obs_layout, token_price
        if string is None:
            string = shipped_string(env_id, obs_layout or "v1", token_price)
            self._fixed = False
        else:
            self._fixed = True
        self.string = string
        self.actions = self._letters(string)
        self.max_steps = int(max_steps if max_steps is not None else env_class(env_id).domain_cls.max_steps)

    @staticmethod
    def _letters(string: str) -> list[int]:
        unknown = sorted(set(string) - set(LETTERS))
        if unknown:
            raise ValueError(f"open-loop string {string!r}: unknown letters {unknown}; use {LETTERS}")
        return [LETTERS.index(c) for c in string]

    def _actions(self, obs: np.ndarray) -> list[int]:
        """The string of the observation's layout (the shipped tables are cached, so this is a lookup)."""
        if self._fixed:
            return self.actions
        layout = _WIDTHS.get(len(obs))
        if layout is None:
            raise ValueError(
                f"open-loop for {self.env_id}: an observation of {len(obs)} features fits no layout"
            )
        if self.obs_layout is not None and layout != self.obs_layout:
            raise ValueError(
                f"open-loop for {self.env_id} was built for obs_layout {self.obs_layout!r} but is shown a "
                f"{layout!r} observation"
            )
        if layout == (self.obs_layout or "v1"):
            return self.actions
        return self._letters(shipped_string(self.env_id, layout, self.token_price))

    def choose(self, obs: np.ndarray, mask: np.ndarray) -> int:
        actions = self._actions(obs)
        t = round(float(obs[_PROGRESS]) * self.max_steps)
        if t < len(actions) and mask[actions[t]]:
            return actions[t]
        return int(Action.SUBMIT)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        return self.choose(obs, mask)

    def action_probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        probs = np.zeros(N_ACTIONS)
        probs[self.choose(obs, mask)] = 1.0
        return probs
