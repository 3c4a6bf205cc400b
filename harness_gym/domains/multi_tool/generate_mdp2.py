"""Multi-tool's MDP v2 task set (``multi_tool-v1.jsonl``): the paper's families, drawn apart.

The same 25 template families, splits and answer formats as ``multi_tool-v0.jsonl`` (``generate.py``),
each task drawn from a generator seeded apart (``generation.family_records`` with ``MDP2_VERSION``).
What a good harness must do differs by task along what the prompt shows (``features.py``: the required
chain's length, a conversion, a notes read, figures in force): two, three or four tool steps, and in MDP
v2 a tool result beyond them costs draft accuracy (``multi_tool.NOISE_COST``), so calling more tools than
the question implies is no longer free.

The shares of 2-, 3- and 4-tool chains (20 / 60 / 20 tasks) are v0's, an assumption. Published tool-use
sets put most tasks at the long end of their range (m&m's, Ma et al. 2024: of its 882 evaluation tasks 70
need one tool, 159 two and 653 three; ToolHop, Ye et al. 2025: 3 to 7 calls per query, 428 of its 995
queries exactly 3), but their tools and chains are not these, so no share is taken from them. The hidden
difficulty stays the chain's length (easy 2, standard 3, hard 4 tools), as in v0: the prompt states the
chain, so it reads off the text as well as off the observation (AUC 1.000 / 1.000, ``tests/test_obs_v2.py``).

Measured on the train split (80 tasks, episode sets A = seeds 0-2 and B = seeds 3-5, 3 rollouts each):
``benchmarks/task_need.py --env HarnessMultiTool-v0 --obs-layout v2`` gives interaction SD 0.000 and
per-view gain +0.003 [-0.007, +0.014] (v0 tasks, no noise cost: 0.000 and +0.000 [-0.007, +0.008]):
its ten best strings on A are near-copies of one compromise (``TTOTDVTTCTVT``), so choosing among them
gains nothing. Adding the six strings "k tool calls, then DCVCVS" (k = 1-6) to those ten and choosing one
string per step-0 task-feature vector (5 distinct) on A gains +0.040 [+0.022, +0.061] on B (v0 tasks:
-0.010 [-0.029, +0.010]): a two-tool task is best served by two calls (G 0.90 against 0.81 with four), a
four-tool one by four (0.81 against 0.58 with two).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from harness_gym.core.task import write_generated
from harness_gym.domains.generation import MDP2_VERSION, family_records, task_file
from harness_gym.domains.multi_tool.generate import FAMILIES, MAX_ATTEMPTS, build_task

OUTPUT = task_file("multi_tool", MDP2_VERSION)


def generate_records() -> list[dict[str, Any]]:
    """All task records in id order, with splits assigned; deterministic for a given code version."""
    return family_records(
        "multi_tool", FAMILIES, build_task, MAX_ATTEMPTS, lambda family: family.code, version=MDP2_VERSION
    )


def main(argv: Sequence[str] | None = None) -> int:
    return write_generated(generate_records, OUTPUT, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
