"""Training budgets and schedules of every offline baseline: the one place these numbers live.

Every harness-gym episode lasts at most 12 steps and pays a single terminal reward G (its return). The
choices below follow from that and from a bench that must train ~10 algorithms x 3 seeds x 8 settings
on 2 CPU cores in a few minutes (the bench must finish in 10 minutes).

Shared by every algorithm (``Schedule``)
----------------------------------------
- **Length in gradient steps, not epochs** (``n_steps``): identical across settings, whatever the
  buffer size. d3rlpy's and CORL's protocols also fix a step count per run (D4RL: 1M steps) rather
  than a number of passes over a dataset. 20 epochs of the paper's AWR give ~800 steps on a
  controlled buffer but ~100 on an adapter buffer; a fixed count removes that confound.
- **Discount** ``gamma = 1.0``: the evaluation criterion is the undiscounted G and the horizon
  (<= 12 steps) bounds every return, so the Bellman backup is well defined without discounting.
  d3rlpy's 0.99 (an Atari/MuJoCo default for 1000-step horizons) would scale a 12-step episode's
  credit by 0.99^11 = 0.90 and so bias every Q-learner towards submitting early.
- **Batch 256, one hidden layer of 64 units, Adam**: the paper's controller (§3) for every method, so
  differences come from the objective, not from capacity.

Q-learners (``QSchedule``: DQN, DoubleDQN, DiscreteCQL, DiscreteBCQ)
--------------------------------------------------------------------
- **Hard target update every ``n_steps / 20`` steps**: d3rlpy's default (8,000 steps, from the Nature
  DQN's 10k frames over 50M) never fires within a few thousand steps, leaving the target the random
  initial network. A terminal reward needs at most 12 backups to reach the first step; 20 target
  refreshes give every backup 50 steps (~ 12,800 samples) to fit.
- **Learning rate 1e-3**: d3rlpy's 6.25e-5 is the Rainbow/Atari value for batch 32 and >1M steps;
  1e-3 is the paper's rate and the default of Fujimoto et al.'s BCQ (2019).
- **CQL alpha = 0.1**: the conservative penalty is in reward units. Kumar et al. (2020) use 1.0 on
  Atari (d3rlpy's default), where returns are O(10-100); here G is in [0, 1], and at 1.0 the penalty
  outweighs a 0.5 difference in return whenever the better action is the behaviour's minority (see
  ``tests/test_offline_mdp.py``), so the penalty is scaled with the return range.
- **BCQ action threshold 0.3** (Fujimoto et al. 2019, discrete BCQ; d3rlpy's default) and its
  imitator in the same network (d3rlpy).

Discrete SAC (``SACSchedule``)
------------------------------
Actor, critic and temperature rates 3e-4 (Haarnoja et al. 2018; Christodoulou 2019's discrete SAC;
d3rlpy's and CORL's default), 2 critics, hard target update on the Q-learners' interval.

Discrete IQL (``IQLSchedule``)
------------------------------
Expectile 0.7 and inverse temperature 3.0 with weights clipped at 100 (Kostrikov et al. 2022, MuJoCo
locomotion; CORL's and d3rlpy's defaults); soft target update tau = 0.005 (same sources; its time
constant, 200 steps, is a fifth of the budget). Learning rate 1e-3 rather than their 3e-4, which is
sized for 1M steps: with a thousand steps the paper's rate is the one shared with AWR/BC/Q-learners.

AWR and BC (``AWRSchedule``)
----------------------------
Two configurations, both reported:

- ``paper``: the paper's settings exactly (one hidden layer of 64, Adam 1e-3, batch 256, **20 epochs**,
  beta = 0.2, weights clipped to [0.1, 10], entropy bonus 0.01). The length is in epochs, as in the
  paper, so it varies with the buffer.
- ``converged``: the same objective and network for the shared ``n_steps`` gradient steps.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AWRSchedule", "IQLSchedule", "QSchedule", "SACSchedule", "Schedule"]


@dataclass(frozen=True)
class Schedule:
    """What every algorithm shares (see the module doc for why)."""

    n_steps: int = 1_000
    """Gradient steps of every 'converged' run, identical across settings."""
    gamma: float = 1.0
    """No discount: <= 12-step episodes with a terminal reward; G is what is evaluated."""
    batch_size: int = 256
    """Minibatch size of every learner (the paper's)."""
    hidden_units: int = 64
    """Width of the one hidden layer of every network (the paper's controller)."""

    def __post_init__(self) -> None:
        if self.n_steps < 1 or self.batch_size < 1 or self.hidden_units < 1:
            raise ValueError(f"n_steps, batch_size and hidden_units must be >= 1: {self}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")

    @property
    def target_update_interval(self) -> int:
        """Hard target-network update period: 20 refreshes per run."""
        return max(1, self.n_steps // 20)


@dataclass(frozen=True)
class QSchedule:
    """DQN, DoubleDQN, DiscreteCQL, DiscreteBCQ."""

    learning_rate: float = 1e-3
    """Adam rate of every Q-learner (the paper's; Fujimoto et al.'s BCQ default)."""
    cql_alpha: float = 0.1
    """Weight of CQL's conservative penalty, scaled to returns in [0, 1]."""
    bcq_action_flexibility: float = 0.3
    """BCQ's threshold on the imitator's probability ratio (Fujimoto et al. 2019; d3rlpy's default)."""


@dataclass(frozen=True)
class SACSchedule:
    """Discrete SAC."""

    actor_learning_rate: float = 3e-4
    """Adam rate of the policy (Haarnoja et al. 2018; d3rlpy's and CORL's default)."""
    critic_learning_rate: float = 3e-4
    """Adam rate of the critics (same sources)."""
    temp_learning_rate: float = 3e-4
    """Adam rate of the entropy temperature (same sources)."""
    n_critics: int = 2
    """Critics in the ensemble; targets take their minimum."""


@dataclass(frozen=True)
class IQLSchedule:
    """Discrete IQL (``baselines.iql``)."""

    learning_rate: float = 1e-3
    """Adam rate of the critics, the value network and the policy (shared with AWR/BC/Q-learners)."""
    expectile: float = 0.7
    """Expectile of the value regression (Kostrikov et al. 2022; CORL's and d3rlpy's default)."""
    beta: float = 3.0
    """Inverse temperature of the policy extraction (same sources)."""
    max_weight: float = 100.0
    """Clip of the policy extraction's weights (same sources)."""
    tau: float = 0.005
    """Polyak coefficient of the target critics (same sources)."""
    n_critics: int = 2
    """Critics in the ensemble (same sources)."""


@dataclass(frozen=True)
class AWRSchedule:
    """AWR and BC: the paper's configuration (``paper_epochs`` passes over the buffer) and 'converged'."""

    learning_rate: float = 1e-3
    """Adam rate of the policy (and value network) (paper §3)."""
    beta: float = 0.2
    """AW temperature: weight = exp(A / beta) (paper)."""
    weight_clip: tuple[float, float] = (0.1, 10.0)
    """Range of the AW weights (paper)."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus (paper)."""
    paper_epochs: int = 20
    """Passes over the buffer of the paper's configuration (``awr``, ``bc``)."""
