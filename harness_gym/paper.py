"""Reference figures from the paper, for calibration and side-by-side reporting (one place)."""

from __future__ import annotations

BASE_G: dict[str, float] = {
    "HarnessKnowledgeWork-v0": 0.450,
    "HarnessCoding-v0": 0.712,
    "HarnessResearch-v0": 0.314,
    "HarnessMultiTool-v0": 0.528,
    "HarnessLongMemory-v0": 0.453,
    "HarnessPlanning-v0": 0.385,
    "HarnessTauRetail-v0": 0.337,
    "HarnessDBBench-v0": 0.415,
}
"""Mean task quality G of the Base harness on the eval split (Tables 3 and 4)."""

CALIBRATION_TOLERANCE = 0.05
"""How far a simulated Base G may lie from the paper's."""

EVAL_SEEDS: tuple[int, ...] = (0, 1, 2)
EVAL_ROLLOUTS = 3
"""The evaluation protocol: every eval task x 3 seeds x 3 rollouts (180 episodes for 20 tasks)."""
