"""Masked discrete SAC and BCQ (``baselines.sac``, ``baselines.bcq``): the d3rlpy save / load round trip,
scoring by ``MaskedPolicy``, the per-state entropy target, and config checks. Their training behaviour
(no probability and no gradient on illegal actions) is tested in ``test_offline_mdp``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import require

require("d3rlpy")

import d3rlpy
import torch
from d3rlpy.models.torch.parameters import get_parameter
from test_offline_mdp import M1, S1, _all_transitions, _final_bias, d3rlpy_original, two_step_data

import baselines  # noqa: F401  (registers the learnables, as a user of load_learnable would)
from baselines.bcq import MaskedDiscreteBCQ, MaskedDiscreteBCQConfig
from baselines.budgets import Schedule
from baselines.legal import masked_dataset, with_mask
from baselines.sac import ENTROPY_FRACTION, MaskedDiscreteSAC, MaskedDiscreteSACConfig
from baselines.train import make_config, train
from harness_gym.core.actions import N_ACTIONS, Action
from harness_gym.core.state import N_FEATURES
from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy
from harness_gym.evaluation.model_files import Provenance, load_model, save_model

MASKED = {"sac": MaskedDiscreteSAC, "bcq": MaskedDiscreteBCQ}


def _random_states(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n random 4-feature observations and random masks, each allowing at least one action."""
    rng = np.random.default_rng(seed)
    masks = rng.random((n, N_ACTIONS)) < 0.4
    masks[np.arange(n), rng.integers(0, N_ACTIONS, n)] = True
    return rng.random((n, 4), dtype=np.float32), masks


@pytest.mark.parametrize("algo", ("sac", "bcq"))
def test_save_and_load_round_trip(tmp_path, algo: str) -> None:
    cfg = make_config(algo, Schedule(hidden_units=8, batch_size=32))
    model = train(algo, two_step_data(20), seed=0, n_steps=20, config=cfg)
    path = tmp_path / f"{algo}.d3"
    model.save(str(path))
    loaded = d3rlpy.load_learnable(str(path))
    assert isinstance(loaded, MASKED[algo]) and type(loaded.impl) is type(model.impl)
    assert loaded.config.masked and loaded.config.gamma == cfg.gamma
    obs, masks = _random_states(16)
    x = with_mask(obs, masks)
    np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    assert masks[np.arange(16), loaded.predict(x)].all()
    actions = np.zeros(16, dtype=int)
    np.testing.assert_allclose(loaded.predict_value(x, actions), model.predict_value(x, actions))
    sample = algo == "sac"
    p_loaded = MaskedPolicy(loaded, algo, sample=sample).action_probs(S1, M1)
    np.testing.assert_allclose(p_loaded, MaskedPolicy(model, algo, sample=sample).action_probs(S1, M1))
    assert not p_loaded[M1 == 0].any()


@pytest.mark.parametrize("algo", ("sac", "bcq"))
def test_load_model_takes_the_mask_columns(tmp_path, algo: str) -> None:
    learner = make_config(algo, Schedule(hidden_units=8)).create(device=False)
    learner.create_impl((N_FEATURES + N_ACTIONS,), N_ACTIONS)
    path = tmp_path / f"{algo}.d3"
    save_model(learner, path, Provenance("HarnessPlanning-v0", "harness/planning/mixed-v0", algo, 0))
    loaded, overridden = load_model(path, "HarnessPlanning-v0")
    assert isinstance(loaded, MASKED[algo]) and not overridden


@pytest.mark.parametrize("algo", ("sac", "bcq"))
def test_masked_policy_acts_as_the_learner_predicts(algo: str) -> None:
    """``MaskedPolicy``'s greedy action is the learner's own (masked) ``predict``, on any mask."""
    model = train(algo, two_step_data(20), seed=1, n_steps=30)
    policy = MaskedPolicy(model, algo)
    obs, masks = _random_states(64, seed=1)
    predicted = model.predict(with_mask(obs, masks))
    rng = np.random.default_rng(0)
    acted = [policy.act(o, m.astype(np.int8), rng) for o, m in zip(obs, masks, strict=True)]
    np.testing.assert_array_equal(acted, predicted)


def test_entropy_target_counts_the_legal_actions() -> None:
    """A policy uniform over DRAFT, CHECK and SUBMIT is uniform over the two legal actions of s0 and
    s1: its entropy log 2 exceeds 0.98 log 2, so masked SAC lowers the temperature. d3rlpy's target,
    0.98 log 7, exceeds the log 3 its own (unmasked) policy has there, so it raises it."""
    temps = {}
    for masked, cfg in ((True, make_config("sac")), (False, d3rlpy_original("sac"))):
        learner = cfg.create(device=False)
        batch = _all_transitions(learner, two_step_data(20))
        policy = learner.impl.modules.policy
        with torch.no_grad():
            for name, p in policy.named_parameters():
                if name.endswith("_fc.weight"):
                    p.zero_()
            bias = _final_bias(policy)
            bias.fill_(-30.0)
            bias[[Action.DRAFT, Action.CHECK, Action.SUBMIT]] = 0.0
        before = float(get_parameter(learner.impl.modules.log_temp).detach().exp())
        temps[masked] = float(learner.impl.compute_actor_loss(batch)["temp"].detach()) / before
    assert temps[True] < 1.0 < temps[False], temps
    assert ENTROPY_FRACTION * np.log(2) < np.log(2) < ENTROPY_FRACTION * np.log(N_ACTIONS)


def test_masked_false_is_d3rlpys_own_implementation() -> None:
    from d3rlpy.algos.qlearning.torch.bcq_impl import DiscreteBCQImpl
    from d3rlpy.algos.qlearning.torch.sac_impl import DiscreteSACImpl

    for cfg, impl in ((MaskedDiscreteSACConfig(masked=False), DiscreteSACImpl),
                      (MaskedDiscreteBCQConfig(masked=False), DiscreteBCQImpl)):  # fmt: skip
        learner = cfg.create(device=False)
        learner.create_impl((4,), N_ACTIONS)
        assert type(learner.impl) is impl


def test_config_rejects_what_masking_cannot_work_with() -> None:
    for config in (MaskedDiscreteSACConfig, MaskedDiscreteBCQConfig):
        with pytest.raises(ValueError, match="observation_scaler"):
            config(observation_scaler=d3rlpy.preprocessing.StandardObservationScaler())
        config(observation_scaler=d3rlpy.preprocessing.StandardObservationScaler(), masked=False)
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError, match="action_flexibility"):
            MaskedDiscreteBCQConfig(action_flexibility=bad)


def test_masked_dataset_refuses_an_illegal_logged_action() -> None:
    data = two_step_data(10)
    assert masked_dataset(data).transition_count == data.dataset.transition_count
    masks = data.action_masks.copy()
    assert data.dataset.episodes[0].actions[0] == Action.SUBMIT
    masks[0] = np.arange(N_ACTIONS) == Action.DRAFT  # row 0 logs SUBMIT; this mask allows DRAFT only
    with pytest.raises(ValueError, match="1 logged actions are illegal under their masks"):
        masked_dataset(dataclasses.replace(data, action_masks=masks))


@pytest.mark.parametrize("algo", ("sac", "bcq"))
def test_the_masked_impl_is_compiled_exactly_when_d3rlpys_own_is(monkeypatch, algo: str) -> None:
    """The masked impl rebuilt on d3rlpy's modules keeps d3rlpy's ``compiled`` flag (CUDA graphs where
    d3rlpy would use them); the wrapper is recorded, since this machine has no CUDA to capture a graph."""
    from d3rlpy.algos.qlearning.torch import dqn_impl, sac_impl

    class Wrapped:
        def __init__(self, func, **kwargs) -> None:
            self.func = func

    for module in (sac_impl, dqn_impl):  # where SAC's and BCQ's (DQN's) impls wrap their gradient step
        monkeypatch.setattr(module, "CudaGraphWrapper", Wrapped)
    grad_step = {"sac": "_compute_critic_grad", "bcq": "_compute_grad"}[algo]
    for compiled in (False, True):
        monkeypatch.setattr(MASKED[algo], "compiled", property(lambda self, c=compiled: c))
        learner = make_config(algo, Schedule(hidden_units=8)).create(device=False)
        learner.create_impl((N_FEATURES + N_ACTIONS,), N_ACTIONS)
        assert type(learner.impl) is MASKED[algo].MASKED_IMPL
        assert isinstance(getattr(learner.impl, grad_step), Wrapped) is compiled
