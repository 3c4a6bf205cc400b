"""The faster training paths give the very models of the reference path: bit for bit, random states included.

- ``fit_lean`` (``baselines.train.train``'s loop) against d3rlpy's own ``fit`` on the same buffer;
- a training dataset taken from the cache against one built afresh;
- ``baselines.batched.train_seeds`` against ``train`` once per seed: every module's parameters, the
  optimizers' Adam state, the grad step, numpy's and torch's global states afterwards, and the model at
  every learning-curve checkpoint.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("d3rlpy")

import torch
from test_sampler import _data

import baselines.train as train_module
from baselines.batched import train_seeds
from baselines.train import ALGOS, train
from harness_gym.datasets.d3rlpy_bridge import OfflineData, quiet_d3rlpy
from harness_gym.evaluation.d3rlpy_policy import fingerprint


@pytest.fixture(scope="module")
def data() -> OfflineData:
    quiet_d3rlpy()
    return _data(40, seed=5)


def _modules(model: Any) -> dict[str, torch.Tensor]:
    return {
        f"{name}.{key}": tensor.detach().clone()
        for name, module in sorted(vars(model.impl.modules).items())
        if isinstance(module, torch.nn.Module)
        for key, tensor in module.state_dict().items()
    }


def _optimizer_states(model: Any) -> dict[str, list[dict[str, torch.Tensor]]]:
    """Each optimizer's per-parameter state, in its parameter order."""
    out = {}
    for name, wrapper in sorted(vars(model.impl.modules).items()):
        optim = getattr(wrapper, "optim", None)
        if isinstance(optim, torch.optim.Optimizer):
            params = [p for group in optim.param_groups for p in group["params"]]
            out[name] = [{k: v.clone() for k, v in optim.state[p].items()} for p in params]
    return out


def _same_tensors(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Keys whose tensors differ (or are missing on one side)."""
    differ = sorted(a.keys() ^ b.keys())
    for key in a.keys() & b.keys():
        x, y = a[key], b[key]
        if isinstance(x, list):
            same = len(x) == len(y) and all(
                p.keys() == q.keys() and all(torch.equal(p[k], q[k]) for k in p)
                for p, q in zip(x, y, strict=True)
            )
        else:
            same = torch.equal(x, y)
        if not same:
            differ.append(key)
    return differ


def _global_states() -> tuple[Any, ...]:
    return np.random.get_state()[1].copy(), np.random.get_state()[2], torch.get_rng_state().clone()


def _assert_same_states(a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
    assert np.array_equal(a[0], b[0]) and a[1] == b[1], "numpy's global state differs"
    assert torch.equal(a[2], b[2]), "torch's global state differs"


@pytest.mark.parametrize("algo", ALGOS)
def test_lean_loop_trains_the_model_d3rlpys_fit_trains(
    data: OfflineData, algo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, list] = {"lean": [], "fit": []}

    def run(kind: str) -> tuple[Any, tuple[Any, ...]]:
        def record(model: Any, step: int) -> None:
            seen[kind].append((step, fingerprint(model)))

        model = train(algo, data, seed=3, n_steps=14, curve_points=3, on_checkpoint=record)
        return model, _global_states()

    lean, lean_states = run("lean")
    monkeypatch.setattr(train_module, "lean_fit_possible", lambda run: False)
    fit, fit_states = run("fit")
    assert not _same_tensors(_modules(lean), _modules(fit))
    assert not _same_tensors(_optimizer_states(lean), _optimizer_states(fit))
    assert lean.grad_step == fit.grad_step == 14
    _assert_same_states(lean_states, fit_states)
    assert seen["lean"] == seen["fit"] and [s for s, _ in seen["fit"]] == [4, 9, 14]


@pytest.mark.parametrize("algo", ["awr", "iql"])
def test_a_cached_training_dataset_trains_what_a_fresh_one_does(data: OfflineData, algo: str) -> None:
    train_module._TRAINING_SETS.clear()
    fresh = _modules(train(algo, data, seed=4, n_steps=6))
    fresh_states = _global_states()
    assert train_module._TRAINING_SETS[data.dataset]  # now cached
    cached = _modules(train(algo, data, seed=4, n_steps=6))
    assert not _same_tensors(fresh, cached)
    _assert_same_states(fresh_states, _global_states())


@pytest.mark.parametrize("algo", ALGOS)
def test_seeds_trained_together_are_the_seeds_trained_one_by_one(data: OfflineData, algo: str) -> None:
    seeds, steps = (4, 1), 60  # target networks refresh every 3 steps
    alone: list[tuple[int, int, str]] = []
    together: list[tuple[int, int, str]] = []
    expected = []
    for seed in seeds:

        def record(model: Any, step: int, seed: int = seed) -> None:
            alone.append((seed, step, fingerprint(model)))

        expected.append(train(algo, data, seed=seed, n_steps=steps, curve_points=2, on_checkpoint=record))
    expected_states = _global_states()
    got = train_seeds(
        algo,
        data,
        seeds,
        n_steps=steps,
        curve_points=2,
        on_checkpoint=lambda seed, model, step: together.append((seed, step, fingerprint(model))),
    )
    _assert_same_states(expected_states, _global_states())
    for want, have in zip(expected, got, strict=True):
        assert type(have) is type(want) and have.grad_step == want.grad_step == steps
        assert not _same_tensors(_modules(want), _modules(have))
        assert not _same_tensors(_optimizer_states(want), _optimizer_states(have))
    assert sorted(together) == sorted(alone) and len(together) == 4
    # batched: the seeds' checkpoints interleave step by step; a learner trained seed by seed: in seed order
    order = [4, 4, 1, 1] if algo == "bc-d3rlpy" else [4, 1, 4, 1]  # d3rlpy's DiscreteBC is not batched
    assert [s for s, _, _ in together] == order


def test_the_bench_trains_a_batched_algorithm_and_a_per_seed_one_alike(data: OfflineData) -> None:
    """``harness_gym.policies.algorithms.train_seeds``: the batched entry point when offered, else one
    ``train`` per seed, with checkpoints handed on per seed either way."""
    from baselines.algorithms import D3rlpyLearner
    from harness_gym.policies.algorithms import SeedBatchedAlgorithm, Trained, TrainingData
    from harness_gym.policies.algorithms import train_seeds as bench_train_seeds

    class PerSeed:  # the same learner without its batched entry point
        name, stochastic = "awr", True

        def train(self, data: TrainingData, **kwargs: Any) -> Trained:
            return D3rlpyLearner("awr").train(data, **kwargs)

    training = TrainingData("HarnessPlanning-v0", None, data)
    batched = D3rlpyLearner("awr")
    assert isinstance(batched, SeedBatchedAlgorithm) and not isinstance(PerSeed(), SeedBatchedAlgorithm)
    seen: dict[str, list[tuple[int, int, str | None]]] = {"batched": [], "per-seed": []}
    fingerprints = {}
    for kind, algorithm in (("batched", batched), ("per-seed", PerSeed())):
        runs = bench_train_seeds(
            algorithm,
            training,
            seeds=(2, 0),
            n_steps=8,
            curve_points=2,
            on_checkpoint=lambda seed, run, step, kind=kind: seen[kind].append((seed, step, run.fingerprint)),
        )
        fingerprints[kind] = [run.fingerprint for run in runs]
        assert set(runs[0].policies) == {"sample", "greedy"}
    assert fingerprints["batched"] == fingerprints["per-seed"]
    assert sorted(seen["batched"]) == sorted(seen["per-seed"]) and len(seen["batched"]) == 4
