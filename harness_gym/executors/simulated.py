"""A calibrated stochastic stand-in for an LLM that returns real artifacts from a domain's pool.

The simulated executor never invents text: a draft is either the task's reference artifact or one of
its realistic flawed variants (AST mutants, illegal plans, ...), which the domain's real verifier then
scores. What the controller's choices change is *which* artifact comes back:

- DRAFT returns the reference with probability ``p_correct[difficulty] + informed_gain * informedness``,
  where informedness in [0, 1] is the domain's measure of what the harness gathered (observed inputs,
  fraction of gold evidence, required tools run); otherwise a flaw drawn by ``flaw_weights``.
- REVISE of a flawed draft returns the reference with ``p_fix_informed`` when the latest feedback
  localises problems in that very draft, and with ``p_fix_blind`` otherwise; REVISE of a correct draft
  breaks it with ``p_break``.
- a judge request answers FAIL for a flawed draft with ``judge_tpr`` and for a correct one with
  ``judge_fpr``.
- a tool request (the executor chooses a tool and its arguments) returns the right next call from the
  domain's ``tool_pool`` with ``p_tool_correct``, otherwise a wrong tool or invalid arguments.

Only the Base harness is calibrated (its mean G on the eval split matches the paper's Base G); every
other policy's outcome is measured, never tuned.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from harness_gym.executors.base import ExecutorRequest, ExecutorResponse, Usage

if TYPE_CHECKING:
    from harness_gym.domains.base import ArtifactPool, Domain


CONTEXT_ITEM_CHARS = 400
"""Usage accounting: characters of prompt that one evidence item or tool result adds."""


def _uniform_difficulty(p: float) -> dict[str, float]:
    return {"easy": p, "standard": p, "hard": p}


@dataclass(frozen=True)
class Competence:
    """Behaviour of the simulated LLM in one domain; each domain subclasses it with its defaults."""

    p_correct: Mapping[str, float] = field(default_factory=lambda: _uniform_difficulty(0.5))
    """P(the draft is the reference) for an uninformed executor, per difficulty."""
    informed_gain: float = 0.2
    """Added to ``p_correct`` when the harness gathered everything relevant (informedness 1)."""
    p_fix_informed: float = 0.7
    """P(REVISE fixes a flawed draft) when the latest feedback localises problems in it."""
    p_fix_blind: float = 0.15
    """P(REVISE fixes a flawed draft) without such feedback."""
    p_break: float = 0.05
    """P(REVISE turns a correct draft into a flawed one)."""
    judge_tpr: float = 0.8
    """P(a judge CHECK reports a problem | the draft is flawed)."""
    judge_fpr: float = 0.1
    """P(a judge CHECK reports a problem | the draft is correct)."""
    p_tool_correct: float = 0.85
    """P(a tool request yields the right tool with valid arguments)."""
    flaw_weights: Mapping[str, float] = field(default_factory=dict)
    """Relative frequency of each flaw kind in wrong drafts (unlisted kinds weigh 1)."""
    tokens_per_char: float = 0.25
    """Usage accounting: tokens are estimated from text length."""

    def p_draft_correct(self, difficulty: str, informedness: float) -> float:
        return min(1.0, max(0.0, self.p_correct[difficulty] + self.informed_gain * informedness))


class SimulatedExecutor:
    """The default executor: embedded, offline, deterministic given the env's ``np_random``."""

    name = "simulated"

    def __init__(self, domain: Domain, competence: Competence | None = None) -> None:
        self.domain = domain
        self.competence = competence or domain.competence
        self._flaws: dict[str, tuple[list[str], list[float], dict[str, list[str]]]] = {}

    def describe(self) -> dict[str, object]:
        """Parameters recorded in dataset metadata."""
        return {"name": self.name, "competence": type(self.competence).__name__, **vars(self.competence)}

    def _flaw_table(self, key: str, pool: ArtifactPool) -> tuple[list[str], list[float], dict]:
        table = self._flaws.get(key)
        if table is None:
            by_kind: dict[str, list[str]] = {}
            for item in pool.flawed:
                by_kind.setdefault(item.flaw, []).append(item.source)
            kinds = sorted(by_kind)
            weights = np.array([self.competence.flaw_weights.get(k, 1.0) for k in kinds], dtype=float)
            if weights.sum() <= 0:
                raise ValueError(f"{key}: flaw_weights give zero weight to every flaw kind in the pool")
            table = (kinds, np.cumsum(weights / weights.sum()).tolist(), by_kind)
            self._flaws[key] = table
        return table

    def _flawed(self, key: str, pool: ArtifactPool, rng: np.random.Generator) -> str:
        kinds, cumulative, by_kind = self._flaw_table(key, pool)
        kind = min(bisect_right(cumulative, rng.random()), len(kinds) - 1)
        variants = by_kind[kinds[kind]]
        return variants[min(int(rng.random() * len(variants)), len(variants) - 1)]

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        task, c = request.task, self.competence
        if request.kind == "tool":
            calls = self.domain.tool_pool(task, request.context)
            if rng.random() < c.p_tool_correct or not calls.flawed:
                text = calls.reference
            else:
                text = self._flawed(f"{task.task_id}/tool:{calls.reference}", calls, rng)
            return ExecutorResponse(text=text, usage=self._usage(request, text))
        pool = self.domain.pool(task)
        if request.kind == "draft":
            informed = self.domain.informedness(task, request.context)
            correct = rng.random() < c.p_draft_correct(task.difficulty, informed)
            text = pool.reference if correct else self._flawed(task.task_id, pool, rng)
        elif request.kind == "revise":
            if request.draft is None:
                raise ValueError("a revise request needs the current draft")
            text = request.draft
            if request.draft == pool.reference:
                if rng.random() < c.p_break:
                    text = self._flawed(task.task_id, pool, rng)
            else:
                from harness_gym.domains.base import artifact_hash

                informed = request.feedback is not None and request.feedback.localizes(
                    artifact_hash(request.draft)
                )
                if rng.random() < (c.p_fix_informed if informed else c.p_fix_blind):
                    text = pool.reference
        elif request.kind == "judge":
            if request.draft is None:
                raise ValueError("a judge request needs the current draft")
            flawed = request.draft != pool.reference
            alarm = rng.random() < (c.judge_tpr if flawed else c.judge_fpr)
            text = "FAIL: the draft does not meet the task's criteria" if alarm else "PASS"
        else:
            raise ValueError(f"unknown request kind {request.kind!r}")
        return ExecutorResponse(text=text, usage=self._usage(request, text))

    def _usage(self, request: ExecutorRequest, text: str) -> Usage:
        """Token estimate: the prompt (task, draft, ~CONTEXT_ITEM_CHARS per gathered item) and the reply."""
        context = request.context
        items = len(context.evidence) + len(context.tool_results)
        prompt_chars = len(request.task.prompt) + len(request.draft or "") + CONTEXT_ITEM_CHARS * items
        rate = self.competence.tokens_per_char
        return Usage(prompt_tokens=int(prompt_chars * rate), completion_tokens=int(len(text) * rate) + 1)
