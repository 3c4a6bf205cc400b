"""Convert a harness-gym Minari dataset into a d3rlpy ``MDPDataset`` plus per-transition side arrays.

Why not ``d3rlpy.datasets.get_minari`` (d3rlpy 2.8.1): it concatenates every episode's full
``observations`` array, which since Minari 0.5 has ``T + 1`` rows (the last is the final observation),
while ``actions``/``rewards``/flags have ``T`` rows. d3rlpy's ``EpisodeGenerator`` slices all of them
with the same ``[start:end]`` indices taken from the flags, so episode ``j`` gets observations shifted
by ``j`` rows: its first observation is episode ``j - 1``'s final observation, each action is paired with
the observation before the one it was chosen at, and the trailing rows are silently dropped. Nothing
checks the lengths, so no error is raised. It also lets d3rlpy infer ``action_size`` as
``max(action) + 1`` (too small when the data never uses SUBMIT), and wraps the recovered env in a
``TimeLimit`` that rejects a spec without ``max_episode_steps``.

Here each episode contributes ``observations[:-1]`` (observation ``k`` is the one action ``k`` was chosen
at), so every flat array has one row per step, and after construction the split d3rlpy made is checked
against the source episodes.

d3rlpy keeps no final observation, so for an episode ended by timeout its replay buffer holds only
``T - 1`` transitions (the last step has no next observation); the flat arrays here keep all ``T`` rows
and ``OfflineData.transition_rows`` maps d3rlpy's buffer order onto them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from harness_gym.core.actions import N_ACTIONS
from harness_gym.datasets.collect import iter_episodes
from harness_gym.evaluation.d3rlpy_import import silence_gym_notice

if TYPE_CHECKING:
    import d3rlpy
    import minari

__all__ = ["EpisodeLike", "OfflineData", "episodes_to_d3rlpy", "quiet_d3rlpy", "to_d3rlpy"]

_REQUIRED_INFOS = ("action_mask", "behavior_logp", "task_index")

silence_gym_notice()  # this module is a way into d3rlpy (to_d3rlpy, harness-gym train): no old-gym banner


class EpisodeLike(Protocol):
    """What is read from an episode: the fields of ``minari.EpisodeData`` (``id`` may be absent)."""

    observations: Any
    actions: Any
    rewards: Any
    terminations: Any
    truncations: Any
    infos: Mapping[str, Any] | None


@dataclass(frozen=True)
class OfflineData:
    """A d3rlpy dataset and per-step arrays in the same row order as its flat observations.

    Row ``i`` of every array is step ``k`` of some source episode: the observation the agent saw before
    action ``k``. Rows run episode by episode in source order, which is also d3rlpy's episode order.
    """

    dataset: d3rlpy.dataset.MDPDataset
    action_masks: np.ndarray
    """(N, 7) bool: legal actions at the observation of row i."""
    next_action_masks: np.ndarray
    """(N, 7) bool: legal actions at the next observation; for an episode's last step, the final mask."""
    episode_index: np.ndarray
    """(N,) int64: the source episode's id (its position when the episode has no id)."""
    task_index: np.ndarray
    """(N,) int64."""
    behavior_logp: np.ndarray
    """(N,) float64: log-probability of the row's action under the behaviour policy."""
    returns: np.ndarray
    """(N,) float64: the episode's terminal reward G, repeated on each of its steps."""
    transition_rows: np.ndarray
    """(M,) int64: row of each transition in d3rlpy's replay buffer, in buffer order.

    M = N minus the number of timed-out episodes, since d3rlpy drops their last step."""

    @property
    def n_steps(self) -> int:
        """N, the number of rows (the total number of steps)."""
        return int(self.action_masks.shape[0])


@dataclass(frozen=True)
class _Rows:
    label: str
    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    terminal: bool
    masks: np.ndarray
    behavior_logp: np.ndarray
    task_index: np.ndarray
    episode_index: int

    @property
    def length(self) -> int:
        return int(self.actions.shape[0])


def to_d3rlpy(dataset: minari.MinariDataset, episodes: Iterable[EpisodeLike] | None = None) -> OfflineData:
    """Convert a Minari dataset written by ``harness_gym.datasets.collect`` (discrete actions, 7 of them).

    ``episodes``: the dataset's episodes when the caller has read them already (reading is slow)."""
    space = dataset.action_space
    n = getattr(space, "n", None)
    if n is not None and int(n) != N_ACTIONS:
        raise ValueError(f"dataset action space {space} is not Discrete({N_ACTIONS})")
    return episodes_to_d3rlpy(iter_episodes(dataset) if episodes is None else episodes)


def episodes_to_d3rlpy(episodes: Iterable[EpisodeLike]) -> OfflineData:
    """Convert episodes in the Minari layout (observations and infos have one more row than actions)."""
    from d3rlpy.constants import ActionSpace
    from d3rlpy.dataset import MDPDataset

    parts = [_episode_rows(ep, position) for position, ep in enumerate(episodes)]
    if not parts:
        raise ValueError("no episodes to convert")

    lengths = np.array([p.length for p in parts], dtype=np.int64)
    ends = np.cumsum(lengths)
    terminals = np.zeros(int(ends[-1]), dtype=np.float32)
    timeouts = np.zeros_like(terminals)
    for p, end in zip(parts, ends, strict=True):
        (terminals if p.terminal else timeouts)[end - 1] = 1.0

    observations = np.concatenate([p.observations for p in parts]).astype(np.float32, copy=False)
    actions = np.concatenate([p.actions for p in parts]).reshape(-1, 1)
    rewards = np.concatenate([p.rewards for p in parts]).astype(np.float32).reshape(-1, 1)

    mdp = MDPDataset(
        observations=observations,
        actions=actions,
        rewards=rewards,
        terminals=terminals,
        timeouts=timeouts,
        action_space=ActionSpace.DISCRETE,
        action_size=N_ACTIONS,
    )
    _check_split(mdp, parts)

    starts = ends - lengths
    transition_rows = np.concatenate(
        [np.arange(s, e if p.terminal else e - 1) for p, s, e in zip(parts, starts, ends, strict=True)]
    ).astype(np.int64)
    if transition_rows.shape[0] != mdp.transition_count:
        raise RuntimeError(
            f"d3rlpy holds {mdp.transition_count} transitions, expected {transition_rows.shape[0]}"
        )

    return OfflineData(
        dataset=mdp,
        action_masks=np.concatenate([p.masks[:-1] for p in parts]),
        next_action_masks=np.concatenate([p.masks[1:] for p in parts]),
        episode_index=np.repeat(np.array([p.episode_index for p in parts], dtype=np.int64), lengths),
        task_index=np.concatenate([p.task_index[:-1] for p in parts]).astype(np.int64),
        behavior_logp=np.concatenate([p.behavior_logp[:-1] for p in parts]).astype(np.float64),
        returns=np.repeat(np.array([float(p.rewards[-1]) for p in parts], dtype=np.float64), lengths),
        transition_rows=transition_rows,
    )


def _episode_rows(ep: EpisodeLike, position: int) -> _Rows:
    """Validate one episode and return its arrays; every failure names the episode."""
    ep_id = getattr(ep, "id", None)
    index = position if ep_id is None else int(ep_id)
    label = f"episode {position}" if ep_id is None else f"episode id={ep_id} (position {position})"

    obs = ep.observations
    if not isinstance(obs, np.ndarray) or obs.ndim != 2:
        raise ValueError(f"{label}: observations must be a 2-D array, got {type(obs).__name__}")
    actions = np.asarray(ep.actions)
    if actions.ndim == 2 and actions.shape[1] == 1:
        actions = actions[:, 0]
    rewards = np.asarray(ep.rewards, dtype=np.float64).reshape(-1)
    terms = np.asarray(ep.terminations, dtype=bool).reshape(-1)
    truncs = np.asarray(ep.truncations, dtype=bool).reshape(-1)
    t = int(actions.shape[0])
    if t == 0:
        raise ValueError(f"{label}: has no steps")
    if actions.ndim != 1 or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(
            f"{label}: actions must be integers of shape (T,), got {actions.dtype} {actions.shape}"
        )
    if actions.min() < 0 or actions.max() >= N_ACTIONS:
        raise ValueError(f"{label}: actions outside 0..{N_ACTIONS - 1}")
    if obs.shape[0] != t + 1:
        raise ValueError(
            f"{label}: {obs.shape[0]} observations for {t} actions; expected T + 1 (Minari >= 0.5 layout)"
        )
    for name, arr in (("rewards", rewards), ("terminations", terms), ("truncations", truncs)):
        if arr.shape[0] != t:
            raise ValueError(f"{label}: {name} has {arr.shape[0]} rows for {t} actions")
    if terms[:-1].any() or truncs[:-1].any():
        raise ValueError(f"{label}: termination or truncation set before the last step")
    if terms[-1] == truncs[-1]:
        state = "both" if terms[-1] else "neither"
        raise ValueError(
            f"{label}: last step must be exactly one of terminated/truncated, got {state}; "
            "d3rlpy splits episodes on these flags"
        )

    infos = ep.infos or {}
    missing = [k for k in _REQUIRED_INFOS if k not in infos]
    if missing:
        raise ValueError(
            f"{label}: infos lack {missing} (have {sorted(infos)}); "
            "expected a dataset written by harness_gym.datasets.collect"
        )
    masks = np.asarray(infos["action_mask"])
    if masks.shape != (t + 1, N_ACTIONS):
        raise ValueError(f"{label}: action_mask has shape {masks.shape}, expected {(t + 1, N_ACTIONS)}")
    masks = masks != 0
    empty = np.flatnonzero(~masks.any(axis=1))
    if empty.size:
        raise ValueError(f"{label}: action_mask allows no action at observation(s) {empty.tolist()}")
    per_obs = {k: np.asarray(infos[k]).reshape(-1) for k in ("behavior_logp", "task_index")}
    for name, arr in per_obs.items():
        if arr.shape[0] != t + 1:
            raise ValueError(f"{label}: {name} has {arr.shape[0]} rows, expected {t + 1}")

    return _Rows(
        label=label,
        observations=obs[:-1],
        actions=actions.astype(np.int64, copy=False),
        rewards=rewards,
        terminal=bool(terms[-1]),
        masks=masks,
        behavior_logp=per_obs["behavior_logp"],
        task_index=per_obs["task_index"],
        episode_index=index,
    )


def _check_split(mdp: d3rlpy.dataset.MDPDataset, parts: list[_Rows]) -> None:
    """Fail if d3rlpy split the flat arrays into episodes other than the source ones."""
    got = [int(e.size()) for e in mdp.episodes]
    want = [p.length for p in parts]
    if got != want:
        raise RuntimeError(f"d3rlpy split the data into episodes of lengths {got}, expected {want}")
    for e, p in zip(mdp.episodes, parts, strict=True):
        if bool(e.terminated) != p.terminal:
            raise RuntimeError(f"{p.label}: d3rlpy terminated={e.terminated}, source terminal={p.terminal}")


def quiet_d3rlpy() -> None:
    """Silence d3rlpy's per-epoch info logging (structlog), e.g. for batch runs; warnings still show."""
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
