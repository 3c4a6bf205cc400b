"""Wall time and peak memory of the whole protocol: ``harness-gym bench`` and ``bench --quick``.

Each run is a fresh subprocess (cold verifier caches, nothing imported yet); peak memory is the largest
sum of the resident sets of that process and all its descendants (the bench runs settings in parallel
worker processes), sampled from /proc every 0.1 s. Targets (DESIGN §10):
full bench <= 300 s and --quick <= 60 s on a 2-core CPU, peak memory <= 1.5 GB.

    python benchmarks/protocol.py [--skip-full]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

TARGETS = {"quick": 60.0, "full": 300.0}
MEMORY_TARGET_MB = 1536.0


def tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and every descendant, in MB (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    total_kb = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status") as handle:
                total_kb += next((int(line.split()[1]) for line in handle if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
    return total_kb / 1024


def timed_bench(extra: list[str], out: str) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "harness_gym.cli", "bench", "--out", out, "--quiet", *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, tree_rss_mb(proc.pid))
        time.sleep(0.1)
    if proc.returncode != 0:
        raise SystemExit(f"bench {' '.join(extra)} failed with exit code {proc.returncode}")
    return time.perf_counter() - start, peak


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--skip-full", action="store_true", help="only time --quick")
    args = parser.parse_args()
    runs = [("quick", ["--quick"])] + ([] if args.skip_full else [("full", [])])
    print(f"{'run':<6} {'seconds':>8} {'target':>7} {'peak MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, extra in runs:
            seconds, peak = timed_bench(extra, f"{tmp}/{name}")
            ok = seconds <= TARGETS[name] and peak <= MEMORY_TARGET_MB
            print(
                f"{name:<6} {seconds:>8.1f} {TARGETS[name]:>7.0f} {peak:>8.0f}  "
                + ("ok" if ok else "OVER TARGET")
            )


if __name__ == "__main__":
    main()
