"""Fixed episodes in every setting hash to the recorded digests (``benchmarks/episode_digests.py``):
a change of the step path made for speed leaves every action, observation, reward and info unchanged."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import harness_gym

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("episode_digests", ROOT / "benchmarks" / "episode_digests.py")
episode_digests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(episode_digests)

RECORDED = json.loads((ROOT / "tests" / "data" / "episode_digests.json").read_text())


def test_every_setting_and_policy_is_recorded() -> None:
    assert sorted(RECORDED) == sorted(harness_gym.ALL_ENV_IDS)
    for env_id, digests in RECORDED.items():
        assert sorted(digests) == sorted(episode_digests.POLICIES), env_id
        # the token budget binds: its episodes differ from the unbudgeted ones
        assert digests["random_legal_budget"] != digests["random_legal"], env_id


@pytest.mark.parametrize("env_id", harness_gym.ALL_ENV_IDS)
def test_episodes_match_recorded_digests(env_id: str) -> None:
    got = {policy: episode_digests.digest(env_id, policy) for policy in episode_digests.POLICIES}
    assert got == RECORDED[env_id]


def test_digest_sees_a_changed_info(monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-bit change of one final info value changes the digest."""
    env_id = "HarnessPlanning-v0"
    bytes_of = episode_digests.info_bytes

    def changed(info):
        if "G" in info:
            info = {**info, "G": info["G"] + 1e-12}
        return bytes_of(info)

    monkeypatch.setattr(episode_digests, "info_bytes", changed)
    assert episode_digests.digest(env_id, "cycle") != RECORDED[env_id]["cycle"]
