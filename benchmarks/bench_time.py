"""Wall time per phase and peak memory of ``harness-gym bench``: ``--quick`` and one full setting.

Issue 12's budget: the full bench (8 settings x 10 algorithms x 3 seeds) <= 600 s on 2 cores and
<= 1.5 GB, ``--quick`` <= 90 s. Two settings run at once (``workers=2``), one per core, so one setting
gets 600 s x 2 cores / 8 settings = 150 s of one core (``SETTING_TARGET_S``), collection included.

Each run is a fresh subprocess (nothing imported yet, like a user's first run); peak memory is the
largest sum of the resident sets of that process and its descendants, sampled every 0.1 s
(``protocol.tree_rss_mb``). Per-phase times are the ``timings`` each setting records (collect_s,
evaluate_s, train_s, curves_s, statistics_s, total_s). Other processes on the machine slow every
phase alike: compare runs made in one sitting, or read the phases as shares of the total.

    python benchmarks/bench_time.py [--setting HarnessKnowledgeWork-v0] [--skip-setting] [--full]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from protocol import tree_rss_mb

TARGETS_S = {"quick": 90.0, "full": 600.0}
SETTING_TARGET_S = 150.0
MEMORY_TARGET_MB = 1536.0


def timed_bench(extra: list[str], out: Path) -> tuple[float, float, dict]:
    """(wall seconds, peak MB, results.json) of ``harness-gym bench --out OUT --quiet EXTRA``."""
    cmd = [sys.executable, "-m", "harness_gym.cli", "bench", "--out", str(out), "--quiet", *extra]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, tree_rss_mb(proc.pid))
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr.read() if proc.stderr else "").strip().splitlines()[-5:]
        raise SystemExit(f"bench {' '.join(extra)} failed ({proc.returncode}):\n" + "\n".join(tail))
    return seconds, peak, json.loads((out / "results.json").read_text())


def phase_table(results: dict) -> list[str]:
    """One line per setting with its phases, then the sum over settings."""
    settings = {env: s.get("timings", {}) for env, s in results["settings"].items()}
    keys = list(dict.fromkeys(k for t in settings.values() for k in t))
    lines = [f"  {'setting':<26}" + "".join(f"{k:>13}" for k in keys)]
    for env, timings in settings.items():
        lines.append(f"  {env:<26}" + "".join(f"{timings.get(k, float('nan')):>13.1f}" for k in keys))
    if len(settings) > 1:
        sums = [sum(t.get(k, 0.0) for t in settings.values()) for k in keys]
        lines.append(f"  {'sum':<26}" + "".join(f"{v:>13.1f}" for v in sums))
    return lines


def report(name: str, seconds: float, peak: float, target: float, results: dict) -> None:
    ok = seconds <= target and peak <= MEMORY_TARGET_MB
    print(
        f"{name}: {seconds:.1f} s (target {target:.0f} s), peak {peak:.0f} MB "
        f"(target {MEMORY_TARGET_MB:.0f} MB): {'ok' if ok else 'OVER TARGET'}"
    )
    print("\n".join(phase_table(results)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--setting", default="HarnessKnowledgeWork-v0", help="the full setting timed")
    parser.add_argument("--skip-setting", action="store_true", help="only time --quick")
    parser.add_argument("--full", action="store_true", help="also time the whole bench (8 settings)")
    args = parser.parse_args()
    runs = [("quick", ["--quick"], TARGETS_S["quick"])]
    if not args.skip_setting:
        runs.append((f"setting {args.setting}", ["--settings", args.setting], SETTING_TARGET_S))
    if args.full:
        runs.append(("full", [], TARGETS_S["full"]))
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, extra, target) in enumerate(runs):
            seconds, peak, results = timed_bench(extra, Path(tmp) / str(i))
            report(name, seconds, peak, target, results)


if __name__ == "__main__":
    main()
