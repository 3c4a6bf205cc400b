"""Knowledge work's MDP v2 task set (``knowledge_work-v1.jsonl``): the paper's families, drawn apart.

The same 35 template families, splits and report formats as ``knowledge_work-v0.jsonl`` (``generate.py``),
each task drawn from a generator seeded apart (``generation.family_records`` with ``MDP2_VERSION``).
What a good harness must do differs by task along what the prompt shows (``features.py``: sources, tables
and emails listed, titles that read as a correction, wording that asks for the latest figure, an
aggregate): one source to open (a memo look-up, a table total) or two (a memo and its approval email, a
table and the memo naming its owner, a source and the one correcting it), with the table computation for
table questions; in MDP v2 an opened source that does not answer the question costs draft accuracy
(``knowledge_work.NOISE_COST``), so opening every source is no longer free.

The mix of question kinds (20 one-source and 80 two-source tasks, 20 of them with a correction the
question asks to resolve) is v0's, an assumption. The closest published office-work mix, OfficeBench (Wang
et al. 2024: 93 single-app, 95 two-app and 112 three-app tasks of 300), counts applications rather than
sources, so no share is taken from it. The hidden difficulty stays the kind's (easy: one source; hard: a
correction), as in v0 (AUC from the step-0 observation / the prompt text 1.000 / 1.000,
``tests/test_obs_v2.py``).

Measured on the train split (80 tasks, episode sets A = seeds 0-2 and B = seeds 3-5, 3 rollouts each):
``benchmarks/task_need.py --env HarnessKnowledgeWork-v0 --obs-layout v2`` gives interaction SD 0.003 and
per-view gain -0.029 [-0.048, -0.009] (v0 tasks, no noise cost: 0.038 and -0.008 [-0.028, +0.011]).
Adding "O, k RETRIEVEs, TDCVS" (k = 1-6) to its ten best strings and choosing one string per step-0
task-feature vector (10 distinct, which separate the question kinds) gains -0.005 [-0.037, +0.023] on B
(v0 tasks: -0.020 [-0.047, +0.005]): no measurable gain. The kinds do differ (a memo look-up scores 0.80
with two RETRIEVEs against 0.64 with the best single string's four), but how many sources a question needs
opened also depends on where BM25 ranks its gold sources among the distractors (two to five for the
same kind), which the prompt does not show, and the choice per view on 3-24 tasks x 9 episodes is as
noisy as the differences.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from harness_gym.core.task import write_generated
from harness_gym.domains.generation import MDP2_VERSION, family_records, task_file
from harness_gym.domains.knowledge_work.entities import check_pools
from harness_gym.domains.knowledge_work.generate import DOMAIN, FAMILIES, MAX_ATTEMPTS, build_task

OUTPUT = task_file(DOMAIN, MDP2_VERSION)


def generate_records() -> list[dict[str, Any]]:
    """All task records in id order, with splits assigned; deterministic for a given code version."""
    check_pools()
    return family_records(DOMAIN, FAMILIES, build_task, MAX_ATTEMPTS, version=MDP2_VERSION)


def main(argv: Sequence[str] | None = None) -> int:
    return write_generated(generate_records, OUTPUT, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
