"""Coding verifier speed under each isolation, side by side: CPU and wall time per artifact of the terminal
judgement (``artifact_scores``), and coding steps/s with the random legal policy.

Variants (``HARNESS_GYM_SANDBOX`` / ``HARNESS_GYM_SANDBOX_POOL``, read on every call, so one process
measures all of them, alternating round by round):

- ``process``: the in-process sandbox alone (a fresh interpreter per artifact, rlimits, audit hook);
- ``zygote``: the operating-system boundary, default pool (a fork per artifact from a sandboxed zygote);
- ``fresh``: the boundary with a fresh bubblewrap sandbox per artifact.

Every artifact of the first ``--tasks`` coding tasks (the reference and every pool entry) is scored with
the verifier's result cache cleared, so each one really runs in the sandbox (syntax errors, and unsafe
code the verifier refuses to run, cost next to nothing). The pools are closed at the end of every round
and their start and stop are counted. Steps/s: ``--steps`` steps of ``HarnessCoding-v0`` with random
legal actions and every cache cleared first (a cold start, as a fresh process has). CPU is this process's
plus its finished children's; it is less disturbed by other load than wall time. The best of ``--rounds``
rounds is reported (the ``timeit`` convention).

    python benchmarks/verifier_speed.py [--tasks 20] [--rounds 3] [--steps 1500] [--variants process zygote]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np

import harness_gym  # noqa: F401  (registers the ids)
from harness_gym.core.task import packaged_task_file, read_jsonl
from harness_gym.domains.coding import generate, verifier
from harness_gym.envs.domain import VERIFIER_CACHE
from harness_gym.sandbox import close_pools

VARIANTS = {
    "process": {"HARNESS_GYM_SANDBOX": "process"},
    "zygote": {"HARNESS_GYM_SANDBOX": "namespaces", "HARNESS_GYM_SANDBOX_POOL": "zygote"},
    "fresh": {"HARNESS_GYM_SANDBOX": "namespaces", "HARNESS_GYM_SANDBOX_POOL": "fresh"},
}


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(variant: str, work: Callable[[], int]) -> tuple[float, float, int]:
    """Wall and CPU seconds of ``work`` under ``variant`` (pools started and closed inside), and its count."""
    os.environ.update(VARIANTS[variant])
    close_pools()
    start, cpu = time.perf_counter(), _cpu_seconds()
    count = work()
    close_pools()
    return time.perf_counter() - start, _cpu_seconds() - cpu, count


def score_artifacts(tasks: list, pools: bool = True) -> int:
    """Score every artifact of ``tasks`` with the verifier cache cleared; the number scored."""
    artifacts = [
        (task.payload, source)
        for task in tasks
        for source in [task.payload["reference"], *(e["source"] for e in task.payload["pool"] if pools)]
    ]
    verifier.clear_cache()
    for payload, source in artifacts:
        verifier.artifact_scores(payload, source)
    return len(artifacts)


def random_steps(steps: int, seed: int = 0) -> int:
    """``steps`` random legal steps of ``HarnessCoding-v0`` from cold caches."""
    verifier.clear_cache()
    VERIFIER_CACHE._store.clear()
    env = gym.make("HarnessCoding-v0")
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    for _ in range(steps):
        legal = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(legal[rng.integers(len(legal))]))
        if terminated or truncated:
            _, info = env.reset()
    env.close()
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20, help="first N coding tasks")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1500, help="random legal steps per round (0: skip)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    args = parser.parse_args()
    tasks = read_jsonl(packaged_task_file(generate.TASK_FILE))[: args.tasks]
    works = {
        "references and pools": lambda: score_artifacts(tasks, True),
        "references only": lambda: score_artifacts(tasks, False),
    }
    if args.steps:
        works["coding steps, random legal policy"] = lambda: random_steps(args.steps)
    best: dict[tuple[str, str], tuple[float, float, int]] = {}
    for _ in range(args.rounds):
        for label, work in works.items():
            for variant in args.variants:
                wall, cpu, count = _timed(variant, work)
                old = best.get((label, variant), (float("inf"), float("inf"), count))
                best[label, variant] = (min(old[0], wall), min(old[1], cpu), count)
    print(f"{os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for (label, variant), (wall, cpu, count) in best.items():
        if label.startswith("coding steps"):
            print(
                f"{label} [{variant}]: {count} steps, best of {args.rounds}: {count / wall:.0f} steps/s, "
                f"{cpu:.2f} CPU-s ({cpu / count * 1000:.2f} ms CPU per step)"
            )
        else:
            print(
                f"{label} [{variant}]: {count} artifacts, best of {args.rounds}: "
                f"{wall / count * 1000:.1f} ms wall, {cpu / count * 1000:.1f} ms CPU each"
            )


if __name__ == "__main__":
    main()
