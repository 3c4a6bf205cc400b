"""Environment throughput of two trees side by side: ``throughput.py`` run on each in turn, in one sitting.

A change must leave no setting slower than before it. Ratios to CartPole-v1 move with the machine and its
load, so the two trees are measured in alternating processes (old, new, old, new, ...) by the same
script (this tree's ``throughput.py``, with ``PYTHONPATH`` pointing at the tree under test), and only
figures of one sitting are compared. The table gives each id's CPU-based ratio to CartPole for the old
and the new tree (mean over the pairs, each run's figure in brackets) and the change.

    python benchmarks/throughput_compare.py c3339d6 [--new DIR] [--pairs 2] [--steps 4000] [--rounds 3]

``old`` (and ``--new``) is a directory holding a ``harness_gym`` package, or a git revision of this
repository, exported with ``git archive`` into a temporary directory. ``--new`` defaults to this tree.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SIMULATED = (
    "HarnessKnowledgeWork-v0",
    "HarnessResearch-v0",
    "HarnessMultiTool-v0",
    "HarnessLongMemory-v0",
    "HarnessPlanning-v0",
    "HarnessTauRetail-v0",
    "HarnessDBBench-v0",
)
"""The simulated settings (coding and HumanEval add sandbox runs and need ``--ids`` to be included)."""


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True).stdout.decode()


def resolve(tree: str, scratch: Path) -> tuple[Path, str]:
    """(directory holding ``harness_gym``, its description: a commit, or a path with HEAD and whether it
    has uncommitted changes)."""
    path = Path(tree)
    if (path / "harness_gym").is_dir():
        try:
            head = subprocess.run(
                ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], check=True, capture_output=True
            ).stdout.decode()
            dirty = subprocess.run(
                ["git", "-C", str(path), "status", "--porcelain", "--untracked-files=no"],
                check=True,
                capture_output=True,
            ).stdout.strip()
            return path.resolve(), f"{path} at {head.strip()}{' + uncommitted changes' if dirty else ''}"
        except (subprocess.CalledProcessError, FileNotFoundError):
            return path.resolve(), str(path)
    try:
        commit = git("rev-parse", "--verify", f"{tree}^{{commit}}").strip()
    except subprocess.CalledProcessError:
        raise SystemExit(f"{tree!r} is neither a directory with harness_gym nor a git revision") from None
    target = scratch / commit[:12]
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter="data")
    return target, f"commit {commit[:12]}"


def run(tree: Path, ids: list[str], args: argparse.Namespace) -> dict[str, float]:
    """One ``throughput.py`` process on ``tree``: id -> CPU ratio to CartPole."""
    command = [sys.executable, str(HERE / "throughput.py"), "--steps", str(args.steps)]
    command += ["--rounds", str(args.rounds), "--split", args.split, "--ids", *ids]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"throughput.py failed on {tree}:\n{done.stderr.strip()}")
    ratios = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if fields and fields[0] in ids:
            ratios[fields[0]] = float(fields[3])
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("old", help="the tree before the change: a directory or a git revision")
    parser.add_argument("--new", default=str(REPO), help="the tree after it (default: this one)")
    parser.add_argument("--pairs", type=int, default=2, help="(old, new) runs, alternating")
    parser.add_argument("--steps", type=int, default=4000, help="steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--split", default="eval", choices=["train", "eval", "all"])
    parser.add_argument("--ids", nargs="*", default=list(SIMULATED), help="default: the simulated settings")
    args = parser.parse_args()
    if args.pairs < 1:
        parser.error(f"--pairs must be at least 1, got {args.pairs}")

    with tempfile.TemporaryDirectory(prefix="throughput-compare-") as scratch:
        trees = [resolve(args.old, Path(scratch)), resolve(args.new, Path(scratch))]
        start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        loads = [os.getloadavg()]
        runs: list[list[dict[str, float]]] = [[], []]
        for _ in range(args.pairs):
            for side, (tree, _) in enumerate(trees):
                runs[side].append(run(tree, args.ids, args))
                loads.append(os.getloadavg())

    load = ", ".join(f"{x[0]:.2f}" for x in loads)
    print(f"{start}; {os.cpu_count()} cores; load average (1 min) before and after each run: {load}")
    print(f"old: {trees[0][1]}\nnew: {trees[1][1]}")
    print(
        f"throughput.py --steps {args.steps} --rounds {args.rounds} --split {args.split}; pairs: {args.pairs}"
    )
    print()
    print("| env | old CPU ratio | new CPU ratio | change |")
    print("|---|---:|---:|---:|")
    for env_id in args.ids:
        old, new = ([r[env_id] for r in side] for side in runs)
        mean_old, mean_new = sum(old) / len(old), sum(new) / len(new)
        cells = [
            f"{m:.3f} ({', '.join(f'{x:.3f}' for x in xs)})" for m, xs in ((mean_old, old), (mean_new, new))
        ]
        print(f"| `{env_id}` | {cells[0]} | {cells[1]} | {100 * (mean_new / mean_old - 1):+.1f}% |")


if __name__ == "__main__":
    main()
