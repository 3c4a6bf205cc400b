"""Mutation testing of the files that decide scores, masks, containment and resumes (mutmut): a benchmark.

mutmut copies the package to ``mutants/``, records which tests call which function, then runs each mutant
of the modules below against only the tests that called the mutated function. The files mutated and the
test files that may kill them are ``[tool.mutmut]`` in ``pyproject.toml``; ``MODULES`` below names, per
reported module, which of the mutants count: every function of the file, except for three files of
which only the resume check is reported (``engine.py``, ``datasets/collect.py``, ``bench/runner.py``) and
the learners' predict paths of ``baselines/``. A surviving mutant is either killed by a test that states
the behaviour, or listed in ``benchmarks/mutation_equivalents.toml`` with a one-line reason why no test
can tell it from the original; equivalents are left out of the score.

Kills by the recorded episode digests do not count: ``tests/test_episode_digests.py`` pins every episode
bit for bit, so it fails on almost any change without stating a decision; it is never in the selection
(the script refuses to run if it is).

Out of reach, and so counted as survivors ("no tests") where no other test calls the code:

* the sandbox's bootstrap (``_sandbox_hook`` and the other functions inside ``runner._BOOTSTRAP``): it is
  a string run by the child interpreter, which mutmut does not mutate; ``tests/test_sandbox.py`` states
  its decisions (e.g. a sibling directory sharing the scratch directory's prefix is outside);
* the coding verifier's runs *in the sandbox*: the child's script embeds ``values.py``'s source, which
  mutmut rewrites to import mutmut, absent inside the sandbox (bubblewrap, no site-packages). The tests
  that run candidates there are deselected or skip themselves. The verifier's own functions
  (``execute_tests``, ``run_tests``, ``evaluate_calls``, ``_judge_code``, ``structural_check``,
  ``artifact_scores``) are still reached: ``tests/test_mutation_coding.py`` runs each of its verdict
  tests a second time with the child's script run unsandboxed by the test's interpreter, where mutmut
  can be imported; every verdict is decided on the host side, from the child's plain output.

    python benchmarks/mutation.py                 # a fresh run, then the table (an hour or more on 2 cores)
    python benchmarks/mutation.py --report-only   # the table of the last run in mutants/
    python benchmarks/mutation.py --write benchmarks/mutation_results.md

The run is niced (nice 10: the machine is shared); it exits 1 when a module scores under ``TARGET`` or
an equivalent is listed that is no longer a surviving mutant (a changed source renumbers mutants: recheck
the list then).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = ROOT / "benchmarks" / "mutation_equivalents.toml"
RUN_LOG = ROOT / "mutmut-run.log"
TARGET = 0.90
"""Fraction of the non-equivalent mutants each module's tests must kill."""


def _functions(module: str, *names: str) -> tuple[str, ...]:
    """Globs of the mutants of these functions (``Class.method`` for a method) of ``module``."""
    out = []
    for name in names:
        cls, _, method = name.rpartition(".")
        out.append(f"{module}.xǁ{cls}ǁ{method}__mutmut_*" if cls else f"{module}.x_{name}__mutmut_*")
    return tuple(out)


MODULES: dict[str, tuple[str, ...]] = {
    "core/hms.py": ("harness_gym.core.hms.*",),
    "core/rubric.py": ("harness_gym.core.rubric.*",),
    "core/state.py": ("harness_gym.core.state.*",),
    "domains/coding/values.py": ("harness_gym.domains.coding.values.*",),
    "domains/coding/verifier.py": ("harness_gym.domains.coding.verifier.*",),
    "domains/planning/world.py": ("harness_gym.domains.planning.world.*",),
    "domains/knowledge_work/verifier.py": ("harness_gym.domains.knowledge_work.verifier.*",),
    "domains/research/verifier.py": ("harness_gym.domains.research.verifier.*",),
    "domains/multi_tool/verifier.py": ("harness_gym.domains.multi_tool.verifier.*",),
    "domains/long_memory/verifier.py": ("harness_gym.domains.long_memory.verifier.*",),
    "domains/tau_retail/verifier.py": ("harness_gym.domains.tau_retail.verifier.*",),
    "domains/dbbench/verifier.py": ("harness_gym.domains.dbbench.verifier.*",),
    "sandbox/runner.py (host side)": ("harness_gym.sandbox.runner.*",),
    "sandbox/layout.py": ("harness_gym.sandbox.layout.*",),
    "datasets/manifest.py": ("harness_gym.datasets.manifest.*",),
    "bench/leaderboard.py": ("harness_gym.bench.leaderboard.*",),
    "evaluation/aggregate.py": ("harness_gym.evaluation.aggregate.*",),
    "evaluation/results.py": ("harness_gym.evaluation.results.*",),
    "evaluation/protocol.py": ("harness_gym.evaluation.protocol.*",),
    "evaluation/scoring.py": ("harness_gym.evaluation.scoring.*",),
    "evaluation/engine.py (resume check)": (
        *_functions("harness_gym.evaluation.engine", "_flat", "differences", "config_key", "check_manifest"),
        "harness_gym.evaluation.engine.xǁCheckpointsǁ*",
    ),
    "datasets/collect.py (resume check)": _functions(
        "harness_gym.datasets.collect",
        "CollectConfig.content_key",
        "checkpoint_dir",
        "max_tokens_changes",
        "_open_checkpoints",
    ),
    "bench/runner.py (resume key)": _functions("harness_gym.bench.runner", "BenchConfig.content_key"),
    "baselines/legal.py": ("baselines.legal.*",),
    "baselines/{iql,awr,bcq,sac}.py (predict paths)": (
        *_functions(
            "baselines.iql",
            "DiscreteIQLImpl._dist",
            "DiscreteIQLImpl.inner_predict_best_action",
            "DiscreteIQLImpl.inner_sample_action",
            "DiscreteIQLImpl.inner_predict_value",
        ),
        *_functions(
            "baselines.awr",
            "DiscreteAWRImpl._dist",
            "DiscreteAWRImpl.inner_predict_best_action",
            "DiscreteAWRImpl.inner_sample_action",
            "DiscreteAWRImpl.inner_predict_value",
        ),
        *_functions("baselines.bcq", "MaskedDiscreteBCQImpl.inner_predict_best_action"),
        *_functions(
            "baselines.sac",
            "MaskedDiscreteSACImpl.inner_predict_best_action",
            "MaskedDiscreteSACImpl.inner_sample_action",
        ),
    ),
}
KILLED = {"killed", "timeout", "caught by type check"}
DIGESTS = "tests/test_episode_digests.py"
"""Never in the selection: its kills state no decision."""


def check_selection() -> None:
    """Refuse a test selection that holds the episode digests (their kills would count)."""
    mutmut_config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    if any(DIGESTS in arg for arg in mutmut_config["pytest_add_cli_args_test_selection"]):
        sys.exit(f"{DIGESTS} is in [tool.mutmut]'s test selection: its kills state no decision; remove it")


def mutmut(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "mutmut", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def run(children: int) -> None:
    """A fresh mutmut run over ``MODULES``, niced (the machine is shared)."""
    shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    globs = [glob for patterns in MODULES.values() for glob in patterns]
    command = [
        "nice",
        "-n",
        "10",
        sys.executable,
        "-m",
        "mutmut",
        "run",
        "--max-children",
        str(children),
        *globs,
    ]
    # mutmut forks its children from a process that has run torch: with several torch threads a forked
    # child can hang in a BCQ/AWR test, and a timeout counts as a kill. One thread each avoids false kills.
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with RUN_LOG.open("w") as log:  # mutmut reports a failing run (e.g. a test failing unmutated) on stdout
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        tail = RUN_LOG.read_text(errors="replace").replace("\r", "\n").strip()[-3000:]
        sys.exit(f"mutmut run failed ({done.returncode}; its output: {RUN_LOG}):\n{tail}")


def statuses() -> dict[str, str]:
    """Mutant name -> mutmut status, of the last run."""
    done = mutmut("results", "--all", "true")
    if done.returncode != 0:
        sys.exit(f"mutmut results failed: {done.stderr.strip()[-2000:]}")
    out = {}
    for line in done.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name.startswith(("harness_gym.", "baselines.")):
            out[name] = status
    return out


def durations() -> dict[str, float]:
    """Mutant name -> seconds its test run took (mutmut's ``.meta`` files of the last run)."""
    out: dict[str, float] = {}
    for meta in (ROOT / "mutants").rglob("*.meta"):
        out.update(json.loads(meta.read_text()).get("durations_by_key", {}))
    return out


def table(
    found: dict[str, str], equivalent: dict[str, str], seconds: dict[str, float] | None = None
) -> tuple[str, list[str]]:
    """The per-module Markdown table, and the problems (modules under target, stale equivalents).

    A mutant the run did not reach (``not checked``, e.g. an interrupted run) is counted apart and left
    out of the score; the problems name it. ``test s`` sums the module's mutants' test runs (seconds of
    wall time in one child; the children run side by side)."""
    seconds = seconds or {}
    rows = [
        "| module | mutants | killed | equivalent | survived | not run | score | test s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    problems = []
    for module, patterns in MODULES.items():
        names = [n for n in found if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
        counts = Counter("equivalent" if n in equivalent else found[n] for n in names)
        killed = sum(counts[s] for s in KILLED)
        unchecked = counts["not checked"]
        counted = len(names) - counts["equivalent"] - unchecked
        survived = counted - killed
        score = killed / counted if counted else 1.0
        spent = sum(seconds.get(n, 0.0) for n in names)
        rows.append(
            f"| `{module}` | {len(names)} | {killed} | {counts['equivalent']} | {survived} | {unchecked} "
            f"| {100 * score:.1f}% | {spent:.0f} |"
        )
        if unchecked:
            problems.append(f"{module}: {unchecked} mutants not run")
        if score < TARGET:
            problems.append(f"{module}: {100 * score:.1f}% killed, under the {100 * TARGET:.0f}% target")
        for name in names:
            if name not in equivalent and found[name] not in KILLED | {"not checked"}:
                problems.append(f"survivor {name} ({found[name]})")
    for name in equivalent:
        if found.get(name) in KILLED or name not in found:
            problems.append(f"listed as equivalent but {found.get(name, 'absent')}: {name}")
    return "\n".join(rows), problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--report-only", action="store_true", help="read the last run in mutants/, run nothing"
    )
    parser.add_argument("--children", type=int, default=2, help="mutants run in parallel (default 2)")
    parser.add_argument("--write", type=Path, help="also write the table to this Markdown file")
    args = parser.parse_args()
    os.chdir(ROOT)
    check_selection()
    if not args.report_only:
        run(args.children)
    equivalent = tomllib.loads(EQUIVALENTS.read_text())["equivalent"]
    text, problems = table(statuses(), equivalent, durations())
    print(text)
    for problem in problems:
        print(problem, file=sys.stderr)
    if args.write:
        args.write.write_text(text + "\n")
    return 1 if any(("target" in p or "equivalent" in p or "not run" in p) for p in problems) else 0


if __name__ == "__main__":
    sys.exit(main())
