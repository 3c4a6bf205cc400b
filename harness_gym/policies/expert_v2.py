"""The expert's rules on MDP v2 (``obs_layout="v2"``), where the observation also carries the task.

On a v2-width observation ``ExpertPolicy`` runs the same loop as on v1 (OBSERVE, gather, DRAFT, CHECK,
REVISE while the last check failed, SUBMIT) with two changes, both read off the observation only:

1. **What it gathers is a function of the task features** (the domain's ``features.py``, read off the
   prompt text). Per domain, ``NEEDS`` turns them into what the question names: the hops of a research
   question (two entities for a comparison), the tool chain a multi-tool question states, the records a
   tau-retail request names (the user, each order and item variant, the orders it only describes), the
   update a long-memory question asks about, the correction and the table computation a knowledge-work
   request asks for, whether a DB-Bench statement reads rows first. The plan makes
   ``base + per * need`` RETRIEVEs and tool calls before its draft (``ExpertPlanV2``; RETRIEVEs, not
   evidence items, since one search returns two documents and the evidence count saturates at 5).
2. **Its revise decision reads which check group failed.** A failing check whose only finding is the
   LLM judge's bare verdict (no form, content, evidence or test finding) may be a false alarm, and in MDP
   v2 a REVISE after a failing verdict on a correct draft breaks it with p 0.46
   (``executors.profiles``, ``p_break_feedback``). Where ``revise_judge_only`` is False such a failure is
   not revised: the draft is submitted.

The rules are written from the mechanics and the feature docs; the numbers in ``EXPERT_PLANS_V2`` are
chosen by the grid of ``harness_gym.evaluation.expert_plans`` (``--obs-layout v2``) on the train split
only, never on the eval split and never from the expert-vs-open-loop gap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from harness_gym.core.state import CHECK_GROUPS, FEATURES_V2

_TASK0 = FEATURES_V2.index("task_0")
_FAILED = {group: FEATURES_V2.index(f"check_failed_{group}") for group in CHECK_GROUPS}


@dataclass(frozen=True)
class ExpertPlanV2:
    """How much the expert gathers per unit of what the task needs, and how it revises, in one domain."""

    retrieve_base: int = 0
    """RETRIEVE ``retrieve_base + retrieve_per * need`` times (0 needed: never): a RETRIEVE is one search,
    source or record, whatever number of evidence items it returns."""
    retrieve_per: int = 1
    tools_base: int = 0
    """CALL_TOOL until ``tools_base + tools_per * need`` tool calls were made (0 needed: none)."""
    tools_per: int = 1
    max_revisions: int = 2
    """REVISEs per episode after failing checks."""
    revise_judge_only: bool = True
    """REVISE after a failing check whose only finding is the LLM judge's verdict (False: submit)."""


Task = Mapping[str, float]
"""The domain's task features by name (``features.py``'s ``TASK_FEATURES``), as the observation has them."""


def _count(task: Task, name: str, cap: int) -> int:
    """A scaled count feature back as a count (``cap`` as in the domain's ``features.py``)."""
    return round(task[name] * cap)


def _research(task: Task) -> tuple[int, int]:
    # one document per hop the question names; a comparison needs the page of each of its two entities
    hops = 2 if task["compares"] > 0 else _count(task, "relations", 6)
    return max(hops, 1), 0


def _knowledge_work(task: Task) -> tuple[int, int]:
    # the source that answers, plus the one correcting it when the request asks for the latest figure;
    # a figure computed over rows needs the table computation
    return 1 + int(task["asks_correction"] > 0), int(task["aggregate"] > 0)


def _multi_tool(task: Task) -> tuple[int, int]:
    # the required tool chain the question states, one call per tool
    return 0, _count(task, "tool_steps", 4)


def _long_memory(task: Task) -> tuple[int, int]:
    # the session that introduced the fact, plus its update when the question asks about one
    # (now / before the latest update / as of a date)
    update = any(task[name] > 0 for name in ("asks_update", "asks_before", "asks_as_of"))
    return 1 + int(update), 0


def _tau_retail(task: Task) -> tuple[int, int]:
    # the user's record, each order the request names or only describes, each item variant it asks for
    records = 1 + _count(task, "orders", 3) + _count(task, "described", 2) + _count(task, "variants", 3)
    return records, 0


def _dbbench(task: Task) -> tuple[int, int]:
    # a SELECT or an UPDATE reads the rows its condition picks; an INSERT writes the given values
    return 0, int(task["insert"] <= 0)


def _nothing(task: Task) -> tuple[int, int]:
    # coding reads the spec and visible tests with OBSERVE; planning reads the whole problem
    return 0, 0


NEEDS: dict[str, Callable[[Task], tuple[int, int]]] = {
    "research": _research,
    "knowledge_work": _knowledge_work,
    "multi_tool": _multi_tool,
    "long_memory": _long_memory,
    "tau_retail": _tau_retail,
    "dbbench": _dbbench,
    "coding": _nothing,
    "planning": _nothing,
}
"""Per domain: (evidence items to RETRIEVE, tool calls to make) the task's features name."""


EXPERT_PLANS_V2: dict[str, ExpertPlanV2] = {
    # 1 + 2 per source named (3; 5 when a correction is asked for), 1 + 2 table_calc runs for an aggregate
    "knowledge_work": ExpertPlanV2(
        retrieve_base=1, retrieve_per=2, tools_base=1, tools_per=2, max_revisions=1, revise_judge_only=False
    ),
    "coding": ExpertPlanV2(max_revisions=2, revise_judge_only=False),
    # 1 + 2 searches per hop: 5 for a comparison or a 2-hop question, 7 for 3 hops, 9 for 4
    "research": ExpertPlanV2(retrieve_base=1, retrieve_per=2, max_revisions=2, revise_judge_only=True),
    # exactly the tool chain the question states
    "multi_tool": ExpertPlanV2(max_revisions=3, revise_judge_only=False),
    # 3 + 1 per session the question needs (4; 5 for an update)
    "long_memory": ExpertPlanV2(retrieve_base=3, max_revisions=2, revise_judge_only=False),
    # the plan validator is exact: no judge-only failure occurs (ties go to not revising)
    "planning": ExpertPlanV2(max_revisions=2, revise_judge_only=False),
    # 2 + 1 per record the request names
    "tau_retail": ExpertPlanV2(retrieve_base=2, max_revisions=2, revise_judge_only=True),
    # two exploratory queries before a SELECT or an UPDATE, none before an INSERT
    "dbbench": ExpertPlanV2(tools_per=2, max_revisions=2, revise_judge_only=True),
}
"""Per domain, the v2 plan's numbers, chosen by ``python -m harness_gym.evaluation.expert_plans --obs-layout
v2`` (every v2 train task, never the eval split; rerun after the simulator changes). Train mean G of each
(seeds 0-2, one rollout; three for tau-retail and DB-Bench): knowledge work 0.679, coding 0.901, research
0.512, multi-tool 0.887, long memory 0.847, planning 0.794, tau-retail 0.619, DB-Bench 0.610."""


def task_features(obs: np.ndarray, names: tuple[str, ...]) -> dict[str, float]:
    """The domain's task features (``names``, in slot order) as a v2 observation holds them."""
    return {name: float(obs[_TASK0 + i]) for i, name in enumerate(names)}


def gather_targets(plan: ExpertPlanV2, domain: str, task: Task) -> tuple[int, int]:
    """(evidence items, tool calls) to hold before the first draft."""
    retrieve, tools = NEEDS[domain](task)
    return (
        plan.retrieve_base + plan.retrieve_per * retrieve if retrieve else 0,
        plan.tools_base + plan.tools_per * tools if tools else 0,
    )


def judge_only_failure(obs: np.ndarray) -> bool:
    """The last check's only finding was the LLM judge's bare verdict."""
    return obs[_FAILED["judge"]] > 0 and all(obs[i] <= 0 for g, i in _FAILED.items() if g != "judge")
