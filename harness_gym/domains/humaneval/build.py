"""HumanEval problems -> task records of the coding domain, with screened artifact pools; cached on disk.

Building runs every candidate artifact in the sandbox, so it takes a while (about a minute on two cores
for the 164 problems); the records are cached under ``$XDG_CACHE_HOME/harness-gym`` (default
``~/.cache/harness-gym``), keyed by the source file's content and the builder's version, and rebuilt
whenever either changes. ``harness-gym humaneval --build`` builds ahead of time and prints the mutant
statistics.

Per problem:

- the reference artifact is upstream's prompt plus canonical solution, normalised by ``ast.unparse`` like
  every pool artifact (so formatting tells nothing);
- visible tests are the docstring examples the reference satisfies; hidden tests are ``check()``'s;
  ``shown_inputs`` holds the other docstring examples' arguments (shown, but disputed by the reference).
  A hidden assert that repeats a docstring example's input carries no credit
  (:func:`~harness_gym.domains.coding.verifier.credited_tests`); where none would be left (HumanEval/34,
  whose one assert repeats its example), one unseen test is derived (:func:`_derived_test`);
- the pool holds up to six AST mutants that fail at least one credited hidden test (survivors are
  dropped, the survival rate is kept per problem as ``mutant_survival``), a syntax-error variant and an
  unsafe-import variant that passes every test but must fail the safety scan.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness_gym.core.task import write_jsonl
from harness_gym.domains.coding import values
from harness_gym.domains.coding.mutants import ast_mutants, syntax_error_variant, unsafe_import_variant
from harness_gym.domains.coding.screening import (
    BATCH_LIMITS,
    SCREEN_CPU_S,
    Screened,
    choose_mutants,
    normalize,
)
from harness_gym.domains.coding.verifier import (
    _judge_code,
    _values_source,
    credited_tests,
    describe_test,
    evaluate_calls,
    execute_tests,
    judge,
    safety_violations,
)
from harness_gym.domains.humaneval.source import (
    CallTest,
    Problem,
    check_tests,
    difficulties,
    docstring_examples,
    file_digest,
    packaged_path,
    read_problems,
    split,
)
from harness_gym.sandbox import SandboxLimits, run_python

BUILDER_VERSION = "2"
VERSION = "v0"
SCREEN_LIMITS = SandboxLimits(wall_time_s=30.0, cpu_time_s=5)


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "harness-gym"


# --- tests in the coding verifier's format ---------------------------------------------------------------


def _data_record(test: CallTest) -> dict[str, Any]:
    """A ``CallTest`` as a record of :mod:`harness_gym.domains.coding.verifier`'s format."""
    args = values.encode(list(test.args))
    if test.compare == "eq":
        return {"args": args, "expected": values.encode(test.expected)}
    if test.compare == "close":
        return {"args": args, "expected": values.encode(test.expected), "tolerance": {"abs": test.tol}}
    check = "assert results[0]" if test.compare == "truthy" else "assert not results[0]"
    return {"calls": [args], "check": check}


def _helpers(reference: str, entry_point: str) -> str:
    """The reference module without the entry point: upstream's imports and helper functions, which a
    code test may call (``poly``, ``encode_cyclic``, ...). Trusted upstream code, never the candidate's."""
    tree = ast.parse(reference)
    tree.body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point)
    ]
    return ast.unparse(tree)


# Records the argument lists upstream's check() passes to the entry point, running it on the reference
# (in the sandbox, like everything that executes task code). The entry point's global name is rebound
# too: some checks call it by name (HumanEval/33 compares against ``sort_third(...)``).
_RECORDER = r"""
import json as _json
import random as _random
import sys as _sys

_job = _json.loads(_sys.stdin.read())
_ns = {"__name__": "__reference__"}
exec(compile(_job["reference"], "<reference>", "exec"), _ns)
_real = _ns[_job["entry"]]
_calls = []


def _recording(*args):
    _calls.append(encode(list(args)))
    return _real(*args)


_ns[_job["entry"]] = _recording
exec(compile(_job["test"], "<test>", "exec"), _ns)
_random.seed(_job["seed"])
_ns["check"](_recording)
print(_json.dumps(_calls))
"""


def _replay_check(helpers: str, test_module: str, entry_point: str, seed: int) -> str:
    """A code test's ``check``: upstream's check() fed the values the candidate returned, in call order."""
    return (
        "import random as _random\n"
        f"{helpers}\n"
        "_replies = iter(results)\n\n\n"
        f"def {entry_point}(*args):\n"
        "    return next(_replies)\n\n\n"
        f"{test_module}\n"
        f"_random.seed({seed})\n"
        f"check({entry_point})\n"
    )


def _code_record(problem: Problem, reference: str, test_module: str, seed: int) -> dict[str, Any]:
    job = {"reference": reference, "entry": problem.entry_point, "test": test_module, "seed": seed}
    result = run_python(
        _values_source() + _RECORDER, stdin=json.dumps(job), limits=SCREEN_LIMITS, trusted_source=True
    )
    if result.returncode != 0 or result.timed_out:
        tail = result.stderr.strip().splitlines()[-1:] or [f"exit code {result.returncode}"]
        raise ValueError(f"{problem.task_id}: recording check() on the reference failed: {tail[0][:200]}")
    calls = json.loads(result.stdout.strip().splitlines()[-1])
    check = _replay_check(_helpers(reference, problem.entry_point), test_module, problem.entry_point, seed)
    text = f"upstream check() of {problem.task_id}: {len(calls)} calls"
    return {"calls": calls, "check": check, "text": text}


def _seed(task_id: str) -> int:
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16)


# --- screening -------------------------------------------------------------------------------------------


def _outcomes(
    sources: Sequence[str], entry_point: str, tests: Sequence[dict[str, Any]]
) -> list[tuple[str, list[bool]]]:
    """Per source: its status (``ok``, ``timeout``, ``crash``) and which tests it passes (trusted code:
    the reference and our own mutants, several per sandboxed interpreter under a CPU budget each)."""
    spans, calls = [], []
    for test in tests:
        needed = test["calls"] if "check" in test else [test["args"]]
        spans.append((len(calls), len(needed)))
        calls.extend(needed)
    results: dict[int, tuple[str, list[bool]]] = {}
    pending = list(range(len(sources)))
    while pending:
        found, ends, _ = evaluate_calls(
            [sources[i] for i in pending], entry_point, calls, BATCH_LIMITS, budget=SCREEN_CPU_S
        )
        code_jobs, verdicts = [], {}
        for s, index in enumerate(pending):
            if s not in ends:
                continue
            status = ends[s] if ends[s] in ("ok", "timeout") else "crash"
            passed = [False] * len(tests)
            for t, (test, (start, count)) in enumerate(zip(tests, spans, strict=True)):
                got = [found.get((s, start + k), ("raised", "not run")) for k in range(count)]
                if "check" not in test:
                    passed[t] = judge(test, got)[0]
                elif all(kind == "value" for kind, _ in got):
                    code_jobs.append((len(code_jobs), test["check"], [value for _, value in got]))
                    verdicts[len(code_jobs) - 1] = (index, t)
            results[index] = (status, passed)
        for job, (ok, _) in _judge_code(code_jobs).items():
            index, t = verdicts[job]
            results[index][1][t] = ok
        missing = [i for i in pending if i not in results]
        if missing:
            results[missing[0]] = ("timeout", [False] * len(tests))
        pending = missing[1:]
    return [results[i] for i in range(len(sources))]


def _visible(problem: Problem, reference: str) -> list[dict[str, Any]]:
    """Docstring examples the reference agrees with (plain ``==`` on the decoded values), with the
    reference's own value as the expected one, so type details come from the solution, not the prose."""
    examples = docstring_examples(problem)
    if not examples:
        return []
    calls = [values.encode(list(example.args)) for example in examples]
    found, _, _ = evaluate_calls([reference], problem.entry_point, calls, SCREEN_LIMITS)
    kept = []
    for i, example in enumerate(examples):
        kind, got = found.get((0, i), ("raised", ""))
        if kind == "value" and type(got) is type(example.expected) and got == example.expected:
            kept.append({"args": calls[i], "expected": values.encode(got)})
    return kept


def _example_inputs(problem: Problem) -> list[Any]:
    """The argument lists of every docstring example (what the prompt shows), encoded."""
    return [values.encode(list(example.args)) for example in docstring_examples(problem)]


def _reversed(value: Any) -> Any:
    """``value`` with every top-level list and string argument reversed (a new input of the same kind)."""
    return [item[::-1] if isinstance(item, list | str) else item for item in value]


def _derived_test(problem: Problem, reference: str, shown: list[Any]) -> dict[str, Any]:
    """An unseen hidden test for a problem whose every assert repeats a shown input: a shown example's
    arguments with lists and strings reversed, the expected value recorded from the canonical solution."""
    decoded = [values.decode(args) for args in shown]
    calls = [values.encode(_reversed(args)) for args in decoded]
    calls = [args for args in calls if args not in shown]
    found, _, _ = evaluate_calls([reference], problem.entry_point, calls, SCREEN_LIMITS)
    for i, args in enumerate(calls):
        kind, got = found.get((0, i), ("raised", ""))
        if kind == "value":
            return {"args": args, "expected": values.encode(got)}
    raise ValueError(f"{problem.task_id}: every hidden test repeats a docstring example, none derived")


def _special_variants(reference: str, problem: Problem, tests: list[dict], salt: int) -> list[dict[str, str]]:
    """A syntax slip and an unsafe import that still passes every test (the scan must reject it)."""
    broken = syntax_error_variant(reference, salt)
    variants = []
    try:
        ast.parse(broken)
    except SyntaxError:
        variants.append({"flaw": "syntax_error", "source": broken})
    for attempt in range(4):
        unsafe = unsafe_import_variant(reference, problem.entry_point, salt + attempt) + "\n"
        report = execute_tests(unsafe, problem.entry_point, tests, SCREEN_LIMITS)
        if report.passed == report.total and safety_violations(unsafe):
            variants.append({"flaw": "unsafe_import", "source": unsafe})
            break
    return variants


def _allowed_calls(problem: Problem, reference: str) -> list[str]:
    """Builtins the canonical solution calls that the safety scan forbids (HumanEval/160: ``eval``).

    The task then allows them: upstream's own reference must be safe by the task's rubric. Forbidden
    imports or attributes in a canonical solution are an error, not an exemption.
    """
    allowed, other = [], []
    for violation in safety_violations(reference):
        if violation.startswith("forbidden call: ") and violation.endswith("()"):
            allowed.append(violation[len("forbidden call: ") : -2])
        else:
            other.append(violation)
    if other:
        raise ValueError(f"{problem.task_id}: the canonical solution fails the safety scan: {other}")
    return sorted(set(allowed))


def _signature(reference: str, entry_point: str) -> str:
    for node in ast.parse(reference).body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            header = copy.deepcopy(node)
            header.body = [ast.Pass()]
            return ast.unparse(header).splitlines()[-2]
    raise ValueError(f"no def {entry_point}")


def _starter(problem: Problem) -> str:
    """Upstream's prompt (imports, helpers, signature, docstring) with a body that does nothing yet."""
    return problem.prompt.rstrip() + "\n    raise NotImplementedError\n"


def _statement(problem: Problem) -> str:
    return (
        f"Implement `{problem.entry_point}` in Python (standard library only), as specified by the "
        f"docstring of the starter code ({problem.task_id})."
    )


def build_records(
    problems: Sequence[Problem], stats: dict[str, Any] | None = None, workers: int = 2
) -> list[dict[str, Any]]:
    """Task records of the coding domain for ``problems`` (see the module docstring)."""
    assignment = split(problems)
    labels = difficulties(problems)

    def prepare(index: int, problem: Problem) -> dict[str, Any]:
        reference = normalize(problem.reference)
        allowed = _allowed_calls(problem, reference)
        data, leftover = check_tests(problem)
        hidden = [_data_record(test) for test in data]
        if leftover is not None:
            hidden.append(_code_record(problem, reference, leftover, _seed(problem.task_id)))
        visible = _visible(problem, reference)
        entry = problem.entry_point
        seen = [t["args"] for t in visible]
        shown = [args for args in _example_inputs(problem) if args not in seen]
        shown_payload = {"function_name": entry, "visible_tests": visible, "shown_inputs": shown}
        try:
            credited_tests({**shown_payload, "hidden_tests": hidden})
        except ValueError:
            hidden.append(_derived_test(problem, reference, seen + shown))
        credited_ids = {id(test) for test in credited_tests({**shown_payload, "hidden_tests": hidden})}
        credited = [i for i, test in enumerate(hidden) if id(test) in credited_ids]
        ((status, passed),) = _outcomes([reference], entry, visible + hidden)
        if status != "ok" or not all(passed):
            failed = [
                describe_test(entry, t) for t, ok in zip(visible + hidden, passed, strict=True) if not ok
            ]
            raise ValueError(f"{problem.task_id}: the canonical solution fails {failed[:3]} ({status})")
        mutants = [(kind, source + "\n") for kind, source in ast_mutants(reference, entry)]
        screened = _outcomes([source for _, source in mutants], entry, visible + hidden)
        failing, survivors = [], 0
        for (kind, source), (status, passed) in zip(mutants, screened, strict=True):
            if status == "timeout":
                continue
            hidden_ok = [passed[len(visible) + i] for i in credited] if status == "ok" else []
            if status == "ok" and all(hidden_ok):
                survivors += 1
                continue
            failing.append(
                Screened(
                    kind,
                    source,
                    status,
                    sum(passed[: len(visible)]),
                    len(visible),
                    sum(hidden_ok),
                    len(credited),
                )
            )
        chosen = choose_mutants(failing, seed=f"humaneval-{VERSION}/pool/{problem.task_id}")
        pool = [{"flaw": m.kind, "source": m.source} for m in chosen]
        pool += _special_variants(reference, problem, visible + hidden, salt=index)
        return {
            "task_id": f"humaneval-{index:03d}",
            "domain": "coding",
            "version": VERSION,
            "difficulty": labels[problem.task_id],
            "split": assignment[problem.task_id],
            "template": problem.task_id,
            "prompt": _statement(problem),
            "payload": {
                "function_name": entry,
                "signature": _signature(reference, entry),
                "starter_code": _starter(problem),
                "reference": reference,
                "visible_tests": visible,
                "hidden_tests": hidden,
                **({"shown_inputs": shown} if shown else {}),
                "pool": pool,
                **({"allowed_calls": allowed} if allowed else {}),
                "source_task_id": problem.task_id,
                "mutants": {"enumerated": len(mutants), "survived": survivors, "kept": len(chosen)},
            },
        }

    with ThreadPoolExecutor(max_workers=workers) as executor:
        records = list(executor.map(lambda item: prepare(*item), enumerate(problems)))
    if stats is not None:
        enumerated = sum(r["payload"]["mutants"]["enumerated"] for r in records)
        survived = sum(r["payload"]["mutants"]["survived"] for r in records)
        stats.update(
            {
                "problems": len(records),
                "mutants_enumerated": enumerated,
                "mutants_survived": survived,
                "survival_rate": survived / max(1, enumerated),
                "problems_without_mutant": sum(1 for r in records if not r["payload"]["mutants"]["kept"]),
                "problems_without_visible_tests": sum(
                    1 for r in records if not r["payload"]["visible_tests"]
                ),
                "code_tests": sum(1 for r in records for t in r["payload"]["hidden_tests"] if "check" in t),
            }
        )
    return records


def cached_records(path: Path | str | None = None) -> list[dict[str, Any]]:
    """Records for the HumanEval file at ``path`` (the installed package's by default), built once and
    kept in :func:`cache_dir` keyed by the file's content and :data:`BUILDER_VERSION`."""
    source = Path(path) if path is not None else packaged_path()
    target = cache_dir() / f"humaneval-{file_digest(source)}-b{BUILDER_VERSION}.jsonl"
    if target.is_file():
        return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = build_records(read_problems(source))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    write_jsonl(records, tmp)
    os.replace(tmp, target)
    return records
