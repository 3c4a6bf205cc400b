"""Mutation testing of the logic that decides scores, masks and resumes (mutmut): a benchmark, not a test.

mutmut copies the package to ``mutants/``, records which tests call which function, then runs each mutant
of the modules below against only the tests that called the mutated function. The files mutated and the
test files that may kill them are ``[tool.mutmut]`` in ``pyproject.toml``; ``MODULES`` below names, per
reported module, which of the mutants count (all of a module, or the functions that decide a score, a
CHECK verdict, the engine's resume check or the paired statistics in ``evaluation/protocol.py``). A
surviving mutant is either killed by a test that states the behaviour, or listed in
``benchmarks/mutation_equivalents.toml`` with a one-line reason why no test can tell it from the original;
equivalents are left out of the score.

Out of reach: the coding sandbox's child. Its script embeds ``values.py``'s source, which mutmut rewrites to
import mutmut, absent inside the sandbox (bubblewrap, no site-packages); the tests that run candidates in
the sandbox are therefore deselected and only the verifier's in-process judging is mutated (reading the
child's records, judging a data test, the safety scan, signatures, test validation, credited tests).

    python benchmarks/mutation.py                 # a fresh run, then the table (about 20 minutes on 2 cores)
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
    "domains/coding/verifier.py (scoring)": _functions(
        "harness_gym.domains.coding.verifier",
        "TestReport.pass_rate",
        "validate_test",
        "_read_records",
        "judge",
        "safety_violations",
        "_parameters",
        "signature_ok",
        "StructuralReport.coverage",
        "_inputs",
        "credited_tests",
    ),
    "domains/planning/world.py (validator)": _functions(
        "harness_gym.domains.planning.world",
        "parse_plan",
        "PlanReport.progress",
        "PlanReport.valid",
        "PlanReport.issues",
        "_max_steps_violations",
        "BlocksWorld.run",
        "BlocksWorld.goal_report",
        "LogisticsWorld.run",
        "LogisticsWorld.goal_report",
        "validate_world",
        "scores_from_report",
    ),
    "domains/knowledge_work/verifier.py (scoring)": _functions(
        "harness_gym.domains.knowledge_work.verifier",
        "_present",
        "_one_figure",
        "claims_of",
        "_supports",
        "_claimed",
        "support_fraction",
        "notes_conflict",
        "criteria_for",
        "artifact_scores",
        "observable_check",
    ),
    "domains/research/verifier.py (scoring)": _functions(
        "harness_gym.domains.research.verifier",
        "_number",
        "answers_match",
        "cited_documents",
        "hop_support",
        "supported_fraction",
        "citation_quality",
        "grade",
        "artifact_scores",
        "structural_check",
    ),
    "domains/multi_tool/verifier.py (scoring)": _functions(
        "harness_gym.domains.multi_tool.verifier",
        "AnswerSpec.tolerance",
        "tolerance",
        "Parsed.format_score",
        "number_matches",
        "artifact_scores",
        "tool_use_score",
        "score",
        "claim_support",
        "unconnected",
    ),
    "domains/long_memory/verifier.py (scoring)": _functions(
        "harness_gym.domains.long_memory.verifier",
        "normalize",
        "contains_value",
        "artifact_scores",
        "claim_support",
        "_stated_timeline",
        "review",
    ),
    "domains/tau_retail/verifier.py (scoring)": _functions(
        "harness_gym.domains.tau_retail.verifier",
        "candidate_listing",
        "_form",
        "rival_figures",
        "rubric_outputs_found",
        "policy_issues",
        "artifact_scores",
        "native",
    ),
    "domains/dbbench/verifier.py (scoring)": _functions(
        "harness_gym.domains.dbbench.verifier",
        "_dump_issues",
        "_code",
        "evaluate",
        "artifact_scores",
    ),
    "evaluation/aggregate.py": ("harness_gym.evaluation.aggregate.*",),
    "evaluation/protocol.py (paired statistics)": _functions(
        "harness_gym.evaluation.protocol",
        "_paired_differences",
        "_rng",
        "_batch",
        "mean_ci",
        "_ratio",
        "_bootstrap_ci",
        "_clustered",
        "paired_bootstrap_ci",
        "paired_permutation_p",
    ),
    "evaluation/engine.py (resume check)": (
        *_functions("harness_gym.evaluation.engine", "_flat", "differences", "check_manifest"),
        "harness_gym.evaluation.engine.xǁCheckpointsǁ*",
    ),
    "baselines/legal.py": ("baselines.legal.*",),
}
KILLED = {"killed", "timeout", "caught by type check"}


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
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"mutmut run failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


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
