"""The reference policies of harness_gym.policies.scripted: legality, their defining rules, observation-only
expert, the oracle marked and bound, and statelessness across interleaved episodes."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import harness_gym
from harness_gym.cli.main import main
from harness_gym.evaluation.protocol import evaluate
from harness_gym.evaluation.rollout import run_episode
from harness_gym.policies.scripted import (
    BEHAVIORS,
    SCRIPTED,
    ExpertPolicy,
    HindsightSubmitPolicy,
    OraclePolicy,
    bind_policy,
    make_policy,
)

PLANNING = "HarnessPlanning-v0"
KNOWLEDGE = "HarnessKnowledgeWork-v0"


def small_env(env_id: str, n_tasks: int = 2, **kwargs) -> gym.Env:
    """The first ``n_tasks`` eval tasks, strict: an illegal action raises."""
    ids = [t.task_id for t in gym.make(env_id, split="eval").unwrapped.tasks[:n_tasks]]
    return gym.make(env_id, split="eval", task_ids=ids, strict=True, **kwargs)


def episodes(env: gym.Env, name: str, seeds=range(3)) -> list[dict]:
    """Final infos of one episode per (task, seed) on ``env``."""
    policy = bind_policy(make_policy(name, env.unwrapped.domain.env_id), env)
    return [
        run_episode(env, policy, seed=seed, task_id=task.task_id)
        for task in env.unwrapped.tasks
        for seed in seeds
    ]


def actions(final: dict) -> list[str]:
    return [step["action"] for step in final["trajectory"]["steps"]]


def check_failed(step: dict) -> bool:
    tests = step.get("tests")
    return bool(
        step["failure"]
        or step["check"]["coverage"] < 1.0
        or (tests is not None and tests["passed"] < tests["total"])
    )


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_every_scripted_policy_takes_only_legal_actions(env_id: str) -> None:
    env = small_env(env_id)  # strict: an illegal action would raise InvalidActionError
    for name in SCRIPTED:
        for final in episodes(env, name):
            assert final["termination_reason"] in ("submit", "budget"), name
            assert 0.0 <= final["G"] <= 1.0


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_forced_check_checks_right_before_submit_and_changes_no_outcome(env_id: str) -> None:
    env = small_env(env_id)
    forced, base = episodes(env, "forced-check"), episodes(env, "base")
    for fc, b in zip(forced, base, strict=True):
        steps = actions(fc)
        assert steps[-1] == "SUBMIT" and steps[-2] == "CHECK"
        assert [*steps[:-2], "SUBMIT"] == actions(b)  # Base's script with one CHECK inserted
        assert fc["G"] == pytest.approx(b["G"])  # the check is never acted on: its lift is structural


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_check_revise_revises_exactly_after_a_failing_check(env_id: str) -> None:
    env = small_env(env_id, n_tasks=4)
    revised = 0
    for final in episodes(env, "check-revise"):
        steps = final["trajectory"]["steps"]
        names = actions(final)
        assert names.count("CHECK") == 1 and names.count("REVISE") <= 1 and names[-1] == "SUBMIT"
        k = names.index("CHECK")
        if check_failed(steps[k]):
            assert names[k + 1 :] == ["REVISE", "SUBMIT"]
            revised += 1
        else:
            assert names[k + 1 :] == ["SUBMIT"]
    assert revised > 0  # the rule was exercised


@pytest.mark.parametrize("env_id", harness_gym.ENV_IDS)
def test_expert_is_a_function_of_the_observation_alone(env_id: str) -> None:
    env = small_env(env_id)
    expert = ExpertPolicy(env_id)
    # it holds no environment, episode or task: only its id, its plans and the domain's public constants
    plans = (type(expert.plan), type(expert.plan_v2))
    assert all(
        isinstance(v, (str, int, float, bool, *plans))
        or (isinstance(v, tuple) and all(map(str.__instancecheck__, v)))
        for v in vars(expert).values()
    )
    fresh = ExpertPolicy(env_id)
    for seed in range(3):
        obs, info = env.reset(seed=seed, options={"task_id": env.unwrapped.tasks[seed % 2].task_id})
        done = False
        while not done:
            mask = info["action_mask"]
            action = expert.act(obs, mask, np.random.default_rng(seed))
            # the same (obs, mask) gives the same action: to a fresh instance, with any rng, read-only
            frozen_obs, frozen_mask = obs.copy(), mask.copy()
            assert fresh.act(obs, mask, np.random.default_rng(seed + 99)) == action
            assert np.array_equal(obs, frozen_obs) and np.array_equal(mask, frozen_mask)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated


def test_expert_gathers_drafts_checks_and_revises_only_after_failure() -> None:
    env = small_env(KNOWLEDGE, n_tasks=5)
    finals = episodes(env, "expert")
    for final in finals:
        steps = final["trajectory"]["steps"]
        names = actions(final)
        assert names[0] == "OBSERVE" and names.index("RETRIEVE") < names.index("DRAFT")
        for k, name in enumerate(names):
            if name == "REVISE":  # after a failing check of this draft (possibly with unchanged revisions)
                last_check = max(i for i in range(k) if names[i] == "CHECK")
                assert check_failed(steps[last_check])
        assert names.count("REVISE") <= ExpertPolicy(KNOWLEDGE).plan.max_revisions
    assert any("REVISE" in actions(f) for f in finals)


def test_hindsight_submit_is_marked_needs_binding_and_is_not_a_behaviour() -> None:
    oracle = make_policy("hindsight-submit", PLANNING)
    assert isinstance(oracle, HindsightSubmitPolicy) and oracle.reads_hidden_state
    assert (
        "HINDSIGHT-SUBMIT" in HindsightSubmitPolicy.__doc__
        and "Not an upper bound" in HindsightSubmitPolicy.__doc__
    )
    assert "hindsight-submit" not in BEHAVIORS and "oracle" not in BEHAVIORS and "expert" in BEHAVIORS
    env = small_env(PLANNING)
    obs, info = env.reset(seed=0)
    with pytest.raises(RuntimeError, match="bind"):
        oracle.act(obs, info["action_mask"], np.random.default_rng(0))
    with pytest.raises(ValueError, match="bound to an environment"):
        HindsightSubmitPolicy(KNOWLEDGE, env)
    assert bind_policy(make_policy("expert", PLANNING), env).name == "expert"  # unchanged


def test_the_old_name_oracle_still_works_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="hindsight-submit"):
        policy = make_policy("oracle", PLANNING)
    assert isinstance(policy, HindsightSubmitPolicy) and OraclePolicy is HindsightSubmitPolicy
    assert policy.is_oracle


@pytest.mark.parametrize("env_id", [PLANNING, KNOWLEDGE, "HarnessTauRetail-v0"])
def test_hindsight_submit_is_at_least_the_expert_on_a_sample(env_id: str) -> None:
    ids = [t.task_id for t in gym.make(env_id, split="eval").unwrapped.tasks[:6]]
    kwargs = {"task_ids": ids, "seeds": (0, 1), "rollouts": 2}
    expert = np.mean([r.G for r in evaluate(make_policy("expert", env_id), env_id, **kwargs)])
    oracle = np.mean([r.G for r in evaluate(make_policy("hindsight-submit", env_id), env_id, **kwargs)])
    assert oracle >= expert


@pytest.mark.parametrize("name", ["expert", "check-revise", "forced-check"])
def test_one_instance_serves_interleaved_episodes(name: str) -> None:
    """No per-episode state: two episodes stepped alternately match the same two run one after the other."""
    envs = [small_env(PLANNING), small_env(PLANNING)]
    tasks = [envs[0].unwrapped.tasks[0].task_id, envs[1].unwrapped.tasks[1].task_id]
    alone = [
        actions(run_episode(env, make_policy(name, PLANNING), seed=s, task_id=t))
        for env, s, t in zip(envs, (3, 4), tasks, strict=True)
    ]
    policy = make_policy(name, PLANNING)
    state = [env.reset(seed=s, options={"task_id": t}) for env, s, t in zip(envs, (3, 4), tasks, strict=True)]
    rngs = [np.random.default_rng(3), np.random.default_rng(4)]
    taken: list[list[str]] = [[], []]
    live = [True, True]
    while any(live):
        for i, env in enumerate(envs):
            if not live[i]:
                continue
            obs, info = state[i]
            action = policy.act(obs, info["action_mask"], rngs[i])
            taken[i].append(harness_gym.Action(action).name)
            obs, _, terminated, truncated, info = env.step(action)
            state[i] = (obs, info)
            live[i] = not (terminated or truncated)
    assert taken == alone


@pytest.mark.parametrize("name", ["check-revise", "expert", "hindsight-submit"])
def test_reference_policies_run_from_the_command_line(name: str, capsys) -> None:
    assert main(["run", "--env", PLANNING, "--policy", name, "--episodes", "2"]) == 0
    assert f"policy={name}" in capsys.readouterr().out


def test_unknown_policy_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="check-revise"):
        make_policy("cheque-revise", PLANNING)


def test_bench_evaluates_named_reference_policies(tmp_path) -> None:
    from harness_gym.bench.runner import BenchConfig, run

    names = ("check-revise", "expert", "hindsight-submit")
    config = BenchConfig(
        settings=(PLANNING,),
        seeds=(0,),
        rollouts=1,
        episodes_per_task=1,
        algos=("awr",),
        n_steps=5,
        n_boot=200,
        references=names,
        out=str(tmp_path / "results"),
        show_progress=False,
    )
    policies = run(config)["settings"][PLANNING]["compare"]["policies"]
    assert set(names) <= set(policies)
    assert all(policies[name]["pairs"] == 20 for name in names)


def test_observation_only_references_collect_as_behaviours_and_hindsight_submit_does_not(tmp_path) -> None:
    from harness_gym.datasets.collect import CollectConfig, collect

    report = collect(
        CollectConfig(
            env_id=PLANNING,
            policy="expert",
            episodes=4,
            dataset_id="harness/planning/expert-v0",
            root=str(tmp_path),
            show_progress=False,
        )
    )
    assert report.stats["episodes"] == 4
    for name in ("hindsight-submit", "oracle"):
        with pytest.raises(SystemExit):  # argparse refuses it: hindsight-submit is no behaviour policy
            main(["collect", "--env", PLANNING, "--policy", name, "--episodes", "2", "--dataset-id", "x"])
