"""Filtered behaviour cloning from a published tier, scored against Base on the protocol.

Run: ``python examples/filtered_bc.py`` (about 45 CPU-seconds with the tier's build; ``--tier``, ``--env``
and ``--keep`` vary it). The tier is pulled first (from a Minari remote if one is configured, else built
locally; checked against the shipped manifest either way). The learner is a linear score per action fitted
by least squares to the actions of the best episodes (one closed-form fit: no gradient steps, no seed), and
it plays the legal action of highest score. Its output on ``medium-expert`` and on ``mixed``, and why the
second equals Base: ``docs/worked-example.md``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np

import harness_gym


def fit(dataset_id: str, keep: float) -> np.ndarray:
    """Least-squares weights (31 x 7) mapping an observation to a score per action, fitted to the actions
    of the top ``keep`` fraction of the dataset's episodes by G."""
    import minari

    dataset = minari.load_dataset(dataset_id)
    episodes = sorted(dataset.iterate_episodes(), key=lambda ep: -ep.infos["G"][-1])
    best = episodes[: max(1, int(len(episodes) * keep))]
    X = np.concatenate([ep.observations[:-1] for ep in best])  # T + 1 observations, T actions
    Y = np.eye(dataset.action_space.n)[np.concatenate([ep.actions for ep in best])]
    print(f"{dataset_id}: kept {len(best)} of {len(episodes)} episodes, {len(X)} steps")
    return np.linalg.lstsq(X, Y, rcond=None)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="HarnessPlanning-v0")
    parser.add_argument("--tier", default="medium-expert")
    parser.add_argument("--keep", type=float, default=0.25, help="fraction of episodes kept, best G first")
    args = parser.parse_args()
    from harness_gym.datasets.tiers import tier_id

    dataset_id = tier_id(args.env, args.tier)
    subprocess.run(
        [sys.executable, "-m", "harness_gym.cli", "datasets", "pull", dataset_id, "--quiet"], check=True
    )
    W = fit(dataset_id, args.keep)

    def policy(obs: np.ndarray, mask: np.ndarray) -> int:
        return int(np.where(mask, obs @ W, -np.inf).argmax())

    score = harness_gym.evaluate_policy(policy, args.env, name=f"filtered-bc-{args.tier}")
    print(score.summary())


if __name__ == "__main__":
    main()
