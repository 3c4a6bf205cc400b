"""Reference figures from the paper, for calibration and side-by-side reporting (one place).

Every number is stored as a fraction (G units, rates in [0, 1]), even where the paper prints
percentage points or percentages; ``harness_gym.bench.report`` formats them like the run's own numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness_gym.core.hms import EVENTS


@dataclass(frozen=True)
class PaperSetting:
    """What the paper reports for one setting (AW against the Base harness)."""

    label: str
    """Name used in the paper's tables."""
    short: str
    """Column name of the event-decomposition table."""
    adapter: bool
    """Public-benchmark adapter (else one of the six controlled domains)."""
    base_G: float
    aw_G: float
    delta_G: float
    delta_hms: float | None
    ci: tuple[float, float] | None
    """95% bootstrap interval of delta_G."""
    p_value: float | None
    p_below: bool = False
    """The paper gives only an upper bound: p < ``p_value``."""
    lifts: Mapping[str, float] = field(default_factory=dict)
    """``aw``, ``bc``, ``fc`` lifts over Base and the differences ``aw_minus_bc``, ``aw_minus_fc``."""
    sigma_D: float | None = None
    """Buffer slack max G - mean G of the training buffer (calibrated verifier)."""
    events: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)
    """Per event (base rate, AW rate); None where the event does not apply; absent where not reported."""

    @property
    def cbs(self) -> float | None:
        """CheckBeforeSubmit rate under AW."""
        rates = self.events.get("CheckBeforeSubmit")
        return rates[1] if rates else None

    @property
    def base_cbs(self) -> float | None:
        rates = self.events.get("CheckBeforeSubmit")
        return rates[0] if rates else None


def _events(*rates: tuple[float, float] | None) -> dict[str, tuple[float, float] | None]:
    """Percentages in ``EVENTS`` order -> fractions keyed by event."""
    if len(rates) != len(EVENTS):
        raise ValueError(f"expected {len(EVENTS)} event entries, got {len(rates)}")
    return {
        event: None if r is None else (round(r[0] / 100, 6), round(r[1] / 100, 6))
        for event, r in zip(EVENTS, rates, strict=True)
    }


def _lifts(aw: float, bc: float, fc: float, aw_bc: float, aw_fc: float) -> dict[str, float]:
    """Percentage points -> G units."""
    values = {"aw": aw, "bc": bc, "fc": fc, "aw_minus_bc": aw_bc, "aw_minus_fc": aw_fc}
    return {k: round(v / 100, 6) for k, v in values.items()}


NA = None
"""An event the paper marks as not applicable to a domain."""

PAPER: dict[str, PaperSetting] = {
    "HarnessKnowledgeWork-v0": PaperSetting(
        "Knowledge-work", "KW", False, 0.450, 0.464, 0.014, 0.059, (-0.002, 0.031), 0.097,
        lifts=_lifts(1.4, -0.4, 0.1, 1.8, 1.3), sigma_D=0.279,
        events=_events((0, 5.6), (0, 0), NA, (0, 0), NA, (0, 0), (1.7, 2.2)),
    ),
    "HarnessCoding-v0": PaperSetting(
        "Coding", "Coding", False, 0.712, 0.812, 0.100, 0.054, (0.059, 0.146), 0.001, p_below=True,
        lifts=_lifts(10.0, -8.3, 0.0, 18.3, 10.0), sigma_D=0.217,
        events=_events((0, 17.8), NA, (76.7, 86.7), (0, 4.3), NA, (0, 0), (0, 0.6)),
    ),
    "HarnessResearch-v0": PaperSetting(
        "Research", "Research", False, 0.314, 0.311, -0.003, -0.026, (-0.009, 0.002), 0.238,
        lifts=_lifts(-0.3, -4.2, -0.2, 3.8, -0.1), sigma_D=0.060,
        events=_events((0, 13.9), (0, 0), NA, (0, 0), (100, 100), (0, 0), (0, 25.0)),
    ),
    "HarnessMultiTool-v0": PaperSetting(
        "Multi-tool", "Multi-tool", False, 0.528, 0.515, -0.013, 0.058, (-0.035, 0.006), 0.217,
        lifts=_lifts(-1.3, -6.8, 0.3, 5.5, -1.6), sigma_D=0.175,
        events=_events((0, 8.9), (0, 0), NA, (0, 0), (100, 100), (0, 0), (0, 0)),
    ),
    "HarnessLongMemory-v0": PaperSetting(
        "Long-memory", "Long-mem", False, 0.453, 0.451, -0.003, 0.011, (-0.008, 0.000), 0.449,
        lifts=_lifts(-0.3, -5.8, 0.0, 5.5, -0.3), sigma_D=0.000,
        events=_events((0, 10.0), (73.8, 73.2), NA, (0, 0), NA, (0, 0), (0, 3.3)),
    ),
    "HarnessPlanning-v0": PaperSetting(
        "Planning", "Planning", False, 0.385, 0.412, 0.026, 0.010, (-0.012, 0.064), 0.175,
        lifts=_lifts(2.6, 0.0, -2.3, 2.6, 4.9), sigma_D=0.552,
        events=_events((0.6, 6.7), NA, NA, (0, 3.4), NA, (0.6, 0), (51.1, 47.8)),
    ),
    "HarnessTauRetail-v0": PaperSetting(
        "τ-bench retail", "τ-retail", True, 0.337, 0.519, 0.182, 0.075, (0.151, 0.213), None,
        lifts=_lifts(18.2, 8.2, 0.1, 10.0, 18.1),
        events={"CheckBeforeSubmit": (0.0, 0.172)},
    ),
    "HarnessDBBench-v0": PaperSetting(
        "DB-Bench", "DB-Bench", True, 0.415, 0.547, 0.132, 0.030, (0.102, 0.162), None,
        lifts=_lifts(13.2, 5.8, -0.5, 7.4, 13.7),
        events={"CheckBeforeSubmit": (0.0, 0.167), "EarlySubmit": (0.083, 0.278)},
    ),
}  # fmt: skip
"""Per setting: Tables cbs, benchmarks, bc-fc, main-synthetic, full-hms and calibrated-support, plus the
appendix's adapter figures (τ-bench ΔHMS on the 20-task split, DB-Bench ΔHMS and EarlySubmit rates)."""

SETTING_ORDER: tuple[str, ...] = tuple(PAPER)
"""The paper's row order: six controlled domains, then the two adapters."""

BASE_G: dict[str, float] = {env_id: s.base_G for env_id, s in PAPER.items()}
"""Mean task quality G of the Base harness on the eval split (Tables 3 and 4)."""

MACRO_MEAN: dict[str, float] = {"delta_G": 0.020, "delta_hms": 0.028, "cbs": 0.105}
"""Macro mean over the six controlled domains (ΔG, ΔHMS, AW CheckBeforeSubmit rate)."""

ES_THRESHOLD_DELTA_HMS: dict[str, dict[float, float]] = {
    "HarnessKnowledgeWork-v0": {0.25: 0.059, 0.30: 0.066, 0.35: 0.066},
    "HarnessCoding-v0": {0.25: 0.054, 0.30: 0.054, 0.35: 0.054},
    "HarnessResearch-v0": {0.25: -0.026, 0.30: 0.002, 0.35: 0.096},
    "HarnessMultiTool-v0": {0.25: 0.058, 0.30: 0.058, 0.35: 0.058},
    "HarnessLongMemory-v0": {0.25: 0.011, 0.30: 0.002, 0.35: 0.002},
    "HarnessPlanning-v0": {0.25: 0.010, 0.30: 0.007, 0.35: 0.007},
}
"""ΔHMS of AW under each EarlySubmit threshold (Table es_thresh); 0.25 is the primary threshold."""

ES_THRESHOLD_BASE_RATE: dict[str, dict[float, float]] = {
    "HarnessKnowledgeWork-v0": {0.25: 0.017, 0.30: 0.167, 0.35: 0.167},
    "HarnessCoding-v0": {0.25: 0.0, 0.30: 0.0, 0.35: 0.0},
    "HarnessResearch-v0": {0.25: 0.0, 0.30: 0.200, 0.35: 1.0},
    "HarnessMultiTool-v0": {0.25: 0.0, 0.30: 0.0, 0.35: 0.0},
    "HarnessLongMemory-v0": {0.25: 0.0, 0.30: 0.200, 0.35: 0.200},
    "HarnessPlanning-v0": {0.25: 0.511, 0.30: 0.511, 0.35: 0.511},
}
"""EarlySubmit rate of the Base harness under each threshold (appendix sweep)."""

STRICT_CODING: dict[str, float] = {"base_G": 0.929, "delta_G": -0.006}
"""Coding under the original strict deterministic rubric (near ceiling), before calibration."""

CALIBRATION_TOLERANCE = 0.05
"""How far a simulated Base G may lie from the paper's."""

EVAL_SEEDS: tuple[int, ...] = (0, 1, 2)
EVAL_ROLLOUTS = 3
"""The evaluation protocol: every eval task x 3 seeds x 3 rollouts (180 episodes for 20 tasks)."""

CURVE_SPLIT = "validation"
"""Where learning curves are measured: the validation tasks, a fixed fifth of the train tasks
(``harness_gym.core.task.validation_ids``); the eval split is played once, by the final models."""
