"""Time to collect a published-size buffer (80 train tasks x 20 episodes, mixed behaviour).

Each collection runs in a fresh subprocess so verifier caches start cold, as on a new machine; the
wall time covers rollouts, checkpoints, the reference-score rollouts and the Minari write.

    python benchmarks/collection.py [--envs HarnessCoding-v0 HarnessPlanning-v0] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

from harness_gym.envs.registry import env_class


def time_collection(env_id: str, workers: int, root: str) -> float:
    domain = env_class(env_id).domain_cls.name
    cmd = [
        sys.executable, "-m", "harness_gym.cli", "collect", "--env", env_id, "--policy", "mixed",
        "--episodes", "1600", "--dataset-id", f"harness/{domain}/bench-w{workers}-v0",
        "--workers", str(workers), "--root", root, "--quiet",
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--envs", nargs="+", default=["HarnessCoding-v0", "HarnessPlanning-v0"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    args = parser.parse_args()
    print(f"{'env':<24} {'workers':>7} {'seconds':>8}  (1,600 episodes, cold caches)")
    with tempfile.TemporaryDirectory() as root:
        for env_id in args.envs:
            for workers in args.workers:
                print(f"{env_id:<24} {workers:>7} {time_collection(env_id, workers, root):>8.1f}")


if __name__ == "__main__":
    main()
