"""The online reference's training: sb3-contrib's MaskablePPO on a setting's train split, until flat.

Per seed: ``n_envs`` train-split environments in a vectorised env (``DummyVecEnv`` by default: on two
shared cores, 8 envs x 32,768 steps of planning took 36 s with it and 59-67 s with ``SubprocVecEnv``, whose
inter-process traffic costs more than the simulated steps it spreads), MaskablePPO with the legal-action
mask (``env.action_masks()``). Every ``eval_every`` env steps the policy (greedy: the most probable legal
action) plays every validation task ``CURVE_ROLLOUTS`` times with the run's seed as evaluation seed (the
same episodes at every point); training stops at the first point where the curve is flat
(``harness_gym.evaluation.online.is_flat``, not before ``min_steps``) or at ``max_steps``. The final
model then plays the eval protocol's seed ``s`` (``harness_gym.evaluation.protocol.evaluate``, the path
the bench evaluates with). ``train_online`` returns the setting's entry of the online-reference file.

Hyperparameters (``PPO_KWARGS``): sb3's MaskablePPO defaults but ``ent_coef`` 0.01 (some exploration
against the early CHECK loops seen with 0), ``gamma`` 1.0 (short episodes whose only reward is the
final G) and ``n_steps`` 256 per env (a 2,048-step rollout with 8 envs, sb3's default size). Chosen
before any run, never from a score.

Imports torch and sb3: never imported by ``import harness_gym``.
"""

from __future__ import annotations

import platform
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np

from harness_gym.evaluation.online import FLAT_WINDOW, ONLINE, curve_point, is_flat
from harness_gym.evaluation.paper import CURVE_SPLIT, EVAL_ROLLOUTS, EVAL_SEEDS

CURVE_ROLLOUTS = 3
"""Rollouts per validation task of a learning-curve point (16-30 validation tasks: 48-90 episodes)."""
VEC_ENVS = ("dummy", "subproc")
PPO_KWARGS: dict[str, Any] = {"ent_coef": 0.01, "gamma": 1.0, "n_steps": 256}


@dataclass(frozen=True)
class OnlineConfig:
    """One setting's training budget and environment."""

    env_id: str
    seeds: tuple[int, ...] = EVAL_SEEDS
    n_envs: int = 8
    vec_env: str = "dummy"
    max_steps: int = 3_000_000
    """Env steps at which a run stops even if its curve is not flat."""
    eval_every: int = 50_000
    """Env steps between learning-curve points (rounded up to whole rollouts of ``n_envs`` x n_steps)."""
    min_steps: int = 300_000
    """No run stops as flat before this many env steps (a curve can sit flat early, stuck in a loop)."""
    obs_layout: str = "v1"
    executor_profile: str = "default"
    ppo_kwargs: dict[str, Any] = field(default_factory=lambda: dict(PPO_KWARGS))

    def __post_init__(self) -> None:
        if self.vec_env not in VEC_ENVS:
            raise ValueError(f"vec_env must be one of {VEC_ENVS}, got {self.vec_env!r}")
        for name in ("n_envs", "max_steps", "eval_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


class MaskedPPOPolicy:
    """A trained MaskablePPO model as a harness-gym policy: the most probable legal action."""

    name = ONLINE

    def __init__(self, network: Any) -> None:
        self.network = network
        """The model's ``policy`` (its torch module): what the engine copies per episode slot."""

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        action, _ = self.network.predict(obs, action_masks=np.asarray(mask, bool), deterministic=True)
        return int(action)

    def __deepcopy__(self, memo: dict[int, Any]) -> MaskedPPOPolicy:
        """The engine copies a policy per episode slot; this one keeps no state between steps and only
        runs inference, so the copies share the network (whose cached distribution tensors cannot be
        deep-copied)."""
        return MaskedPPOPolicy(self.network)


def _masks(env: Any) -> np.ndarray:
    return env.unwrapped.action_masks()


def make_train_env(config: OnlineConfig) -> Any:
    """One train-split environment with its action mask exposed to MaskablePPO and no step info: sb3's
    vectorised envs deep-copy every step's info, and the last one holds the whole trajectory, which PPO
    never reads (it reads the reward, the end flags and ``action_masks()``)."""
    import gymnasium as gym
    from sb3_contrib.common.wrappers import ActionMasker

    env = gym.make(
        config.env_id, split="train", obs_layout=config.obs_layout, executor_profile=config.executor_profile
    )
    return ActionMasker(_no_info(env), _masks)


def _no_info(env: Any) -> Any:
    import gymnasium as gym

    class NoInfo(gym.Wrapper):
        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
            obs, reward, terminated, truncated, _ = self.env.step(action)
            return obs, reward, terminated, truncated, {}

    return NoInfo(env)


def _evaluate(config: OnlineConfig, policy: Any, split: str, seed: int, rollouts: int) -> list[Any]:
    from harness_gym.evaluation.protocol import evaluate

    return evaluate(
        policy,
        config.env_id,
        split=split,
        seeds=(seed,),
        rollouts=rollouts,
        policy_name=ONLINE,
        obs_layout=config.obs_layout,
        executor_profile=config.executor_profile,
    )


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def train_seed(config: OnlineConfig, seed: int, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One seed: train until flat (or ``max_steps``), then play eval seed ``seed``; its record."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    torch.set_num_threads(1)
    cpu0, children0, wall0 = time.process_time(), _children_cpu_s(), time.perf_counter()
    vec_cls = SubprocVecEnv if config.vec_env == "subproc" else DummyVecEnv
    venv = make_vec_env(partial(make_train_env, config), n_envs=config.n_envs, seed=seed, vec_env_cls=vec_cls)
    model = MaskablePPO("MlpPolicy", venv, seed=seed, verbose=0, device="cpu", **config.ppo_kwargs)
    policy = MaskedPPOPolicy(model.policy)
    curve: list[list[float]] = []

    class Curve(BaseCallback):
        """A validation point once ``eval_every`` more env steps have passed; stops training when flat."""

        def __init__(self) -> None:
            super().__init__()
            self.next_point = config.eval_every

        def _on_step(self) -> bool:
            if self.num_timesteps < self.next_point:
                return True
            self.next_point += config.eval_every
            results = _evaluate(config, policy, CURVE_SPLIT, seed, CURVE_ROLLOUTS)
            curve.append(curve_point(self.num_timesteps, [r.G for r in results]))
            if log is not None:
                step, g, se = curve[-1]
                log(f"{config.env_id} seed {seed}: {step:>9,d} steps  validation G {g:.3f} ± {se:.3f}")
            return not is_flat(curve, FLAT_WINDOW, config.min_steps)

    model.learn(total_timesteps=config.max_steps, callback=Curve(), progress_bar=False)
    steps = int(model.num_timesteps)
    venv.close()  # the subprocess workers are reaped here, so their CPU time is counted below
    train_cpu = time.process_time() - cpu0 + _children_cpu_s() - children0
    results = _evaluate(config, policy, "eval", seed, EVAL_ROLLOUTS)
    return {
        "env_steps": steps,
        "flat": is_flat(curve, FLAT_WINDOW, config.min_steps),
        "curve": curve,
        "cpu_s": round(train_cpu, 1),
        "wall_s": round(time.perf_counter() - wall0, 1),
        "eval_G": float(np.mean([r.G for r in results])),
        "episodes": [{"task_id": r.task_id, "seed": r.seed, "rollout": r.rollout, "G": r.G} for r in results],
    }


def versions() -> dict[str, str]:
    """The libraries a run's numbers depend on."""
    from importlib.metadata import version

    names = ("harness-gym", "sb3-contrib", "stable-baselines3", "torch", "gymnasium", "numpy")
    return {"python": platform.python_version(), **{name: version(name) for name in names}}


def train_online(config: OnlineConfig, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every seed of one setting; the setting's entry of the online-reference file."""
    runs = {str(seed): train_seed(config, seed, log) for seed in config.seeds}
    episodes = [e for seed in config.seeds for e in runs[str(seed)].pop("episodes")]
    settings = asdict(config)
    return {
        "obs_layout": config.obs_layout,
        "executor_profile": config.executor_profile,
        "protocol": {"split": "eval", "seeds": list(config.seeds), "rollouts": EVAL_ROLLOUTS},
        "mean_G": float(np.mean([e["G"] for e in episodes])),
        "env_steps": sum(run["env_steps"] for run in runs.values()),
        "cpu_s": round(sum(run["cpu_s"] for run in runs.values()), 1),
        "seeds": runs,
        "config": {k: v for k, v in settings.items() if k not in ("env_id", "seeds")},
        "versions": versions(),
        "episodes": episodes,
    }


METHOD = {
    "learner": "sb3_contrib.MaskablePPO (harness_gym.evaluation.online_training), greedy legal action "
    "at evaluation",
    "flat": f"the last {FLAT_WINDOW} validation points within the largest of their standard errors "
    "(harness_gym.evaluation.online.is_flat), not before min_steps",
    "curve": f"every validation task x {CURVE_ROLLOUTS} rollouts, the run's seed as evaluation seed",
    "evaluation": "the model trained with seed s plays eval-protocol seed s",
    "command": "harness-gym headroom --train-online",
}
"""How every entry of the online-reference file was made (its ``method``)."""
