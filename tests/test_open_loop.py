"""The open-loop reference, the state-dependence gap and CHECK's measured rates in the headroom table."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from harness_gym.core.actions import Action
from harness_gym.evaluation.headroom import (
    Protocol,
    check_rates,
    headroom_markdown,
    paired_gap,
    summarize_setting,
)
from harness_gym.evaluation.open_loop import play_string
from harness_gym.evaluation.rollout import run_episode
from harness_gym.policies.open_loop import OpenLoopPolicy

PLANNING = "HarnessPlanning-v0"


def test_an_open_loop_policy_plays_its_string_and_submits_when_masked():
    env = gym.make(PLANNING, split="eval")
    final = run_episode(env, OpenLoopPolicy(PLANNING, "ODCVDC"), seed=0)
    names = [step["action"] for step in final["trajectory"]["steps"]]
    # the second DRAFT is masked (a draft exists), so the policy submits there
    assert names == ["OBSERVE", "DRAFT", "CHECK", "REVISE", "SUBMIT"]
    tight = play_string(env.unwrapped, "ODCV", [(0, env.unwrapped.tasks[0].task_id, 0, 0)])
    again = run_episode(env, OpenLoopPolicy(PLANNING, "ODCV"), seed=0, task_id=env.unwrapped.tasks[0].task_id)
    assert tight[0] == pytest.approx(again["G"])


def test_bad_strings_and_unshipped_settings_are_named():
    with pytest.raises(ValueError, match="unknown letters"):
        OpenLoopPolicy(PLANNING, "ODX")
    with pytest.raises(ValueError, match="no open-loop string shipped for 'HarnessNowhere-v0'"):
        OpenLoopPolicy("HarnessNowhere-v0")


def test_the_gap_is_a_paired_difference_with_an_interval():
    a, b = np.array([1.0, 0.5, 0.8, 0.2]), np.array([0.5, 0.5, 0.6, 0.2])
    mean, lo, hi = paired_gap(a, b)
    assert mean == pytest.approx(0.175) and lo <= mean <= hi
    records = {
        name: [{"task_id": t, "seed": 0, "rollout": 0, "G": g} for t, g in zip("abcd", gs, strict=True)]
        for name, gs in (("expert", a), ("open-loop", b))
    }
    summary = summarize_setting(records)
    assert summary["state_dependence_gap"][0] == pytest.approx(0.175)
    summary["check_rates"] = {
        kind: {"false_alarm": None, "detection": 0.5, "rubric_perfect_drafts": 0}
        for kind in ("structural", "with_judge")
    }
    table = headroom_markdown({PLANNING: summary})
    assert "| expert | +0.175 [" in table and "it − open-loop" in table and "no rubric-perfect draft" in table


def test_planning_checks_are_a_sound_validator():
    rates = check_rates(PLANNING, Protocol(seeds=(0,), rollouts=1, max_tasks=4))
    assert rates["structural"]["false_alarm"] == 0.0 and rates["structural"]["detection"] == 1.0
    assert Action.CHECK in gym.make(PLANNING).unwrapped.domain.supported


def test_the_search_keeps_the_best_of_its_beam_searches_and_repeats_itself():
    """The shipped string is the best on the full train protocol among the beam searches' results, its
    recorded train G is that string's measured G, and a rerun returns the same (no chance of its own)."""
    from harness_gym.evaluation.open_loop import SEARCHES, search
    from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
    from harness_gym.evaluation.rollout import protocol_episodes

    env = gym.make(PLANNING, split="train").unwrapped
    task_ids = [t.task_id for t in env.tasks[:4]]
    found = search(PLANNING, task_ids=task_ids, max_steps=5)
    assert [(s["beam"]) for s in found["searches"]] == [beam for beam, _ in SEARCHES]
    assert found["train_G"] == max(s["train_G"] for s in found["searches"])
    small = gym.make(PLANNING, split="train", task_ids=task_ids, max_steps=5).unwrapped
    episodes = protocol_episodes(task_ids, EVAL_SEEDS, EVAL_ROLLOUTS)
    assert play_string(small, found["string"], episodes).mean() == pytest.approx(found["train_G"], abs=1e-4)
    assert search(PLANNING, task_ids=task_ids, max_steps=5) == found


def test_open_loop_plays_the_string_of_the_env_layout_and_never_v1s_on_v2(tmp_path, monkeypatch):
    import json

    import harness_gym.policies.open_loop as ol
    from harness_gym.evaluation.open_loop import _write

    path = tmp_path / "open_loop.json"
    _write(path, {PLANNING: {"string": "ODCV"}}, "v1")
    assert "strings" in json.loads(path.read_text())  # v1 alone: the one-table file as shipped before v2
    monkeypatch.setattr(ol, "OPEN_LOOP_FILE", path)
    ol.open_loop_table.cache_clear()
    try:
        v1_env, v2_env = (gym.make(PLANNING, split="eval", obs_layout=layout) for layout in ("v1", "v2"))
        # no v2 string: a clear error, up front when the layout is named, else at the first v2 observation
        with pytest.raises(
            ValueError, match="no open-loop string shipped for 'HarnessPlanning-v0' on obs_layout 'v2'"
        ):
            OpenLoopPolicy(PLANNING, obs_layout="v2")
        with pytest.raises(ValueError, match="on obs_layout 'v2'"):
            run_episode(v2_env, OpenLoopPolicy(PLANNING), seed=0)
        _write(path, {PLANNING: {"string": "OD"}}, "v2")
        ol.open_loop_table.cache_clear()
        assert ol.read_layouts(path)["v1"]["strings"] == {PLANNING: {"string": "ODCV"}}  # kept as it was
        played = {
            name: [s["action"] for s in run_episode(env, policy, seed=0)["trajectory"]["steps"]]
            for name, env, policy in (
                ("v1", v1_env, OpenLoopPolicy(PLANNING)),
                ("v2", v2_env, OpenLoopPolicy(PLANNING, obs_layout="v2")),
                ("v2 by width", v2_env, OpenLoopPolicy(PLANNING)),
            )
        }
        assert played["v1"] == ["OBSERVE", "DRAFT", "CHECK", "REVISE", "SUBMIT"]
        assert played["v2"] == played["v2 by width"] == ["OBSERVE", "DRAFT", "SUBMIT"]
        with pytest.raises(ValueError, match="built for obs_layout 'v2' but is shown a 'v1' observation"):
            run_episode(v1_env, OpenLoopPolicy(PLANNING, obs_layout="v2"), seed=0)
    finally:
        ol.open_loop_table.cache_clear()


def test_a_search_at_a_price_ranks_strings_by_g_net_of_their_tokens_price():
    """Decision: at a token price the open-loop reference is the string with the most G minus the price of
    its tokens (``play_string``'s return), so its recorded train score is that return; at a price where
    tokens dominate, the cheapest string that drafts wins."""
    from harness_gym.evaluation.open_loop import search
    from harness_gym.evaluation.paper import EVAL_ROLLOUTS, EVAL_SEEDS
    from harness_gym.evaluation.rollout import protocol_episodes

    task_ids = [t.task_id for t in gym.make(PLANNING, split="train").unwrapped.tasks[:3]]
    episodes = protocol_episodes(task_ids, EVAL_SEEDS, EVAL_ROLLOUTS)
    for price in (0.05, 10.0):
        found = search(PLANNING, task_ids=task_ids, max_steps=5, token_price=price)
        priced = gym.make(
            PLANNING, split="train", task_ids=task_ids, max_steps=5, token_price=price
        ).unwrapped
        free = gym.make(PLANNING, split="train", task_ids=task_ids, max_steps=5).unwrapped
        net = play_string(priced, found["string"], episodes).mean()
        assert net == pytest.approx(found["train_G"], abs=1e-4)
        assert net < play_string(free, found["string"], episodes).mean()  # the string's tokens were charged
    assert found["string"] == "D"


def test_each_price_has_its_own_table_and_open_loop_plays_that_prices_string(tmp_path, monkeypatch):
    import harness_gym.policies.open_loop as ol
    from harness_gym.evaluation.open_loop import _write

    assert ol.table_key("v2") == "v2" and ol.table_key("v2", 0.05) == "v2/price=0.05"
    with pytest.raises(ValueError, match="unknown observation layout 'v3'"):
        ol.table_key("v3", 0.05)
    path = tmp_path / "open_loop.json"
    _write(path, {PLANNING: {"string": "ODCV"}}, "v1")
    _write(path, {PLANNING: {"string": "OD"}}, "v1", token_price=0.2)
    tables = ol.read_layouts(path)
    assert tables["v1"]["strings"] == {PLANNING: {"string": "ODCV"}}  # the price-0 table is kept
    assert tables["v1/price=0.2"]["search"]["token_price"] == 0.2
    assert tables["v1/price=0.2"]["search"]["command"].endswith("--token-price 0.2")
    monkeypatch.setattr(ol, "OPEN_LOOP_FILE", path)
    ol.open_loop_table.cache_clear()
    try:
        env = gym.make(PLANNING, split="eval", token_price=0.2)
        steps = run_episode(env, OpenLoopPolicy(PLANNING, token_price=0.2), seed=0)["trajectory"]["steps"]
        assert [s["action"] for s in steps] == ["OBSERVE", "DRAFT", "SUBMIT"]
        with pytest.raises(ValueError, match=r"at token_price 0\.05 .*--token-price 0\.05"):
            OpenLoopPolicy(PLANNING, token_price=0.05)
        # the bench's gap at a price is against that price's string, and absent where none was searched
        from harness_gym.bench.runner import GAP_POLICIES, gap_policies, gap_policy_names

        assert (
            gap_policy_names(PLANNING, "v1", 0.2) == GAP_POLICIES
            and gap_policy_names(PLANNING, "v1", 0.05) == ()
        )
        assert gap_policies(PLANNING, "v1", 0.2)["open-loop"].string == "OD"
    finally:
        ol.open_loop_table.cache_clear()
