"""baselines.legal against hand-built inputs: the mask columns, an all-illegal row, the masked softmax,
the scaler refusal, the masked dataset's rows and episode ends, and the mixins' acting and accessors."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import require

from harness_gym.core.actions import N_ACTIONS, Action

require("d3rlpy")

import torch
from test_offline_mdp import DONE, S0, S1, _episode
from torch.distributions import Categorical

from baselines.legal import (
    ILLEGAL_LOGIT,
    LegalPolicyImpl,
    MaskedTraining,
    check_mask_input,
    legal_categorical,
    legal_mask,
    masked_dataset,
    raw_logits,
    split_mask,
)
from harness_gym.core.state import with_mask
from harness_gym.datasets.d3rlpy_bridge import episodes_to_d3rlpy


def _input(features: list[list[float]], masks: list[list[float]]) -> torch.Tensor:
    return torch.tensor([f + m for f, m in zip(features, masks, strict=True)], dtype=torch.float32)


def test_split_mask_takes_the_last_n_actions_columns_and_thresholds_at_one_half() -> None:
    """The trailing N_ACTIONS columns are the mask, read as > 0.5 (0.5 itself is illegal); the rest are
    the state features, unchanged."""
    mask = [1.0, 0.0, 0.5, 0.51, 0.49, 1.0, 0.0]
    assert len(mask) == N_ACTIONS
    features, legal = split_mask(_input([[3.0, -1.0]], [mask]))
    assert features.tolist() == [[3.0, -1.0]]
    assert legal.tolist() == [[True, False, False, True, False, True, False]]


def test_legal_mask_keeps_a_row_and_opens_an_all_illegal_row() -> None:
    """A row with a legal action keeps its mask; a row with none (d3rlpy's terminal next observation)
    counts as all legal, row by row."""
    one = [0.0] * N_ACTIONS
    one[2] = 1.0
    x = _input([[0.0], [0.0]], [one, [0.0] * N_ACTIONS])
    assert legal_mask(x).tolist() == [[i == 2 for i in range(N_ACTIONS)], [True] * N_ACTIONS]


def test_legal_categorical_gives_illegal_actions_zero_probability() -> None:
    """The softmax runs over the legal actions only: illegal ones get the finite ILLEGAL_LOGIT."""
    logits = torch.tensor([[0.0, 5.0, 0.0] + [0.0] * (N_ACTIONS - 3)])
    mask = torch.zeros(1, N_ACTIONS, dtype=torch.bool)
    mask[0, 0] = mask[0, 2] = True
    dist = legal_categorical(logits, mask)
    probs = dist.probs[0].tolist()
    assert probs[0] == pytest.approx(0.5) and probs[2] == pytest.approx(0.5)
    assert sum(probs[i] for i in range(N_ACTIONS) if i not in (0, 2)) == 0.0
    assert dist.logits[0, 1] - dist.logits[0, 0] == pytest.approx(ILLEGAL_LOGIT)
    assert ILLEGAL_LOGIT == -1e9 and np.isfinite(ILLEGAL_LOGIT)


def test_raw_logits_are_the_output_layer_before_any_softmax() -> None:
    """raw_logits applies the policy's encoder, then its output layer, nothing else."""
    policy = SimpleNamespace(_encoder=lambda x: x * 2.0, _fc=lambda h: h + 1.0)
    assert raw_logits(policy, torch.tensor([[1.0, -3.0]])).tolist() == [[3.0, -5.0]]


def test_check_mask_input_refuses_only_a_scaler_on_a_masked_config() -> None:
    """masked=True with an observation scaler is refused (naming the config); either alone passes, and a
    config without the attributes passes."""
    scaler = object()
    why = r"^SimpleNamespace: masked=True .*; drop observation_scaler or set masked=False$"
    with pytest.raises(ValueError, match=why):
        check_mask_input(SimpleNamespace(masked=True, observation_scaler=scaler))
    check_mask_input(SimpleNamespace(masked=False, observation_scaler=scaler))
    check_mask_input(SimpleNamespace(masked=True, observation_scaler=None))
    check_mask_input(SimpleNamespace(observation_scaler=scaler))
    check_mask_input(SimpleNamespace(masked=True))


def _data():
    """Three episodes, every action legal: DRAFT, CHECK (terminated, G = 1); DRAFT, REVISE (timed out,
    G = 0.5); CHECK (terminated, G = 0). No SUBMIT is logged, so the action count is not the largest
    logged action + 1."""
    legal = np.ones(N_ACTIONS, dtype=bool)
    timed_out = _episode([S0, S1, DONE], [legal] * 3, [Action.DRAFT, Action.REVISE], 0.5)
    timed_out = dataclasses.replace(timed_out, terminations=np.zeros(2, bool), truncations=np.arange(2) == 1)
    return episodes_to_d3rlpy(
        [
            _episode([S0, S1, DONE], [legal] * 3, [Action.DRAFT, Action.CHECK], 1.0),
            timed_out,
            _episode([S0, DONE], [legal] * 2, [Action.CHECK], 0.0),
        ]
    )


def test_masked_dataset_appends_the_masks_and_keeps_actions_rewards_and_ends() -> None:
    """Observations gain the step's mask as trailing columns; actions, rewards, the episode ends
    (terminated or timed out) and the action count are the source's."""
    data = _data()
    masks = data.action_masks.copy()
    masks[1, Action.OBSERVE] = masks[4, Action.SUBMIT] = False
    out = masked_dataset(dataclasses.replace(data, action_masks=masks))
    assert [int(e.size()) for e in out.episodes] == [2, 2, 1]
    obs = np.concatenate([e.observations for e in out.episodes])
    np.testing.assert_array_equal(obs, with_mask(np.stack([S0, S1, S0, S1, S0]), masks))
    assert obs.dtype == np.float32
    assert np.concatenate([e.actions for e in out.episodes]).reshape(-1).tolist() == [
        Action.DRAFT,
        Action.CHECK,
        Action.DRAFT,
        Action.REVISE,
        Action.CHECK,
    ]
    assert np.concatenate([e.rewards for e in out.episodes]).reshape(-1).tolist() == [0.0, 1.0, 0.0, 0.5, 0.0]
    assert [e.terminated for e in out.episodes] == [True, False, True]
    assert {e.rewards.dtype for e in out.episodes} == {np.dtype(np.float32)}  # d3rlpy keeps what it is given
    assert out.dataset_info.action_size == data.dataset.dataset_info.action_size == N_ACTIONS
    assert out.dataset_info.action_space == data.dataset.dataset_info.action_space


def test_masked_dataset_refuses_side_arrays_of_another_length() -> None:
    """Side arrays that do not match the dataset's step count are refused, naming both counts."""
    data = _data()
    with pytest.raises(ValueError, match="dataset holds 5 steps, side arrays 4"):
        masked_dataset(dataclasses.replace(data, action_masks=data.action_masks[:4]))


def test_masked_dataset_names_the_first_illegal_logged_action() -> None:
    """Every logged action must be legal: the error counts the illegal ones and names the first row."""
    data = _data()
    masks = data.action_masks.copy()
    masks[1] = np.arange(N_ACTIONS) == Action.SUBMIT  # row 1 logs CHECK
    masks[3] = np.arange(N_ACTIONS) == Action.DRAFT  # row 3 logs REVISE
    why = r"^2 logged actions are illegal under their masks \(first at row 1\)$"
    with pytest.raises(ValueError, match=why):
        masked_dataset(dataclasses.replace(data, action_masks=masks))


class _PolicyImpl(LegalPolicyImpl):
    """An impl as the mixin sees it: a policy module with fixed logits, an optimizer wrapper, a config."""

    def __init__(self, masked: bool, field: str = "policy_optim") -> None:
        logits = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])
        self.POLICY_OPTIM = field
        self._modules = SimpleNamespace(
            policy=lambda x: Categorical(logits=logits.expand(len(x), -1)),
            **{field: SimpleNamespace(optim="adam")},
        )
        self._config = SimpleNamespace(masked=masked)


def test_legal_policy_impl_acts_over_the_legal_actions_only_when_masked() -> None:
    """The policy prefers the last action; the mask allows OBSERVE and DRAFT in row 0, CHECK in row 1."""
    masks = [[0.0] * N_ACTIONS, [0.0] * N_ACTIONS]
    masks[0][Action.OBSERVE] = masks[0][Action.DRAFT] = masks[1][Action.CHECK] = 1.0
    x = _input([[0.5, 0.5], [0.5, 0.5]], masks)
    assert _PolicyImpl(masked=True).inner_predict_best_action(x).tolist() == [
        max(Action.OBSERVE, Action.DRAFT),
        Action.CHECK,
    ]
    torch.manual_seed(0)
    drawn = torch.stack([_PolicyImpl(masked=True).inner_sample_action(x) for _ in range(200)])
    assert set(drawn[:, 0].tolist()) == {Action.OBSERVE, Action.DRAFT} and set(drawn[:, 1].tolist()) == {
        Action.CHECK
    }
    assert _PolicyImpl(masked=False).inner_predict_best_action(x).tolist() == [N_ACTIONS - 1] * 2


def test_legal_policy_impl_gives_d3rlpy_the_policy_and_its_optimizer() -> None:
    """``policy`` and ``policy_optim`` (d3rlpy's copy_policy_from / copy_policy_optim_from read them) are
    the impl's modules, the optimizer under the field the impl names (AWR's is ``optim``)."""
    for field in ("policy_optim", "optim"):
        impl = _PolicyImpl(masked=True, field=field)
        assert impl.policy is impl._modules.policy
        assert impl.policy_optim == "adam"


def test_masked_training_appends_the_masks_only_when_masked() -> None:
    data = _data()
    masked = MaskedTraining()
    masked._config = SimpleNamespace(masked=True)
    width = data.dataset.episodes[0].observations.shape[1]
    assert masked.training_dataset(data).episodes[0].observations.shape[1] == width + N_ACTIONS
    masked._config = SimpleNamespace(masked=False)
    assert masked.training_dataset(data) is data.dataset
