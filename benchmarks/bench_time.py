"""CPU-seconds, wall time per phase and peak memory of ``harness-gym bench``: ``--quick``, one setting.

Issue 12's budget: the full bench (8 settings x 10 algorithms x 3 seeds) <= 600 s on 2 cores and
<= 1.5 GB, ``--quick`` <= 90 s; issue 27's: the full bench <= 1,000 CPU-seconds. Two settings run at
once (``workers=2``), one per core, so one setting gets 600 s x 2 cores / 8 settings = 150 s of one core
(``SETTING_TARGET_S``), collection included.

Each run is a fresh subprocess (nothing imported yet, like a user's first run); peak memory is the
largest sum of the resident sets of that process and its descendants, sampled every 0.1 s
(``protocol.tree_rss_mb``). Per-phase times are the ``timings`` each setting records (collect_s,
evaluate_s, train_s, curves_s, statistics_s, total_s). Other processes on the machine slow every
phase alike: compare runs made in one sitting, or read the phases as shares of the total.

CPU-seconds (user + system of the bench process and every process it waited for: its setting processes
and their sandbox children) are the figure to compare between runs and machines: wall time also counts
what else the machine ran. Each run prints them beside the wall time, with the machine (cores, CPU model)
and the load average before and after. CPU-seconds still differ between machines of one kind (about 2x
was seen between two 2-core virtual machines), so a figure from one machine is that machine's.

    python benchmarks/bench_time.py [--setting HarnessKnowledgeWork-v0] [--skip-setting] [--full]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from protocol import tree_rss_mb

TARGETS_S = {"quick": 90.0, "full": 600.0}
FULL_CPU_TARGET_S = 1000.0
SETTING_TARGET_S = 150.0
MEMORY_TARGET_MB = 1536.0


def machine() -> str:
    """Cores and CPU model of this machine."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}"


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def children_cpu_s() -> float:
    """User + system seconds of every child process waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_bench(extra: list[str], out: Path) -> tuple[float, float, float, dict]:
    """(wall seconds, CPU-seconds, peak MB, results.json) of ``harness-gym bench --out OUT --quiet EXTRA``.

    The CPU-seconds include the setting processes and sandbox runs: each is waited for by its parent."""
    cmd = [sys.executable, "-m", "harness_gym.cli", "bench", "--out", str(out), "--quiet", *extra]
    cpu = children_cpu_s()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, tree_rss_mb(proc.pid))
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    cpu = children_cpu_s() - cpu
    if proc.returncode != 0:
        tail = (proc.stderr.read() if proc.stderr else "").strip().splitlines()[-5:]
        raise SystemExit(f"bench {' '.join(extra)} failed ({proc.returncode}):\n" + "\n".join(tail))
    return seconds, cpu, peak, json.loads((out / "results.json").read_text())


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


def report(name: str, seconds: float, cpu: float, peak: float, target: float, results: dict) -> None:
    cpu_target = FULL_CPU_TARGET_S if name == "full" else float("inf")
    ok = seconds <= target and peak <= MEMORY_TARGET_MB and cpu <= cpu_target
    cpu_note = f" (target {cpu_target:.0f})" if name == "full" else ""
    print(
        f"{name}: {cpu:.1f} CPU-s{cpu_note} (user + sys, children included), {seconds:.1f} s wall "
        f"(target {target:.0f} s), peak {peak:.0f} MB (target {MEMORY_TARGET_MB:.0f} MB): "
        f"{'ok' if ok else 'OVER TARGET'}"
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
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, extra, target) in enumerate(runs):
            before = load()
            seconds, cpu, peak, results = timed_bench(extra, Path(tmp) / str(i))
            print(f"load average (1, 5, 15 min) before {before}, after {load()}")
            report(name, seconds, cpu, peak, target, results)


if __name__ == "__main__":
    main()
