"""Digests of fixed episodes in every setting: what a change to the step path must leave unchanged.

Plays, for every id of ``harness_gym.ALL_ENV_IDS``, a few episodes under each of a few policies (random
legal actions, random actions legal or not, a fixed cycle of operations, random legal actions under a
token budget, submitting only once nothing else is legal) with fixed seeds, and hashes everything an
episode yields: every action, observation (its bytes), reward, ``terminated``/``truncated`` and ``info``
(canonical JSON, findings with their component; the final info's ``sandbox``, the machine's isolation,
left out). One digest per (id, policy).

``tests/test_episode_digests.py`` recomputes them against ``tests/data/episode_digests.json``; a speed
change of the step path keeps that test green. Rewrite the file only for a change meant to alter
episodes (a mechanism change, which also bumps ``SIMULATOR_VERSION``):

    python benchmarks/episode_digests.py [--write tests/data/episode_digests.json] [--ids ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Any

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.executors.base import Finding

EPISODES = 4
"""Episodes per (id, policy); reset seeds 0, 1, ... of one environment kept between them."""
CYCLE = (0, 1, 2, 3, 4, 5, 4, 6)
"""The fixed policy's operations in turn: OBSERVE RETRIEVE CALL_TOOL DRAFT CHECK REVISE CHECK SUBMIT."""
TOKEN_BUDGET = 600
POLICIES = ("random_legal", "random_any", "cycle", "random_legal_budget")


def canonical(value: Any) -> Any:
    """JSON-ready form of an info value (arrays with their dtype, findings with their component)."""
    if isinstance(value, Finding):
        return ["Finding", value.component, str(value)]
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(canonical(v) for v in value)
    if isinstance(value, np.ndarray):
        return ["ndarray", str(value.dtype), value.tolist()]
    if isinstance(value, np.generic):
        return ["np", str(value.dtype), value.item()]
    if isinstance(value, float):
        return ["f", value.hex()]
    return value


def info_bytes(info: dict[str, Any]) -> bytes:
    info = {k: v for k, v in info.items() if k != "sandbox"}
    return json.dumps(canonical(info), sort_keys=True).encode()


def digest(env_id: str, policy: str, episodes: int = EPISODES, split: str = "all") -> str:
    """sha256 of ``episodes`` episodes of ``env_id`` under ``policy`` (see the module docstring)."""
    kwargs: dict[str, Any] = {"split": split}
    if policy == "random_legal_budget":
        kwargs["token_budget"] = TOKEN_BUDGET
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(12345)
    n = env.action_space.n
    h = hashlib.sha256()
    try:
        for seed in range(episodes):
            obs, info = env.reset(seed=seed)
            h.update(obs.tobytes() + info_bytes(info))
            t, done = 0, False
            while not done:
                legal = np.flatnonzero(info["action_mask"])
                if policy == "random_any":
                    action = int(rng.integers(n))
                elif policy == "cycle":
                    action = CYCLE[t % len(CYCLE)]
                elif policy == "random_legal_budget" and len(legal) > 1:  # SUBMIT (6) is always legal
                    action = int(legal[rng.integers(len(legal) - 1)])
                else:
                    action = int(legal[rng.integers(len(legal))])
                obs, reward, terminated, truncated, info = env.step(action)
                h.update(
                    f"{action}|{float(reward).hex()}|{terminated}|{truncated}|".encode()
                    + obs.tobytes()
                    + info_bytes(info)
                )
                t += 1
                done = terminated or truncated
    finally:
        env.close()
    return h.hexdigest()


def all_digests(ids: list[str]) -> dict[str, dict[str, str]]:
    return {env_id: {policy: digest(env_id, policy) for policy in POLICIES} for env_id in ids}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ids", nargs="*", default=list(harness_gym.ALL_ENV_IDS), help="default: all")
    parser.add_argument("--write", help="write the digests to this JSON file")
    args = parser.parse_args()
    digests = all_digests(args.ids)
    text = json.dumps(digests, indent=2, sort_keys=True) + "\n"
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
