"""Replies of a real model (SmolLM2-135M-Instruct on llama.cpp, recorded by benchmarks/real_llm/run.sh
with RECORD_FIXTURE=1) replayed offline: the episodes come out exactly as recorded (actions, raw
replies, G), with no server, through the real prompts, parsers and verifiers."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401  (registers the environments)
from harness_gym.evaluation.rollout import run_episode
from harness_gym.executors.openai_executor import OpenAIConfig
from harness_gym.policies.scripted import make_policy

DATA = Path(__file__).parent / "data"
CACHE = DATA / "smollm2_cache.sqlite"
EXPECTED = DATA / "smollm2_expected.json"

if not (CACHE.is_file() and EXPECTED.is_file()):
    pytest.skip("no recorded real-model fixture in tests/data", allow_module_level=True)

FIXTURE = json.loads(EXPECTED.read_text())


def replay_config() -> OpenAIConfig:
    return OpenAIConfig(
        model=FIXTURE["model"],
        base_url=FIXTURE["base_url"],
        max_tokens=FIXTURE["max_tokens"],
        context_tokens=FIXTURE.get("context_tokens"),
        cache=str(CACHE),
        cache_mode="read_only",
        max_retries=0,
    )


@pytest.mark.parametrize(
    "setting",
    sorted({(e["env_id"], e["policy"]) for e in FIXTURE["episodes"]}),
    ids=lambda s: f"{s[0]}-{s[1]}",
)
def test_recorded_real_model_episodes_replay_exactly(setting: tuple[str, str]) -> None:
    env_id, policy_name = setting
    env = gym.make(env_id, split="eval", executor=replay_config())
    policy = make_policy(policy_name, env_id)
    for expected in [e for e in FIXTURE["episodes"] if (e["env_id"], e["policy"]) == setting]:
        info = run_episode(env, policy, seed=expected["seed"])
        steps = info["trajectory"]["steps"]
        assert info["task_id"] == expected["task_id"]
        assert [s["action"] for s in steps] == expected["actions"]
        assert [s["executor_io"]["reply"] for s in steps if "executor_io" in s] == expected["replies"]
        assert info["G"] == pytest.approx(expected["G"], abs=1e-12)
        assert info["usage"]["cache_misses"] == 0
    env.close()


def test_the_fixture_replays_through_the_replay_command(capsys) -> None:
    """``harness-gym replay`` takes every setting from the cache and reruns the recorded commands (one
    ``run`` per setting and policy), comparing each episode's task, G and actions with the recording."""
    from harness_gym.cli.main import main

    assert main(["replay", str(CACHE)]) == 0
    out = capsys.readouterr().out
    runs = len({(e["env_id"], e["policy"]) for e in FIXTURE["episodes"]})
    assert f"replayed {runs} recorded run(s), {len(FIXTURE['episodes'])} episodes" in out
    assert out.rstrip().endswith("all identical") and "DIFFERS" not in out
    assert main(["replay", str(CACHE), "--env", "HarnessCoding-v0", "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == sum(e["env_id"] == "HarnessCoding-v0" for e in FIXTURE["episodes"])


def test_a_replay_that_differs_from_the_recording_fails(tmp_path, capsys) -> None:
    import shutil
    import sqlite3

    from harness_gym.cli.main import main

    copy = tmp_path / "tampered.sqlite"
    shutil.copyfile(CACHE, copy)
    with sqlite3.connect(copy) as conn:
        run_id, outcome = conn.execute("SELECT id, outcome FROM runs ORDER BY id LIMIT 1").fetchone()
        outcome = json.loads(outcome)
        outcome["episodes"][0]["G"] += 0.5
        conn.execute("UPDATE runs SET outcome = ? WHERE id = ?", (json.dumps(outcome), run_id))
    conn.close()
    assert main(["replay", str(copy), "--run", str(run_id)]) == 1
    assert "DIFFERS: episode 0 G" in capsys.readouterr().out
