"""Combine harness datasets of one environment into a new dataset, keeping what Minari's combine drops.

``minari.combine_datasets`` (Minari 0.5.4) keeps only the collection env spec and the spaces: the
evaluation env, the reference scores (so ``minari.get_normalized_score`` raises) and every ``harness_*``
key (task table, HMS events, rubric criteria, behaviours, executor) are lost. Here the episodes are
rewritten into a new dataset with all of them, the per-step ``behavior`` index remapped onto the union
of the sources' behaviours, and Minari's own ``combined_datasets`` key naming the sources.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from harness_gym._version import __version__
from harness_gym.datasets.collect import (
    DATASET_ID,
    CollectError,
    _install,
    dataset_root,
    eval_env_spec,
    iter_episodes,
    staged,
)
from harness_gym.datasets.files import open_dataset
from harness_gym.envs.registry import env_class
from harness_gym.evaluation.reference_scores import reference_scores

SAME = (
    "harness_format_version",
    "harness_env_id",
    "harness_split",
    "harness_task_set_version",
    "harness_task_ids",
    "harness_hms_events",
    "harness_rubric_criteria",
    "harness_executor",
)
"""Metadata every source must share: episodes are only comparable within one env, task table and executor."""


def combine(
    dataset_ids: Sequence[str],
    new_id: str,
    root: str | os.PathLike | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the episodes of ``dataset_ids`` (in that order) as dataset ``new_id``; returns its path."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    if len(dataset_ids) < 2:
        raise CollectError("combine needs at least two datasets")
    if len(set(dataset_ids)) != len(dataset_ids):
        raise CollectError(f"a dataset is named twice in {list(dataset_ids)}")
    if DATASET_ID.match(new_id) is None:
        raise CollectError(f"malformed dataset id {new_id!r}: expected harness/<domain>/<name>-v<N>")
    base = dataset_root(root)
    target = base / new_id
    if target.exists() and not overwrite:
        raise CollectError(f"dataset {new_id!r} already exists at {target}; pass overwrite to replace it")
    sources = [open_dataset(dataset_id, root) for dataset_id in dataset_ids]
    metas = [source.storage.metadata for source in sources]
    for key in SAME:
        for dataset_id, meta in zip(dataset_ids[1:], metas[1:], strict=True):
            if meta.get(key) != metas[0].get(key):
                raise CollectError(
                    f"cannot combine {dataset_ids[0]!r} and {dataset_id!r}: they differ in {key} "
                    f"({metas[0].get(key)!r} vs {meta.get(key)!r})"
                )
    env_id = metas[0]["harness_env_id"]
    domain = env_class(env_id).domain_cls.dataset_domain()
    if DATASET_ID.match(new_id)["domain"] != domain:
        raise CollectError(f"dataset id {new_id!r} does not name the domain of {env_id} ({domain!r})")

    behaviors: list[str] = []
    for meta in metas:
        behaviors += [b for b in meta["harness_behaviors"] if b not in behaviors]
    buffers = []
    for source, meta in zip(sources, metas, strict=True):
        remap = np.array([behaviors.index(b) for b in meta["harness_behaviors"]], dtype=np.int64)
        indices = source.episode_indices
        episode_meta = source.storage.get_episode_metadata(indices)
        seeds = {int(i): m.get("seed") for i, m in zip(indices, episode_meta, strict=True)}
        for ep in iter_episodes(source):
            infos = dict(ep.infos)
            infos["behavior"] = remap[np.asarray(infos["behavior"], dtype=np.int64)]
            buffers.append(
                EpisodeBuffer(
                    id=len(buffers),
                    seed=seeds[ep.id],
                    observations=ep.observations,
                    actions=ep.actions,
                    rewards=ep.rewards,
                    terminations=ep.terminations,
                    truncations=ep.truncations,
                    infos=infos,
                )
            )

    env_spec = sources[0].spec.env_spec
    ref_min, ref_max = reference_scores(env_id)
    with staged(base) as staging:
        dataset = minari.create_dataset_from_buffers(
            dataset_id=new_id,
            buffer=buffers,
            env=env_spec,
            eval_env=eval_env_spec(env_spec),
            algorithm_name="+".join(behaviors),
            author="harness-gym",
            author_email="harness-gym@users.noreply.github.com",
            code_permalink=f"https://pypi.org/project/harness-gym/{__version__}/",
            ref_min_score=ref_min,
            ref_max_score=ref_max,
            description=f"{len(buffers)} episodes of {env_id} combined from {', '.join(dataset_ids)}.",
            requirements=[f"harness-gym=={__version__}"],
        )
        keep = {key: value for key, value in metas[0].items() if key.startswith("harness_")}
        sandboxes = [meta.get("harness_sandbox", "none") for meta in metas]
        keep["harness_sandbox"] = "process" if "process" in sandboxes else sandboxes[0]  # the weakest
        configs = [json.loads(meta["harness_config"]) for meta in metas]
        dataset.storage.update_metadata(
            {
                **keep,
                "harness_behaviors": behaviors,
                "harness_config": json.dumps(configs, sort_keys=True),
                "combined_datasets": list(dataset_ids),
            }
        )
        del dataset
        _install(staging, base, new_id, target, overwrite)
    return target
