"""The coding verifier's decisions outside the sandbox run: the verdict cache key changes with every input
of a verdict (a stale verdict is never reused) and with nothing else."""

from __future__ import annotations

import pytest

from harness_gym.domains.coding import verifier
from harness_gym.sandbox.runner import SandboxLimits

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


# -- running tests in the sandbox ---------------------------------------------------------------------
_MUTATED = "mutmut" in verifier._values_source()
"""Under mutation testing the child's script would embed the rewritten ``values.py``, which imports mutmut
(absent in the sandbox); these tests then cannot run."""
sandboxed = pytest.mark.skipif(
    _MUTATED, reason="values.py is a mutated copy: the sandbox's child cannot run it"
)

GOOD = "def f(x):\n    return x + 1\n"


def _data(args: list, expected: object, **extra: object) -> dict:
    from harness_gym.domains.coding import values

    return {"args": values.encode(args), "expected": values.encode(expected), **extra}


@pytest.fixture
def fresh(monkeypatch):
    """No verdict cache on disk or in memory: every call runs."""
    monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
    verifier.clear_cache()
    yield
    verifier.clear_cache()


@sandboxed
def test_execute_tests_counts_passes_and_names_each_failure(fresh) -> None:
    from harness_gym.domains.coding import values

    tests = [
        _data([1], 2),
        _data([1], 3),
        _data([0.1], 1.1, tolerance={"abs": 1e-9}),
        {"calls": [values.encode([1]), values.encode([2])], "check": "assert results == [2, 3]"},
        {"calls": [values.encode([1])], "check": "assert results == [5], 'wrong'", "text": "f(1) is 5"},
        _data(["a"], 1),
    ]
    report = verifier.execute_tests(GOOD, "f", tests)
    assert (report.passed, report.total, report.error) == (3, 6, None)
    assert report.failures == (
        "assert f(1) == 3  -> got 2",
        "f(1) is 5  -> AssertionError: wrong",
        "assert f('a') == 1  -> TypeError: can only concatenate str (not \"int\") to str",
    )
    assert report.pass_rate == 0.5


@sandboxed
def test_execute_tests_reports_what_stopped_the_module(fresh) -> None:
    from harness_gym.sandbox.runner import SandboxLimits

    syntax = verifier.execute_tests("def f(:\n", "f", [_data([1], 2)])
    assert syntax.passed == 0 and syntax.total == 1 and syntax.error.startswith("syntax error:")
    assert syntax.failures == ()
    raising = verifier.execute_tests("raise ValueError('boom')\n", "f", [_data([1], 2)])
    assert raising.passed == 0 and "ValueError: boom" in raising.error and raising.failures == ()
    missing = verifier.execute_tests("def g(x):\n    return x\n", "f", [_data([1], 2)])
    assert missing.passed == 0 and missing.error
    slow = "def f(x):\n    if x == 2:\n        while True:\n            pass\n    return x + 1\n"
    limits = SandboxLimits(wall_time_s=2.0, cpu_time_s=1)
    timed = verifier.execute_tests(slow, "f", [_data([1], 2), _data([2], 3)], limits)
    assert timed.error == "timeout" and timed.passed == 1
    assert timed.failures == ("assert f(2) == 3  -> timeout",)


@sandboxed
def test_run_tests_does_not_run_unsafe_code_unless_its_calls_are_allowed(fresh) -> None:
    unsafe = "def f(x):\n    return eval('x + 1')\n"
    refused = verifier.run_tests(unsafe, "f", [_data([1], 2)])
    assert refused.passed == 0 and refused.total == 1
    assert refused.error.startswith("not run: the safety scan rejects the code (")
    allowed = verifier.run_tests(unsafe, "f", [_data([1], 2)], allowed_calls=("eval",))
    assert (allowed.passed, allowed.error) == (1, None)
    again = verifier.run_tests(unsafe, "f", [_data([1], 2)], allowed_calls=["eval"])
    assert again is allowed  # the cached verdict of the same inputs


@sandboxed
def test_structural_check_and_artifact_scores_state_each_criterion(fresh) -> None:
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
    broken = verifier.structural_check(payload, "def f(:\n")
    assert [issue.split(":")[0] for issue in broken.issues] == ["does not parse"]
    assert broken.coverage == 0.0
    unsafe = verifier.structural_check(payload, "import os\ndef f(x):\n    return x + 1\n")
    assert not unsafe.safe and unsafe.issues[0].startswith("unsafe: ")
    assert any(issue.startswith("visible tests: not run") for issue in unsafe.issues)
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


@sandboxed
def test_verdicts_are_kept_on_disk_for_every_later_process_except_timeouts(monkeypatch, tmp_path) -> None:
    from harness_gym.domains.coding import values
    from harness_gym.sandbox.runner import SandboxLimits

    monkeypatch.setenv("HARNESS_GYM_CACHE", str(tmp_path))
    verifier.clear_cache()
    source = "def f(x):\n    return x + 1 if x < 3 else 0\n"
    tests = [
        _data([1], 2),
        _data([5], 6),
        {"calls": [values.encode([1]), values.encode(["a"])], "check": "assert True"},
    ]
    first = verifier.run_tests(source, "f", tests)
    assert (first.passed, first.total, first.error) == (1, 3, None)
    assert first.failures[0] == "assert f(5) == 6  -> got 0"
    assert first.failures[1].endswith("-> TypeError: '<' not supported between instances of 'str' and 'int'")
    assert any(tmp_path.rglob("*")), "the verdict was stored on disk"
    verifier.clear_cache()
    again = verifier.run_tests(source, "f", tests)
    assert again == first and again is not first  # read back from disk, field by field
    slow = "def f(x):\n    while True:\n        pass\n"
    limits = SandboxLimits(wall_time_s=1.0, cpu_time_s=1)
    stored = set(tmp_path.rglob("*"))
    timed = verifier.run_tests(slow, "f", [_data([1], 2)], limits)
    assert timed.error == "timeout" and set(tmp_path.rglob("*")) == stored  # a timeout is not kept
    verifier.clear_cache()
