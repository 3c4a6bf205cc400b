"""Test-run verdicts kept on disk (``harness_gym.domains.coding.verdicts``): read back exactly as the
sandbox gave them, never a timeout, a fresh directory whenever the deciding code changes."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_gym.domains.coding import CodingDomain, values, verdicts, verifier
from harness_gym.sandbox import SandboxLimits


def _data(args: tuple, expected: object) -> dict:
    return {"args": values.encode(list(args)), "expected": values.encode(expected)}


ADD = "def add(a, b):\n    return a + b if a else b - 1\n"
ADD_TESTS = [_data((1, 2), 3), _data((0, 2), 2), _data((2, "x"), 0)]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HARNESS_GYM_CACHE", str(tmp_path))
    verifier.clear_cache()
    yield tmp_path
    verifier.clear_cache()


def _kept(root: Path) -> list[Path]:
    return sorted(root.rglob("*.json"))


def test_a_kept_verdict_is_read_back_without_a_sandbox_run(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = verifier.run_tests(ADD, "add", ADD_TESTS)
    assert (first.passed, first.total) == (1, 3) and first.failures and len(_kept(cache_dir)) == 1
    verifier.clear_cache()  # as a new process: only the disk has it

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sandbox ran again")

    monkeypatch.setattr(verifier, "execute_tests", no_run)
    again = verifier.run_tests(ADD, "add", ADD_TESTS)
    assert again == first and isinstance(again.failures, tuple)
    verifier.clear_cache()
    with pytest.raises(AssertionError, match="sandbox ran again"):  # other tests: another key
        verifier.run_tests(ADD, "add", ADD_TESTS[:2])


def test_timeouts_are_not_kept(cache_dir: Path) -> None:
    spin = "def spin(n):\n    while n:\n        pass\n    return n\n"
    report = verifier.run_tests(spin, "spin", [_data((1,), 1)], SandboxLimits(wall_time_s=2.0, cpu_time_s=1))
    assert report.error == "timeout"
    assert _kept(cache_dir) == []


def test_off_keeps_nothing(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
    assert verdicts.cache_root() is None
    verifier.run_tests(ADD, "add", ADD_TESTS)
    assert _kept(cache_dir) == []


def test_the_version_follows_the_deciding_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copies = []
    for source in verdicts._SOURCES:
        copy = tmp_path / source.name
        copy.write_bytes(source.read_bytes())
        copies.append(copy)
    monkeypatch.setattr(verdicts, "_SOURCES", tuple(copies))
    verdicts.version.cache_clear()
    try:
        same = verdicts.version()
        copies[0].write_text(copies[0].read_text() + "\n# changed\n")
        verdicts.version.cache_clear()
        assert verdicts.version() != same
    finally:
        verdicts.version.cache_clear()


def test_kept_pool_verdicts_equal_fresh_runs(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pool artifact of a few coding tasks: the visible and the full test run, as computed with
    the disk off, as kept, and as read back."""
    domain = CodingDomain()
    for task in domain.tasks()[:3]:
        pool = domain.pool(task)
        payload = task.payload
        for source in dict.fromkeys([pool.reference, *(flawed.source for flawed in pool.flawed)]):
            for tests in (payload["visible_tests"], [*payload["visible_tests"], *payload["hidden_tests"]]):
                args = (source, payload["function_name"], tests)
                kwargs = {"allowed_calls": payload.get("allowed_calls", ())}
                monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
                fresh = verifier.run_tests(*args, **kwargs)
                verifier.clear_cache()
                monkeypatch.setenv("HARNESS_GYM_CACHE", str(cache_dir))
                assert verifier.run_tests(*args, **kwargs) == fresh  # computed and kept
                verifier.clear_cache()
                assert verifier.run_tests(*args, **kwargs) == fresh  # read back
                verifier.clear_cache()
    assert len(_kept(cache_dir)) > 20


# --- the key: every input of a verdict ----------------------------------------------------------------

KEY_INPUTS = {
    "source": ADD,
    "function_name": "add",
    "tests": ADD_TESTS,
    "limits": verifier.TEST_LIMITS,
    "allowed_calls": (),
}
OTHER_INPUTS = {
    "source": st.text(),
    "function_name": st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True),
    "tests": st.lists(st.builds(_data, st.tuples(st.integers()), st.integers()), max_size=3),
    "limits": st.builds(
        SandboxLimits,
        wall_time_s=st.floats(0.1, 60.0),
        cpu_time_s=st.integers(1, 60),
        memory_bytes=st.integers(1, 2**32),
        file_size_bytes=st.integers(0, 2**24),
        max_processes=st.integers(0, 8),
        output_bytes=st.integers(0, 2**22),
    ),
    "allowed_calls": st.sets(st.sampled_from(sorted(verifier.FORBIDDEN_CALLS)), min_size=1).map(tuple),
}


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(KEY_INPUTS)), data=st.data())
def test_the_verdict_key_changes_with_every_input(name: str, data: st.DataObject) -> None:
    """In this process and on disk: a verdict is never read back for inputs it was not computed for."""
    assert set(OTHER_INPUTS) == set(KEY_INPUTS) == set(inspect.signature(verifier.run_tests).parameters)
    other = data.draw(OTHER_INPUTS[name].filter(lambda value: value != KEY_INPUTS[name]))
    key = verifier.cache_key(**KEY_INPUTS)
    changed = verifier.cache_key(**{**KEY_INPUTS, name: other})
    assert changed != key
    assert verdicts.verdict_key(*changed) != verdicts.verdict_key(*key)


def test_the_disk_key_changes_with_the_sandbox_settings_and_the_version(monkeypatch: pytest.MonkeyPatch):
    key = verifier.cache_key(**KEY_INPUTS)
    seen = {verdicts.verdict_key(*key)}
    for setting, value in (("HARNESS_GYM_SANDBOX", "process"), ("HARNESS_GYM_SANDBOX_POOL", "fresh")):
        monkeypatch.setenv(setting, value)
        seen.add(verdicts.verdict_key(*key))
    monkeypatch.setattr(verdicts, "version", lambda: "another version")
    seen.add(verdicts.verdict_key(*key))
    assert len(seen) == 4


def test_a_verdict_refused_by_the_scan_is_not_reused_when_the_call_is_allowed(cache_dir: Path) -> None:
    """HumanEval/160's reference calls ``eval``, which its task allows: the same source, refused without
    ``allowed_calls``, must then run."""
    source = "def calc(text):\n    return eval(text)\n"
    tests = [_data(("1 + 2",), 3)]
    refused = verifier.run_tests(source, "calc", tests)
    assert refused.passed == 0 and refused.error and "safety scan" in refused.error
    assert verifier.run_tests(source, "calc", tests, allowed_calls=("eval",)).passed == 1


def test_the_version_covers_every_file_that_decides_a_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier, the child script it runs, the value encoding and the whole sandbox package: a change
    to any one of them gives another version."""
    package = Path(verifier.__file__).parents[2]
    coding = package / "domains" / "coding"
    deciding = [coding / "verifier.py", coding / "child.py", coding / "values.py"]
    deciding += sorted((package / "sandbox").glob("*.py"))
    read_bytes = Path.read_bytes
    verdicts.version.cache_clear()
    same = verdicts.version()
    try:
        for changed in deciding:
            monkeypatch.setattr(
                Path, "read_bytes", lambda self, c=changed: read_bytes(self) + (b"#" if self == c else b"")
            )
            verdicts.version.cache_clear()
            assert verdicts.version() != same, changed.name
            monkeypatch.undo()
    finally:
        verdicts.version.cache_clear()
