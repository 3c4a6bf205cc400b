"""The Minari -> d3rlpy bridge keeps each observation with the action chosen at it."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import require

require("d3rlpy")
minari = require("minari")

import gymnasium as gym
from minari.data_collector.episode_buffer import EpisodeBuffer

import harness_gym  # noqa: F401
from harness_gym.datasets.d3rlpy_bridge import episodes_to_d3rlpy, to_d3rlpy

OBS_DIM = 31
N_ACTIONS = 7
SUBMIT = 6
# (length, terminated by SUBMIT?): different lengths, one truncated at max_steps.
EPISODES = ((3, True), (1, True), (7, False), (3, True))


def _episode(
    e: int,
    length: int,
    terminated: bool,
    rng: np.random.Generator,
    actions: np.ndarray | None = None,
    drop_infos: tuple[str, ...] = (),
) -> EpisodeBuffer:
    """An episode in the collect layout; observation k has k + 100 * e in every feature."""
    obs = np.repeat((np.arange(length + 1) + 100 * e)[:, None], OBS_DIM, axis=1).astype(np.float32)
    obs[:, 1:] += rng.random((length + 1, OBS_DIM - 1), dtype=np.float32)
    if actions is None:
        actions = rng.integers(0, SUBMIT, size=length)
        if terminated:
            actions[-1] = SUBMIT
    g = float(rng.random())
    rewards = np.zeros(length)
    rewards[-1] = g
    last = np.arange(length) == length - 1
    mask = rng.integers(0, 2, size=(length + 1, N_ACTIONS)).astype(np.int8)
    mask[:, SUBMIT] = 1
    logp = np.append(-rng.random(length), np.nan)
    at_end = np.full(length + 1, np.nan)
    at_end[-1] = g
    infos = {
        "action_mask": mask,
        "behavior_logp": logp,
        "task_index": np.full(length + 1, 10 + e, dtype=np.int64),
        "G": at_end,
    }
    for key in drop_infos:
        del infos[key]
    return EpisodeBuffer(
        id=e,
        observations=obs,
        actions=np.asarray(actions, dtype=np.int64),
        rewards=rewards,
        terminations=last & terminated,
        truncations=last & (not terminated),
        infos=infos,
    )


def _write(buffers: list[EpisodeBuffer], name: str = "harness/bridge/test-v0") -> minari.MinariDataset:
    # A TimeLimit in the spec lets d3rlpy's get_minari recover the env, so its conversion can be compared.
    env = gym.make("HarnessPlanning-v0", max_episode_steps=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return minari.create_dataset_from_buffers(name, buffers, env=env, algorithm_name="synthetic")


@pytest.fixture
def minari_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    return tmp_path


@pytest.fixture
def raw_and_dataset(minari_home: Path) -> tuple[list, minari.MinariDataset]:
    rng = np.random.default_rng(0)
    dataset = _write([_episode(e, n, term, rng) for e, (n, term) in enumerate(EPISODES)])
    return list(dataset.iterate_episodes()), dataset


def test_round_trip_keeps_every_step_aligned(raw_and_dataset) -> None:
    raw, dataset = raw_and_dataset
    data = to_d3rlpy(dataset)
    mdp = data.dataset
    n = sum(len(ep.actions) for ep in raw)
    assert data.n_steps == n
    for arr in (data.episode_index, data.task_index, data.behavior_logp, data.returns):
        assert arr.shape == (n,)
    assert data.action_masks.shape == data.next_action_masks.shape == (n, N_ACTIONS)
    assert data.action_masks.dtype == bool
    assert len(mdp.episodes) == len(raw)

    start = 0
    for i, ep in enumerate(raw):
        t = len(ep.actions)
        rows = slice(start, start + t)
        d3 = mdp.episodes[i]
        np.testing.assert_array_equal(d3.observations, ep.observations[:-1])
        np.testing.assert_array_equal(d3.actions.ravel(), ep.actions)
        np.testing.assert_allclose(d3.rewards.ravel(), ep.rewards, rtol=1e-6)
        assert d3.terminated == bool(ep.terminations[-1])
        assert bool(ep.terminations[-1]) != bool(ep.truncations[-1])
        np.testing.assert_array_equal(data.action_masks[rows], ep.infos["action_mask"][:-1] != 0)
        np.testing.assert_array_equal(data.next_action_masks[rows], ep.infos["action_mask"][1:] != 0)
        np.testing.assert_array_equal(data.behavior_logp[rows], ep.infos["behavior_logp"][:-1])
        np.testing.assert_array_equal(data.task_index[rows], ep.infos["task_index"][:-1])
        np.testing.assert_array_equal(data.episode_index[rows], ep.id)
        np.testing.assert_array_equal(data.returns[rows], ep.rewards[-1])
        start += t


def test_transition_rows_map_d3rlpy_buffer_onto_flat_rows(raw_and_dataset) -> None:
    raw, dataset = raw_and_dataset
    data = to_d3rlpy(dataset)
    mdp = data.dataset
    n_truncated = sum(bool(ep.truncations[-1]) for ep in raw)
    assert n_truncated == 1
    assert mdp.transition_count == data.n_steps - n_truncated == len(data.transition_rows)

    position = {id(e): i for i, e in enumerate(mdp.episodes)}
    for j, row in enumerate(data.transition_rows):
        episode, k = mdp.buffer[j]
        src = raw[position[id(episode)]]
        assert data.episode_index[row] == src.id
        transition = mdp.transition_picker(episode, k)
        np.testing.assert_array_equal(transition.observation, src.observations[k])
        assert int(transition.action[0]) == int(src.actions[k])
        np.testing.assert_array_equal(data.action_masks[row], src.infos["action_mask"][k] != 0)
        if not transition.terminal:
            np.testing.assert_array_equal(transition.next_observation, src.observations[k + 1])
            np.testing.assert_array_equal(data.next_action_masks[row], src.infos["action_mask"][k + 1] != 0)


@pytest.mark.parametrize("used", [(0, 3, 6), (0, 1, 3)])
def test_action_size_is_seven_whatever_the_data_uses(used: tuple[int, ...]) -> None:
    """Without an explicit action_size d3rlpy would infer max(action) + 1 (4 for {0, 1, 3})."""
    from d3rlpy.constants import ActionSpace

    rng = np.random.default_rng(1)
    terminated = SUBMIT in used
    actions = np.array([*used, *used])
    if terminated:
        actions = np.append(actions[actions != SUBMIT], SUBMIT)
    episodes = [_episode(0, len(actions), terminated, rng, actions=actions)]
    info = episodes_to_d3rlpy(episodes).dataset.dataset_info
    assert set(np.unique(actions)) == set(used)
    assert info.action_size == N_ACTIONS
    assert info.action_space == ActionSpace.DISCRETE


def test_d3rlpy_get_minari_shifts_observations(raw_and_dataset) -> None:
    """d3rlpy's own loader pairs episode j's actions with observations shifted by j rows."""
    from d3rlpy.datasets import get_minari

    raw, dataset = raw_and_dataset
    theirs, _env = get_minari(dataset.spec.dataset_id)  # local copy only: it exists, so nothing downloads
    ours = to_d3rlpy(dataset).dataset

    all_obs = np.concatenate([ep.observations for ep in raw])
    start = 0
    for j, ep in enumerate(raw):
        t = len(ep.actions)
        # What get_minari builds: T rows of the concatenated (T + 1)-row observation arrays.
        np.testing.assert_array_equal(theirs.episodes[j].observations, all_obs[start : start + t])
        np.testing.assert_array_equal(ours.episodes[j].observations, ep.observations[:-1])
        start += t

    # Episode 1 starts with episode 0's final observation; its action was chosen at 100, not 3.
    assert theirs.episodes[1].observations[0, 0] == raw[0].observations[-1, 0] == 3.0
    assert ours.episodes[1].observations[0, 0] == raw[1].observations[0, 0] == 100.0
    for j in range(1, len(raw)):
        assert not np.array_equal(theirs.episodes[j].observations, raw[j].observations[:-1])


def test_missing_action_mask_is_a_clear_error(minari_home: Path) -> None:
    rng = np.random.default_rng(2)
    dataset = _write(
        [_episode(0, 2, True, rng, drop_infos=("action_mask",))], name="harness/bridge/nomask-v0"
    )
    with pytest.raises(ValueError, match=r"episode id=0 .*action_mask"):
        to_d3rlpy(dataset)


@pytest.mark.parametrize(
    ("terminated", "truncated", "word"), [(False, False, "neither"), (True, True, "both")]
)
def test_episode_must_end_with_exactly_one_flag(terminated: bool, truncated: bool, word: str) -> None:
    rng = np.random.default_rng(3)
    good = _episode(0, 2, True, rng)
    bad = _episode(5, 3, True, rng)
    last = np.arange(3) == 2
    bad = EpisodeBuffer(
        id=5,
        observations=bad.observations,
        actions=bad.actions,
        rewards=bad.rewards,
        terminations=last & terminated,
        truncations=last & truncated,
        infos=bad.infos,
    )
    with pytest.raises(ValueError, match=rf"episode id=5 .*{word}"):
        episodes_to_d3rlpy([good, bad])


def test_observation_count_must_be_steps_plus_one() -> None:
    """A pre-0.5 layout (T observations) is refused rather than silently shifted."""
    rng = np.random.default_rng(4)
    ep = _episode(0, 3, True, rng)
    short = EpisodeBuffer(
        id=0,
        observations=ep.observations[:-1],
        actions=ep.actions,
        rewards=ep.rewards,
        terminations=ep.terminations,
        truncations=ep.truncations,
        infos=ep.infos,
    )
    with pytest.raises(ValueError, match="T \\+ 1"):
        episodes_to_d3rlpy([short])
