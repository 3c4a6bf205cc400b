"""The episode engine: results independent of concurrency, workers and backend; resume after SIGKILL;
refusal of a mismatched resume; Ctrl-C leaves resumable state; LLM calls are all counted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import require

from harness_gym.evaluation.engine import EngineConfig, EngineError, ResumeError
from harness_gym.evaluation.protocol import evaluate
from harness_gym.policies.scripted import make_policy

ENV = "HarnessPlanning-v0"
ROOT = Path(__file__).resolve().parents[1]


def _collect(tmp_path: Path, name: str, **engine) -> object:
    from harness_gym.datasets.collect import CollectConfig, collect

    config = CollectConfig(
        ENV,
        "mixed",
        16,
        "harness/planning/engine-v0",
        root=str(tmp_path / name),
        show_progress=False,
        **engine,
    )
    return collect(config)


def _dataset(report) -> tuple[list[dict[str, np.ndarray]], dict]:
    import minari

    dataset = minari.load_dataset(report.path)
    episodes = [
        {
            "observations": ep.observations,
            "actions": ep.actions,
            "rewards": ep.rewards,
            "terminations": ep.terminations,
            "truncations": ep.truncations,
            **{f"infos/{k}": v for k, v in ep.infos.items()},
        }
        for ep in dataset.iterate_episodes()
    ]
    meta = dict(dataset.storage.metadata)
    return episodes, meta


def _assert_same_dataset(a, b) -> None:
    (ea, ma), (eb, mb) = _dataset(a), _dataset(b)
    assert len(ea) == len(eb)
    for x, y in zip(ea, eb, strict=True):
        assert x.keys() == y.keys()
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)
    assert ma.keys() == mb.keys()
    for key in ma:
        np.testing.assert_equal(ma[key], mb[key], err_msg=key)


def test_datasets_identical_for_any_concurrency_and_workers(tmp_path):
    require("minari")
    one = _collect(tmp_path, "c1")
    many = _collect(tmp_path, "c8", concurrency=8)
    spread = _collect(tmp_path, "c3w2", concurrency=3, workers=2)
    assert one.stats == many.stats == spread.stats
    _assert_same_dataset(one, many)
    _assert_same_dataset(one, spread)


def test_evaluation_identical_for_any_concurrency_and_workers():
    policy = make_policy("exploratory", ENV)  # stochastic: draws from the episode's generator
    kwargs = {"seeds": (0, 1), "rollouts": 1}
    one = evaluate(policy, ENV, **kwargs)
    assert one == evaluate(policy, ENV, engine=EngineConfig(concurrency=16), **kwargs)
    assert one == evaluate(policy, ENV, engine=EngineConfig(concurrency=2, workers=2), **kwargs)
    assert [r.key for r in one] == sorted((r.key for r in one), key=[r.key for r in one].index)


def test_ray_backend_gives_the_local_results(tmp_path):
    require("minari")
    ray = require("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        policy = make_policy("exploratory", ENV)
        local = evaluate(policy, ENV, seeds=(0,), rollouts=1)
        remote = evaluate(
            policy, ENV, seeds=(0,), rollouts=1, engine=EngineConfig(concurrency=2, workers=2, backend="ray")
        )
        assert local == remote
        _assert_same_dataset(
            _collect(tmp_path, "local"), _collect(tmp_path, "ray", workers=2, concurrency=2, backend="ray")
        )
    finally:
        ray.shutdown()


def test_engine_settings_are_checked():
    with pytest.raises(EngineError, match="concurrency"):
        EngineConfig(concurrency=0)
    with pytest.raises(EngineError, match="unknown backend 'dask'"):
        EngineConfig(backend="dask")
    with pytest.raises(EngineError, match="Ray address"):
        EngineConfig(ray_address="ray://x:1")


def test_a_failing_episode_raises_its_own_error_from_a_worker_process():
    class Broken:
        name = "broken"

        def act(self, obs, mask, rng):
            raise ZeroDivisionError("policy bug")

    with pytest.raises(ZeroDivisionError, match="policy bug"):
        evaluate(Broken(), ENV, seeds=(0,), rollouts=1, engine=EngineConfig(concurrency=2, workers=2))


# -- resume ----------------------------------------------------------------------------------------
def test_mismatched_evaluation_resume_is_refused_naming_the_difference(tmp_path):
    from harness_gym.evaluation.engine import Checkpoints
    from harness_gym.evaluation.protocol import env_settings
    from harness_gym.executors.openai_executor import OpenAIConfig

    policy = make_policy("base", ENV)
    evaluate(policy, ENV, seeds=(0,), rollouts=1, checkpoint=tmp_path / "ev")
    with pytest.raises(ResumeError, match=r"seeds: \[0\] -> \[1\]"):
        evaluate(policy, ENV, seeds=(1,), rollouts=1, checkpoint=tmp_path / "ev")
    with pytest.raises(ResumeError, match="policy: 'base' -> 'forced-check'"):
        evaluate(make_policy("forced-check", ENV), ENV, seeds=(0,), rollouts=1, checkpoint=tmp_path / "ev")

    def manifest(**settings):
        config = OpenAIConfig(model="m1", base_url="http://127.0.0.1:1/v1", **settings)
        return {"env": env_settings({"executor": config})}

    Checkpoints(tmp_path / "llm", manifest(), "evaluation")
    Checkpoints(tmp_path / "llm", manifest(), "evaluation")  # same settings: resumes
    with pytest.raises(ResumeError, match=r"env\.executor\.temperature: 0\.0 -> 0\.7"):
        Checkpoints(tmp_path / "llm", manifest(temperature=0.7), "evaluation")
    with pytest.raises(ResumeError, match="model: 'm1' -> 'm2'"):
        Checkpoints(tmp_path / "llm", {"env": env_settings({"executor": OpenAIConfig("m2", "x")})}, "e")


def test_mismatched_bench_resume_is_refused(tmp_path):
    from harness_gym.bench.runner import CHECKPOINTS, BenchConfig, run
    from harness_gym.evaluation.engine import check_manifest

    config = BenchConfig(settings=(ENV,), seeds=(0,), rollouts=1, out=str(tmp_path))
    check_manifest(tmp_path / CHECKPOINTS, config.content_key(), "bench")  # as an interrupted run left it
    with pytest.raises(ResumeError, match="rollouts: 1 -> 2"):
        run(BenchConfig(settings=(ENV,), seeds=(0,), rollouts=2, out=str(tmp_path), show_progress=False))


def _python(code: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True, **kwargs)


def _kill_when(process: subprocess.Popen, ready, what: str) -> None:
    """SIGKILL the process group (workers too) once ``ready()``; fail if the run ended first."""
    while not ready():
        if process.poll() is not None:
            pytest.fail(f"{what} finished before it could be interrupted")
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_evaluation_resumes_after_sigkill_to_identical_results(tmp_path):
    checkpoint = tmp_path / "ev"
    code = (
        "from harness_gym.policies.scripted import make_policy; "
        "from harness_gym.evaluation.protocol import evaluate; "
        "from harness_gym.evaluation.engine import EngineConfig; import json, sys; "
        f"r = evaluate(make_policy('exploratory', {ENV!r}), {ENV!r}, checkpoint=sys.argv[1], "
        "engine=EngineConfig(concurrency=2)); "
        "open(sys.argv[2], 'w').write(json.dumps([x.to_dict() for x in r]))"
    )
    out = tmp_path / "resumed.json"
    code = code.replace("sys.argv[1]", repr(str(checkpoint))).replace("sys.argv[2]", repr(str(out)))
    first = _python(code)
    _kill_when(first, lambda: len(list(checkpoint.glob("episode-*.json"))) >= 3, "the evaluation")
    kept = len(list(checkpoint.glob("episode-*.json")))
    assert 3 <= kept < 180 and not out.exists()
    second = _python(
        code.replace("sys.argv[1]", repr(str(checkpoint))).replace("sys.argv[2]", repr(str(out)))
    )
    assert second.wait() == 0
    uninterrupted = evaluate(make_policy("exploratory", ENV), ENV)
    assert json.loads(out.read_text()) == [r.to_dict() for r in uninterrupted]


def test_bench_resumes_after_sigkill_to_identical_results(tmp_path):
    require("d3rlpy")
    code = (
        "import sys; from harness_gym.bench.runner import BenchConfig, run; "
        f"run(BenchConfig(settings=({ENV!r},), seeds=(0,), rollouts=1, episodes_per_task=2, "
        "algos=('awr', 'bc'), n_steps=5, n_boot=200, workers=1, show_progress=False, out=sys.argv[1]))"
    )

    def bench(out: Path) -> subprocess.Popen:
        return _python(code.replace("sys.argv[1]", repr(str(out))), stdout=subprocess.DEVNULL)

    fresh, resumed = tmp_path / "fresh", tmp_path / "resumed"
    first = bench(resumed)
    base = resumed / "checkpoints" / ENV / "base"
    _kill_when(first, lambda: len(list(base.glob("episode-*.json"))) >= 2, "the bench")
    assert not (resumed / "results.json").exists()
    assert bench(resumed).wait() == 0
    assert bench(fresh).wait() == 0
    a, b = (json.loads((out / "results.json").read_text())["settings"][ENV] for out in (fresh, resumed))
    assert a["compare"] == b["compare"]
    assert a["buffer"] == b["buffer"]
    assert not (resumed / "checkpoints").exists() and not (resumed / "datasets").exists()


# -- Ctrl-C ----------------------------------------------------------------------------------------
def _sigint_as_at_a_terminal() -> None:
    """The child starts with SIGINT's default action, as a command typed at a terminal does. A suite started
    in the background by a shell without job control inherits SIGINT ignored (POSIX), and Python keeps an
    ignored SIGINT ignored, so Ctrl-C could not reach the command under test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_stops_collect_with_one_line_and_resumable_state(tmp_path, workers):
    root = tmp_path / "datasets"
    args = [
        "-m", "harness_gym.cli", "collect", "--env", "HarnessCoding-v0", "--episodes", "2000", "--quiet",
        "--dataset-id", "harness/coding/ctrl-c-v0", "--root", str(root), "--workers", str(workers),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_as_at_a_terminal,
    )
    checkpoints = root / ".harness-collect" / "harness__coding__ctrl-c-v0"
    while len(list(checkpoints.glob("episode-*.npz"))) < 2:
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "interrupted" in line]
    assert lines == [
        f"harness-gym collect: interrupted; finished episodes are checkpointed in {checkpoints}; "
        "rerun the same command to resume"
    ]
    assert list(checkpoints.glob("episode-*.npz"))


def test_ctrl_c_during_a_checkpoint_write_lands_after_it(tmp_path, monkeypatch):
    """Decision: Ctrl-C while an episode's checkpoint is written is raised once the file is whole. Raised
    inside ``np.savez`` it can leave the zip archive with an open member, whose close then raises
    ``ValueError`` instead: the collect command ended in a traceback (exit 1), not its resume hint."""
    from harness_gym.datasets import collect as collect_module

    savez = np.savez

    def savez_pressing_ctrl_c(handle, **arrays):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # ample time for the interpreter to run the handler, were SIGINT not held back
        savez(handle, **arrays)

    monkeypatch.setattr(np, "savez", savez_pressing_ctrl_c)
    # another thread alive, as in a collection's worker threads: the kernel may hand it the signal
    import threading

    threading.Thread(target=time.sleep, args=(1.0,), daemon=True).start()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # the suite may run with it ignored
    try:
        with pytest.raises(KeyboardInterrupt):
            collect_module._save_episode(tmp_path, 7, {"actions": np.arange(3)})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert [p.name for p in tmp_path.iterdir()] == ["episode-000007.npz"]
    assert collect_module._load_episode(tmp_path / "episode-000007.npz")["actions"].tolist() == [0, 1, 2]


# -- a chat LLM executor ---------------------------------------------------------------------------
@pytest.mark.usefixtures("loopback_llm_env")
def test_llm_collection_counts_every_call_and_is_concurrency_invariant(tmp_path):
    require("minari")
    from test_llm_executor import ChatServer, planning_replies

    from harness_gym.datasets.collect import CollectConfig, collect
    from harness_gym.executors.openai_executor import OpenAIConfig

    server = ChatServer(planning_replies)
    try:

        def run(name: str, settings: dict, **engine):
            before = len(server.requests)
            executor = OpenAIConfig(model="m", base_url=server.base_url, temperature=0.7, **settings)
            report = collect(
                CollectConfig(
                    ENV,
                    "mixed",
                    12,
                    "harness/planning/llm-v0",
                    split="eval",
                    executor=executor,
                    root=str(tmp_path / name),
                    show_progress=False,
                    **engine,
                )
            )
            return report, len(server.requests) - before

        one, calls_one = run("c1", {})
        # as the command line sets it for --concurrency 6: a scheduling setting, not in the dataset
        many, calls_many = run("c6w2", {"max_concurrency": 6}, concurrency=6, workers=2)
    finally:
        server.close()
    assert one.usage["executor_calls"] == calls_one  # the reference-score episodes' calls included
    assert many.usage["executor_calls"] == calls_many == calls_one
    _assert_same_dataset(one, many)
