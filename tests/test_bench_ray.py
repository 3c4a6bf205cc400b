"""``harness-gym bench --backend ray``: each setting's collection and evaluations run as Ray tasks on a
cluster the setting processes join, and the results are those of the local backend."""

from __future__ import annotations

import importlib.util
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace

import pytest
from conftest import unavailable

from harness_gym.bench.runner import BenchConfig, run
from harness_gym.evaluation.engine import EngineError

PLANNING = "HarnessPlanning-v0"

# A Ray head in a process of its own (the bench forks its setting processes, and a forked copy of a
# process that joined Ray cannot use it): it prints the cluster address, answers each line it reads with
# the number of drivers that have joined the cluster besides itself, and stops when its stdin closes.
_HEAD = """
import os, sys, ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
print(ray.get_runtime_context().gcs_address, flush=True)
for _ in sys.stdin:
    jobs = ray._private.state.jobs()
    print(sum(job["DriverPid"] != os.getpid() for job in jobs), flush=True)
ray.shutdown()
"""


@pytest.fixture
def ray_head(monkeypatch) -> Iterator[tuple[str, subprocess.Popen]]:
    if importlib.util.find_spec("ray") is None:
        unavailable("Ray is not installed (the test extra)")
    # token authentication with a token of the test's own (nothing is written under ~/.ray); the bench's
    # setting processes inherit it, as drivers joining a real cluster take theirs from the environment
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    head = subprocess.Popen(
        [sys.executable, "-c", _HEAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert head.stdout is not None
        address = head.stdout.readline().strip()
        assert address, "the Ray head did not start"
        yield address, head
    finally:
        assert head.stdin is not None
        head.stdin.close()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            head.kill()


def _settings_without_timings(results: dict) -> dict:
    return {
        env_id: {key: value for key, value in setting.items() if key != "timings"}
        for env_id, setting in results["settings"].items()
    }


def _drivers_joined(head: subprocess.Popen) -> int:
    assert head.stdin is not None and head.stdout is not None
    head.stdin.write("jobs\n")
    head.stdin.flush()
    return int(head.stdout.readline())


def test_bench_on_ray_gives_the_local_results(tmp_path, ray_head):
    ray_address, head = ray_head
    config = BenchConfig(
        settings=(PLANNING,),
        seeds=(0,),
        rollouts=1,
        episodes_per_task=1,
        algos=("awr", "dqn"),
        n_steps=5,
        n_boot=200,
        show_progress=False,
    )
    local = run(replace(config, out=str(tmp_path / "local")))
    assert _drivers_joined(head) == 0
    remote = run(
        replace(
            config,
            out=str(tmp_path / "ray"),
            backend="ray",
            ray_address=ray_address,
            ray_tasks=2,
            concurrency=2,
        )
    )
    assert _drivers_joined(head) == 1  # the setting process, whose collection and evaluations ran on Ray
    assert set(local["settings"][PLANNING]["compare"]["policies"]) == {
        "base",
        "forced-check",
        "awr",
        "awr-greedy",
        "dqn",
    }
    assert _settings_without_timings(remote) == _settings_without_timings(local)


def test_bench_backend_is_scheduling_only_and_checked(tmp_path):
    config = BenchConfig(settings=(PLANNING,), out=str(tmp_path / "x"))
    assert replace(config, backend="ray", ray_address="ray://head:10001", ray_tasks=4).content_key() == (
        config.content_key()
    )
    with pytest.raises(EngineError, match="backend"):
        run(replace(config, backend="dask"))
    with pytest.raises(EngineError, match="Ray address"):
        run(replace(config, ray_address="ray://head:10001"))
    with pytest.raises(ValueError, match="ray_tasks"):
        run(replace(config, backend="ray", ray_tasks=0))
