"""``evaluate_policy``'s glue: factories, failures that name the policy, and the suite of every setting,
each on stand-in policies and scores (no episode is played)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from harness_gym.envs.registry import ENV_IDS
from harness_gym.evaluation import results, scoring
from harness_gym.evaluation.protocol import Interval
from harness_gym.evaluation.scoring import (
    CheckedPolicy,
    FactoryError,
    PolicyError,
    PolicyScore,
    SuiteScore,
    from_factory,
    results_document,
)


def policy(obs: Any, mask: Any) -> int:
    return 6


def test_a_factory_with_an_env_id_parameter_is_told_the_setting() -> None:
    seen: list[tuple[int, str | None]] = []
    made = from_factory(
        lambda seed, env_id=None: seen.append((seed, env_id)) or policy, (3, 4), "HarnessPlanning-v0"
    )
    assert made is policy and seen == [(3, "HarnessPlanning-v0"), (4, "HarnessPlanning-v0")]


def test_a_factory_without_a_signature_is_called_with_the_seed_only() -> None:
    """A builtin has no signature to read: it gets the seed alone, and different objects are one per seed."""
    assert from_factory(str, (0, 1), "HarnessPlanning-v0") == ["0", "1"]


def test_one_seed_gives_the_object_itself_not_a_list() -> None:
    assert from_factory(lambda seed: policy, (7,)) is policy
    assert from_factory(lambda seed: [seed], (7,)) == [7]


def test_a_failing_factory_names_the_seed_and_keeps_the_cause() -> None:
    cause = RuntimeError("no weights")

    def factory(seed: int) -> Any:
        if seed == 2:
            raise cause
        return policy

    with pytest.raises(FactoryError) as failed:
        from_factory(factory, (1, 2))
    assert failed.value.seed == 2 and failed.value.cause is cause and failed.value.__cause__ is cause
    assert str(failed.value) == "the policy factory failed for seed 2: RuntimeError: no weights"


def test_a_failing_policy_is_named_with_its_error_on_one_line() -> None:
    class Broken:
        def act(self, obs: Any, mask: Any, rng: Any) -> int:
            raise ValueError("bad\n   input  here")

    with pytest.raises(PolicyError) as failed:
        CheckedPolicy(Broken(), "mine").act(None, None, None)
    assert str(failed.value) == "policy 'mine': act raised ValueError: bad input here"


ENV = "HarnessPlanning-v0"


def _score(env_id: str, delta: Interval | None = None, name: str = "mine") -> PolicyScore:
    """A stand-in score over two tasks and one seed, Base beside it."""
    episodes = tuple(SimpleNamespace(seed=0, task_id=t, rollout=0, G=g) for t, g in (("a", 0.25), ("b", 0.5)))
    base = tuple(SimpleNamespace(seed=0, task_id=t, rollout=0, G=0.125) for t in ("a", "b"))
    return PolicyScore(
        name=name,
        env_id=env_id,
        split="eval",
        seeds=(0,),
        rollouts=1,
        act=None,
        per_seed_models=False,
        G=0.375,
        score=Interval(12.34, 10.0, 15.0),
        seed_scores={0: 12.34},
        hms_norm=0.0,
        base_G=0.125,
        delta_G=delta,
        p_value=None if delta is None else 0.0312,
        delta_hms=None,
        episodes=episodes,
        base_episodes=base,
        simulator=results.simulator(),
    )


def test_the_suite_finds_each_setting_by_its_env_id() -> None:
    first, second = _score(ENV), _score("HarnessCoding-v0")
    suite = SuiteScore((first, second))
    assert suite[ENV] is first and suite["HarnessCoding-v0"] is second and suite.name == "mine"
    with pytest.raises(KeyError) as missing:
        suite["HarnessDBBench-v0"]
    assert missing.value.args == ("HarnessDBBench-v0",)


def test_the_suite_summary_is_one_line_per_setting_with_the_change_against_base() -> None:
    suite = SuiteScore((_score(ENV, Interval(0.25, -0.125, 0.5)), _score("HarnessCoding-v0")))
    assert suite.summary().split("\n") == [
        "mine on 2 settings (normalised score: random = 0, expert = 100)",
        f"{ENV:<24} G 0.375  score   12.3  ΔG vs Base +0.250 [-0.125, +0.500] p = 0.031",
        f"{'HarnessCoding-v0':<24} G 0.375  score   12.3",
    ]


def test_the_suite_writes_one_results_document_of_every_setting(tmp_path: Path) -> None:
    scores = (_score(ENV), _score("HarnessCoding-v0"))
    suite = SuiteScore(scores)
    assert suite.to_results() == results_document(scores)
    path = suite.write_results(tmp_path / "suite.json")
    assert path == tmp_path / "suite.json"
    assert json.loads(path.read_text()) == json.loads(json.dumps(results_document(scores)))
    assert set(results.load(path)["scores"]) == {ENV, "HarnessCoding-v0"}


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``evaluate_policy`` per setting replaced by a recorder of its arguments."""
    calls: list[dict[str, Any]] = []

    def record(policy: Any, env_id: str, **kwargs: Any) -> PolicyScore:
        calls.append({"policy": policy, "env_id": env_id, **kwargs})
        return _score(env_id, name=kwargs["name"])

    monkeypatch.setattr(scoring, "evaluate_policy", record)
    return calls


def test_every_setting_is_played_in_order_under_one_name_with_its_own_checkpoint(
    monkeypatch, tmp_path
) -> None:
    calls = _recorded(monkeypatch)
    suite = scoring._evaluate_all(policy, name=None, checkpoint=tmp_path, seeds=(0,), act="greedy")
    assert [c["env_id"] for c in calls] == list(ENV_IDS)
    assert all(c["policy"] is policy and c["name"] == "policy" for c in calls)
    assert [c["checkpoint"] for c in calls] == [tmp_path / env_id for env_id in ENV_IDS]
    assert all(c["seeds"] == (0,) and c["act"] == "greedy" for c in calls)
    assert isinstance(suite, SuiteScore) and [s.env_id for s in suite.scores] == list(ENV_IDS)
    calls.clear()
    scoring._evaluate_all(policy, name="given", checkpoint=None)
    assert all(c["checkpoint"] is None and c["name"] == "given" for c in calls)


def test_a_policy_per_setting_plays_its_own_setting_named_after_the_first_model(monkeypatch) -> None:
    """One policy (or one model per seed) per setting: each setting gets its own; the name comes from the
    first setting's first model."""
    calls = _recorded(monkeypatch)

    def first(obs: Any, mask: Any) -> int:
        return 6

    def other(obs: Any, mask: Any) -> int:
        return 6

    per_setting = {env_id: other for env_id in ENV_IDS} | {ENV_IDS[0]: [first, other]}
    scoring._evaluate_all(per_setting, name=None, checkpoint=None)
    assert [c["policy"] for c in calls] == [per_setting[env_id] for env_id in ENV_IDS]
    assert {c["name"] for c in calls} == {"first"}
    calls.clear()
    scoring._evaluate_all([other, first], name=None, checkpoint=None)  # one model per seed
    assert {c["name"] for c in calls} == {"other"}
    calls.clear()
    scoring._evaluate_all(first, name=None, checkpoint=None)
    assert {c["name"] for c in calls} == {"first"}


def test_a_policy_per_setting_names_what_is_missing_and_what_is_unknown() -> None:
    some = {env_id: policy for env_id in ENV_IDS[2:]} | {"HarnessNothing-v9": policy}
    missing = ", ".join(sorted(ENV_IDS[:2]))
    with pytest.raises(PolicyError) as refused:
        scoring._evaluate_all(some, name=None, checkpoint=None)
    assert str(refused.value) == (
        f"a policy per setting needs every setting: missing {missing}; unknown HarnessNothing-v9"
    )
    extra = {env_id: policy for env_id in ENV_IDS} | {"HarnessNothing-v9": policy, "HarnessAlso-v9": policy}
    with pytest.raises(PolicyError) as refused:
        scoring._evaluate_all(extra, name=None, checkpoint=None)
    assert str(refused.value).endswith("missing none; unknown HarnessAlso-v9, HarnessNothing-v9")
    with pytest.raises(PolicyError, match=r"missing HarnessCoding-v0; unknown none$"):
        scoring._evaluate_all(
            {e: policy for e in ENV_IDS if e != "HarnessCoding-v0"}, name=None, checkpoint=None
        )


def test_the_protocol_episodes_are_those_of_the_env_keywords_given() -> None:
    """``protocol_seeds`` lists the tasks of the MDP the keywords select: MDP v2 plays its own task set."""
    from harness_gym.evaluation.scoring import protocol_seeds

    env_id = "HarnessResearch-v0"
    v1 = {ep.task_id for ep in protocol_seeds(env_id, seeds=(0,), rollouts=1)}
    v2 = {ep.task_id for ep in protocol_seeds(env_id, seeds=(0,), rollouts=1, obs_layout="v2")}
    assert v1 != v2


class _Acting:
    """A policy object: it chooses through ``act``."""

    def act(self, obs: Any, mask: Any, rng: Any) -> int:
        return 6


class _CallableActing(_Acting):
    """A policy object that is also callable: ``act`` still decides its kind."""

    def __call__(self, obs: Any, mask: Any) -> int:
        return 6


class _Plain:
    """A plain callable object, neither named nor acting."""

    def __call__(self, obs: Any, mask: Any) -> int:
        return 6


def test_a_policy_is_named_by_its_name_then_its_function_then_its_class_else_policy() -> None:
    """The default name: a non-empty string ``name`` attribute; else a function's ``__name__`` where it is
    an identifier; else the class name of an object with ``act`` or of anything not callable; else (a
    plain callable, a lambda) "policy"."""
    named = _Acting()
    named.name = "mine"
    assert scoring._default_name(named) == "mine"
    assert scoring._default_name(SimpleNamespace(name="given")) == "given"
    unnamed = _Acting()
    unnamed.name = ""  # an empty name is no name
    assert scoring._default_name(unnamed) == "_Acting"
    numbered = _Acting()
    numbered.name = 3  # nor is a name that is not a string
    assert scoring._default_name(numbered) == "_Acting"
    assert scoring._default_name(policy) == "policy"
    assert scoring._default_name(from_factory) == "from_factory"
    assert scoring._default_name(lambda obs, mask: 6) == "policy"  # "<lambda>" is no identifier
    assert scoring._default_name(_Acting()) == "_Acting"
    assert scoring._default_name(_CallableActing()) == "_CallableActing"
    assert scoring._default_name(_Plain()) == "policy"
    assert scoring._default_name(object()) == "object"


def test_a_d3rlpy_algorithm_is_named_by_its_class_even_where_it_is_callable() -> None:
    """A trained d3rlpy algorithm has no name of its own: its class names it, before any other rule."""
    d3rlpy = pytest.importorskip("d3rlpy")
    algo = d3rlpy.algos.DiscreteCQLConfig().create(device="cpu")
    assert scoring._default_name(algo) == "DiscreteCQL"

    class CallableCQL(type(algo)):
        def __call__(self, obs: Any, mask: Any) -> int:
            return 6

    called = CallableCQL(algo.config, device="cpu", enable_ddp=False)
    assert scoring._default_name(called) == "CallableCQL"


def test_the_score_summary_states_the_interval_unit_the_models_and_the_masked_actions() -> None:
    """``harness-gym evaluate``'s printout, line for line: what the interval resamples, whether one model
    played each seed, the change against Base and in HMS where known, and masked actions where taken."""
    plain = _score(ENV)
    assert plain.summary().split("\n") == [
        f"{ENV}  policy=mine  split=eval  seeds=0  rollouts=1  episodes=2",
        "mean G 0.375   normalised score 12.3 [10.0, 15.0] (random = 0, expert = 100; 95% interval over "
        "episodes)",
        "per seed: 0: 12.3  (one policy for every seed)",
        "mean HMS_norm +0.000",
    ]
    full = dataclasses.replace(
        _score(ENV, Interval(0.25, -0.125, 0.5)),
        seeds=(0, 1),
        seed_scores={0: 12.34, 1: 50.0},
        per_seed_models=True,
        score_unit="tasks",
        hms_norm=0.5,
        delta_hms=-0.25,
        masked_actions=3,
        masked_episodes=1,
    )
    assert full.summary().split("\n") == [
        f"{ENV}  policy=mine  split=eval  seeds=0 1  rollouts=1  episodes=2",
        "mean G 0.375   normalised score 12.3 [10.0, 15.0] (random = 0, expert = 100; 95% interval "
        "resampling whole tasks: some episodes repeat each other's calls)",
        "per seed: 0: 12.3  1: 50.0  (one model per seed)",
        "vs Base (G 0.125): ΔG +0.250 [-0.125, +0.500] paired over 2 episodes, p = 0.031",
        "mean HMS_norm +0.500   ΔHMS -0.250",
        "masked actions: 3 taken in 1 of 2 episodes (each a no-op that costs a step; the mask is "
        'info["action_mask"])',
    ]


def test_a_plain_functions_episodes_are_tagged_with_its_name() -> None:
    """The name a function is evaluated under tags its episodes' ids (``run_episode``'s episode tag), as an
    object policy's ``name`` does."""
    import gymnasium as gym

    from harness_gym.evaluation.rollout import run_episode

    played, _ = scoring.as_policy(policy, "greedy", "submit-at-once")
    final = run_episode(gym.make("HarnessPlanning-v0", split="eval"), played, seed=0)
    assert "submit-at-once" in final["trajectory"]["episode_id"]


def test_bases_episodes_are_reused_only_under_the_same_settings_and_never_with_a_chat_llm() -> None:
    """Decision: Base's evaluation is memoised per (setting, split, seeds, rollouts, env keywords), so an
    evaluation under another profile or budget plays its own Base; with a chat LLM it is never memoised
    (played, or replayed from the LLM cache, every time)."""
    key = scoring._base_key
    same = key("HarnessPlanning-v0", "eval", (0, 1), 3, {"executor_profile": "weak", "token_budget": 500})
    assert same == key(
        "HarnessPlanning-v0", "eval", [0, 1], 3, {"token_budget": 500, "executor_profile": "weak"}
    )
    assert same != key(
        "HarnessPlanning-v0", "eval", (0, 1), 3, {"executor_profile": "strong", "token_budget": 500}
    )
    assert same != key("HarnessPlanning-v0", "eval", (0, 1), 3, {"executor_profile": "weak"})
    assert key("HarnessPlanning-v0", "eval", (0, 1), 3, {"executor": object()}) is None


def test_a_results_document_is_marked_smoke_only_when_asked_and_needs_scores_with_base() -> None:
    scores = (_score(ENV),)
    assert results_document(scores)["smoke"] is False
    assert results_document(scores, smoke=True)["smoke"] is True
    with pytest.raises(ValueError, match=r"^no scores to write$"):
        results_document(())
    baseless = dataclasses.replace(_score(ENV), base_episodes=None)
    with pytest.raises(
        PolicyError, match=r"^mine on HarnessPlanning-v0 was scored without Base: a results file"
    ):
        results_document((baseless,))


def test_a_results_document_of_mdp_v2_scores_against_v2s_reference_scores() -> None:
    """Decision: a score played on MDP v2 is normalised with v2's random and expert scores, in the setting's
    record and in every policy's per-seed scores (v1's would misstate it)."""
    from harness_gym.evaluation.reference_scores import normalized_score, reference_scores

    v2 = dataclasses.replace(_score(ENV), simulator=results.simulator(obs_layout="v2"))
    assert reference_scores(ENV, "v2") != reference_scores(ENV, "v1")
    entry = results_document((v2,))["scores"][ENV]
    random, expert = reference_scores(ENV, "v2")
    assert entry["reference"] == {"random": random, "expert": expert}
    assert entry["policies"]["mine"]["seed_scores"]["0"] == pytest.approx(normalized_score(ENV, 0.375, "v2"))
    assert entry["policies"]["base"]["seed_scores"]["0"] == pytest.approx(normalized_score(ENV, 0.125, "v2"))


def test_an_outside_policy_is_described_with_how_it_acted() -> None:
    assert dataclasses.replace(_score(ENV), act="sample").policy_meta() == {
        "kind": "outside",
        "per_seed_models": False,
        "act": "sample",
    }


@pytest.mark.parametrize("action", [2.0, True, np.bool_(False), "3", None])
def test_an_action_env_step_would_refuse_is_named_with_its_type(action) -> None:
    """Decision: a policy's action is an int of Discrete(7), numpy integers included; a float, a bool or
    anything else is refused up front, naming the policy and the value's type (``int()`` would take them)."""
    from harness_gym.evaluation.scoring import checked_action

    with pytest.raises(
        PolicyError, match=rf"^policy 'p' returned .* \({type(action).__name__}\): an action is"
    ):
        checked_action(action, "p")


def test_an_integer_action_passes_as_it_is() -> None:
    from harness_gym.evaluation.scoring import checked_action

    assert checked_action(np.int64(3), "p") == 3 and checked_action(6, "p") == 6


def test_an_out_of_range_action_is_named_and_the_last_action_is_in_range() -> None:
    from harness_gym.evaluation.scoring import checked_action

    assert checked_action(6, "p") == 6
    with pytest.raises(PolicyError, match=r"^policy 'p' returned action 7, not in Discrete\(7\)$"):
        checked_action(7, "p")
    with pytest.raises(PolicyError, match=r"^policy 'p' returned 2\.5 \(float\): an action is an int"):
        checked_action(2.5, "p")


def test_masked_steps_counts_the_steps_the_env_refused() -> None:
    refused = {"valid": False, "text": scoring.MASKED_STEP_TEXT}
    unmarked = {"text": scoring.MASKED_STEP_TEXT}  # a step record without "valid" was a valid step
    steps = [
        refused,
        {"valid": True, "text": "ok"},
        {"valid": False, "text": "other error"},
        refused,
        unmarked,
    ]
    assert scoring.masked_steps({"step_records": steps}) == 2
    assert scoring.masked_steps({"step_records": None}) == 0 and scoring.masked_steps({}) == 0


def test_a_checked_policy_binds_the_policys_own_env_copy_and_keeps_its_label() -> None:
    """A policy with ``bind_env`` (e.g. hindsight-submit) gets the env it plays on, and its failures are
    still named after the label; a policy without it is used as it is."""

    class Binds:
        def __init__(self, env: Any = None) -> None:
            self.env = env

        def bind_env(self, env: Any) -> Any:
            return Binds(env)

        def act(self, obs: Any, mask: Any, rng: Any) -> int:
            raise RuntimeError(f"bound to {self.env}")

    bound = CheckedPolicy(Binds(), "mine").bind_env("the env")
    assert isinstance(bound, CheckedPolicy) and bound.policy.env == "the env" and bound.label == "mine"
    with pytest.raises(PolicyError, match=r"^policy 'mine': act raised RuntimeError: bound to the env$"):
        bound.act(None, None, None)
    plain = CheckedPolicy(policy, "fn")
    assert plain.bind_env("the env") is plain


def test_a_failing_reset_is_named_and_a_reset_reaches_the_policy() -> None:
    class Resets:
        count = 0

        def reset(self) -> None:
            Resets.count += 1
            if Resets.count > 1:
                raise ValueError("state\n lost")

    checked = CheckedPolicy(Resets(), "mine")
    checked.reset()
    assert Resets.count == 1
    with pytest.raises(
        PolicyError, match=r"^policy 'mine': reset\(\) raised ValueError: state lost$"
    ) as failed:
        checked.reset()
    assert isinstance(failed.value.__cause__, ValueError)


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ("012", r"^seeds must be a sequence of integers, got '012'$"),
        ({0: 1}, r"^seeds must be a sequence of integers, got \{0: 1\}$"),
        (3, r"^seeds must be a sequence of integers, got 3$"),
        ([0, 0.5], r"^seeds must be integers, got 0\.5 in seeds=\[0, 0\.5\]$"),
        ([True], r"^seeds must be integers, got True in seeds=\[True\]$"),
        ([], r"^need distinct seeds, at least one, got seeds=\[\]$"),
        ([1, 2, 1], r"^need distinct seeds, at least one, got seeds=\[1, 2, 1\]$"),
    ],
)
def test_protocol_seeds_are_distinct_integers_or_named(seeds, message) -> None:
    with pytest.raises(PolicyError, match=message):
        scoring._seeds(seeds)


def test_protocol_seeds_come_back_as_plain_ints() -> None:
    assert scoring._seeds((np.int64(2), 0)) == (2, 0) and all(
        type(s) is int for s in scoring._seeds((np.int64(2),))
    )


def test_a_trained_learner_plays_the_asked_mode_where_it_has_it_else_greedy() -> None:
    from harness_gym.policies.algorithms import Trained

    both = Trained({"sample": "S", "greedy": "G"})
    assert scoring.as_policy(both, "sample", "x") == ("S", "sample")
    assert scoring.as_policy(both, "greedy", "x") == ("G", "greedy")
    assert scoring.as_policy(Trained({"greedy": "G"}), "sample", "x") == ("G", "greedy")


def test_a_d3rlpy_learner_samples_only_where_it_has_logits_and_keeps_the_name() -> None:
    """Decision: ``act="sample"`` samples a learner with a policy head (BC) and plays a Q-learner (DQN)
    greedily, saying which it did; the policy carries the name it is evaluated under."""
    d3rlpy = pytest.importorskip("d3rlpy")
    bc = d3rlpy.algos.DiscreteBCConfig().create(device="cpu")
    dqn = d3rlpy.algos.DQNConfig().create(device="cpu")
    for algo in (bc, dqn):
        algo.create_impl((31,), 7)
    played, mode = scoring.as_policy(bc, "sample", "mine")
    assert (played.name, played.sample, mode) == ("mine", True, "sample")
    played, mode = scoring.as_policy(dqn, "sample", "q")
    assert (played.name, played.sample, mode) == ("q", False, "greedy")
    played, mode = scoring.as_policy(bc, "greedy", "mine")
    assert (played.sample, mode) == (False, "greedy")


def test_all_settings_get_every_argument_the_call_was_given(monkeypatch) -> None:
    seen: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(scoring, "_evaluate_all", lambda p, **kwargs: seen.append((p, kwargs)) or "suite")
    engine, on_episode = object(), print
    got = scoring.evaluate_policy(
        policy, "all", seeds=(1,), rollouts=2, act="greedy", split="validation", name="n", base=False,
        engine=engine, checkpoint="c", fingerprint="f", on_episode=on_episode, executor_profile="weak",
    )  # fmt: skip
    assert got == "suite" and seen == [
        (
            policy,
            {
                "seeds": (1,), "rollouts": 2, "act": "greedy", "split": "validation", "name": "n",
                "base": False, "engine": engine, "checkpoint": "c", "fingerprint": "f",
                "on_episode": on_episode, "executor_profile": "weak",
            },
        )
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env_id": "HarnessNope-v0"}, r"^unknown env id 'HarnessNope-v0'; known: HarnessKnowledgeWork-v0, "),
        ({"env_id": 3}, r"^unknown env id 3; known: HarnessKnowledgeWork-v0, HarnessCoding-v0, "),
        ({"act": "argmax"}, r"^act must be one of \('sample', 'greedy'\), got 'argmax'$"),
        ({"rollouts": 0}, r"^rollouts must be an integer of at least 1, got 0$"),
        ({"rollouts": True}, r"^rollouts must be an integer of at least 1, got True$"),
        ({"rollouts": 2.0}, r"^rollouts must be an integer of at least 1, got 2\.0$"),
    ],
)
def test_bad_arguments_are_refused_before_any_episode(kwargs, message) -> None:
    call = {"env_id": ENV, "seeds": (0,)} | kwargs
    with pytest.raises(PolicyError, match=message):
        scoring.evaluate_policy(policy, call.pop("env_id"), **call)


def test_what_cannot_act_is_named_with_what_can() -> None:
    expected = (
        r"expected an object with act\(obs, mask, rng\), a function f\(obs, mask\), a trained d3rlpy "
        r"algorithm, or a sequence of these \(one per seed\)$"
    )
    with pytest.raises(PolicyError, match=expected):
        scoring.as_policy(42, "greedy", "x")


def first_legal(obs: Any, mask: Any) -> int:
    return int(np.flatnonzero(mask)[0])


def test_a_played_function_is_named_tagged_counted_and_its_failures_named() -> None:
    """One short protocol (20 planning tasks, one seed, one rollout): the function's own name names it,
    tags its episodes and counts no masked action; a failing one is named in its error."""
    records: list[dict[str, Any]] = []
    score = scoring.evaluate_policy(first_legal, ENV, seeds=(0,), rollouts=1, on_episode=records.append)
    assert score.name == "first_legal" and score.masked_actions == 0 and score.masked_episodes == 0
    mine = [r for r in records if r["policy"] == "first_legal"]  # Base's records come to on_episode too
    assert len(mine) == 20 and all(r["episode_id"].endswith("/first_legal") for r in mine)

    def broken(obs: Any, mask: Any) -> int:
        raise KeyError("no")

    with pytest.raises(
        PolicyError, match=r"^policy 'broken': act raised KeyError: 'no' \(HarnessPlanning-v0 task "
    ):
        scoring.evaluate_policy(broken, ENV, seeds=(0,), rollouts=1, base=False)


class MasksOnceOrNever:
    """Takes one masked action (REVISE before any draft) at the first step of about half the episodes
    (by the episode's own generator), then the first legal action."""

    name = "masks-once"

    def reset(self) -> None:
        self.t = 0

    def act(self, obs: Any, mask: Any, rng: Any) -> int:
        self.t += 1
        if self.t == 1 and rng.random() < 0.5:
            assert not mask[5]
            return 5
        return first_legal(obs, mask)


def test_masked_actions_and_the_episodes_with_one_are_counted() -> None:
    score = scoring.evaluate_policy(MasksOnceOrNever(), ENV, seeds=(0,), rollouts=1, base=False)
    assert 1 < score.masked_episodes < 20 and score.masked_actions == score.masked_episodes


def test_the_score_records_the_profile_and_layout_it_was_played_on() -> None:
    score = scoring.evaluate_policy(
        first_legal, ENV, seeds=(0,), rollouts=1, base=False, executor_profile="weak", obs_layout="v2"
    )
    assert score.simulator == results.simulator(None, "weak", "v2")
    assert (
        score.simulator["profile"] != results.simulator()["profile"] and score.simulator["obs_layout"] == "v2"
    )


def test_a_checkpointed_evaluation_keeps_the_policy_and_base_apart(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(scoring, "_BASE_RUNS", {})  # Base played here, not recalled from an earlier test
    scoring.evaluate_policy(first_legal, ENV, seeds=(0,), rollouts=1, checkpoint=tmp_path / "ck")
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["base", "policy"]
    assert len(list((tmp_path / "ck" / "policy").glob("*.json"))) == 20 + 1  # the episodes and the manifest


class FirstLegal:
    """The first legal action, as an object without a name of its own."""

    def act(self, obs: Any, mask: Any, rng: Any) -> int:
        return first_legal(obs, mask)


@pytest.mark.parametrize("per_seed", [False, True])
def test_a_resume_under_another_fingerprint_is_refused_and_episodes_carry_the_name(
    tmp_path, per_seed
) -> None:
    """Decision: a checkpointed evaluation resumes only for the same model (its fingerprint), whether one
    policy plays every seed or one policy per seed; every episode is recorded under the policy's name."""
    from harness_gym.evaluation.engine import ResumeError

    played = [FirstLegal()] if per_seed else FirstLegal()
    records: list[dict[str, Any]] = []
    kwargs = {"seeds": (0,), "rollouts": 1, "base": False, "checkpoint": tmp_path / "ck", "name": "mine"}
    scoring.evaluate_policy(played, ENV, fingerprint="a", on_episode=records.append, **kwargs)
    assert len(records) == 20 and {r["policy"] for r in records} == {"mine"}
    with pytest.raises(ResumeError, match="different settings"):
        scoring.evaluate_policy(played, ENV, fingerprint="b", **kwargs)


def test_the_env_keywords_and_split_reach_every_episode() -> None:
    """The profile changes what the expert's episodes score; the split decides which tasks are played."""
    from harness_gym.core.task import select
    from harness_gym.envs.registry import env_class
    from harness_gym.policies.scripted import make_policy

    expert = make_policy("expert", ENV)
    weak, strong = (
        scoring.evaluate_policy(expert, ENV, seeds=(0,), rollouts=1, base=False, executor_profile=profile).G
        for profile in ("weak", "strong")
    )
    assert weak < strong
    records: list[dict[str, Any]] = []
    scoring.evaluate_policy(FirstLegal(), ENV, seeds=(0,), rollouts=1, base=False, split="validation",
                            on_episode=records.append)  # fmt: skip
    validation = {task.task_id for task in select(env_class(ENV).domain_cls().tasks(), "validation")}
    assert records and {r["task_id"] for r in records} == validation


def test_base_is_played_once_per_settings_and_a_base_policy_is_its_own_base(monkeypatch) -> None:
    """Decision: Base plays the same episodes beside the policy; a second evaluation under the same
    settings reuses that run (the memo), one under other settings plays its own; evaluating Base itself
    (one policy for every seed) pairs it with its own episodes, played once."""
    from harness_gym.policies.scripted import BasePolicy

    monkeypatch.setattr(scoring, "_BASE_RUNS", {})
    played: list[str] = []
    run = {"seeds": (0,), "rollouts": 1, "on_episode": lambda record: played.append(record["policy"])}
    first = scoring.evaluate_policy(FirstLegal(), ENV, name="mine", **run)
    assert played.count("base") == 20 and played.count("mine") == 20
    assert [r.policy for r in first.base_episodes] == ["base"] * 20
    assert [(r.task_id, r.seed, r.rollout) for r in first.base_episodes] == [
        (r.task_id, r.seed, r.rollout) for r in first.episodes
    ]
    assert first.base_G == pytest.approx(sum(r.G for r in first.base_episodes) / 20)
    assert first.delta_hms is not None and first.p_value is not None
    played.clear()
    again = scoring.evaluate_policy(FirstLegal(), ENV, name="mine", **run)
    assert played.count("base") == 0 and again.base_episodes == first.base_episodes
    scoring.evaluate_policy(FirstLegal(), ENV, name="mine", executor_profile="weak", **run)
    assert played.count("base") == 20
    played.clear()
    scoring.evaluate_policy(FirstLegal(), ENV, name="mine", split="validation", **run)  # other tasks
    assert played.count("base") == played.count("mine") > 0
    played.clear()
    scoring.evaluate_policy(FirstLegal(), ENV, name="mine", **(run | {"rollouts": 2}))  # other episodes
    assert played.count("base") == 40
    played.clear()
    itself = scoring.evaluate_policy(BasePolicy(ENV), ENV, executor_profile="strong", **run)
    assert played == ["base"] * 20 and itself.base_episodes == itself.episodes
    assert itself.delta_G.estimate == 0.0


def test_the_score_interval_resamples_episodes_unless_some_are_copies_then_whole_tasks() -> None:
    """Decision: normalised on the layout's reference scores; over episodes while every episode is its own
    (the simulated executor: no trace), over whole tasks when chat-LLM episodes repeat another of their
    task call for call (copies are not independent draws)."""
    from harness_gym.evaluation.protocol import clustered_mean_ci, mean_ci
    from harness_gym.evaluation.reference_scores import normalized_score

    gs = (0.2, 0.9, 0.5, 0.7, 0.05, 0.33, 0.61, 0.48, 0.99, 0.12, 0.27, 0.8)  # enough for the seed to show
    tasks = "aabbccddeeff"
    own = [SimpleNamespace(task_id=t, trace=None, G=g) for t, g in zip(tasks, gs, strict=True)]
    v2_scores = [normalized_score(ENV, g, "v2") for g in gs]
    assert scoring._score_interval(ENV, own, "v2") == (mean_ci(np.asarray(v2_scores), rng=0), "episodes")
    assert scoring._score_interval(ENV, own, "v2")[0] != mean_ci(np.asarray(v2_scores), rng=1)
    copies = [SimpleNamespace(task_id=t, trace="same", G=g) for t, g in zip(tasks, gs, strict=True)]
    expected = clustered_mean_ci(np.asarray(v2_scores), list(tasks), rng=0)
    assert scoring._score_interval(ENV, copies, "v2") == (expected, "tasks")


def test_a_v2_score_is_normalised_on_v2_and_without_base_has_no_comparison() -> None:
    from harness_gym.evaluation.reference_scores import normalized_score

    score = scoring.evaluate_policy(FirstLegal(), ENV, seeds=(0,), rollouts=1, base=False, obs_layout="v2")
    mean_g = float(np.mean([r.G for r in score.episodes]))
    assert score.seed_scores == {0: pytest.approx(normalized_score(ENV, mean_g, "v2"))}
    assert score.score == scoring._score_interval(ENV, score.episodes, "v2")[0]
    assert score.score_unit == "episodes"
    assert (score.base_G, score.delta_G, score.p_value, score.delta_hms, score.act) == (None,) * 5


def test_the_score_says_how_it_acted_and_what_its_interval_resamples() -> None:
    """``act`` is the one mode every seed's policy played, None where they differ; the interval's unit is
    whole tasks when chat-LLM episodes repeat each other."""
    copies = [
        SimpleNamespace(task_id=t, trace="same", G=g, seed=0, hms_norm=0.0)
        for t, g in zip("aabb", (0.2, 0.4, 0.6, 0.9), strict=True)
    ]
    record = results.simulator()
    mixed = scoring._score("m", ENV, "eval", (0,), 2, {"sample", "greedy"}, True, copies, None, record)
    single = scoring._score("m", ENV, "eval", (0,), 2, {"greedy"}, True, copies, None, record)
    assert (mixed.act, single.act) == (None, "greedy")
    assert mixed.score_unit == "tasks"
