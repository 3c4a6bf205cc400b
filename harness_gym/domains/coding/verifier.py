"""Judging candidate code: a static safety scan, structural checks, unit tests judged outside the candidate.

Tests are data. A task's ``visible_tests`` and ``hidden_tests`` are lists of JSON records, each either a
*data test* (one call of the entry point and the value it must return)::

    {"args": [<value>, ...], "expected": <value>}
    {"args": [...], "expected": <value>, "tolerance": {"rel": 1e-09, "abs": 1e-06}}

or, only for a check that cannot be written as one expected value, a *code test*::

    {"calls": [[<args>], [<args>], ...], "check": "assert results[0] < results[1]", "text": "<shown>"}

Values are in the typed JSON of :mod:`harness_gym.domains.coding.values` (``{"tuple": [1, 2]}``,
``{"float": "0.5"}``, ...). A data test passes when the call returns a value strictly equal to
``expected``: same types at every level (``True`` is not ``1``, a tuple is not a list), floats equal;
only a test that declares a ``tolerance`` compares floats by ``math.isclose`` and lets an int match a
float (``{}``: exact values, loose number types, as Python's ``2 == 2.0``). A code test passes when
``check`` runs without raising with ``results`` bound to the values its ``calls`` returned (it fails if
any call raised).
``text`` is what a harness is shown for a code test; data tests are shown as ``assert f(...) == ...``.
Another source (e.g. HumanEval: docstring examples as visible data tests, ``check()`` asserts as hidden
ones) only has to produce these records: ``validate_test`` checks one, ``describe_test`` renders it.
Arguments are positional; a check sees only ``results`` and may import the standard library.

Who decides. The candidate runs in a sandboxed child (:mod:`harness_gym.sandbox`) that only defines the
code, calls the entry point with each test's arguments and prints the returned values, typed and
non-executable (:mod:`child`, never pickle); it never sees an expected value. The verdict is computed
here, in the harness's interpreter, from plain decoded values, so no candidate ``__eq__``, rebound builtin,
frame walk, exit or forged output line can change it: at most it changes which values are reported, and
returning the right values is the task. Code tests run in a second sandboxed process that holds the
decoded values and the check, never the candidate. A value with no typed encoding (another class, a
cycle, too large) fails its call.

Unsafe code earns nothing from tests: an artifact that fails the safety scan is never executed, so its
``unit_tests`` score is 0 (the scan's verdict is also its own ``safety`` criterion). ``structural_check``
is what a harness CHECK may see (never hidden tests); ``artifact_scores`` is the terminal judgement.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import secrets
import signal
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from harness_gym.domains.coding import values, verdicts
from harness_gym.executors.base import Finding
from harness_gym.sandbox import SandboxLimits, run_python

FORBIDDEN_MODULES: frozenset[str] = frozenset(
    {
        "os", "sys", "subprocess", "socket", "shutil", "ctypes", "importlib", "pathlib", "pickle", "marshal",
        "shelve", "multiprocessing", "threading", "_thread", "concurrent", "asyncio", "signal", "builtins",
        "inspect", "gc", "code", "codeop", "runpy", "pty", "posix", "nt", "fcntl", "resource", "mmap",
        "tempfile", "glob", "io", "urllib", "http", "ftplib", "smtplib", "telnetlib", "ssl", "select",
        "selectors", "webbrowser", "platform", "sysconfig", "zipimport", "pkgutil", "sqlite3", "dbm",
        "traceback", "__main__",
    }
)  # fmt: skip
FORBIDDEN_CALLS: frozenset[str] = frozenset(
    {"eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "breakpoint", "input"}
)
FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "__globals__", "__builtins__", "__subclasses__", "__code__", "__closure__", "__loader__", "__spec__",
        "__import__", "__bases__", "__mro__", "f_back", "f_globals", "f_locals", "f_builtins", "gi_frame",
        "cr_frame", "tb_frame", "tb_next", "__traceback__", "_getframe", "ag_frame", "f_code",
    }
)  # fmt: skip

# Builtins whose names are also ordinary variable names.
_SHADOWABLE = frozenset({"input", "vars"})

TEST_LIMITS = SandboxLimits(wall_time_s=3.0, cpu_time_s=3, output_bytes=2**20)
MAX_FAILURES_REPORTED = 8
_CACHE_SIZE = 4096
# Exit codes of a run stopped by RLIMIT_CPU (soft limit, then the hard one): a timeout by CPU time.
_CPU_LIMIT_CODES = frozenset({-signal.SIGXCPU, -signal.SIGKILL})
_HERE = Path(__file__).parent


@cache
def _values_source() -> str:
    return (_HERE / "values.py").read_text()


@cache
def _child_script() -> str:
    """The typed encoding and the child's loop in one script (no extra file, no extra import)."""
    child = (_HERE / "child.py").read_text()
    return f"{_values_source()}\n{child}\nimport sys as _sys\n\nmain(_sys.modules[__name__])\n"


@dataclass(frozen=True)
class TestReport:
    """Outcome of one test run; ``error`` says why the module itself could not run, if it could not."""

    __test__ = False  # not a pytest test class

    passed: int
    total: int
    failures: tuple[str, ...]
    error: str | None = None

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


def parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _syntax_message(source: str) -> str:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error: {exc.msg} (line {exc.lineno})"
    except ValueError as exc:
        return f"syntax error: {exc}"
    return ""


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------------
# The test format


def _calls(test: Mapping[str, Any]) -> list[Any]:
    """The encoded argument lists of the entry-point calls a test needs."""
    if "check" in test:
        return list(test["calls"])
    return [test["args"]]


def describe_test(function_name: str, test: Mapping[str, Any]) -> str:
    """The test as a line of Python a harness or an LLM is shown."""
    if "check" in test:
        return str(test.get("text") or test["check"])
    call = f"{function_name}({', '.join(repr(arg) for arg in values.decode(test['args']))})"
    expected = values.decode(test["expected"])
    if expected is None or isinstance(expected, bool):
        return f"assert {call} is {expected!r}"
    tolerance = test.get("tolerance")
    if tolerance:
        return (
            f"assert math.isclose({call}, {expected!r}, rel_tol={tolerance.get('rel', 0.0)!r}, "
            f"abs_tol={tolerance.get('abs', 0.0)!r})"
        )
    return f"assert {call} == {expected!r}"


def validate_test(test: Mapping[str, Any]) -> None:
    """Raise ValueError naming the problem if ``test`` is not a record of the format above."""
    if not isinstance(test, Mapping):
        raise ValueError(f"a test must be a JSON object, got {test!r:.80}")
    if "check" in test:
        if set(test) - {"calls", "check", "text"} or not isinstance(test.get("calls"), list):
            raise ValueError(f"a code test has keys calls, check and optionally text: {test!r:.120}")
        ast.parse(test["check"])
        for args in test["calls"]:
            if not isinstance(values.decode(args), list):
                raise ValueError(f"a call's arguments must be a list: {args!r:.80}")
        return
    if not {"args", "expected"} <= set(test) <= {"args", "expected", "tolerance"}:
        raise ValueError(f"a data test has keys args, expected and optionally tolerance: {test!r:.120}")
    if not isinstance(values.decode(test["args"]), list):
        raise ValueError(f"a test's args must be a list: {test['args']!r:.80}")
    values.decode(test["expected"])
    tolerance = test.get("tolerance")
    if tolerance is not None and (
        not isinstance(tolerance, Mapping)
        or not set(tolerance) <= {"rel", "abs"}
        or not all(isinstance(v, (int, float)) and v >= 0 for v in tolerance.values())
    ):
        raise ValueError(f"tolerance must be {{'rel': >= 0, 'abs': >= 0}}, got {tolerance!r}")


# ---------------------------------------------------------------------------------------------------------
# Running tests

# One call's outcome: ("value", decoded value) or ("raised", message).
_Outcome = tuple[str, Any]


def _read_records(stdout: str, nonce: str, sources: int, calls: int) -> tuple[dict, dict, bool]:
    """Call outcomes ``(s, i) -> outcome`` and end statuses ``s -> status`` from the nonce-tagged lines.

    The first record for a call wins; records are claims about returned values, nothing more.
    """
    outcomes: dict[tuple[int, int], _Outcome] = {}
    ends: dict[int, str] = {}
    done = False
    prefix = nonce + " "
    for line in stdout.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            record = json.loads(line[len(prefix) :])
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        if record.get("done") is True:
            done = True
            break
        s, i = record.get("s"), record.get("i")
        if type(s) is not int or not 0 <= s < sources:
            continue
        if "end" in record:
            ends.setdefault(s, str(record["end"])[:300])
        elif type(i) is int and 0 <= i < calls and (s, i) not in outcomes:
            if "value" in record:
                try:
                    outcomes[(s, i)] = ("value", values.decode(record["value"]))
                except (values.Unsupported, RecursionError):
                    outcomes[(s, i)] = ("raised", "returned a value that cannot be compared")
            else:
                outcomes[(s, i)] = ("raised", str(record.get("raised", ""))[:200])
    return outcomes, ends, done


def evaluate_calls(
    sources: Sequence[str],
    function_name: str,
    calls: Sequence[Any],
    limits: SandboxLimits,
    budget: float | None = None,
) -> tuple[dict[tuple[int, int], _Outcome], dict[int, str], str | None]:
    """Run each source in one sandboxed child and call ``function_name`` with every argument list.

    Returns the outcomes per (source, call), the end status per source, and the run's error (timeout or
    crash of the interpreter itself) if it did not finish.
    """
    nonce = secrets.token_hex(16)
    job = {"nonce": nonce, "function": function_name, "sources": list(sources), "calls": list(calls)}
    job["budget"] = budget
    result = run_python(_child_script(), stdin=json.dumps(job) + "\n", limits=limits, trusted_source=True)
    outcomes, ends, done = _read_records(result.stdout, nonce, len(sources), len(calls))
    error = None
    if result.timed_out or result.returncode in _CPU_LIMIT_CODES:
        error = "timeout"
    elif not done:
        tail = result.stderr.strip().splitlines()[-1:] if result.stderr.strip() else []
        error = f"crash: exit code {result.returncode}" + (f": {tail[0][:200]}" if tail else "")
    return outcomes, ends, error


def judge(test: Mapping[str, Any], outcomes: Sequence[_Outcome]) -> tuple[bool, str]:
    """Data test: pass/fail and why, from the outcome of its call (code tests: see ``_judge_code``)."""
    kind, value = outcomes[0]
    if kind != "value":
        return False, value
    tolerance = test.get("tolerance")
    if tolerance is not None:
        tolerance = (float(tolerance.get("rel", 0.0)), float(tolerance.get("abs", 0.0)))
    if values.same(values.decode(test["expected"]), value, tolerance):
        return True, ""
    return False, "got " + _short(repr(value))


# The code-test checker, appended to the values module's source: no candidate code, only the decoded
# values and the task's own checks. Its verdict lines carry a nonce of this run (it arrives on stdin), so
# a check that prints a value the candidate returned cannot forge one.
_CHECKER = r"""
import json as _json
import sys as _sys

_job = _json.loads(_sys.stdin.read())
_nonce = _job["nonce"]
for _index, _check, _results in _job["checks"]:
    try:
        exec(compile(_check, "<check>", "exec"), {"results": decode(_results)})
    except BaseException as _exc:
        _why = type(_exc).__name__ + (": " + str(_exc) if str(_exc) else "")
        print(_nonce, _json.dumps([_index, False, _why[:200]]))
    else:
        print(_nonce, _json.dumps([_index, True, ""]))
"""
_CHECK_LIMITS = SandboxLimits(wall_time_s=10.0, cpu_time_s=5, output_bytes=2**20)


def _judge_code(jobs: list[tuple[int, str, list[Any]]]) -> dict[int, tuple[bool, str]]:
    """Run code tests' checks on the returned values in their own sandboxed process."""
    if not jobs:
        return {}
    nonce = secrets.token_hex(16)
    payload = {"nonce": nonce, "checks": [[i, check, values.encode(results)] for i, check, results in jobs]}
    result = run_python(
        _values_source() + _CHECKER, stdin=json.dumps(payload), limits=_CHECK_LIMITS, trusted_source=True
    )
    verdicts: dict[int, tuple[bool, str]] = {}
    prefix = nonce + " "
    for line in result.stdout.splitlines():
        if not line.startswith(prefix):
            continue  # a check's own print
        try:
            index, ok, why = json.loads(line[len(prefix) :])
        except (ValueError, TypeError):
            continue
        verdicts.setdefault(index, (ok is True, str(why)))
    return verdicts


def execute_tests(
    source: str, function_name: str, tests: Sequence[Mapping[str, Any]], limits: SandboxLimits | None = None
) -> TestReport:
    """Run ``tests`` against ``source`` even if the safety scan rejects it (trusted code only)."""
    total = len(tests)
    if not parses(source):
        return TestReport(0, total, (), _syntax_message(source))
    spans, calls = [], []
    for test in tests:
        needed = _calls(test)
        spans.append((len(calls), len(needed)))
        calls.extend(needed)
    outcomes, ends, error = evaluate_calls([source], function_name, calls, limits or TEST_LIMITS)
    status = ends.get(0, "ok")
    if error is None and status != "ok":
        error = status
    missing: _Outcome = ("raised", error or "not run")
    results: dict[int, tuple[bool, str]] = {}
    code_jobs = []
    for index, (test, (start, count)) in enumerate(zip(tests, spans, strict=True)):
        got = [outcomes.get((0, start + k), missing) for k in range(count)]
        if "check" not in test:
            results[index] = judge(test, got)
        elif all(kind == "value" for kind, _ in got):
            code_jobs.append((index, test["check"], [value for _, value in got]))
        else:
            results[index] = (False, next(why for kind, why in got if kind != "value"))
    for index, verdict in _judge_code(code_jobs).items():
        results[index] = verdict
    passed = sum(1 for index in range(total) if results.get(index, (False, ""))[0])
    module_ran = status == "ok" and bool(outcomes)
    failures = []
    for index, test in enumerate(tests if module_ran or error == "timeout" else ()):
        ok, why = results.get(index, (False, "check did not run"))
        if not ok:
            failures.append(f"{_short(describe_test(function_name, test), 120)}  -> {why}")
    return TestReport(passed, total, tuple(failures[:MAX_FAILURES_REPORTED]), error)


_cache: dict[tuple[str, str, str, SandboxLimits], TestReport] = {}
_cache_lock = threading.Lock()


def cache_key(
    source: str,
    function_name: str,
    tests: Sequence[Mapping[str, Any]],
    limits: SandboxLimits,
    allowed_calls: Collection[str],
) -> tuple[str, str, str, SandboxLimits]:
    """What a verdict of :func:`run_tests` is a function of (``verdicts`` adds the deciding code's version
    and the sandbox's settings): every input, since ``allowed_calls`` decides whether the code runs."""
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
    allowed = sorted(allowed_calls)
    return digest, function_name, json.dumps([list(tests), allowed], sort_keys=True), limits


def run_tests(
    source: str,
    function_name: str,
    tests: Sequence[Mapping[str, Any]],
    limits: SandboxLimits | None = None,
    allowed_calls: Collection[str] = (),
) -> TestReport:
    """Run ``tests`` against ``source`` (one sandbox run); results are cached by source and tests, in
    this process and on disk for every process (``verdicts``; timeouts only in this process).

    Source that fails the safety scan (with ``allowed_calls`` exempt) is not executed: every test counts
    as failed. If the run times out, the calls not reported by then count as failed.
    """
    limits = limits or TEST_LIMITS
    allowed = tuple(sorted(allowed_calls))
    key = cache_key(source, function_name, tests, limits, allowed)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    disk_key = verdicts.verdict_key(*key)
    kept = verdicts.load(disk_key)
    if kept is not None:
        report = TestReport(kept["passed"], kept["total"], tuple(kept["failures"]), kept["error"])
    else:
        violations = safety_violations(source, allowed) if parses(source) else ()
        if violations:
            error = f"not run: the safety scan rejects the code ({violations[0]})"
            report = TestReport(0, len(tests), (), error)
        else:
            report = execute_tests(source, function_name, tests, limits)
        if report.error != "timeout":
            verdicts.store(disk_key, dataclasses.asdict(report))
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            del _cache[next(iter(_cache))]
        _cache[key] = report
    return report


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def safety_violations(source: str, allowed_calls: Collection[str] = ()) -> tuple[str, ...]:
    """Static scan for imports, calls and attributes that reach outside pure computation.

    ``allowed_calls`` exempts builtins a task's own reference needs (a task declares them in its payload
    as ``allowed_calls``; only HumanEval/160, whose canonical solution calls ``eval`` on the expression it
    builds, does). The scan is a rubric criterion, not the containment boundary: the sandbox is.

    Unparseable source cannot be vouched for, so it is reported as a violation too.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ("source does not parse",)
    found: list[str] = []
    # A parameter or variable that happens to be called ``input`` or ``vars`` is not the builtin, unless
    # the builtin itself is what it was bound to (``def f(vars=vars)``).
    bound = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
    }
    bound |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    bound &= _SHADOWABLE
    in_defaults = {
        id(name)
        for args in ast.walk(tree)
        if isinstance(args, ast.arguments)
        for default in [*args.defaults, *args.kw_defaults]
        if default is not None
        for name in ast.walk(default)
    }

    def add(message: str) -> None:
        if message not in found:
            found.append(message)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                    add(f"forbidden import: {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                add(f"relative import: {'.' * node.level}{module}")
            elif module.split(".")[0] in FORBIDDEN_MODULES:
                names = ", ".join(alias.name for alias in node.names)
                add(f"forbidden import: from {module} import {names}")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name == "__import__" and node.args and isinstance(node.args[0], ast.Constant):
                add(f"forbidden import: __import__({node.args[0].value!r})")
            if isinstance(func, ast.Name) and name in FORBIDDEN_CALLS and name not in allowed_calls:
                add(f"forbidden call: {name}()")
            if (
                name in ("getattr", "setattr", "delattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and (node.args[1].value.startswith("__") or node.args[1].value in FORBIDDEN_ATTRIBUTES)
            ):
                add(f"forbidden call: {name}(..., {node.args[1].value!r})")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if (
                node.id in FORBIDDEN_CALLS
                and node.id not in allowed_calls
                and (node.id not in bound or id(node) in in_defaults)
            ):
                add(f"forbidden call: {node.id}()")
            elif node.id == "__builtins__":
                add("forbidden name: __builtins__")
        elif isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            add(f"forbidden attribute: .{node.attr}")
    return tuple(found)


def _parameters(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[tuple[str, ...], ...]:
    args = func.args
    return (
        tuple(a.arg for a in args.posonlyargs + args.args),
        (args.vararg.arg,) if args.vararg else (),
        tuple(a.arg for a in args.kwonlyargs),
        (args.kwarg.arg,) if args.kwarg else (),
    )


def signature_ok(source: str, function_name: str, signature: str) -> bool:
    """A top-level ``def function_name`` with the parameter names (and kinds) of ``signature``.

    Annotations and defaults are not compared: tests call the function positionally by these names.
    """
    try:
        tree = ast.parse(source)
        expected = ast.parse(signature.rstrip() + "\n    pass\n").body[0]
    except (SyntaxError, ValueError):
        return False
    if not isinstance(expected, ast.FunctionDef):
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function_name:
            return _parameters(node) == _parameters(expected)
    return False


@dataclass(frozen=True)
class StructuralReport:
    """What a harness CHECK can see of a draft: never anything about hidden tests."""

    parses: bool
    safe: bool
    signature_ok: bool
    visible: TestReport
    issues: tuple[str, ...]

    @property
    def coverage(self) -> float:
        """Fraction of the four structural items that hold; visible tests count only if all pass."""
        all_visible = self.visible.passed == self.visible.total and not self.visible.error
        return (self.parses + self.safe + self.signature_ok + all_visible) / 4


def structural_check(payload: Mapping[str, Any], source: str) -> StructuralReport:
    allowed = payload.get("allowed_calls", ())
    ok_parse = parses(source)
    violations = safety_violations(source, allowed) if ok_parse else ()
    ok_signature = ok_parse and signature_ok(source, payload["function_name"], payload["signature"])
    visible = run_tests(source, payload["function_name"], payload["visible_tests"], allowed_calls=allowed)
    issues: list[Finding] = []
    if not ok_parse:
        issues.append(Finding("syntax", f"does not parse: {_syntax_message(source)}"))
    issues.extend(Finding("unsafe", f"unsafe: {violation}") for violation in violations)
    if ok_parse and not ok_signature:
        issues.append(Finding("signature", f"signature mismatch: expected `{payload['signature']}`"))
    if ok_parse:
        if visible.error:
            issues.append(Finding("tests_error", f"visible tests: {visible.error}"))
        issues.extend(
            Finding("test_failed", f"visible test failed: {failure}") for failure in visible.failures
        )
    return StructuralReport(
        parses=ok_parse,
        safe=ok_parse and not violations,
        signature_ok=ok_signature,
        visible=visible,
        issues=tuple(issues),
    )


def _inputs(test: Mapping[str, Any]) -> tuple[str, ...]:
    """A test's call inputs, canonically (a data test has one call, a code test several)."""
    return tuple(json.dumps(args, sort_keys=True) for args in _calls(test))


def credited_tests(payload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The hidden tests that earn ``unit_tests`` credit: those with an input the executor was never shown
    (a data test has one; a code test passes only if all its calls do, so one unseen call suffices).
    Shown are the visible tests' inputs and ``shown_inputs`` (argument lists the prompt shows otherwise,
    e.g. a docstring example the reference disagrees with). A table of the shown examples
    therefore earns nothing; the visible tests stay what CHECK and CALL_TOOL run.

    Raises:
        ValueError: no hidden test is left (a task source must supply at least one unseen test).
    """
    shown = {key for test in payload["visible_tests"] for key in _inputs(test)}
    shown.update(json.dumps(args, sort_keys=True) for args in payload.get("shown_inputs", ()))
    credited = [test for test in payload["hidden_tests"] if not shown.issuperset(_inputs(test))]
    if not credited:
        raise ValueError(f"{payload['function_name']}: every hidden test repeats an input the prompt shows")
    return credited


CRITERIA: dict[str, float] = {"unit_tests": 3.0, "parseability": 1.0, "safety": 1.0, "cost_compliance": 1.0}
"""Rubric criteria and maxima: passing tests weighs as much as the three structural criteria together."""


def artifact_scores(payload: Mapping[str, Any], source: str) -> dict[str, tuple[float, float]]:
    """Rubric criteria ``name -> (score, max)`` of the artifact alone (the environment adds cost).

    ``unit_tests`` is the pass rate on :func:`credited_tests` only. Unparseable or unsafe code is not run,
    so it passes no test.
    """
    allowed = payload.get("allowed_calls", ())
    ok_parse = parses(source)
    report = run_tests(source, payload["function_name"], credited_tests(payload), allowed_calls=allowed)
    pass_rate = report.pass_rate if ok_parse else 0.0
    safe = ok_parse and not safety_violations(source, allowed)
    return {
        "unit_tests": (CRITERIA["unit_tests"] * pass_rate, CRITERIA["unit_tests"]),
        "parseability": (CRITERIA["parseability"] * ok_parse, CRITERIA["parseability"]),
        "safety": (CRITERIA["safety"] * safe, CRITERIA["safety"]),
    }
