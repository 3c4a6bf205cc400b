"""The coding verifier's decisions: the verdict cache key changes with every input of a verdict (a stale
verdict is never reused) and with nothing else; how test runs are judged, reported and kept.

Every verdict is decided on the host side from the child's plain output, so the tests that run candidates
run twice: through the sandbox, and with the child's script run unsandboxed by this interpreter (trusted
test code only). The second way keeps them running under mutation testing, where ``values.py`` (the first
part of the child's script) is a rewritten copy that imports mutmut, which the sandbox cannot load.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness_gym.domains.coding import values, verifier
from harness_gym.sandbox.runner import SandboxLimits, SandboxResult

SOURCE = "def f(x):\n    return x + 1\n"
TESTS = [{"args": [1], "expected": 2}]
BASE = (SOURCE, "f", TESTS, SandboxLimits(), ("math.sqrt",))


@pytest.mark.parametrize(
    ("index", "other"),
    [
        (0, SOURCE + "\n# changed\n"),
        (1, "g"),
        (2, [{"args": [1], "expected": 3}]),
        (2, [*TESTS, {"args": [2], "expected": 3}]),
        (3, SandboxLimits(cpu_time_s=2)),
        (4, ("math.sqrt", "os.getcwd")),
        (4, ()),
    ],
)
def test_the_verdict_key_changes_with_every_input(index: int, other: object) -> None:
    changed = list(BASE)
    changed[index] = other
    assert verifier.cache_key(*changed) != verifier.cache_key(*BASE)


def test_the_verdict_key_takes_any_source_and_ignores_the_order_of_a_tests_keys() -> None:
    surrogate = verifier.cache_key("x = '\ud800'\n", *BASE[1:])
    assert surrogate != verifier.cache_key("x = '\ud801'\n", *BASE[1:])
    reordered = [{"expected": 2, "args": [1]}]
    assert verifier.cache_key(SOURCE, "f", reordered, *BASE[3:]) == verifier.cache_key(*BASE)


def test_a_data_test_with_an_undecodable_expected_value_is_refused() -> None:
    with pytest.raises(ValueError):
        verifier.validate_test({"args": [], "expected": {"no such type": 1}})


def test_the_verdict_key_ignores_the_order_of_allowed_calls_only() -> None:
    key = verifier.cache_key(*BASE[:4], ("b.c", "a.b"))
    assert key == verifier.cache_key(*BASE[:4], ("a.b", "b.c"))
    assert key == verifier.cache_key(*BASE[:4], ["a.b", "b.c"])
    assert verifier.cache_key(*BASE) == verifier.cache_key(*BASE)


# -- describing tests and judging syntax (no sandbox) -------------------------------------------------
def test_tests_are_described_as_the_line_a_harness_is_shown() -> None:
    from harness_gym.domains.coding import values

    def data(args: list, expected: object, **extra: object) -> dict:
        return {"args": values.encode(args), "expected": values.encode(expected), **extra}

    assert verifier.describe_test("f", data([1, "a"], 2)) == "assert f(1, 'a') == 2"
    assert verifier.describe_test("f", data([], None)) == "assert f() is None"
    assert verifier.describe_test("f", data([(1,)], True)) == "assert f((1,)) is True"
    assert verifier.describe_test("f", data([0.5], 1.0, tolerance={"rel": 1e-6})) == (
        "assert math.isclose(f(0.5), 1.0, rel_tol=1e-06, abs_tol=0.0)"
    )
    assert verifier.describe_test("f", data([0.5], 1.0, tolerance={"abs": 0.1})) == (
        "assert math.isclose(f(0.5), 1.0, rel_tol=0.0, abs_tol=0.1)"
    )
    assert verifier.describe_test("f", data([0.5], 1.0, tolerance={})) == "assert f(0.5) == 1.0"
    code = {"calls": [values.encode([1])], "check": "assert results[0] == 2"}
    assert verifier.describe_test("f", code) == "assert results[0] == 2"
    assert verifier.describe_test("f", {**code, "text": "f(1) is 2"}) == "f(1) is 2"
    assert verifier.describe_test("f", {**code, "text": ""}) == "assert results[0] == 2"


def test_syntax_is_judged_and_named_with_its_line() -> None:
    assert verifier.parses("x = 1\n") and not verifier.parses("def f(:\n") and not verifier.parses("x\0")
    assert verifier._syntax_message("x = 1\n") == ""
    assert verifier._syntax_message("x = 1\ny = (\n") == "syntax error: '(' was never closed (line 2)"
    assert verifier._syntax_message("x\0").startswith("syntax error: source code")
    assert verifier._short("a \n b") == "a b"
    assert verifier._short("x" * 200) == "x" * 200
    assert verifier._short("x" * 201) == "x" * 197 + "..."
    assert verifier._short("abcdef", 5) == "ab..."


# -- running tests: in the sandbox, and with the child unsandboxed ------------------------------------------
_MUTATED = "mutmut" in verifier._values_source()
"""Under mutation testing the child's script embeds the rewritten ``values.py``, which imports mutmut
(absent in the sandbox): then only the unsandboxed runs can run."""

_CHILD_MUTANT = {"MUTANT_UNDER_TEST": ""} if os.environ.get("MUTANT_UNDER_TEST") == "stats" else {}
"""mutmut's call-recording run (``stats``) records in its own process only: in the child, whose cwd has no
``pyproject.toml`` for mutmut's config, recording a call fails, so the child runs the original code then.
In a mutant's run the child inherits the mutant's name and runs it."""

GOOD = "def f(x):\n    return x + 1\n"


def _data(args: list, expected: object, **extra: object) -> dict:
    return {"args": values.encode(args), "expected": values.encode(expected), **extra}


def _code(calls: list, check: str, **extra: object) -> dict:
    return {"calls": [values.encode(args) for args in calls], "check": check, **extra}


def _unsandboxed(
    source: str,
    *,
    stdin: str = "",
    limits: SandboxLimits = verifier.TEST_LIMITS,
    trusted_source: bool = False,
) -> SandboxResult:
    """``source`` run by this interpreter with no boundary, its CPU limit and hash seed set as the sandbox
    sets them, so a CPU-bound run ends by SIGXCPU as it does there. The wall-clock limit is a generous
    backstop only: on a loaded machine a slow start must not turn into a timeout (a wall-clock timeout's
    handling is tested with canned results)."""

    def limit_cpu() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_time_s, limits.cpu_time_s + 1))

    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "script.py"  # a file: a mutated values.py is too long for -c
        script.write_text(source)
        try:
            done = subprocess.run(
                [sys.executable, str(script)],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=max(limits.wall_time_s, 60.0),
                preexec_fn=limit_cpu,
                cwd=scratch,
                env={**os.environ, "PYTHONHASHSEED": "0", **_CHILD_MUTANT},
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout or b""
            text = out.decode() if isinstance(out, bytes) else out
            return SandboxResult(None, text, "", True, False, limits.wall_time_s)
        return SandboxResult(done.returncode, done.stdout, done.stderr, False, False, 0.0)


@pytest.fixture(params=["sandbox", "unsandboxed"])
def child(request, monkeypatch) -> list[dict]:
    """Runs through the sandbox or unsandboxed, with no verdict cache on disk or in memory; yields the
    keyword arguments of every run, in order."""
    if request.param == "sandbox" and _MUTATED:
        pytest.skip("values.py is a mutated copy: the sandbox's child cannot run it")
    real = verifier.run_python if request.param == "sandbox" else _unsandboxed
    runs: list[dict] = []

    def run(source: str, **kwargs: object) -> SandboxResult:
        runs.append(kwargs)
        return real(source, **kwargs)

    monkeypatch.setattr(verifier, "run_python", run)
    monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
    verifier.clear_cache()
    yield runs
    verifier.clear_cache()


@pytest.fixture
def reply(monkeypatch) -> list[dict]:
    """``reply.append(respond)`` makes every run return ``respond(job)`` (the decoded stdin) without any
    child; yields the list whose first entry is the responder, followed by each run's keyword arguments."""
    monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
    verifier.clear_cache()
    calls: list = []

    def run(source: str, **kwargs: object) -> SandboxResult:
        calls.append(kwargs)
        return calls[0](json.loads(kwargs["stdin"]))

    monkeypatch.setattr(verifier, "run_python", run)
    yield calls
    verifier.clear_cache()


def _result(stdout: str = "", returncode: int | None = 0, stderr: str = "", timed_out: bool = False):
    return SandboxResult(returncode, stdout, stderr, timed_out, False, 0.0)


def test_execute_tests_counts_passes_and_names_each_failure(child) -> None:
    tests = [
        _data([1], 2),
        _data([1], 3),
        _data([0.1], 1.1, tolerance={"abs": 1e-9}),
        _code([[1], [2]], "assert results == [2, 3]"),
        _code([[1]], "assert results == [5], 'wrong'", text="f(1) is 5"),
        _data(["a"], 1),
        _code([[1], ["a"]], "assert True"),
        _data(["x" * 150], 0),
    ]
    report = verifier.execute_tests(GOOD, "f", tests)
    assert (report.passed, report.total, report.error) == (3, 8, None)
    concatenate = 'TypeError: can only concatenate str (not "int") to str'
    assert report.failures == (
        "assert f(1) == 3  -> got 2",
        "f(1) is 5  -> AssertionError: wrong",
        f"assert f('a') == 1  -> {concatenate}",
        f"assert True  -> {concatenate}",
        "assert f('" + "x" * 107 + "...  -> " + concatenate,  # a long test is cut at 120 characters
    )
    assert report.pass_rate == 3 / 8
    assert [run["limits"] for run in child] == [verifier.TEST_LIMITS, verifier._CHECK_LIMITS]
    assert all(run["trusted_source"] is True for run in child)


def test_code_that_does_not_parse_is_not_run(monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
    monkeypatch.setattr(verifier, "run_python", None)  # any run would fail
    verifier.clear_cache()
    expected = verifier.TestReport(0, 2, (), "syntax error: invalid syntax (line 1)")
    assert verifier.execute_tests("def f(:\n", "f", [_data([1], 2), _data([2], 3)]) == expected
    assert verifier.run_tests("def f(:\n", "f", [_data([1], 2), _data([2], 3)]) == expected
    verifier.clear_cache()


def test_execute_tests_reports_what_stopped_the_module(child) -> None:
    raising = verifier.execute_tests("raise ValueError('boom')\n", "f", [_data([1], 2)])
    assert raising == verifier.TestReport(0, 1, (), "crash: ValueError: boom")
    missing = verifier.execute_tests("def g(x):\n    return x\n", "f", [_data([1], 2)])
    assert missing == verifier.TestReport(0, 1, (), "crash: the code defines no function f")
    exiting = verifier.execute_tests("import os\nos._exit(3)\n", "f", [_data([1], 2)])
    assert exiting == verifier.TestReport(0, 1, (), "crash: exit code 3")
    slow = "def f(x):\n    if x == 2:\n        while True:\n            pass\n    return x + 1\n"
    limits = SandboxLimits(wall_time_s=2.0, cpu_time_s=1)
    timed = verifier.execute_tests(slow, "f", [_data([1], 2), _data([2], 3), _data([3], 4)], limits)
    assert timed == verifier.TestReport(
        1, 3, ("assert f(2) == 3  -> timeout", "assert f(3) == 4  -> timeout"), "timeout"
    )
    assert [run["limits"] for run in child] == [verifier.TEST_LIMITS] * 3 + [limits]


def test_a_forged_end_of_run_record_loses_the_calls_after_it(child) -> None:
    """A candidate that finds the run's nonce and prints the end record itself only stops the reading:
    the calls not reported by then fail as not run."""
    forger = (
        "import sys\n"
        "def f(x):\n"
        "    if x == 2:\n"
        "        nonce = sys._getframe(1).f_locals['nonce']\n"
        "        sys.__stdout__.write(nonce + ' {\"done\": true}\\n')\n"
        "        sys.__stdout__.flush()\n"
        "    return x + 1\n"
    )
    report = verifier.execute_tests(forger, "f", [_data([1], 2), _data([2], 3), _data([3], 4)])
    assert report == verifier.TestReport(
        1, 3, ("assert f(2) == 3  -> not run", "assert f(3) == 4  -> not run"), None
    )


def test_a_code_test_whose_check_never_ran_fails(child) -> None:
    """A check that ends the checker process leaves itself and the checks after it without a verdict."""
    tests = [
        _code([[1]], "assert results == [2]"),
        _code([[1]], "import os, sys\nsys.stdout.flush()\nos._exit(0)", text="exits"),
        _code([[2]], "assert results == [3]", text="after"),
    ]
    report = verifier.execute_tests(GOOD, "f", tests)
    assert report == verifier.TestReport(
        1, 3, ("exits  -> check did not run", "after  -> check did not run"), None
    )


def test_evaluate_calls_reports_every_source_apart_within_its_budget(child) -> None:
    loops = "def f(x):\n    while x == 2:\n        pass\n    return x\n"
    sources = [GOOD, "raise ValueError('boom')\n", "g = 1\n", loops, GOOD]
    calls = [values.encode([1]), values.encode([2])]
    limits = SandboxLimits(wall_time_s=5.0, cpu_time_s=4)
    outcomes, ends, error = verifier.evaluate_calls(sources, "f", calls, limits, budget=0.3)
    assert outcomes == {
        (0, 0): ("value", 2),
        (0, 1): ("value", 3),
        (3, 0): ("value", 1),
        (4, 0): ("value", 2),
        (4, 1): ("value", 3),
    }
    assert ends == {
        0: "ok",
        1: "crash: ValueError: boom",
        2: "crash: the code defines no function f",
        3: "timeout",
        4: "ok",
    }
    assert error is None
    assert [run["limits"] for run in child] == [limits]


def test_evaluate_calls_sends_one_job_line_with_a_fresh_nonce(reply) -> None:
    reply.append(lambda job: _result(f"{job['nonce']} {json.dumps({'done': True})}\n"))
    calls = [values.encode([1]), values.encode([(2, 3)])]
    limits = SandboxLimits(wall_time_s=1.5)
    assert verifier.evaluate_calls(["a = 1", "b = 2"], "f", calls, limits, budget=0.25) == ({}, {}, None)
    verifier.evaluate_calls(["a = 1"], "g", [], limits)
    first, second = reply[1], reply[2]
    assert first["stdin"].endswith("}\n") and first["stdin"].count("\n") == 1
    job = json.loads(first["stdin"])
    nonce = job.pop("nonce")
    assert job == {"function": "f", "sources": ["a = 1", "b = 2"], "calls": calls, "budget": 0.25}
    assert json.loads(second["stdin"])["budget"] is None
    other = json.loads(second["stdin"])["nonce"]
    for text in (nonce, other):  # 128 random bits each run
        assert len(text) == 32 and int(text, 16) >= 0
    assert nonce != other
    assert first["limits"] == limits and first["trusted_source"] is True


@pytest.mark.parametrize(
    ("result", "error"),
    [
        (_result(returncode=None, timed_out=True), "timeout"),
        (_result(returncode=-signal.SIGXCPU), "timeout"),
        (_result(returncode=-signal.SIGKILL), "timeout"),
        (_result(returncode=-signal.SIGSEGV), "crash: exit code -11"),
        (_result(returncode=1), "crash: exit code 1"),
        (_result(returncode=0), "crash: exit code 0"),
        (_result(returncode=1, stderr="  \n"), "crash: exit code 1"),
        (_result(returncode=1, stderr="Traceback\n  line\nMemoryError\n"), "crash: exit code 1: MemoryError"),
        (_result(returncode=1, stderr="a\n" + "b" * 300), "crash: exit code 1: " + "b" * 200),
    ],
)
def test_evaluate_calls_names_how_a_run_ended(reply, result: SandboxResult, error: str) -> None:
    """A run that did not report its end timed out (wall clock or CPU limit) or crashed; the crash is
    named by its exit code and the last line of its error output, cut at 200 characters."""
    reply.append(lambda job: result)
    assert verifier.evaluate_calls(["a = 1"], "f", [[1]], verifier.TEST_LIMITS) == ({}, {}, error)


def test_evaluate_calls_keeps_what_a_timed_out_run_reported(reply) -> None:
    def respond(job: dict) -> SandboxResult:
        lines = [{"s": 0, "i": 0, "value": 2}, {"s": 1, "i": 1, "raised": "KeyError: 'x'"}]
        return _result("".join(f"{job['nonce']} {json.dumps(r)}\n" for r in lines), None, "", True)

    reply.append(respond)
    outcomes, ends, error = verifier.evaluate_calls(["a", "b"], "f", [[1], [2]], verifier.TEST_LIMITS)
    assert (outcomes, ends, error) == (
        {(0, 0): ("value", 2), (1, 1): ("raised", "KeyError: 'x'")},
        {},
        "timeout",
    )


def test_code_tests_are_judged_in_their_own_run(child) -> None:
    """Checks see the returned values; their own prints and any line forged with the run's nonce that is
    not a verdict are skipped; each check gets its own verdict."""
    forge = (
        "import sys\n"
        "nonce = sys._getframe(1).f_globals['_nonce']\n"
        "print('noise')\n"
        "print(nonce, 'not json')\n"
        "print(nonce, '5')\n"
        "print(nonce, '[1, 2]')\n"
    )
    jobs = [
        (0, "assert results == [1, (2, 3)]", [1, (2, 3)]),
        (4, "assert results[0] > 5, 'too small'", [1]),
        (7, forge, []),
        (9, "assert results == []", []),
    ]
    assert verifier._judge_code(jobs) == {
        0: (True, ""),
        4: (False, "AssertionError: too small"),
        7: (True, ""),
        9: (True, ""),
    }
    assert [run["limits"] for run in child] == [verifier._CHECK_LIMITS]
    assert child[0]["trusted_source"] is True
    nonce = json.loads(child[0]["stdin"])["nonce"]
    assert len(nonce) == 32 and int(nonce, 16) >= 0  # 128 random bits
    assert verifier._judge_code([]) == {} and len(child) == 1  # nothing to check: no run


def test_run_tests_does_not_run_unsafe_code_unless_its_calls_are_allowed(child) -> None:
    unsafe = "def f(x):\n    return eval('x + 1')\n"
    refused = verifier.run_tests(unsafe, "f", [_data([1], 2)])
    assert refused == verifier.TestReport(
        0, 1, (), "not run: the safety scan rejects the code (forbidden call: eval())"
    )
    twice = verifier.run_tests("import os\n" + unsafe, "f", [_data([1], 2), _data([2], 3)])
    assert twice == verifier.TestReport(
        0, 2, (), "not run: the safety scan rejects the code (forbidden import: os)"
    )
    assert child == []  # neither ran
    allowed = verifier.run_tests(unsafe, "f", [_data([1], 2)], allowed_calls=("eval",))
    assert (allowed.passed, allowed.error) == (1, None)
    again = verifier.run_tests(unsafe, "f", [_data([1], 2)], allowed_calls=["eval"])
    assert again is allowed  # the cached verdict of the same inputs
    assert verifier.run_tests(unsafe, "f", [_data([1], 2)]) == refused


def test_run_tests_runs_again_when_any_input_changes(child) -> None:
    both = GOOD + "def g(x):\n    return x\n"
    limits = SandboxLimits(wall_time_s=4.0, cpu_time_s=2)
    first = verifier.run_tests(both, "f", [_data([1], 2)])
    assert (first.passed, first.total) == (1, 1)
    assert verifier.run_tests(both, "f", [_data([1], 2)]) is first
    assert verifier.run_tests(GOOD.replace("+", "-"), "f", [_data([1], 2)]).passed == 0
    assert verifier.run_tests(both, "g", [_data([1], 2)]).passed == 0
    assert verifier.run_tests(both, "f", [_data([1], 2), _data([2], 3)]).total == 2
    assert verifier.run_tests(both, "f", [_data([1], 2)], limits) == first
    assert [run["limits"] for run in child] == [verifier.TEST_LIMITS] * 4 + [limits]


def test_the_in_memory_cache_forgets_its_oldest_verdict_when_full(monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
    monkeypatch.setattr(verifier, "_CACHE_SIZE", 2)
    verifier.clear_cache()
    broken = [f"def f{i}(:\n" for i in range(3)]
    first = verifier.run_tests(broken[0], "f", [])
    assert verifier.run_tests(broken[0], "f", []) is first
    verifier.run_tests(broken[1], "f", [])
    verifier.run_tests(broken[2], "f", [])
    assert len(verifier._cache) == 2
    again = verifier.run_tests(broken[0], "f", [])
    assert again == first and again is not first
    verifier.clear_cache()


def test_verdicts_are_kept_on_disk_for_every_later_process_except_timeouts(
    child, monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv("HARNESS_GYM_CACHE", str(tmp_path))
    source = "def f(x):\n    return x + 1 if x < 3 else 0\n"
    tests = [_data([1], 2), _data([5], 6), _code([[1], ["a"]], "assert True")]
    first = verifier.run_tests(source, "f", tests)
    assert (first.passed, first.total, first.error) == (1, 3, None)
    assert first.failures[0] == "assert f(5) == 6  -> got 0"
    assert first.failures[1].endswith("-> TypeError: '<' not supported between instances of 'str' and 'int'")
    crashed = verifier.run_tests("raise ValueError('boom')\n", "f", tests)
    assert crashed == verifier.TestReport(0, 3, (), "crash: ValueError: boom")
    assert len(list(tmp_path.rglob("*.json"))) == 2, "each verdict was stored on disk"
    runs = len(child)
    verifier.clear_cache()
    again = verifier.run_tests(source, "f", tests)
    assert again == first and again is not first  # read back from disk, field by field
    assert verifier.run_tests("raise ValueError('boom')\n", "f", tests) == crashed
    assert len(child) == runs, "read back, not run again"
    slow = "def f(x):\n    while True:\n        pass\n"
    limits = SandboxLimits(wall_time_s=1.0, cpu_time_s=1)
    stored = set(tmp_path.rglob("*"))
    timed = verifier.run_tests(slow, "f", [_data([1], 2)], limits)
    assert timed.error == "timeout" and set(tmp_path.rglob("*")) == stored  # a timeout is not kept


def test_structural_check_and_artifact_scores_state_each_criterion(child) -> None:
    payload = {
        "function_name": "f",
        "signature": "def f(x):",
        "visible_tests": [_data([1], 2)],
        "hidden_tests": [_data([1], 2), _data([5], 6), _data([7], 8)],
    }
    good = verifier.structural_check(payload, GOOD)
    assert (good.parses, good.safe, good.signature_ok, good.issues, good.coverage) == (
        True,
        True,
        True,
        (),
        1.0,
    )
    wrong = verifier.structural_check(payload, "def f(y):\n    return y\n")
    assert wrong.issues == (
        "signature mismatch: expected `def f(x):`",
        "visible test failed: assert f(1) == 2  -> got 1",
    )
    assert wrong.coverage == 0.5
    # each finding names the component that found it: the simulated executor reads it to tell whether the
    # feedback names the draft's own flaw, and MDP v2's observation which check group failed
    assert [issue.component for issue in wrong.issues] == ["signature", "test_failed"]
    broken = verifier.structural_check(payload, "def f(:\n")
    assert [issue.split(":")[0] for issue in broken.issues] == ["does not parse"]
    assert [issue.component for issue in broken.issues] == ["syntax"]
    assert broken.coverage == 0.0
    unsafe = verifier.structural_check(payload, "import os\ndef f(x):\n    return x + 1\n")
    assert not unsafe.safe and unsafe.issues[0].startswith("unsafe: ")
    assert any(issue.startswith("visible tests: not run") for issue in unsafe.issues)
    assert [issue.component for issue in unsafe.issues] == ["unsafe", "tests_error"]
    assert verifier.artifact_scores(payload, GOOD) == {
        "unit_tests": (3.0, 3.0),
        "parseability": (1.0, 1.0),
        "safety": (1.0, 1.0),
    }
    half = "def f(x):\n    return 6 if x == 5 else 0\n"
    assert verifier.artifact_scores(payload, half)["unit_tests"] == (1.5, 3.0)  # of the two unseen tests
    assert verifier.artifact_scores(payload, "def f(:\n") == {
        "unit_tests": (0.0, 3.0),
        "parseability": (0.0, 1.0),
        "safety": (0.0, 1.0),
    }
    # code that parses but reaches outside pure computation keeps its parse point, loses safety, and is
    # not run, so it passes no test
    assert verifier.artifact_scores(payload, "import os\ndef f(x):\n    return x + 1\n") == {
        "unit_tests": (0.0, 3.0),
        "parseability": (1.0, 1.0),
        "safety": (0.0, 1.0),
    }


def test_allowed_calls_let_a_tasks_own_builtin_run_and_pass_the_scan(child) -> None:
    payload = {
        "function_name": "f",
        "signature": "def f(x):",
        "visible_tests": [_data([1], 2)],
        "hidden_tests": [_data([5], 6)],
        "allowed_calls": ["eval"],
    }
    uses_eval = "def f(x):\n    return eval('x + 1')\n"
    assert verifier.artifact_scores(payload, uses_eval) == {
        "unit_tests": (3.0, 3.0),
        "parseability": (1.0, 1.0),
        "safety": (1.0, 1.0),
    }
    check = verifier.structural_check(payload, uses_eval)
    assert (check.safe, check.issues, check.coverage) == (True, (), 1.0)


def test_a_run_that_timed_out_before_any_call_names_every_test(reply) -> None:
    """A timeout is the one error after which each test is still listed: it failed by the time limit."""
    reply.append(lambda job: _result(returncode=None, timed_out=True))
    report = verifier.execute_tests(GOOD, "f", [_data([1], 2), _data([2], 3)])
    assert report == verifier.TestReport(
        0, 2, ("assert f(1) == 2  -> timeout", "assert f(2) == 3  -> timeout"), "timeout"
    )
