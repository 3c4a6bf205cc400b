"""Test-run verdicts kept on disk (``harness_gym.domains.coding.verdicts``): read back exactly as the
sandbox gave them, never a timeout, a fresh directory whenever the deciding code changes."""

from __future__ import annotations

from pathlib import Path

import pytest

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
