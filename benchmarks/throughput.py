"""Environment throughput: steps/s of every registered id as a ratio of ``CartPole-v1``'s.

Every env runs in this process through the same loop (``gym.make``, random legal actions, reset on
episode end). Each id is measured in alternating rounds with CartPole and the best round of each is
compared (the ``timeit`` convention), so that a burst of load on a shared machine cannot decide a ratio.
Verifier caches are warmed by a full pass first (DESIGN §10: coding is measured with a warm cache).

    python benchmarks/throughput.py [--steps 10000] [--rounds 5] [--split eval]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import harness_gym
from harness_gym.envs.domain import VERIFIER_CACHE

TARGETS = {"HarnessCoding-v0": 0.1}
DEFAULT_TARGET = 0.3


class Runner:
    """One env and its random-legal-action loop, kept between rounds."""

    def __init__(self, env_id: str, seed: int = 0, **kwargs) -> None:
        self.env = gym.make(env_id, **kwargs)
        self.rng = np.random.default_rng(seed)
        self.all_legal = np.ones(self.env.action_space.n, dtype=np.int8)
        _, self.info = self.env.reset(seed=seed)

    def steps_per_second(self, steps: int) -> float:
        env, rng, info = self.env, self.rng, self.info
        start = time.perf_counter()
        for _ in range(steps):
            legal = np.flatnonzero(info.get("action_mask", self.all_legal))
            _, _, terminated, truncated, info = env.step(int(legal[rng.integers(len(legal))]))
            if terminated or truncated:
                _, info = env.reset()
        elapsed = time.perf_counter() - start
        self.info = info
        return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=10_000, help="steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    args = parser.parse_args()

    cartpole = Runner("CartPole-v1")
    print(f"{'env':<24} {'steps/s':>9} {'CartPole':>9} {'ratio':>6} {'target':>6}  cache hits")
    for env_id in harness_gym.ENV_IDS:
        runner = Runner(env_id, split=args.split)
        runner.steps_per_second(args.steps)  # warm the verifier cache
        hits, misses = VERIFIER_CACHE.hits, VERIFIER_CACHE.misses
        env_best = pole_best = 0.0
        for _ in range(args.rounds):
            pole_best = max(pole_best, cartpole.steps_per_second(args.steps))
            env_best = max(env_best, runner.steps_per_second(args.steps))
        new_hits, new_misses = VERIFIER_CACHE.hits - hits, VERIFIER_CACHE.misses - misses
        ratio = env_best / pole_best
        target = TARGETS.get(env_id, DEFAULT_TARGET)
        verdict = "ok" if ratio >= target else "BELOW TARGET"
        hit_rate = new_hits / max(1, new_hits + new_misses)
        print(
            f"{env_id:<24} {env_best:>9.0f} {pole_best:>9.0f} {ratio:>6.2f} {target:>6.2f}"
            f"  {hit_rate:.3f}  {verdict}"
        )


if __name__ == "__main__":
    main()
