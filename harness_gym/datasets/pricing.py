"""Relabel a dataset's rewards at a token price: any price is a pass over the stored arrays, not a
recollection.

At price λ (G per thousand executor tokens, ``gym.make``'s ``token_price``) step ``k``'s reward is
``-λ * tokens_k / 1000``, plus G at the last step: exactly what the environment pays when made with that
price, in the same floating-point order, so a relabelled episode equals one collected at λ bit for bit.
``tokens_k`` is the prompt + completion tokens of action ``k``'s executor call, read from the per-step
arrays ``infos/llm_prompt_tokens`` / ``infos/llm_completion_tokens`` (-1 where no call) that chat-LLM
datasets and simulated MDP v2 ones (``obs_layout="v2"``) store. Simulated layout-v1 datasets (the published
tiers) do not, so that their checksums stay as published; relabelling one is refused, naming the missing
arrays.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

TOKEN_ARRAYS = ("llm_prompt_tokens", "llm_completion_tokens")
"""The per-step ``infos`` arrays a relabel reads (row ``k``: action ``k``'s call; -1: no call)."""


class RelabelError(ValueError):
    """A dataset without the per-step token counts a price needs."""


def step_tokens(infos: dict[str, Any]) -> np.ndarray:
    """Per action, the prompt + completion tokens of its executor call (0 without one)."""
    missing = [f"infos/{name}" for name in TOKEN_ARRAYS if name not in infos]
    if missing:
        raise RelabelError(
            f"the dataset has no per-step token counts ({', '.join(missing)}): chat-LLM datasets and MDP v2 "
            "ones store them; collect at the price instead (harness-gym collect --token-price)"
        )
    prompt, completion = (np.asarray(infos[name], dtype=np.int64)[:-1] for name in TOKEN_ARRAYS)
    return np.maximum(prompt, 0) + np.maximum(completion, 0)


def episode_rewards(infos: dict[str, Any], token_price: float) -> np.ndarray:
    """One episode's rewards at ``token_price``: G (``infos/G``'s last row) at the end, every step charged
    ``token_price * tokens / 1000`` (as ``HarnessEnv.step`` does)."""
    from harness_gym.envs.env import check_token_price

    price = check_token_price(token_price)
    tokens = step_tokens(infos)
    rewards = np.zeros(len(tokens), dtype=np.float64)
    rewards[-1] = float(np.asarray(infos["G"])[-1])
    if price:
        rewards -= price * tokens / 1000
    return rewards


def relabel(dataset: Any, token_price: float) -> list[np.ndarray]:
    """The rewards of every episode of ``dataset`` (a Minari dataset, or episodes with ``infos``) at
    ``token_price``, in the dataset's episode order."""
    episodes: Iterable[Any] = dataset.iterate_episodes() if hasattr(dataset, "iterate_episodes") else dataset
    return [episode_rewards(episode.infos, token_price) for episode in episodes]


def relabelled(dataset: Any, token_price: float) -> list[Any]:
    """Every episode of ``dataset`` (a Minari dataset) with its rewards at ``token_price``: what the
    learners train on at that price (``harness-gym train --token-price``)."""
    import dataclasses

    from harness_gym.datasets.collect import iter_episodes

    episodes = list(iter_episodes(dataset))
    return [
        dataclasses.replace(episode, rewards=rewards)
        for episode, rewards in zip(episodes, relabel(episodes, token_price), strict=True)
    ]
