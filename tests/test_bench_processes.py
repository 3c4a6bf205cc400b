"""Settings in processes of their own: results, progress and errors reach the parent, and a process that
dies is an error naming its setting instead of a wait without end."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from harness_gym.bench import runner
from harness_gym.bench.processes import SettingProcessDied, run_each
from harness_gym.bench.runner import BenchConfig


def _square(key: str, report) -> dict:
    report(2)
    report(3)
    return {"key": key, "pid": os.getpid()}


SIBLING = Path()
"""Where the setting process that is still at work writes its pid (set per test; inherited by fork)."""


def _sibling_at_work() -> None:
    SIBLING.write_text(str(os.getpid()))
    time.sleep(60)


def _after_the_sibling_started() -> None:
    for _ in range(500):
        if SIBLING.exists() and SIBLING.read_text():
            return
        time.sleep(0.02)
    raise AssertionError("the sibling setting process never started")


def _fails(key: str, report) -> None:
    if key != "bad":
        _sibling_at_work()
    _after_the_sibling_started()
    raise ValueError(f"no tasks for {key}")


def _dies(key: str, report) -> None:
    if key == "slow":
        _sibling_at_work()
    _after_the_sibling_started()
    if key == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(3)


def _ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(autouse=True)
def _sibling_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "SIBLING", tmp_path / "sibling.pid")


def test_each_key_runs_in_a_fresh_process_and_reports_here():
    results: dict[str, dict] = {}
    episodes: list[int] = []
    run_each(_square, ["a", "b", "c"], 2, results.__setitem__, episodes.append)
    assert {key: value["key"] for key, value in results.items()} == {"a": "a", "b": "b", "c": "c"}
    assert len({value["pid"] for value in results.values()} | {os.getpid()}) == 4
    assert sorted(episodes) == [2, 2, 2, 3, 3, 3]


def test_an_error_in_a_setting_process_is_raised_here_with_its_traceback():
    with pytest.raises(ValueError, match="no tasks for bad") as caught:
        run_each(_fails, ["slow", "bad"], 2, lambda key, result: None)
    assert "in the process of bad" in str(caught.value.__cause__)
    assert "_fails" in str(caught.value.__cause__)
    assert _ended(int(SIBLING.read_text()))  # the sibling was ended, not waited for


@pytest.mark.parametrize(("key", "how"), [("killed", "killed by SIGKILL"), ("exits", "exit status 3")])
def test_a_setting_process_that_dies_is_an_error_naming_it(key, how):
    with pytest.raises(SettingProcessDied, match=f"{key}: its process ended \\({how}\\) without a result"):
        run_each(_dies, ["slow", key], 2, lambda key, result: None)
    assert _ended(int(SIBLING.read_text()))


def test_the_bench_stops_with_the_setting_whose_process_died(tmp_path, monkeypatch):
    # the setting processes are forked, so they run the patched function
    monkeypatch.setattr(runner, "run_setting", lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL))
    config = BenchConfig(settings=("HarnessPlanning-v0",), out=str(tmp_path / "out"), show_progress=False)
    died = "HarnessPlanning-v0: its process ended \\(killed by SIGKILL"
    with pytest.raises(SettingProcessDied, match=died):
        runner.run(config)
