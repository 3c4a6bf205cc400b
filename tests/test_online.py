"""The online reference: the flatness rule, its file, headroom's gap over it, and training end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_gym.cli.main import main
from harness_gym.evaluation.headroom import headroom_markdown, paired_gap, summarize_setting
from harness_gym.evaluation.online import (
    OnlineError,
    curve_point,
    is_flat,
    online_records,
    read_online,
    write_online,
)
from harness_gym.evaluation.rollout import protocol_episodes

PLANNING = "HarnessPlanning-v0"


def test_a_rising_curve_is_not_flat_and_a_level_one_is() -> None:
    rising = [[10, 0.40, 0.02], [20, 0.50, 0.02], [30, 0.60, 0.02]]
    level = [[10, 0.40, 0.05], [20, 0.60, 0.03], [30, 0.62, 0.03], [40, 0.61, 0.03], [50, 0.60, 0.03]]
    assert not is_flat(rising)
    assert is_flat(level) and is_flat(level[:4]) and not is_flat(level[:3])  # 0.40, 0.60, 0.62: rising
    assert not is_flat(level[:2])  # fewer points than the window
    assert not is_flat(level, min_steps=60) and is_flat(level, min_steps=50)
    assert is_flat([[1, 0.5, 0.0], [2, 0.5, 0.0], [3, 0.5, 0.0]])  # exactly level
    assert not is_flat([[1, 0.5, 0.01], [2, 0.5, 0.01], [3, 0.53, 0.01]])
    with pytest.raises(ValueError, match="window"):
        is_flat(level, window=1)


def test_a_curve_point_is_the_mean_and_its_standard_error() -> None:
    step, mean, se = curve_point(100, [0.0, 1.0, 0.0, 1.0])
    assert (step, mean) == (100, 0.5) and se == pytest.approx((1 / 3) ** 0.5 / 2)
    with pytest.raises(ValueError, match="at least 2"):
        curve_point(1, [0.3])


def _entry(episodes: list[tuple], layout: str = "v1") -> dict:
    records = [{"task_id": t, "seed": s, "rollout": r, "G": 0.1 * (s + r)} for s, t, r, _ in episodes]
    return {"obs_layout": layout, "executor_profile": "default", "episodes": records, "mean_G": 0.0}


def test_the_file_round_trips_and_refuses_what_does_not_match(tmp_path: Path) -> None:
    path = tmp_path / "online.json"
    assert read_online(path) == {"settings": {}}  # no file: an empty table
    episodes = protocol_episodes(["a", "b"], (0, 1), 2)
    write_online({PLANNING: _entry(episodes)}, {"learner": "x"}, path)
    write_online({"Other-v0": _entry(episodes, "v2")}, {"learner": "x"}, path)  # added, the first kept
    assert set(read_online(path)["settings"]) == {PLANNING, "Other-v0"}
    records = online_records(PLANNING, episodes[:3], path)
    assert [(r["task_id"], r["seed"], r["rollout"]) for r in records] == [
        (t, s, r) for s, t, r, _ in episodes[:3]
    ]
    assert [r["G"] for r in records] == pytest.approx([0.1 * (s + r) for s, _, r, _ in episodes[:3]])
    with pytest.raises(OnlineError, match="obs_layout 'v2'"):
        online_records("Other-v0", episodes, path)
    with pytest.raises(OnlineError, match="lacks 4 of 12"):
        online_records(PLANNING, protocol_episodes(["a", "b"], (0, 1, 2), 2), path)
    with pytest.raises(OnlineError, match="no online reference for Nope-v0"):
        online_records("Nope-v0", episodes, path)
    path.write_text("[1]")
    with pytest.raises(OnlineError, match="no 'settings'"):
        read_online(path)


def test_each_layout_has_its_own_default_file(tmp_path: Path, monkeypatch) -> None:
    """An env id's v1 and v2 references live side by side: writing one layout's leaves the other's file."""
    from harness_gym.evaluation import online

    files = {"v1": tmp_path / "online.json", "v2": tmp_path / "online_v2.json"}
    monkeypatch.setattr(online, "ONLINE_FILES", files)
    episodes = protocol_episodes(["a"], (0,), 1)
    assert write_online({PLANNING: _entry(episodes, "v2")}, {"learner": "x"}, obs_layout="v2") == files["v2"]
    assert not files["v1"].exists()
    write_online({PLANNING: _entry(episodes)}, {"learner": "x"})
    assert read_online(obs_layout="v2")["settings"][PLANNING]["obs_layout"] == "v2"
    assert online_records(PLANNING, episodes, obs_layout="v2") == online_records(PLANNING, episodes)
    with pytest.raises(OnlineError, match="unknown obs_layout 'v3'"):
        read_online(obs_layout="v3")


def test_the_gap_takes_the_better_state_reader_and_resamples_tasks() -> None:
    def records(gs: dict[str, float]) -> list[dict]:
        return [{"task_id": t, "seed": 0, "rollout": r, "G": g} for t, g in gs.items() for r in range(20)]

    results = {
        "expert": records({"a": 0.6, "b": 0.6}),
        "online": records({"a": 0.9, "b": 0.7}),
        "open-loop": records({"a": 0.5, "b": 0.5}),
    }
    summary = summarize_setting(results)
    assert summary["state_dependence_reference"] == "online"
    assert summary["state_dependence_gap"][0] == pytest.approx(0.3)
    # two tasks: resampling tasks gives the spread of two values, resampling 40 pairs a narrow band
    _, low, high = summary["state_dependence_gap"]
    _, pair_low, pair_high = paired_gap(
        [r["G"] for r in results["online"]], [r["G"] for r in results["open-loop"]]
    )
    assert (
        high - low > 2 * (pair_high - pair_low) and low == pytest.approx(0.2) and high == pytest.approx(0.4)
    )
    assert "| online | +0.300 [+0.200, +0.400] |" in headroom_markdown({PLANNING: summary})
    del results["online"]
    assert summarize_setting(results)["state_dependence_reference"] == "expert"
    del results["open-loop"]
    assert summarize_setting(results)["state_dependence_gap"] is None


def test_online_reference_end_to_end_with_a_tiny_budget(tmp_path: Path, capsys) -> None:
    pytest.importorskip("sb3_contrib")
    path = tmp_path / "online.json"
    budget = ["--online-steps", "2048", "--online-eval-every", "512", "--online-min-steps", "0"]
    argv = ["headroom", "--env", PLANNING, "--seeds", "0", "--no-check-rates", "--online-file", str(path)]
    assert main([*argv, "--train-online", *budget, "--policies", "expert", "open-loop", "online"]) == 0
    printed = capsys.readouterr().out
    entry = json.loads(path.read_text())["settings"][PLANNING]
    run = entry["seeds"]["0"]
    assert 512 <= run["env_steps"] <= 2048 + 8 and run["cpu_s"] > 0 and len(run["curve"]) >= 1
    assert all(len(point) == 3 for point in run["curve"]) and run["flat"] == is_flat(run["curve"])
    assert {"sb3-contrib", "stable-baselines3", "torch", "harness-gym"} <= set(entry["versions"])
    assert entry["protocol"] == {"split": "eval", "seeds": [0], "rollouts": 3} and entry["obs_layout"] == "v1"
    assert len(entry["episodes"]) == 60 and entry["mean_G"] == pytest.approx(run["eval_G"])
    # headroom read the file back: the online column and the gap row
    header = next(line for line in printed.splitlines() if line.startswith("| setting | expert"))
    assert header.split(" | ")[1:4] == ["expert", "open-loop", "online"]
    assert f"{entry['mean_G']:.3f}" in next(
        line for line in printed.splitlines() if line.startswith(f"| {PLANNING} |")
    )
    assert "best state-reading reference" in printed
    # and again without training: the same numbers from the file
    assert main([*argv, "--policies", "online"]) == 0
    assert f"| {PLANNING} | {entry['mean_G']:.3f} |" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no online reference"):
        main([*argv, "--policies", "online", "--online-file", str(tmp_path / "none.json")])


def test_the_training_env_drops_step_info_and_nothing_else() -> None:
    """sb3's vectorised envs deep-copy each step's info (the last one holds the whole trajectory); PPO reads
    only the reward, the end flags and the action mask, which the training env keeps as they are."""
    pytest.importorskip("sb3_contrib")
    import gymnasium as gym
    import numpy as np

    from harness_gym.evaluation.online_training import OnlineConfig, make_train_env

    train = make_train_env(OnlineConfig(PLANNING, obs_layout="v2"))
    plain = gym.make(PLANNING, split="train", obs_layout="v2", executor_profile="default")
    (obs, _), (want, info) = train.reset(seed=3), plain.reset(seed=3)
    np.testing.assert_array_equal(obs, want)
    done = False
    while not done:
        action = int(np.flatnonzero(info["action_mask"])[-1])
        np.testing.assert_array_equal(train.action_masks(), info["action_mask"].astype(bool))
        ours, theirs = train.step(action), plain.step(action)
        info = theirs[4]
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1:4] == theirs[1:4] and ours[4] == {}
        done = theirs[2] or theirs[3]
