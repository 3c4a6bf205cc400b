"""Environment throughput: steps/s of every registered id as a ratio of ``CartPole-v1``'s.

All envs run in this process through the same loop (``gym.make``, random legal actions, reset on
episode end), so the ratios cancel machine speed. Verifier caches are warmed by an identical pass
first (DESIGN §10: coding is measured with a warm cache).

    python benchmarks/throughput.py [--steps 20000] [--split eval]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.domains.base import VERIFIER_CACHE

TARGETS = {"HarnessCoding-v0": 0.1}
DEFAULT_TARGET = 0.3


def steps_per_second(env_id: str, steps: int, seed: int = 0, **kwargs) -> float:
    env = gym.make(env_id, **kwargs)
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    all_legal = np.ones(env.action_space.n, dtype=np.int8)
    start = time.perf_counter()
    for _ in range(steps):
        legal = np.flatnonzero(info.get("action_mask", all_legal))
        _, _, terminated, truncated, info = env.step(int(legal[rng.integers(len(legal))]))
        if terminated or truncated:
            _, info = env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    args = parser.parse_args()

    cartpole = steps_per_second("CartPole-v1", args.steps)
    print(f"{'env':<22} {'steps/s':>10} {'ratio':>7} {'target':>7}  cache hit rate")
    print(f"{'CartPole-v1':<22} {cartpole:>10.0f} {1.0:>7.2f}")
    for env_id in harness_gym.ENV_IDS:
        steps_per_second(env_id, args.steps, split=args.split)  # warm the verifier cache
        hits, misses = VERIFIER_CACHE.hits, VERIFIER_CACHE.misses
        rate = steps_per_second(env_id, args.steps, split=args.split)
        new_hits, new_misses = VERIFIER_CACHE.hits - hits, VERIFIER_CACHE.misses - misses
        hit_rate = new_hits / max(1, new_hits + new_misses)
        target = TARGETS.get(env_id, DEFAULT_TARGET)
        ratio = rate / cartpole
        verdict = "ok" if ratio >= target else "BELOW TARGET"
        print(f"{env_id:<22} {rate:>10.0f} {ratio:>7.3f} {target:>7.2f}  {hit_rate:.3f}  {verdict}")


if __name__ == "__main__":
    main()
