"""A stochastic stand-in for an LLM that returns real artifacts from a domain's pool.

The simulated executor never invents text: a draft is either the task's reference artifact or one of
its realistic flawed variants (AST mutants, illegal plans, ...), which the domain's real verifier then
scores. What the controller's choices change is *which* artifact comes back. Every probability comes
from the executor profile (``harness_gym.executors.profiles``):

- DRAFT returns the reference with ``p_correct[difficulty] + informed_gain * informedness``, where
  informedness in [0, 1] is the domain's measure of what the harness gathered; otherwise a flaw drawn
  by ``flaw_weights``.
- REVISE of a flawed draft returns the reference with ``p_fix[kind] * fix_decay ** earlier_revisions``,
  ``kind`` being what the feedback on that very draft localises (``localised`` structural/test issues,
  a bare judge ``verdict``, or ``none``; feedback counts once: a REVISE consumes it). Otherwise, with
  ``p_reflaw``, a *different* flawed variant, else the same draft. REVISE of a correct draft breaks it
  with ``p_break``. So a changed draft may be fixed, re-flawed or broken: a change does not tell.
- a judge request answers FAIL for a flawed draft with ``judge_tpr`` and for a correct one with
  ``judge_fpr``.
- a tool request returns the right next call from the domain's ``tool_pool`` with ``p_tool_correct``,
  otherwise a wrong tool or invalid arguments.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from harness_gym.core.trajectory import artifact_hash
from harness_gym.executors.base import ArtifactPool, DomainView, ExecutorRequest, ExecutorResponse, Usage
from harness_gym.executors.profiles import DomainProfile, feedback_kind, for_domain

CONTEXT_ITEM_CHARS = 400
"""Usage accounting: characters of prompt that one evidence item or tool result adds."""
REFLAW_TRIES = 8
"""Draws spent looking for a flawed variant other than the current draft."""
SIMULATOR_VERSION = 1
"""Version of the simulated executor's behaviour. Results files record it (with the reference scores they
were normalised by), and results of different versions are never merged; datasets record it
(``harness_simulator_version``) and so does their manifest (``datasets/MANIFEST.json``). Bump it whenever a
change to the mechanism or a shipped profile changes what an episode yields."""


class SimulatedExecutor:
    """The default executor: embedded, offline, deterministic given the env's ``np_random``."""

    name = "simulated"

    def __init__(self, domain: DomainView, profile: DomainProfile | None = None) -> None:
        self.domain = domain
        self.profile = profile if profile is not None else for_domain(None, type(domain))
        self._flaws: dict[str, tuple[list[str], list[float], dict[str, list[str]]]] = {}

    def describe(self) -> dict[str, object]:
        """Parameters recorded in dataset metadata."""
        from dataclasses import asdict

        return {
            "name": self.name,
            "version": SIMULATOR_VERSION,
            "domain": self.domain.name,
            "profile": asdict(self.profile),
        }

    def _flaw_table(self, key: str, pool: ArtifactPool) -> tuple[list[str], list[float], dict]:
        table = self._flaws.get(key)
        if table is None:
            by_kind: dict[str, list[str]] = {}
            for item in pool.flawed:
                by_kind.setdefault(item.flaw, []).append(item.source)
            kinds = sorted(by_kind)
            weights = np.array([self.profile.draft.flaw_weights.get(k, 1.0) for k in kinds], dtype=float)
            if weights.sum() <= 0:
                raise ValueError(f"{key}: flaw_weights give zero weight to every flaw kind in the pool")
            table = (kinds, np.cumsum(weights / weights.sum()).tolist(), by_kind)
            self._flaws[key] = table
        return table

    def _flawed(
        self, key: str, pool: ArtifactPool, rng: np.random.Generator, avoid: str | None = None
    ) -> str:
        """A flawed variant drawn by ``flaw_weights`` (another than ``avoid`` when the pool has one)."""
        kinds, cumulative, by_kind = self._flaw_table(key, pool)
        for _ in range(REFLAW_TRIES):
            kind = min(bisect_right(cumulative, rng.random()), len(kinds) - 1)
            variants = by_kind[kinds[kind]]
            text = variants[min(int(rng.random() * len(variants)), len(variants) - 1)]
            if text != avoid:
                break
        return text

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        task, p = request.task, self.profile
        if request.kind == "tool":
            calls = self.domain.tool_pool(task, request.context)
            if rng.random() < p.draft.p_tool_correct or not calls.flawed:
                text = calls.reference
            else:
                text = self._flawed(f"{task.task_id}/tool:{calls.reference}", calls, rng)
            return ExecutorResponse(text=text, usage=self._usage(request, text))
        pool = self.domain.pool(task)
        if request.kind == "draft":
            informed = self.domain.informedness(task, request.context)
            correct = rng.random() < p.draft.p_draft_correct(task.difficulty, informed)
            text = pool.reference if correct else self._flawed(task.task_id, pool, rng)
        elif request.kind == "revise":
            if request.draft is None:
                raise ValueError("a revise request needs the current draft")
            text = self._revise(request.draft, request, pool, rng)
        elif request.kind == "judge":
            if request.draft is None:
                raise ValueError("a judge request needs the current draft")
            flawed = request.draft != pool.reference
            m = p.mechanism
            alarm = rng.random() < (m.judge_tpr if flawed else m.judge_fpr)
            text = "FAIL: the draft does not meet the task's criteria" if alarm else "PASS"
        else:
            raise ValueError(f"unknown request kind {request.kind!r}")
        return ExecutorResponse(text=text, usage=self._usage(request, text))

    def _revise(
        self, draft: str, request: ExecutorRequest, pool: ArtifactPool, rng: np.random.Generator
    ) -> str:
        """Fix, re-flaw, keep or break the draft (see the module docstring)."""

        m, key = self.profile.mechanism, request.task.task_id
        if draft == pool.reference:
            return self._flawed(key, pool, rng) if rng.random() < m.p_break else draft
        kind = feedback_kind(request.feedback, artifact_hash(draft))
        if rng.random() < m.p_fix_after(kind, request.revision):
            return pool.reference
        if rng.random() < m.p_reflaw:
            return self._flawed(key, pool, rng, avoid=draft)
        return draft

    def _usage(self, request: ExecutorRequest, text: str) -> Usage:
        """Token estimate: the prompt (task, draft, ~CONTEXT_ITEM_CHARS per gathered item) and the reply."""
        context = request.context
        items = len(context.evidence) + len(context.tool_results)
        prompt_chars = len(request.task.prompt) + len(request.draft or "") + CONTEXT_ITEM_CHARS * items
        rate = self.profile.tokens_per_char
        return Usage(prompt_tokens=int(prompt_chars * rate), completion_tokens=int(len(text) * rate) + 1)
