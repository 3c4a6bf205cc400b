"""Judging candidate code: sandboxed unit tests, a static safety scan, structural checks, rubric scores.

Tests run in :mod:`harness_gym.sandbox`, one interpreter per candidate with every test in it. The runner
reports each result on its own stdout line tagged with a random nonce that is handed over on stdin, so
the candidate can neither see it in the script nor forge a result line by printing; candidate output goes
to a sink. The candidate shares the runner's interpreter, so frame introspection could still reach the
nonce: that takes ``sys``/``inspect`` or frame attributes, which the safety scan rejects. ``structural_check``
is what a harness CHECK may see (never hidden tests); ``artifact_scores`` is the terminal judgement.
"""

from __future__ import annotations

import ast
import hashlib
import json
import secrets
import signal
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_gym.sandbox import SandboxLimits, run_python

FORBIDDEN_MODULES: frozenset[str] = frozenset(
    {
        "os", "sys", "subprocess", "socket", "shutil", "ctypes", "importlib", "pathlib", "pickle", "marshal",
        "shelve", "multiprocessing", "threading", "_thread", "concurrent", "asyncio", "signal", "builtins",
        "inspect", "gc", "code", "codeop", "runpy", "pty", "posix", "nt", "fcntl", "resource", "mmap",
        "tempfile", "glob", "io", "urllib", "http", "ftplib", "smtplib", "telnetlib", "ssl", "select",
        "selectors", "webbrowser", "platform", "sysconfig", "zipimport", "pkgutil", "sqlite3", "dbm",
    }
)  # fmt: skip
FORBIDDEN_CALLS: frozenset[str] = frozenset(
    {"eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "breakpoint", "input"}
)
FORBIDDEN_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "__globals__", "__builtins__", "__subclasses__", "__code__", "__closure__", "__loader__", "__spec__",
        "__import__", "__bases__", "__mro__", "f_back", "f_globals", "f_locals", "f_builtins", "gi_frame",
        "cr_frame", "tb_frame",
    }
)  # fmt: skip

# Builtins whose names are also ordinary variable names.
_SHADOWABLE = frozenset({"input", "vars"})

TEST_LIMITS = SandboxLimits(wall_time_s=3.0, cpu_time_s=3)
MAX_FAILURES_REPORTED = 8
_CACHE_SIZE = 4096
# Exit codes of a run stopped by RLIMIT_CPU (soft limit, then the hard one): a timeout by CPU time.
_CPU_LIMIT_CODES = frozenset({-signal.SIGXCPU, -signal.SIGKILL})

# The runner: reads the nonce from stdin, silences the candidate's stdout, execs the candidate and then
# every test in the candidate's namespace, and reports through functions bound before any candidate code
# runs. ``os._exit`` at the end skips atexit handlers the candidate might have registered.
_RUNNER = r"""
import ast as _ast
import json as _json
import os as _os
import sys as _sys


def _main(source, tests):
    nonce = _sys.stdin.readline().strip()
    real_out = _sys.stdout
    write, flush, dumps, parse, builtin_repr = real_out.write, real_out.flush, _json.dumps, _ast.parse, repr

    def emit(record):
        write(nonce + " " + dumps(record) + "\n")
        flush()

    def describe(exc):
        try:
            text = str(exc)
        except BaseException:
            text = ""
        name = type(exc).__name__
        return (name + ": " + text)[:200] if text else name

    def actual_value(test, namespace):
        # For `assert call == expected`, what the call returned: the feedback a developer would want.
        try:
            node = parse(test).body[0]
            if isinstance(node, _ast.Assert) and isinstance(node.test, _ast.Compare):
                got = eval(compile(_ast.Expression(node.test.left), "<got>", "eval"), namespace)
                return "got " + builtin_repr(got)[:200]
        except BaseException as exc:
            return describe(exc)
        return "assertion failed"

    class Sink:
        def write(self, text):
            return len(text)

        def flush(self):
            pass

    _sys.stdout = Sink()
    namespace = {"__name__": "__candidate__"}
    try:
        exec(compile(source, "<candidate>", "exec"), namespace)
    except BaseException as exc:
        emit({"done": True, "error": "crash: " + describe(exc)})
        _os._exit(0)
    passed = 0
    for index, test in enumerate(tests):
        try:
            exec(compile(test, "<test %d>" % index, "exec", optimize=0), namespace)
        except AssertionError:
            emit({"i": index, "ok": False, "why": actual_value(test, namespace)})
        except BaseException as exc:
            emit({"i": index, "ok": False, "why": describe(exc)})
        else:
            passed += 1
            emit({"i": index, "ok": True})
    emit({"done": True, "passed": passed, "total": len(tests)})
    _os._exit(0)
"""


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


def _short(test: str, limit: int = 120) -> str:
    text = " ".join(test.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_Results = dict[int, tuple[bool, str]]


def _parse_output(stdout: str, nonce: str, tests: Sequence[str]) -> tuple[_Results, dict[str, Any] | None]:
    """Per-test results and the final summary from the nonce-tagged lines; everything else is ignored."""
    results: _Results = {}
    prefix = nonce + " "
    for line in stdout.splitlines():
        if not line.startswith(prefix):
            continue
        try:
            record = json.loads(line[len(prefix) :])
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("done"):
            return results, record
        index = record.get("i")
        if isinstance(index, int) and 0 <= index < len(tests) and index not in results:
            results[index] = (bool(record.get("ok")), str(record.get("why", "")))
    return results, None


def _execute_tests(source: str, tests: Sequence[str], limits: SandboxLimits) -> TestReport:
    total = len(tests)
    if not parses(source):
        return TestReport(0, total, (), _syntax_message(source))
    nonce = secrets.token_hex(16)
    script = f"{_RUNNER}\n_main({source!r}, {list(tests)!r})\n"
    result = run_python(script, stdin=nonce + "\n", limits=limits)
    results, summary = _parse_output(result.stdout, nonce, tests)
    error: str | None = None
    if result.timed_out or result.returncode in _CPU_LIMIT_CODES:
        error = "timeout"
    elif summary is not None and summary.get("error"):
        error = str(summary["error"])[:300]
    elif summary is None:
        tail = result.stderr.strip().splitlines()[-1:] if result.stderr.strip() else []
        detail = f"exit code {result.returncode}" + (f": {tail[0][:200]}" if tail else "")
        error = "crash: " + detail
    passed = sum(1 for ok, _ in results.values() if ok)
    failures = []
    module_ran = bool(results) or (summary is not None and not summary.get("error"))
    for index, test in enumerate(tests if module_ran or result.timed_out else ()):
        ok, why = results.get(index, (False, error or "not run"))
        if not ok:
            failures.append(f"{_short(test)}  -> {why}")
    return TestReport(passed, total, tuple(failures[:MAX_FAILURES_REPORTED]), error)


_cache: dict[tuple[str, tuple[str, ...], SandboxLimits], TestReport] = {}
_cache_lock = threading.Lock()


def run_tests(source: str, tests: Sequence[str], limits: SandboxLimits | None = None) -> TestReport:
    """Run ``tests`` (assert statements) against ``source`` in one sandbox run; results are cached.

    A test passes when it runs without raising. If the run times out, the tests it had not reported by
    then count as failed.
    """
    limits = limits or TEST_LIMITS
    key = (hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(), tuple(tests), limits)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    report = _execute_tests(source, tests, limits)
    with _cache_lock:
        if len(_cache) >= _CACHE_SIZE:
            del _cache[next(iter(_cache))]
        _cache[key] = report
    return report


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def safety_violations(source: str) -> tuple[str, ...]:
    """Static scan for imports, calls and attributes that reach outside pure computation.

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
            if isinstance(func, ast.Name) and name in FORBIDDEN_CALLS:
                add(f"forbidden call: {name}()")
            if (
                name in ("getattr", "setattr", "delattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and node.args[1].value.startswith("__")
            ):
                add(f"forbidden call: {name}(..., {node.args[1].value!r})")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in FORBIDDEN_CALLS and (node.id not in bound or id(node) in in_defaults):
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
        all_visible = self.visible.total > 0 and self.visible.passed == self.visible.total
        return (self.parses + self.safe + self.signature_ok + all_visible) / 4


def structural_check(payload: Mapping[str, Any], source: str) -> StructuralReport:
    visible_tests = list(payload["visible_tests"])
    ok_parse = parses(source)
    violations = safety_violations(source) if ok_parse else ()
    ok_signature = ok_parse and signature_ok(source, payload["function_name"], payload["signature"])
    visible = run_tests(source, visible_tests)
    issues: list[str] = []
    if not ok_parse:
        issues.append(f"does not parse: {_syntax_message(source)}")
    issues.extend(f"unsafe: {violation}" for violation in violations)
    if ok_parse and not ok_signature:
        issues.append(f"signature mismatch: expected `{payload['signature']}`")
    if ok_parse:
        if visible.error:
            issues.append(f"visible tests: {visible.error}")
        issues.extend(f"visible test failed: {failure}" for failure in visible.failures)
    return StructuralReport(
        parses=ok_parse,
        safe=ok_parse and not violations,
        signature_ok=ok_signature,
        visible=visible,
        issues=tuple(issues),
    )


CRITERIA: dict[str, float] = {"unit_tests": 3.0, "parseability": 1.0, "safety": 1.0, "cost_compliance": 1.0}
"""Rubric criteria and maxima: passing tests weighs as much as the three structural criteria together."""


def artifact_scores(payload: Mapping[str, Any], source: str) -> dict[str, tuple[float, float]]:
    """Rubric criteria ``name -> (score, max)`` of the artifact alone (the environment adds cost)."""
    ok_parse = parses(source)
    tests = list(payload["visible_tests"]) + list(payload["hidden_tests"])
    pass_rate = run_tests(source, tests).pass_rate if ok_parse else 0.0
    safe = ok_parse and not safety_violations(source)
    return {
        "unit_tests": (CRITERIA["unit_tests"] * pass_rate, CRITERIA["unit_tests"]),
        "parseability": (CRITERIA["parseability"] * ok_parse, CRITERIA["parseability"]),
        "safety": (CRITERIA["safety"] * safe, CRITERIA["safety"]),
    }
