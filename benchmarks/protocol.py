"""Wall time and peak memory of the whole protocol: ``harness-gym bench`` and ``bench --quick``.

Each run is a fresh subprocess (cold verifier caches, nothing imported yet); peak memory is the largest
resident set of that process and its collection workers (``RUSAGE_CHILDREN``). Targets (DESIGN §10):
full bench <= 300 s and --quick <= 60 s on a 2-core CPU, peak memory <= 1.5 GB.

    python benchmarks/protocol.py [--skip-full]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time

TARGETS = {"quick": 60.0, "full": 300.0}
MEMORY_TARGET_MB = 1536.0


def timed_bench(extra: list[str], out: str) -> tuple[float, float]:
    cmd = [sys.executable, "-m", "harness_gym.cli", "bench", "--out", out, "--quiet", *extra]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


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
