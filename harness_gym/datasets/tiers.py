"""The published dataset tiers: one fixed id per setting and tier, ``harness/<domain>/<tier>-v0``.

Every tier of a setting holds the same number of episodes, ``EPISODES_PER_TASK`` per train task (1,600 for a
controlled setting, 320 for an adapter), on the train split, seeds from 0, with the embedded simulated
executor and its default profile. Each is a ``harness_gym.datasets.collect`` behaviour (its module docstring
gives the schedules), in the manner of D4RL's tiers:

========================  ==================  ====================================================
tier                      behaviour           what it holds
========================  ==================  ====================================================
``random``                ``random``          uniformly random legal actions (normalised score 0)
``medium``                ``base``            the Base harness (the paper's Base)
``expert``                ``expert``          the observation-only expert (normalised score 100)
``medium-expert``         ``medium-expert``   Base and expert, half and half on the same tasks
``mixed``                 ``mixed``           Base and exploratory (epsilon 0.3): the paper's buffer
``medium-replay``         ``medium-replay``   exploratory, epsilon rising linearly from 0 to 1
``coverage``              ``coverage``        every one-step deviation from the ``medium`` episodes
========================  ==================  ====================================================

``coverage``'s parents are the ``medium`` tier's episodes (same seeds), so ``parent_id`` in its episode
metadata is an episode id of ``harness/<domain>/medium-v0``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from harness_gym.datasets.collect import DATASET_ID, CollectConfig, CollectError, CollectReport, collect
from harness_gym.envs.registry import ENV_IDS, env_class

EPISODES_PER_TASK = 20
"""Episodes per train task in every tier: the paper's buffer size (20 x 80 = 1,600 per controlled setting)."""
VERSION = 0
"""The ``-v<N>`` of every tier id; bumped when a tier's recipe changes."""


@dataclass(frozen=True)
class Tier:
    """One tier's recipe: the collection behaviour, its epsilon and a one-line description."""

    policy: str
    description: str
    epsilon: float = 0.3


TIERS: dict[str, Tier] = {
    "random": Tier("random", "uniformly random legal actions: the floor of every normalised score"),
    "medium": Tier("base", "the Base harness, the setting's fixed script (the paper's Base)"),
    "expert": Tier("expert", "the observation-only expert harness: the top of every normalised score"),
    "medium-expert": Tier(
        "medium-expert", "Base and expert episodes, half and half on the same tasks (alternating)"
    ),
    "mixed": Tier(
        "mixed", "Base and exploratory (epsilon 0.3) episodes alternating: the paper's offline buffer"
    ),
    "medium-replay": Tier(
        "medium-replay",
        "exploratory Base whose epsilon rises linearly from 0 (first episode) to 1 (last): from Base to "
        "random, a replay buffer read backwards",
        epsilon=1.0,
    ),
    "coverage": Tier(
        "coverage",
        "the medium episodes with, from every state they visit, each other legal action taken once and "
        "Base to the end: every one-step deviation from Base, the prefixes shared exactly",
    ),
}
"""Every tier by name, in the order tables list them."""


def domains() -> dict[str, str]:
    """Dataset domain name -> env id, for the eight settings."""
    return {env_class(env_id).domain_cls.dataset_domain(): env_id for env_id in ENV_IDS}


def tier_id(env_id: str, tier: str) -> str:
    """The fixed id of ``tier`` on ``env_id``: ``harness/<domain>/<tier>-v0``."""
    if tier not in TIERS:
        raise CollectError(f"unknown tier {tier!r}; expected one of {', '.join(TIERS)}")
    if env_id not in ENV_IDS:
        raise CollectError(f"no published tiers for {env_id!r}; the settings are {', '.join(ENV_IDS)}")
    return f"harness/{env_class(env_id).domain_cls.dataset_domain()}/{tier}-v{VERSION}"


def all_ids() -> list[str]:
    """Every published id: each setting's tiers, settings in ``ENV_IDS`` order."""
    return [tier_id(env_id, tier) for env_id in ENV_IDS for tier in TIERS]


def parse_id(dataset_id: str) -> tuple[str, str]:
    """(env id, tier) of a published id, or ``CollectError`` naming what is wrong with it."""
    match = DATASET_ID.match(dataset_id)
    known = domains()
    if match is None or match["domain"] not in known or match["name"] not in TIERS:
        raise CollectError(
            f"{dataset_id!r} is not a published tier id: expected harness/<domain>/<tier>-v{VERSION} with "
            f"domain one of {', '.join(known)} and tier one of {', '.join(TIERS)}"
        )
    if int(match["version"]) != VERSION:
        raise CollectError(f"{dataset_id!r}: published tiers are version {VERSION}")
    return known[match["domain"]], match["name"]


def tier_config(
    env_id: str,
    tier: str,
    *,
    episodes_per_task: int = EPISODES_PER_TASK,
    root: str | os.PathLike | None = None,
    workers: int = 1,
    overwrite: bool = True,
    show_progress: bool = False,
) -> CollectConfig:
    """The collection that builds ``tier`` on ``env_id`` (``episodes_per_task`` below 20 for small builds)."""
    dataset_id = tier_id(env_id, tier)
    recipe = TIERS[tier]
    n_train = sum(task.split == "train" for task in env_class(env_id).domain_cls().tasks())
    return CollectConfig(
        env_id,
        recipe.policy,
        episodes_per_task * n_train,
        dataset_id,
        epsilon=recipe.epsilon,
        workers=workers,
        overwrite=overwrite,
        root=None if root is None else os.fspath(root),
        show_progress=show_progress,
    )


def build_command(config: CollectConfig) -> str:
    """The command line that builds this tier (deterministic: identical data for any ``--workers``)."""
    _, tier = parse_id(config.dataset_id)
    return f"harness-gym datasets build --env {config.env_id} --tier {tier}"


def build(
    env_id: str,
    tier: str,
    *,
    root: str | os.PathLike | None = None,
    workers: int = 1,
    episodes_per_task: int = EPISODES_PER_TASK,
    show_progress: bool = False,
) -> CollectReport:
    """Collect ``tier`` of ``env_id`` under ``root`` (replacing a previous copy). The simulated executor's
    profile is the default one: ``$HARNESS_GYM_EXECUTOR_PROFILE`` must be unset or ``default``."""
    from harness_gym.executors.profiles import PROFILE_ENV

    profile = os.environ.get(PROFILE_ENV) or "default"
    if profile != "default":
        raise CollectError(
            f"published tiers use the default executor profile, but {PROFILE_ENV}={profile}; unset it to "
            "build them (collect your own datasets with harness-gym collect)"
        )
    config = tier_config(
        env_id,
        tier,
        episodes_per_task=episodes_per_task,
        root=root,
        workers=workers,
        show_progress=show_progress,
    )
    return collect(replace(config, overwrite=True))
