"""Collection: Minari round trip, worker-count invariance, resume after a kill, clear errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import minari
import numpy as np
import pytest

from harness_gym import Action
from harness_gym.cli.main import main
from harness_gym.core.hms import EVENTS
from harness_gym.datasets.collect import (
    CollectConfig,
    CollectError,
    checkpoint_dir,
    collect,
    dataset_root,
    dataset_stats,
    mixed_behavior,
)
from harness_gym.evaluation.reference_scores import reference_scores
from harness_gym.evaluation.rollout import run_episode
from harness_gym.policies.scripted import ExploratoryPolicy, ForcedCheckPolicy, make_policy

PLANNING = "HarnessPlanning-v0"


def config(root: Path, dataset_id: str = "harness/planning/mixed-v0", **kwargs) -> CollectConfig:
    defaults = {"env_id": PLANNING, "policy": "mixed", "episodes": 24, "show_progress": False}
    return CollectConfig(dataset_id=dataset_id, root=str(root), **{**defaults, **kwargs})


def load(root: Path, dataset_id: str) -> minari.MinariDataset:
    return minari.load_dataset(str(root / dataset_id))


def arrays(dataset: minari.MinariDataset) -> list[dict[str, np.ndarray]]:
    out = []
    for ep in dataset.iterate_episodes():
        fields = {name: getattr(ep, name) for name in ("observations", "actions", "rewards", "terminations")}
        out.append({**fields, "truncations": ep.truncations, **{f"i/{k}": v for k, v in ep.infos.items()}})
    return out


def assert_same(a: list[dict[str, np.ndarray]], b: list[dict[str, np.ndarray]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.keys() == y.keys()
        for key in x:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)


def test_episodes_out_are_what_reading_the_dataset_gives(tmp_path):
    kept: list = []
    collect(config(tmp_path), episodes_out=kept)
    read = list(load(tmp_path, "harness/planning/mixed-v0").iterate_episodes())
    assert [ep.id for ep in kept] == [ep.id for ep in read]
    for mine, theirs in zip(kept, read, strict=True):
        assert mine.infos.keys() == theirs.infos.keys()
        for name in ("observations", "actions", "rewards", "terminations", "truncations"):
            a, b = getattr(mine, name), getattr(theirs, name)
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)
        for key, value in theirs.infos.items():
            assert mine.infos[key].dtype == value.dtype, key
            np.testing.assert_array_equal(mine.infos[key], value, err_msg=key)


def test_round_trip_with_plain_minari(tmp_path, monkeypatch):
    report = collect(config(tmp_path))
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    dataset = minari.load_dataset("harness/planning/mixed-v0")  # the plain Minari way
    assert dataset.total_episodes == 24
    assert dataset_stats(dataset) == report.stats

    episodes = list(dataset.iterate_episodes())
    gs = [ep.rewards[-1] for ep in episodes]
    assert report.stats["mean_G"] == pytest.approx(np.mean(gs))
    assert report.stats["buffer_slack"] == pytest.approx(max(gs) - np.mean(gs))
    fired = np.mean([ep.infos["hms_fired"][-1] for ep in episodes], axis=0)
    assert [report.stats["hms_fired"][e] for e in EVENTS] == pytest.approx(fired.tolist())

    meta = dataset.storage.metadata
    task_ids = meta["harness_task_ids"]
    assert len(task_ids) == 80 and meta["harness_split"] == "train" and meta["harness_env_id"] == PLANNING
    assert meta["harness_behaviors"] == ["base", "exploratory"] and meta["algorithm_name"] == "mixed"
    assert (meta["ref_min_score"], meta["ref_max_score"]) == reference_scores(PLANNING)  # the env id's
    assert meta["harness_sandbox"] == "none"  # planning runs no model-written code
    for i, ep in enumerate(episodes):
        t = len(ep.actions)
        assert ep.observations.shape == (t + 1, 31) and ep.infos["action_mask"].shape == (t + 1, 7)
        assert task_ids[int(ep.infos["task_index"][0])] == task_ids[i % 80]  # round robin over the split
        assert meta["harness_behaviors"][int(ep.infos["behavior"][0])] == mixed_behavior(i, 80)
        legal = ep.infos["action_mask"][np.arange(t), ep.actions]
        assert legal.all()  # behaviour only ever took legal actions
        assert np.isnan(ep.infos["behavior_logp"][-1]) and np.all(ep.infos["behavior_logp"][:-1] <= 0)
        assert ep.terminations[-1] or ep.truncations[-1]


def test_episodes_replay_from_their_recorded_seed_task_and_behaviour(tmp_path):
    collect(config(tmp_path, episodes=6))
    dataset = load(tmp_path, "harness/planning/mixed-v0")
    env = gym.make(PLANNING)
    meta = dataset.storage.metadata
    for i, ep in enumerate(dataset.iterate_episodes()):
        behaviour = meta["harness_behaviors"][int(ep.infos["behavior"][0])]
        policy = make_policy(behaviour, PLANNING)
        final = run_episode(
            env, policy, seed=i, task_id=meta["harness_task_ids"][int(ep.infos["task_index"][0])]
        )
        assert [s["action"] for s in final["trajectory"]["steps"]] == [Action(a).name for a in ep.actions]
        assert final["G"] == ep.rewards[-1]


def test_worker_count_does_not_change_the_dataset(tmp_path):
    collect(config(tmp_path, "harness/planning/one-v0", workers=1))
    collect(config(tmp_path, "harness/planning/two-v0", workers=2))
    assert_same(
        arrays(load(tmp_path, "harness/planning/one-v0")), arrays(load(tmp_path, "harness/planning/two-v0"))
    )


def test_resume_after_kill_gives_the_identical_dataset(tmp_path):
    common = ["--env", "HarnessCoding-v0", "--episodes", "40", "--root", str(tmp_path), "--quiet"]
    interrupted = CollectConfig(
        "HarnessCoding-v0", "mixed", 40, "harness/coding/killed-v0", root=str(tmp_path), show_progress=False
    )
    cmd = [
        sys.executable,
        "-m",
        "harness_gym.cli",
        "collect",
        "--dataset-id",
        interrupted.dataset_id,
        *common,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoints = checkpoint_dir(interrupted)
    deadline = time.monotonic() + 120
    while len(list(checkpoints.glob("episode-*.npz"))) < 5 and time.monotonic() < deadline:
        assert proc.poll() is None, "the collection finished before it could be interrupted"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len(list(checkpoints.glob("episode-*.npz")))
    assert 5 <= done_before < 40
    assert not (tmp_path / interrupted.dataset_id).exists()  # nothing half-written in place

    report = collect(interrupted)
    assert report.resumed_episodes == done_before
    assert not checkpoints.exists()
    straight = CollectConfig(
        "HarnessCoding-v0", "mixed", 40, "harness/coding/straight-v0", root=str(tmp_path), show_progress=False
    )
    collect(straight)
    assert_same(arrays(load(tmp_path, interrupted.dataset_id)), arrays(load(tmp_path, straight.dataset_id)))


def test_a_relative_root_works(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = collect(config(Path("relative/datasets"), episodes=3))
    assert Path(report.path) == tmp_path / "relative" / "datasets" / "harness" / "planning" / "mixed-v0"
    assert load(tmp_path / "relative" / "datasets", "harness/planning/mixed-v0").total_episodes == 3


def test_existing_dataset_needs_overwrite(tmp_path):
    collect(config(tmp_path, episodes=4))
    with pytest.raises(CollectError, match="already exists"):
        collect(config(tmp_path, episodes=4))
    report = collect(config(tmp_path, episodes=6, overwrite=True))
    assert report.stats["episodes"] == 6 and load(tmp_path, "harness/planning/mixed-v0").total_episodes == 6


def test_resuming_with_different_settings_is_refused(tmp_path):
    first = config(tmp_path, episodes=4)
    directory = checkpoint_dir(first)
    directory.mkdir(parents=True)
    (directory / "config.json").write_text('{"env_id": "HarnessPlanning-v0", "seed": 99}')
    with pytest.raises(CollectError, match="different settings"):
        collect(first)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dataset_id": "planning/mixed"}, "malformed dataset id"),
        ({"dataset_id": "harness/planning/Mixed-v0"}, "malformed dataset id"),
        ({"dataset_id": "harness/coding/mixed-v0"}, "names domain 'coding'"),
        ({"env_id": "Nope-v0"}, "unknown env id 'Nope-v0'"),
        ({"policy": "greedy"}, "unknown policy 'greedy'"),
        ({"episodes": 0}, "at least 1"),
        ({"workers": 0}, "at least 1"),
    ],
)
def test_bad_requests_are_named(tmp_path, changes, message):
    with pytest.raises(CollectError, match=message):
        collect(config(tmp_path, **changes))


def test_non_writable_target_is_named(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(CollectError, match="cannot write datasets under"):
        collect(config(blocker / "datasets"))


def test_cli_collect_and_datasets(tmp_path, capsys):
    argv = ["collect", "--env", PLANNING, "--episodes", "8", "--dataset-id", "harness/planning/cli-v0"]
    assert main([*argv, "--root", str(tmp_path), "--quiet"]) == 0
    assert "wrote harness/planning/cli-v0" in capsys.readouterr().out
    assert main(["datasets", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "harness/planning/cli-v0" in out and "HarnessPlanning-v0" in out
    with pytest.raises(SystemExit, match="already exists"):
        main([*argv, "--root", str(tmp_path), "--quiet"])


def test_cli_collect_takes_a_step_budget(tmp_path, capsys):
    argv = ["collect", "--env", PLANNING, "--episodes", "6", "--dataset-id", "harness/planning/short-v0"]
    assert main([*argv, "--root", str(tmp_path), "--quiet", "--max-steps", "3"]) == 0
    capsys.readouterr()
    lengths = [len(ep.actions) for ep in load(tmp_path, "harness/planning/short-v0").iterate_episodes()]
    assert len(lengths) == 6 and max(lengths) <= 3 and 3 in lengths
    with pytest.raises(SystemExit, match="max_steps must be at least 1"):
        main([*argv[:-1], "harness/planning/zero-v0", "--root", str(tmp_path), "--quiet", "--max-steps", "0"])


def test_forced_check_checks_every_draft_before_submitting():
    env = gym.make("HarnessCoding-v0", split="eval")
    for seed in range(10):
        final = run_episode(env, ForcedCheckPolicy("HarnessCoding-v0"), seed=seed)
        actions = [s["action"] for s in final["trajectory"]["steps"]]
        assert actions[-2:] == ["CHECK", "SUBMIT"] and "REVISE" not in actions
        assert (
            final["hms"]["CheckBeforeSubmit"]["fired"]
            or final["trajectory"]["steps"][-2]["check"]["missing"] > 0
        )


def test_exploratory_probabilities_mix_base_and_uniform():
    policy = ExploratoryPolicy(PLANNING, epsilon=0.3)
    env = gym.make(PLANNING)
    obs, info = env.reset(seed=0)
    probs = policy.action_probs(obs, info["action_mask"])
    legal = info["action_mask"].astype(bool)
    assert probs.sum() == pytest.approx(1.0) and np.all(probs[~legal] == 0)
    base = policy.base.choose(obs, info["action_mask"])
    assert probs[base] == pytest.approx(0.7 + 0.3 / legal.sum())
    rng = np.random.default_rng(0)
    draws = np.bincount([policy.act(obs, info["action_mask"], rng) for _ in range(4000)], minlength=7) / 4000
    np.testing.assert_allclose(draws, probs, atol=0.03)
    with pytest.raises(ValueError, match="epsilon"):
        ExploratoryPolicy(PLANNING, epsilon=1.5)


@pytest.mark.parametrize("n_tasks", [1, 2, 3, 80, 81])
def test_mixed_gives_every_task_both_behaviours(n_tasks: int) -> None:
    per_task: dict[int, list[str]] = {}
    for i in range(2 * n_tasks):
        per_task.setdefault(i % n_tasks, []).append(mixed_behavior(i, n_tasks))
    assert all(sorted(b) == ["base", "exploratory"] for b in per_task.values()), per_task
    first_round = [mixed_behavior(i, n_tasks) for i in range(n_tasks)]
    assert abs(first_round.count("base") - first_round.count("exploratory")) <= 1


def test_the_policy_draws_from_a_stream_independent_of_the_executors() -> None:
    """The env seeds its executor with ``default_rng(seed)``; a policy on that same stream would make
    its exploratory choices the executor's own draws (correlated with whether a draft succeeds)."""
    from harness_gym.evaluation.rollout import policy_rng, run_episode

    class FirstDraw:
        def __init__(self) -> None:
            self.draws: list[float] = []

        def act(self, obs, mask, rng):
            self.draws.append(float(rng.random()))
            return int(np.flatnonzero(mask)[-1])

    env = gym.make("HarnessPlanning-v0")
    policy = FirstDraw()
    run_episode(env, policy, seed=11)
    assert policy.draws[0] == policy_rng(11).random()
    env.reset(seed=11)
    assert policy.draws[0] != env.unwrapped.np_random.random()


def test_collected_exploration_draws_from_the_policy_stream(tmp_path: Path) -> None:
    """Collection plays the same episode as ``run_episode`` from the same seed (both use policy_rng)."""
    from harness_gym.evaluation.rollout import run_episode

    config = CollectConfig(
        "HarnessPlanning-v0", "exploratory", 3, "harness/planning/rng-v0", root=str(tmp_path)
    )
    collect(config)
    dataset = minari.load_dataset(str(dataset_root(str(tmp_path)) / "harness/planning/rng-v0"))
    env = gym.make("HarnessPlanning-v0")
    ids = [task.task_id for task in env.unwrapped.tasks]
    for index, episode in enumerate(dataset.iterate_episodes()):
        final = run_episode(
            env, make_policy("exploratory", "HarnessPlanning-v0"), seed=index, task_id=ids[index]
        )
        played = [Action[step["action"]].value for step in final["trajectory"]["steps"]]
        assert played == [int(a) for a in episode.actions]
