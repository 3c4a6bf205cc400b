"""The search behind the ``open-loop`` reference (``harness_gym.policies.open_loop``), train split only.

Deterministic (fixed episode seeds, deterministic tie-breaks), so rerunning it returns the same strings:

1. Alphabet: the setting's supported actions except SUBMIT. Extensions that can only be masked are
   pruned (a masked action is a SUBMIT, so the string would equal its prefix): a second OBSERVE, a
   second DRAFT, CHECK or REVISE before DRAFT, and CALL_TOOL before DRAFT where the tool needs a draft.
2. Beam search over lengths 1..max_steps. A string is scored by its mean G over a screen set (train
   tasks x seed 0 x r rollouts; train tasks x seeds 0, 1, 2 x 3 rollouts when there are fewer than 40
   train tasks); a string without DRAFT is scored as the string followed by DRAFT. Ranking: higher
   mean G, then shorter, then lexicographic.
3. The ``REFINE`` best distinct strings with a DRAFT are re-scored on the full train protocol (train
   tasks x seeds 0, 1, 2 x 3 rollouts), then a first-improvement hill climb over single-letter
   insertions, substitutions and deletions (at most ``CLIMB_ROUNDS`` rounds) keeps the best.
4. Steps 2-3 run once per (beam width, screen rollouts r) of ``SEARCHES``, and the best of their results
   on the full train protocol is the setting's string. One width is not enough: on a screen set of one
   rollout per task the mean G of two strings differs by less than its noise, so a wider beam lets more
   strings that were lucky on the screen set into the refinement and can end on a worse string than a
   narrow one (seen in planning: width 24 ended 0.028 below width 8); each configuration found the best
   string in some setting and missed it in another.

``write_open_loop`` runs it per env id and writes ``harness_gym/data/open_loop.json`` with this
provenance (``harness-gym headroom --search-open-loop``), one table per observation layout and token
price (``--obs-layout v2`` searches on MDP v2, whose tasks and revision risk differ; ``--token-price P``
ranks strings by G minus the price of their tokens, ``play_string``'s return; the other tables are kept
as they are).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.core.actions import Action
from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import protocol_episodes
from harness_gym.policies.open_loop import LETTERS, OPEN_LOOP_FILE, read_layouts, table_key

SEARCHES: tuple[tuple[int, int], ...] = ((8, 1), (24, 1), (12, 3))
"""(beam width, screen rollouts per train task) of each beam search (module docstring, step 4)."""
REFINE = 20
CLIMB_ROUNDS = 5
SMALL_SPLIT = 40
"""Below this many train tasks the screen set is the full train protocol."""
_SUBMIT = int(Action.SUBMIT)


def play_string(env: Any, string: str, episodes: Sequence[tuple]) -> np.ndarray:
    """The return of every protocol episode under the string (a tight loop, no policy object): G at
    ``token_price`` 0, where every reward before the last is 0; G minus the tokens' price otherwise."""
    actions = [LETTERS.index(c) for c in string]
    out = np.empty(len(episodes))
    for i, (_, task_id, _, seed) in enumerate(episodes):
        _, info = env.reset(seed=seed, options={"task_id": task_id})
        mask, t, total = info["action_mask"], 0, 0.0
        while True:
            a = actions[t] if t < len(actions) and mask[actions[t]] else _SUBMIT
            _, reward, terminated, truncated, info = env.step(a)
            t, total = t + 1, total + reward
            if terminated or truncated:
                out[i] = total
                break
            mask = info["action_mask"]
    return out


def _allowed_next(string: str, letter: str, tool_needs_draft: bool) -> bool:
    drafted = "D" in string
    if letter == "O":
        return "O" not in string
    if letter == "D":
        return not drafted
    if letter in "CV" or (letter == "T" and tool_needs_draft):
        return drafted
    return True


def _canonical(string: str, tool_needs_draft: bool) -> bool:
    return all(_allowed_next(string[:i], c, tool_needs_draft) for i, c in enumerate(string))


def _rank(score: float, string: str) -> tuple:
    return (-round(score, 12), len(string), string)


class Scorer:
    """Mean G of a string over fixed episodes (cached; a string without DRAFT is played with one)."""

    def __init__(self, env: Any, episodes: Sequence[tuple]) -> None:
        self.env, self.episodes, self.cache = env, list(episodes), {}

    def __call__(self, string: str) -> float:
        key = string if "D" in string else string + "D"
        if key not in self.cache:
            self.cache[key] = float(play_string(self.env, key, self.episodes).mean())
        return self.cache[key]


def search(env_id: str, log: Callable[[str], None] | None = None, **env_kwargs: Any) -> dict[str, Any]:
    """The best open-loop string of ``env_id`` on the train split (module docstring)."""
    env = gym.make(env_id, split="train", **env_kwargs).unwrapped
    domain = env.domain
    alphabet = [LETTERS[a] for a in sorted(int(a) for a in domain.supported) if a != Action.SUBMIT]
    needs_draft = bool(domain.tool_needs_draft)
    max_len = int(env.max_steps)
    task_ids = [task.task_id for task in env.tasks]
    full_eps = protocol_episodes(task_ids, EVAL_SEEDS, EVAL_ROLLOUTS)
    full = Scorer(env, full_eps)
    started, found, scored = time.perf_counter(), [], 0
    for beam_width, rollouts in SEARCHES:
        screen_eps = protocol_episodes(task_ids, (0,), rollouts) if len(task_ids) >= SMALL_SPLIT else full_eps
        screen = Scorer(env, screen_eps)
        best, best_g = _beam_and_climb(screen, full, alphabet, needs_draft, max_len, beam_width)
        found.append(
            {"beam": beam_width, "screen_episodes": len(screen_eps), "string": best, "train_G": best_g}
        )
        scored += len(screen.cache)
    best_g, best = min(((f["train_G"], f["string"]) for f in found), key=lambda x: _rank(*x))
    seconds = time.perf_counter() - started
    if log is not None:
        log(f"{env_id}: open-loop {best!r}, train G {best_g:.3f} ({seconds:.0f}s)")
    return {
        "string": best,
        "train_G": round(best_g, 4),
        "train_episodes": len(full_eps),
        "strings_scored": scored + len(full.cache),
        "searches": [{**f, "train_G": round(f["train_G"], 4)} for f in found],
    }


def beam_strings(
    screen: Callable[[str], float], alphabet: Sequence[str], needs_draft: bool, max_len: int, width: int
) -> list[tuple[str, float]]:
    """Step 2 of the module docstring: every string with a DRAFT the beam scored, best first, with its
    screen score."""
    beam, complete = [""], {}
    for _ in range(max_len):
        candidates = {s + c for s in beam for c in alphabet if _allowed_next(s, c, needs_draft)}
        scored = sorted(((screen(s), s) for s in candidates), key=lambda x: _rank(*x))
        complete.update({s: g for g, s in scored if "D" in s})
        beam = [s for _, s in scored[:width]]
    return sorted(complete.items(), key=lambda x: _rank(x[1], x[0]))


def _beam_and_climb(
    screen: Scorer, full: Scorer, alphabet: Sequence[str], needs_draft: bool, max_len: int, width: int
) -> tuple[str, float]:
    """Steps 2-3 of the module docstring: (string, its mean G on the full train protocol)."""
    top = beam_strings(screen, alphabet, needs_draft, max_len, width)[:REFINE]
    best_g, best = min(((full(s), s) for s, _ in top), key=lambda x: _rank(*x))
    for _ in range(CLIMB_ROUNDS):
        neighbours = set()
        for i in range(len(best) + 1):
            for c in alphabet:
                neighbours.add(best[:i] + c + best[i:])
                if i < len(best):
                    neighbours.add(best[:i] + c + best[i + 1 :])
            if i < len(best):
                neighbours.add(best[:i] + best[i + 1 :])
        neighbours = {
            s for s in neighbours if 0 < len(s) <= max_len and "D" in s and _canonical(s, needs_draft)
        }
        improved = False
        for s in sorted(neighbours, key=lambda s: (len(s), s)):
            g = full(s)
            if _rank(g, s) < _rank(best_g, best):
                best, best_g, improved = s, g, True
        if not improved:
            break
    return best, best_g


def write_open_loop(
    env_ids: Sequence[str],
    path: str | Path = OPEN_LOOP_FILE,
    log: Callable[[str], None] | None = None,
    obs_layout: str = "v1",
    token_price: float = 0.0,
) -> Path:
    """Search every env id on ``obs_layout`` at ``token_price`` (default simulated executor) and write its
    strings into that table (``table_key``), after each env id, so an interrupted run keeps what it found.
    Other env ids' strings and other tables are kept."""
    path = Path(path)
    key = table_key(obs_layout, token_price)
    strings = dict(read_layouts(path).get(key, {}).get("strings", {}))
    priced = {"token_price": token_price} if token_price else {}
    for env_id in env_ids:
        strings[env_id] = search(env_id, log, obs_layout=obs_layout, **priced)
        _write(path, strings, obs_layout, token_price)
    return path


def _write(path: Path, strings: dict[str, Any], obs_layout: str, token_price: float = 0.0) -> None:
    command = "harness-gym headroom --search-open-loop"
    table = {
        "search": {
            "method": "harness_gym.evaluation.open_loop (beam searches + hill climb, train split)",
            "searches": [{"beam": b, "screen_rollouts": r} for b, r in SEARCHES],
            "refine": REFINE,
            "climb_rounds": CLIMB_ROUNDS,
            "seeds": list(EVAL_SEEDS),
            "rollouts": EVAL_ROLLOUTS,
            "executor_profile": "default",
            "command": command
            + ("" if obs_layout == "v1" else f" --obs-layout {obs_layout}")
            + (f" --token-price {token_price:g}" if token_price else ""),
            **({} if obs_layout == "v1" else {"obs_layout": obs_layout}),
            **({"token_price": token_price} if token_price else {}),
        },
        "strings": dict(sorted(strings.items())),
    }
    layouts = {**read_layouts(path), table_key(obs_layout, token_price): table}
    data = layouts["v1"] if set(layouts) == {"v1"} else layouts  # v1 alone: the one-table file as before
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
