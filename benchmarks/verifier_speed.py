"""Coding verifier speed: wall time per artifact of the terminal judgement (``artifact_scores``).

Every artifact of the first ``--tasks`` coding tasks (the reference and every pool entry) is scored with
the verifier's result cache cleared, so each one really runs in the sandbox (syntax errors, and unsafe
code where the verifier refuses to run it, cost next to nothing). The references alone are reported too:
every one of them runs every test. The time is dominated by starting the sandboxed interpreter. The best
of several rounds is reported (the ``timeit`` convention), so that a burst of load on a shared machine does
not decide the number.

    python benchmarks/verifier_speed.py [--tasks 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import resource
import time

from harness_gym.core.task import packaged_task_file, read_jsonl
from harness_gym.domains.coding import generate, verifier


def seconds_per_artifact(tasks: list, rounds: int, pools: bool = True) -> tuple[float, float, int]:
    """Best wall and best CPU seconds per artifact, and the number of artifacts."""
    artifacts = [
        (task.payload, source)
        for task in tasks
        for source in [
            task.payload["reference"],
            *(entry["source"] for entry in task.payload["pool"] if pools),
        ]
    ]
    best, best_cpu = float("inf"), float("inf")
    for _ in range(rounds):
        verifier.clear_cache()
        start, cpu = time.perf_counter(), _cpu_seconds()
        for payload, source in artifacts:
            verifier.artifact_scores(payload, source)
        best = min(best, (time.perf_counter() - start) / len(artifacts))
        best_cpu = min(best_cpu, (_cpu_seconds() - cpu) / len(artifacts))
    return best, best_cpu, len(artifacts)


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (less disturbed by other load than wall time)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=20, help="first N coding tasks")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tasks = read_jsonl(packaged_task_file(generate.TASK_FILE))[: args.tasks]
    for label, pools in (("references and pools", True), ("references only", False)):
        wall, cpu, count = seconds_per_artifact(tasks, args.rounds, pools)
        print(
            f"{label}: {count} artifacts, best of {args.rounds} rounds: "
            f"{wall * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU each"
        )


if __name__ == "__main__":
    main()
