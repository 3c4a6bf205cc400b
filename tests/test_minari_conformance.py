"""Harness datasets used the plain Minari way: recover_environment both ways, normalised scores from the
fixed per-env-id table, sampling, filtering, and combining without losing the harness metadata."""

from __future__ import annotations

from pathlib import Path

import minari
import numpy as np
import pytest

from harness_gym.datasets.collect import CollectConfig, CollectError, collect
from harness_gym.datasets.combine import combine
from harness_gym.evaluation.reference_scores import reference_scores

PLANNING = "HarnessPlanning-v0"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("datasets")
    for policy, episodes in (("base", 6), ("exploratory", 8)):
        collect(
            CollectConfig(
                env_id=PLANNING,
                policy=policy,
                episodes=episodes,
                dataset_id=f"harness/planning/{policy}-v0",
                root=str(root),
                show_progress=False,
            )
        )
    return root


@pytest.fixture
def plain_minari(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


def test_recover_environment_train_and_eval(plain_minari) -> None:
    dataset = minari.load_dataset("harness/planning/base-v0")
    train = dataset.recover_environment()
    evaluation = dataset.recover_environment(eval_env=True)
    assert train.unwrapped.split == "train" and len(train.unwrapped.tasks) == 80
    assert evaluation.unwrapped.split == "eval" and len(evaluation.unwrapped.tasks) == 20
    assert {t.split for t in evaluation.unwrapped.tasks} == {"eval"}
    assert evaluation.spec.max_episode_steps == evaluation.unwrapped.max_steps == 12
    _, info = evaluation.reset(seed=0)
    assert info["task_id"] in {t.task_id for t in evaluation.unwrapped.tasks}


def test_normalized_score_uses_the_env_ids_reference_scores(plain_minari) -> None:
    random, expert = reference_scores(PLANNING)
    for dataset_id in ("harness/planning/base-v0", "harness/planning/exploratory-v0"):
        dataset = minari.load_dataset(dataset_id)
        meta = dataset.storage.metadata
        assert (meta["ref_min_score"], meta["ref_max_score"]) == (random, expert)
        returns = np.array([random, expert, 0.5])
        np.testing.assert_allclose(
            minari.get_normalized_score(dataset, returns), [0.0, 1.0, (0.5 - random) / (expert - random)]
        )


def test_sample_and_filter_episodes(plain_minari) -> None:
    dataset = minari.load_dataset("harness/planning/exploratory-v0")
    dataset.set_seed(0)
    sampled = dataset.sample_episodes(3)
    assert len(sampled) == 3 and all(len(ep.observations) == len(ep.actions) + 1 for ep in sampled)
    submitted = dataset.filter_episodes(lambda ep: bool(ep.terminations[-1]))
    ends = [bool(ep.terminations[-1]) for ep in dataset.iterate_episodes()]
    assert submitted.total_episodes == sum(ends)
    assert all(ep.terminations[-1] for ep in submitted.iterate_episodes())
    assert submitted.storage.metadata["harness_env_id"] == PLANNING


def test_minaris_combine_drops_the_metadata_ours_keeps_it(plain_minari) -> None:
    ids = ["harness/planning/base-v0", "harness/planning/exploratory-v0"]
    sources = [minari.load_dataset(i) for i in ids]
    theirs = minari.combine_datasets(sources, "harness/planning/theirs-v0")
    assert "harness_task_ids" not in theirs.storage.metadata  # why `harness-gym datasets combine` exists
    with pytest.raises(ValueError, match="Reference score"):
        minari.get_normalized_score(theirs, np.array([0.5]))

    path = combine(ids, "harness/planning/both-v0", root=plain_minari)
    assert path == plain_minari / "harness/planning/both-v0"
    ours = minari.load_dataset("harness/planning/both-v0")
    meta = ours.storage.metadata
    assert ours.total_episodes == 14 and ours.spec.combined_datasets == ids
    assert meta["harness_behaviors"] == ["base", "exploratory"]
    for key in ("harness_env_id", "harness_task_ids", "harness_hms_events", "harness_rubric_criteria"):
        assert meta[key] == sources[0].storage.metadata[key]
    assert (meta["ref_min_score"], meta["ref_max_score"]) == reference_scores(PLANNING)
    assert minari.get_normalized_score(ours, np.array([reference_scores(PLANNING)[1]]))[0] == 1.0
    assert ours.recover_environment(eval_env=True).unwrapped.split == "eval"
    behaviour = [int(ep.infos["behavior"][0]) for ep in ours.iterate_episodes()]
    assert behaviour == [0] * 6 + [1] * 8  # each source's index 0 remapped onto the union
    first = next(sources[1].iterate_episodes())
    np.testing.assert_array_equal(next(iter(ours.iterate_episodes([6]))).actions, first.actions)


def test_combine_refuses_what_it_cannot_combine(plain_minari, tmp_path) -> None:
    with pytest.raises(CollectError, match="at least two"):
        combine(["harness/planning/base-v0"], "harness/planning/x-v0", root=plain_minari)
    with pytest.raises(CollectError, match="already exists"):
        combine(["harness/planning/base-v0", "harness/planning/exploratory-v0"], "harness/planning/base-v0",
                root=plain_minari)  # fmt: skip
    collect(CollectConfig(env_id=PLANNING, policy="base", episodes=2, dataset_id="harness/planning/ev-v0",
                          split="eval", root=str(plain_minari), show_progress=False))  # fmt: skip
    with pytest.raises(CollectError, match="differ in harness_split"):
        combine(["harness/planning/base-v0", "harness/planning/ev-v0"], "harness/planning/y-v0",
                root=plain_minari)  # fmt: skip
