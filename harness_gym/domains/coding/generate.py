"""Deterministic generator of the coding task set (``harness_gym/data/coding-v0.jsonl``).

Each family of :mod:`problems` gives two tasks. Tests are data (arguments and the expected value, in the
verifier's format): the expected values come from running the reference on the visible, edge-case and
seeded random inputs. The artifact pool holds AST mutants that the verifier shows to fail at least one
hidden test (only hidden tests earn credit: ``verifier.credited_tests``), plus a syntax slip and a
harmless-but-forbidden import. Mutants are screened under a CPU-time limit (not a wall-clock one) so
that a loaded machine cannot change which are kept: regenerating gives a byte-identical file.

Run ``python -m harness_gym.domains.coding.generate`` to rewrite the file.
"""

from __future__ import annotations

import ast
import copy
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness_gym.core.task import packaged_task_file, stratified_split, write_jsonl
from harness_gym.domains.coding import values
from harness_gym.domains.coding.mutants import ast_mutants, syntax_error_variant, unsafe_import_variant
from harness_gym.domains.coding.problems import FAMILIES, Args, Problem, render
from harness_gym.domains.coding.screening import Screened, choose_mutants, normalize, screen_mutants
from harness_gym.domains.coding.verifier import execute_tests, safety_violations
from harness_gym.domains.generation import VERSION, task_record
from harness_gym.sandbox import SandboxLimits

TASK_FILE = f"coding-{VERSION}.jsonl"
HIDDEN_TARGET = 10
MIN_RANDOM = 2
# For the reference and unsafe-variant runs: one CPU second is ~30x what a test run needs, and the wall
# limit is generous so that only CPU time (not machine load) decides a timeout.
SCREEN_LIMITS = SandboxLimits(wall_time_s=20.0, cpu_time_s=1)


def _data_test(args: Args, expected: Any) -> dict[str, Any]:
    record = {"args": values.encode(list(args)), "expected": values.encode(expected)}
    for encoded, value in ((record["args"], list(args)), (record["expected"], expected)):
        if not values.same(values.decode(encoded), value):
            raise ValueError(f"value does not round-trip through the typed encoding: {value!r:.80}")
    return record


def _load(reference: str, function_name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {}
    exec(compile(reference, "<reference>", "exec"), namespace)
    return namespace[function_name]


def build_tests(problem: Problem) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Visible tests (the family's typical cases) and hidden tests (edge cases, then seeded random ones)."""
    family = problem.family
    func = _load(problem.reference, problem.function_name)
    seen: set[str] = set()

    def case(args: Args) -> dict[str, Any] | None:
        key = repr(args)
        if key in seen:
            return None
        try:
            expected = func(*copy.deepcopy(args))
        except Exception:
            return None
        seen.add(key)
        return _data_test(args, expected)

    visible = [case(problem.adapt(args)) for args in family.visible]
    if None in visible:
        raise ValueError(f"{family.name}: visible inputs must be distinct and valid")
    hidden = [test for args in family.edge if (test := case(problem.adapt(args)))]
    rng = random.Random(f"coding-{VERSION}/{family.name}/{problem.variant}")
    wanted = len(hidden) + max(MIN_RANDOM, HIDDEN_TARGET - len(hidden))
    for _ in range(500):
        if len(hidden) >= wanted:
            break
        if test := case(problem.adapt(family.gen(rng))):
            hidden.append(test)
    if not 8 <= len(hidden) <= 12:
        raise ValueError(f"{family.name}: {len(hidden)} hidden tests, expected 8 to 12")
    return [test for test in visible if test], hidden


def _special_variants(reference: str, problem: Problem, tests: list[dict], salt: int) -> list[dict[str, str]]:
    """The syntax slip and the unsafe import; the latter must still pass every test in the sandbox."""
    broken = syntax_error_variant(reference, salt)
    try:
        ast.parse(broken)
    except SyntaxError:
        pass
    else:
        raise ValueError(f"{problem.function_name}: syntax_error variant parses")
    for attempt in range(4):
        unsafe = unsafe_import_variant(reference, problem.function_name, salt + attempt) + "\n"
        report = execute_tests(unsafe, problem.function_name, tests, SCREEN_LIMITS)
        if report.passed == report.total and safety_violations(unsafe):
            break
    else:
        raise ValueError(f"{problem.function_name}: no unsafe_import variant passes the tests")
    return [{"flaw": "syntax_error", "source": broken}, {"flaw": "unsafe_import", "source": unsafe}]


def _problems() -> list[Problem]:
    return [render(family, index) for family in FAMILIES for index in range(len(family.variants))]


def generate_records(stats: dict[str, Any] | None = None, workers: int | None = None) -> list[dict[str, Any]]:
    """All task records in id order; ``stats`` (if given) receives mutant statistics."""
    problems = _problems()
    task_ids = [f"coding-{i:03d}" for i in range(len(problems))]
    items = [(tid, p.family.difficulty, p.family.name) for tid, p in zip(task_ids, problems, strict=True)]
    split = stratified_split(items, seed=0)
    prepared = []
    for problem in problems:
        reference = normalize(problem.reference)
        visible, hidden = build_tests(problem)
        mutants = [(kind, source + "\n") for kind, source in ast_mutants(reference, problem.function_name)]
        prepared.append((problem, reference, visible, hidden, mutants))

    workers = workers or max(2, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        reference_runs = [
            pool.submit(execute_tests, reference, p.function_name, visible + hidden, SCREEN_LIMITS)
            for p, reference, visible, hidden, _ in prepared
        ]
        screens = [
            pool.submit(screen_mutants, m, p.function_name, visible, hidden)
            for p, _, visible, hidden, m in prepared
        ]
        reference_reports = [future.result() for future in reference_runs]
        screened = [future.result() for future in screens]

    records = []
    kept_all: list[Screened] = []
    counters: Counter[str] = Counter()
    for index, (problem, reference, visible, hidden, _) in enumerate(prepared):
        task_id = task_ids[index]
        report = reference_reports[index]
        if report.passed != report.total:
            raise ValueError(f"{task_id}: reference fails its tests: {report}")
        results = screened[index]
        counters["enumerated"] += len(results)
        counters["timed_out"] += sum(m.timed_out for m in results)
        failing = [m for m in results if not m.timed_out and m.fails_hidden]
        counters["equivalent"] += sum(1 for m in results if not m.timed_out and not m.fails_some)
        counters["failing_visible_only"] += sum(1 for m in results if m.fails_some and not m.fails_hidden)
        counters["failing"] += len(failing)
        chosen = choose_mutants(failing, seed=f"coding-{VERSION}/pool/{task_id}")
        kept_all.extend(chosen)
        counters["tasks_with_plausible_mutant"] += any(m.passes_visible for m in chosen)
        counters["tasks_with_visible_failing_mutant"] += any(not m.passes_visible for m in chosen)
        pool_entries = [{"flaw": m.kind, "source": m.source} for m in chosen]
        pool_entries += _special_variants(reference, problem, visible + hidden, salt=index)
        payload = {
            "function_name": problem.function_name,
            "signature": problem.signature,
            "starter_code": problem.starter_code,
            "reference": reference,
            "visible_tests": visible,
            "hidden_tests": hidden,
            "pool": pool_entries,
        }
        family = problem.family
        record = task_record(
            "coding", task_id, family.difficulty, split[task_id], family.name, problem.prompt, payload
        )
        records.append(record)
    if stats is not None:
        hidden_rates = [m.hidden_pass_rate for m in kept_all]
        stats.update(
            {
                **counters,
                "kept": len(kept_all),
                "kept_by_kind": dict(sorted(Counter(m.kind for m in kept_all).items())),
                "kept_passing_visible": sum(m.passes_visible for m in kept_all),
                "fraction_passing_visible": sum(m.passes_visible for m in kept_all) / max(1, len(kept_all)),
                "mean_hidden_pass_rate": sum(hidden_rates) / max(1, len(hidden_rates)),
            }
        )
    return records


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    stats: dict[str, Any] = {}
    records = generate_records(stats)
    path = packaged_task_file(TASK_FILE)
    write_jsonl(records, path)
    elapsed = time.perf_counter() - started
    print(f"wrote {len(records)} tasks to {path} in {elapsed:.1f}s", file=sys.stderr)
    for key, value in stats.items():
        print(f"  {key}: {value}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
