"""Executor profiles: one JSON-serialisable type, passed as gym.make(id, executor_profile=...)."""

from __future__ import annotations

import json
from dataclasses import replace

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the ids)
from harness_gym.envs.registry import env_class, executor_profile
from harness_gym.executors.profiles import (
    PROFILE_ENV,
    PROFILE_NAMES,
    ExecutorProfile,
    Mechanism,
    ProfileError,
)


def test_named_profiles_share_the_base_fitted_draft_params_and_differ_in_mechanism():
    profiles = {name: executor_profile(name) for name in PROFILE_NAMES}
    assert set(PROFILE_NAMES) >= {"weak", "default", "strong"}
    for domain in profiles["default"].domains:
        drafts = [p.domain(domain).draft for p in profiles.values()]
        assert all(d == drafts[0] for d in drafts)  # Base-fitted: the same in every profile
    weak, strong = profiles["weak"].domain("coding").mechanism, profiles["strong"].domain("coding").mechanism
    assert weak.p_fix["localised"] < strong.p_fix["localised"] and weak.p_break > strong.p_break
    assert weak.judge_tpr < strong.judge_tpr


def test_json_round_trip(tmp_path):
    profile = executor_profile("strong")
    path = profile.save(tmp_path / "strong.json")
    assert ExecutorProfile.load(path) == profile


def test_gym_make_takes_a_profile_a_name_or_a_path(tmp_path, monkeypatch):
    env_id = "HarnessPlanning-v0"
    planning = replace(executor_profile("default").domain("planning"), mechanism=Mechanism(p_break=0.3))
    custom = executor_profile("default").with_domain("planning", planning)
    path = custom.save(tmp_path / "custom.json")
    by_object = gym.make(env_id, executor_profile=custom).unwrapped
    by_path = gym.make(env_id, executor_profile=str(path)).unwrapped
    by_name = gym.make(env_id, executor_profile="weak").unwrapped
    assert by_object.executor.profile.mechanism.p_break == by_path.executor.profile.mechanism.p_break == 0.3
    assert by_name.executor.profile == executor_profile("weak").domain("planning")
    monkeypatch.setenv(PROFILE_ENV, "strong")
    assert gym.make(env_id).unwrapped.executor.profile == executor_profile("strong").domain("planning")
    assert env_class(env_id).domain_cls.draft_params == executor_profile("strong").domain("planning").draft


def test_bad_profiles_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown executor profile 'mediocre'"):
        gym.make("HarnessPlanning-v0", executor_profile="mediocre")
    with pytest.raises(ValueError, match="p_break must lie in"):
        Mechanism(p_break=1.5)
    with pytest.raises(ValueError, match="p_fix needs exactly the feedback kinds"):
        Mechanism(p_fix={"localised": 0.5})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read executor profile"):
        ExecutorProfile.load(bad)
    partial = executor_profile("default")
    only_coding = ExecutorProfile("only-coding", {"coding": partial.domain("coding")})
    with pytest.raises(ValueError, match="no parameters for domain 'planning'"):
        gym.make("HarnessPlanning-v0", executor_profile=only_coding)


def test_a_dict_profile_is_accepted_and_malformed_ones_are_named_in_one_line(tmp_path):
    data = executor_profile("weak").to_dict()
    env = gym.make("HarnessPlanning-v0", executor_profile=data)
    assert env.unwrapped.executor.profile == executor_profile("weak").domain("planning")
    wrong_type = json.loads(json.dumps(data))
    wrong_type["domains"]["planning"]["draft"]["p_tool_correct"] = "high"
    cases = [
        (wrong_type, "p_tool_correct must lie in \\[0, 1\\], got 'high'"),
        ({**data, "domains": [1]}, "not an executor profile"),
        ({"domains": {}}, "missing key 'name'"),
    ]
    for bad, message in cases:
        with pytest.raises(ProfileError, match=message):
            gym.make("HarnessPlanning-v0", executor_profile=bad)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(ProfileError, match=message):
            gym.make("HarnessPlanning-v0", executor_profile=str(path))
    path.write_text(json.dumps(data)[:100])  # truncated
    with pytest.raises(ProfileError, match="cannot read executor profile"):
        gym.make("HarnessPlanning-v0", executor_profile=path)
    with pytest.raises(TypeError, match="executor_profile must be a profile, a dict, a name or a path"):
        gym.make("HarnessPlanning-v0", executor_profile=3)


def test_the_cli_names_a_malformed_profile_in_one_line(tmp_path, capsys):
    from harness_gym.cli.main import main

    path = tmp_path / "bad.json"
    path.write_text('{"name": "x", "domains": {"planning": {"draft": {"p_tool_correct": 2}}}}')
    assert main(["run", "--env", "HarnessPlanning-v0", "--executor-profile", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "bad.json" in err and "not an executor profile" in err
