"""The observation vector, feature by feature, against hand-computed values (``core/state.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from harness_gym.core import state as state_module
from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import (
    CHECK_GROUPS,
    COUNT_CAPS,
    DOMAINS,
    FEATURE_INDEX,
    FEATURES,
    FEATURES_V2,
    N_FEATURES,
    TASK_SLOTS,
    TOKENS_SCALE,
    HarnessState,
    HarnessStateV2,
    feature_table,
    with_mask,
)


@pytest.fixture(autouse=True)
def empty_memo(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Each test starts from an empty vector memo, so the vectors it checks are built from its own states
    (not read back from entries an earlier test, or a parent process, left behind)."""
    memo: dict = {}
    monkeypatch.setattr(state_module, "_VECTORS", memo)
    return memo


def as_dict(obs: np.ndarray) -> dict[str, float]:
    assert obs.shape == (N_FEATURES,) and obs.dtype == np.float32
    return {name: float(obs[i]) for i, name in enumerate(FEATURES)}


def expected(core: dict[str, float], last_action: str | None, domain: str) -> dict[str, float]:
    """Every feature: the core values given, one-hot last action and domain, everything else 0."""
    out = dict.fromkeys(FEATURES, 0.0)
    out.update(core)
    if last_action is not None:
        out[f"last_action_{last_action}"] = 1.0
    out[f"domain_{domain}"] = 1.0
    return out


def test_layout_is_the_core_then_the_last_action_then_the_domain():
    assert FEATURES[:16] == (
        "progress",
        "budget_left",
        "has_draft",
        "revisions",
        "observed",
        "evidence",
        "tool_calls",
        "last_tool_ok",
        "checked_draft",
        "check_coverage",
        "check_missing",
        "tested_draft",
        "test_pass_rate",
        "test_failures",
        "errors",
        "unresolved_failure",
    )
    assert FEATURES[16:23] == tuple(f"last_action_{a.name.lower()}" for a in Action)
    assert FEATURES[23:] == tuple(f"domain_{d}" for d in DOMAINS)
    assert N_FEATURES == 16 + N_ACTIONS + len(DOMAINS) == 31
    assert COUNT_CAPS == {"revisions": 4, "evidence": 5, "tool_calls": 5, "test_failures": 5, "errors": 5}


def test_a_fresh_state_observes_only_its_domain_and_the_never_seen_markers():
    obs = as_dict(HarnessState("research", max_steps=10, cost_budget=20.0).vector())
    core = {
        "budget_left": 1.0,
        "last_tool_ok": -1.0,
        "check_coverage": -1.0,
        "check_missing": -1.0,
        "test_pass_rate": -1.0,
    }
    assert obs == expected(core, None, "research")


def test_a_hand_built_trajectory_gives_the_hand_computed_vector():
    # A coding episode after OBSERVE, RETRIEVE x2, DRAFT, CALL_TOOL (tests 3/5 pass), REVISE, CHECK (3 of 4
    # items satisfied), on a budget of 16 cost units with 10 spent, 7 of 12 steps taken, and one error.
    state = HarnessState(
        "coding",
        max_steps=12,
        cost_budget=16.0,
        t=7,
        cost=10.0,
        has_draft=True,
        revisions=1,
        observed=True,
        evidence=2,
        tool_calls=1,
        last_tool_ok=0.0,
        checked_draft=True,
        check_coverage=0.75,
        check_missing=0.25,
        tested_draft=False,
        test_pass_rate=0.6,
        test_failures=2,
        errors=1,
        unresolved_failure=True,
        last_action=int(Action.CHECK),
    )
    core = {
        "progress": 7 / 12,
        "budget_left": 1 - 10 / 16,  # 0.375
        "has_draft": 1.0,
        "revisions": 1 / 4,
        "observed": 1.0,
        "evidence": 2 / 5,
        "tool_calls": 1 / 5,
        "last_tool_ok": 0.0,
        "checked_draft": 1.0,
        "check_coverage": 0.75,
        "check_missing": 0.25,
        "tested_draft": 0.0,
        "test_pass_rate": 0.6,
        "test_failures": 2 / 5,
        "errors": 1 / 5,
        "unresolved_failure": 1.0,
    }
    want = expected(core, "check", "coding")
    got = as_dict(state.vector())
    assert list(got) == list(want)
    assert list(got.values()) == pytest.approx(list(want.values()), abs=1e-7)


def test_counts_saturate_at_their_caps_and_the_budget_clips_at_zero():
    state = HarnessState(
        "dbbench",
        max_steps=4,
        cost_budget=5.0,
        t=4,
        cost=7.5,  # over budget: 1 - 7.5 / 5 = -0.5, clipped to 0
        revisions=9,
        evidence=5,
        tool_calls=6,
        test_failures=11,
        errors=5,
        last_tool_ok=1.0,
        tested_draft=True,
        test_pass_rate=1.0,
        last_action=int(Action.SUBMIT),
    )
    got = as_dict(state.vector())
    assert got["progress"] == 1.0
    assert got["budget_left"] == 0.0
    for name in ("revisions", "evidence", "tool_calls", "test_failures", "errors"):
        assert got[name] == 1.0, name
    assert got["last_action_submit"] == 1.0 and got["domain_dbbench"] == 1.0
    assert sum(got[f"last_action_{a.name.lower()}"] for a in Action) == 1.0
    assert sum(got[f"domain_{d}"] for d in DOMAINS) == 1.0
    # one below each cap is not saturated
    below = HarnessState("dbbench", 4, 5.0, revisions=3, evidence=4, tool_calls=4, test_failures=4, errors=4)
    got = as_dict(below.vector())
    assert [
        got[n] for n in ("revisions", "evidence", "tool_calls", "test_failures", "errors")
    ] == pytest.approx([3 / 4, 4 / 5, 4 / 5, 4 / 5, 4 / 5])


@pytest.mark.parametrize(("cost", "left"), [(0.0, 1.0), (2.5, 0.5), (5.0, 0.0), (5.5, 0.0)])
def test_budget_left_at_its_boundaries(cost: float, left: float):
    assert HarnessState("planning", 10, 5.0, cost=cost).vector()[FEATURE_INDEX["budget_left"]] == left


@pytest.mark.parametrize("action", list(Action))
def test_each_last_action_sets_its_own_index(action: Action):
    obs = HarnessState("tau_retail", 10, 5.0, last_action=int(action)).vector()
    ones = {FEATURES[i] for i in np.flatnonzero(obs == 1.0)}
    assert ones == {f"last_action_{action.name.lower()}", "domain_tau_retail", "budget_left"}


@pytest.mark.parametrize("domain", DOMAINS)
def test_each_domain_sets_its_own_index(domain: str):
    obs = HarnessState(domain, 10, 5.0).vector()
    assert not obs[16 : 16 + N_ACTIONS].any()  # no action yet
    assert obs[FEATURE_INDEX[f"domain_{domain}"]] == 1.0
    assert obs[FEATURE_INDEX["domain_knowledge_work"] :].sum() == 1.0


def test_unknown_domain_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^unknown domain 'chess'; expected one of \('knowledge_work', "):
        HarnessState("chess", 10, 5.0)


def test_feature_table_lists_every_index_in_order():
    lines = feature_table().splitlines()
    assert lines[:2] == ["| index | feature | meaning |", "|---|---|---|"]
    assert len(lines) == 2 + N_FEATURES
    assert lines[2] == "| 0 | `progress` | steps taken / max_steps |"
    assert lines[2 + 16] == "| 16 | `last_action_observe` | 1 if the previous action was OBSERVE |"
    assert lines[-1] == "| 30 | `domain_dbbench` | 1 in the dbbench environment |"


def test_with_mask_appends_the_mask_as_zero_one_floats():
    obs = np.arange(2 * N_FEATURES, dtype=np.float64).reshape(2, N_FEATURES)
    masks = np.array([[1, 0, 0, 0, 0, 0, 2], [1, 1, 1, 1, 1, 1, 1]])
    out = with_mask(obs, masks)
    assert out.dtype == np.float32 and out.shape == (2, N_FEATURES + N_ACTIONS)
    assert out[:, :N_FEATURES].tolist() == obs.tolist()
    assert out[:, N_FEATURES:].tolist() == [[1, 0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 1, 1, 1]]


def test_with_mask_refuses_bad_shapes_and_empty_rows():
    obs = np.zeros((2, N_FEATURES))
    with pytest.raises(ValueError, match=r"^need \(N, F\) observations"):
        with_mask(obs, np.ones((3, N_ACTIONS)))
    with pytest.raises(ValueError, match=r"^need \(N, F\) observations"):
        with_mask(obs[0], np.ones((1, N_ACTIONS)))
    with pytest.raises(ValueError, match=r"^every mask row must allow at least one action$"):
        with_mask(obs, np.array([[1] * N_ACTIONS, [0] * N_ACTIONS]))


# -- the vector memo ---------------------------------------------------------------------------
def test_each_distinct_state_is_filled_once_and_each_call_returns_a_new_array(monkeypatch, empty_memo):
    fills: list[str] = []
    fill = HarnessState._fill

    def counting_fill(self: HarnessState) -> np.ndarray:
        fills.append(self.domain)
        return fill(self)

    monkeypatch.setattr(HarnessState, "_fill", counting_fill)
    first = HarnessState("coding", 10, 5.0, t=3).vector()
    first[:] = 9.0  # the caller owns its array: writing to it changes no later vector
    again = HarnessState("coding", 10, 5.0, t=3).vector()  # an equal state: read from the memo
    assert fills == ["coding"] and len(empty_memo) == 1
    assert again[FEATURE_INDEX["progress"]] == pytest.approx(0.3)
    assert again[FEATURE_INDEX["domain_coding"]] == 1.0
    HarnessState("coding", 10, 5.0, t=4).vector()  # one field differs: a new entry
    assert fills == ["coding", "coding"] and len(empty_memo) == 2


def test_a_full_memo_is_cleared_before_the_next_entry_and_vectors_stay_correct(monkeypatch, empty_memo):
    monkeypatch.setattr(state_module, "_VECTORS_LIMIT", 2)
    states = [HarnessState("planning", 10, 5.0, t=t) for t in range(5)]
    sizes = []
    for s in states:
        assert s.vector()[FEATURE_INDEX["progress"]] == pytest.approx(s.t / 10)
        sizes.append(len(empty_memo))
    # 1, 2, then full (2 = the limit): cleared before the third entry is added, and so on
    assert sizes == [1, 2, 1, 2, 1]
    for s in states:  # entries dropped by a clear are rebuilt, equal to before
        assert s.vector()[FEATURE_INDEX["progress"]] == pytest.approx(s.t / 10)


# -- layout v2 -------------------------------------------------------------------------------------------
V2 = {name: i for i, name in enumerate(FEATURES_V2)}


def test_a_v2_vector_is_the_v1_vector_then_the_task_the_checks_and_the_tokens():
    task = tuple(0.1 * (i + 1) for i in range(1 + TASK_SLOTS))  # prompt_length, then the slots
    checks = tuple(float(i % 2) for i in range(len(CHECK_GROUPS)))
    v2 = HarnessStateV2(
        "coding",
        10,
        5.0,
        t=3,
        has_draft=True,
        task=task,
        check_failed=checks,
        tokens=TOKENS_SCALE // 4,
        token_budget=8 * TOKENS_SCALE,
    )
    v1 = HarnessState("coding", 10, 5.0, t=3, has_draft=True).vector()
    obs = v2.vector()
    assert obs.shape == (len(FEATURES_V2),) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs[:N_FEATURES], v1)
    expected = np.array((*task, *checks, 0.25, 1.0 - 1 / 32), dtype=np.float32)
    np.testing.assert_array_equal(obs[N_FEATURES:], expected)


def test_a_fresh_v2_state_shows_no_check_no_tokens_and_no_budget():
    obs = HarnessStateV2("planning", 10, 5.0).vector()
    assert obs[V2["tokens_spent"]] == 0.0 and obs[V2["tokens_left"]] == -1.0
    assert all(obs[V2[name]] == -1.0 for name in FEATURES_V2 if name.startswith("check_failed_"))
    assert obs[V2["prompt_length"]] == 0.0


@pytest.mark.parametrize(
    ("tokens", "budget", "spent", "left"),
    [
        (0, 100, 0.0, 1.0),
        (25, 100, 25 / TOKENS_SCALE, 0.75),
        (100, 100, 100 / TOKENS_SCALE, 0.0),
        (150, 100, 150 / TOKENS_SCALE, 0.0),  # past the budget: clipped at 0
        (2 * TOKENS_SCALE, None, 1.0, -1.0),  # past the scale: capped at 1
    ],
)
def test_tokens_spent_are_capped_and_tokens_left_clipped(tokens, budget, spent, left):
    obs = HarnessStateV2("coding", 10, 5.0, tokens=tokens, token_budget=budget).vector()
    assert obs[V2["tokens_spent"]] == pytest.approx(spent) and obs[V2["tokens_left"]] == pytest.approx(left)


def test_v2_vectors_share_the_memo_and_each_call_returns_a_new_array(monkeypatch, empty_memo):
    monkeypatch.setattr(state_module, "_VECTORS_LIMIT", 2)
    fills: list[int] = []
    fill = HarnessStateV2._fill_v2

    def counting_fill(self: HarnessStateV2) -> np.ndarray:
        fills.append(self.tokens)
        return fill(self)

    monkeypatch.setattr(HarnessStateV2, "_fill_v2", counting_fill)
    first = HarnessStateV2("coding", 10, 5.0, tokens=7).vector()
    first[:] = 9.0
    again = HarnessStateV2("coding", 10, 5.0, tokens=7).vector()
    assert len(empty_memo) == 1 and again[V2["tokens_spent"]] == pytest.approx(7 / TOKENS_SCALE)
    assert fills == [7]  # an equal state: read from the memo
    HarnessStateV2("coding", 10, 5.0, tokens=8).vector()
    assert len(empty_memo) == 2
    assert HarnessStateV2("coding", 10, 5.0, tokens=9).vector()[V2["tokens_spent"]] == pytest.approx(
        9 / TOKENS_SCALE
    )
    assert len(empty_memo) == 1  # full: cleared before the third entry
