"""The published tiers: fixed ids, equal sizes, what each behaviour schedule writes, plain-Minari loading."""

from __future__ import annotations

import minari
import numpy as np
import pytest

from harness_gym.datasets import manifest, tiers
from harness_gym.datasets.collect import CollectError, alternating, replay_epsilon
from harness_gym.envs.registry import ENV_IDS
from harness_gym.evaluation.reference_scores import normalized_score, reference_episode_count
from harness_gym.policies.scripted import BasePolicy

PLANNING = "HarnessPlanning-v0"
PER_TASK = 2
"""Episodes per train task of the small builds here (the published tiers have 20)."""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every tier of planning, 2 episodes per train task (160 each)."""
    root = tmp_path_factory.mktemp("tiers")
    for tier in tiers.TIERS:
        tiers.build(PLANNING, tier, root=root, episodes_per_task=PER_TASK)
    return root


def load(root, tier: str) -> minari.MinariDataset:
    return minari.load_dataset(str(root / tiers.tier_id(PLANNING, tier)))


def test_ids_are_fixed_and_parsed_back():
    assert tiers.tier_id(PLANNING, "medium-expert") == "harness/planning/medium-expert-v0"
    assert tiers.tier_id("HarnessTauRetail-v0", "coverage") == "harness/tau_retail/coverage-v0"
    ids = tiers.all_ids()
    assert len(ids) == len(set(ids)) == len(ENV_IDS) * 7
    assert all(tiers.parse_id(i) == (env, t) for i, (env, t) in zip(ids, _pairs(), strict=True))
    for bad, message in [
        ("harness/planning/best-v0", "not a published tier id"),
        ("harness/nowhere/medium-v0", "not a published tier id"),
        ("harness/planning/medium-v1", "version 0"),
    ]:
        with pytest.raises(CollectError, match=message):
            tiers.parse_id(bad)
    with pytest.raises(CollectError, match="unknown tier 'best'"):
        tiers.tier_id(PLANNING, "best")
    with pytest.raises(CollectError, match="no published tiers for 'HarnessHumanEval-v0'"):
        tiers.tier_id("HarnessHumanEval-v0", "medium")


def _pairs():
    return [(env_id, tier) for env_id in ENV_IDS for tier in tiers.TIERS]


def test_every_tier_loads_with_plain_minari_and_has_the_same_size(built, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(built))
    for tier in tiers.TIERS:
        dataset_id = tiers.tier_id(PLANNING, tier)
        dataset = minari.load_dataset(dataset_id)  # by id, the plain Minari way
        assert dataset.total_episodes == 80 * PER_TASK
        env = dataset.recover_environment(eval_env=True)
        assert env.unwrapped.split == "eval" and env.spec.id == PLANNING
        assert dataset.recover_environment().unwrapped.split == "train"
        meta = dataset.storage.metadata
        assert meta["num_episodes_average_score"] == reference_episode_count(PLANNING) == 180
        entry = manifest.entry(dataset_id, built)
        normalised = minari.get_normalized_score(dataset, np.array([entry["mean_G"]]))[0]
        assert 100 * normalised == pytest.approx(entry["normalized_score"], abs=1e-3)
        assert 100 * normalised == pytest.approx(normalized_score(PLANNING, entry["mean_G"]))
        namespace = dataset_id.rsplit("/", 1)[0]
        assert minari.namespace.get_namespace_metadata(namespace)["display_name"] == PLANNING
        assert minari.namespace.get_namespace_metadata("harness")["description"]


def test_behaviours_follow_their_tier(built):
    behaviours = {tier: set(load(built, tier).storage.metadata["harness_behaviors"]) for tier in tiers.TIERS}
    assert behaviours == {
        "random": {"random"},
        "medium": {"base"},
        "expert": {"expert"},
        "medium-expert": {"base", "expert"},
        "mixed": {"base", "exploratory"},
        "medium-replay": {"exploratory"},
        "coverage": {"base", "coverage"},
    }
    assert load(built, "expert").storage.metadata["harness_behavior_versions"] == '{"expert": 1}'
    mean_g = {tier: manifest.entry(tiers.tier_id(PLANNING, tier), built)["mean_G"] for tier in tiers.TIERS}
    assert mean_g["random"] < mean_g["medium"] < mean_g["medium-expert"] < mean_g["expert"]


def test_medium_expert_is_half_and_half_on_every_task(built):
    dataset = load(built, "medium-expert")
    counts = np.zeros((80, 2), dtype=int)
    for ep in dataset.iterate_episodes():
        counts[int(ep.infos["task_index"][0]), int(ep.infos["behavior"][0])] += 1
    assert (counts == PER_TASK // 2).all()
    assert [alternating(i, 80) for i in (0, 1, 80, 81)] == [0, 1, 1, 0]


def test_medium_replay_epsilon_rises_linearly_from_base_to_random(built):
    dataset = load(built, "medium-replay")
    n = dataset.total_episodes
    eps = [m["epsilon"] for m in dataset.storage.get_episode_metadata(range(n))]
    assert eps == pytest.approx([replay_epsilon(i, n, 1.0) for i in range(n)])
    assert eps[0] == 0.0 and eps[-1] == 1.0 and np.all(np.diff(eps) > 0)
    first = next(dataset.iterate_episodes([0]))  # epsilon 0: Base, with probability one
    assert np.all(first.infos["behavior_logp"][:-1] == 0.0)


def test_coverage_forks_every_state_of_the_medium_episodes(built):
    medium, coverage = load(built, "medium"), load(built, "coverage")
    n = coverage.total_episodes
    metas = list(coverage.storage.get_episode_metadata(range(n)))
    episodes = list(coverage.iterate_episodes())
    parents = {int(m["parent_id"]) for m in metas}
    by_parent = {
        p: [(m, ep) for m, ep in zip(metas, episodes, strict=True) if m["parent_id"] == p] for p in parents
    }
    base = BasePolicy(PLANNING)
    complete = sorted(parents)[:-1]  # the last parent's forks may be cut at the episode count
    assert complete
    for p in sorted(parents):
        (root_meta, parent), *forks = by_parent[p]
        assert (root_meta["fork_step"], root_meta["forced_action"], root_meta["seed"]) == (-1, -1, p)
        original = next(medium.iterate_episodes([p]))  # the parent is the medium tier's episode p
        np.testing.assert_array_equal(parent.observations, original.observations)
        np.testing.assert_array_equal(parent.actions, original.actions)
        seen = set()
        for meta, fork in forks:
            k, a = int(meta["fork_step"]), int(meta["forced_action"])
            np.testing.assert_array_equal(fork.observations[: k + 1], parent.observations[: k + 1])
            np.testing.assert_array_equal(fork.actions[:k], parent.actions[:k])
            assert fork.actions[k] == a != parent.actions[k]
            assert fork.infos["behavior"][0] == 1 and meta["seed"] == p
            legal = int(parent.infos["action_mask"][k].sum())
            assert fork.infos["behavior_logp"][k] == pytest.approx(-np.log(legal))
            for t in range(k + 1, len(fork.actions)):  # Base from the fork on
                obs, mask = fork.observations[t], fork.infos["action_mask"][t]
                assert fork.actions[t] == base.choose(obs, mask)
            seen.add((k, a))
        if p in complete:
            expected = {
                (k, a)
                for k in range(len(parent.actions))
                for a in np.flatnonzero(parent.infos["action_mask"][k])
                if a != parent.actions[k]
            }
            assert seen == expected
