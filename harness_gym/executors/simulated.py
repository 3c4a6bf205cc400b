"""A stochastic stand-in for an LLM that returns real artifacts from a domain's pool.

The simulated executor never invents text: a draft is either the task's reference artifact or one of
its realistic flawed variants (AST mutants, illegal plans, ...), which the domain's real verifier then
scores. What the controller's choices change is *which* artifact comes back. Every probability comes
from the executor profile (``harness_gym.executors.profiles``):

- DRAFT returns the reference with ``p_correct[difficulty] + informed_gain * informedness``, where
  informedness in [0, 1] is the domain's measure of what the harness gathered; otherwise a flaw drawn
  by ``flaw_weights``.
- REVISE of a flawed draft returns the reference with
  ``fix_decay ** earlier_revisions * (q0 + (p_fix[kind] - q0) * evidence)``, ``kind`` being what the fresh
  feedback on that very draft says about its flaw (``localised``: a finding from a check component that
  names the draft's flaw kind, ``Domain.flaws``, at the rate of the flaw's class; ``verdict``: findings
  about anything else, or a bare judge verdict; ``none``; feedback counts once: a REVISE consumes it),
  ``evidence`` how much of what the fix needs the harness has gathered (``Domain.evidence``) and ``q0``
  the uninformed rate ``min(p_fix["none"], p_correct[difficulty])``. Otherwise, with
  ``p_reflaw``, a *different* flawed variant, else the same draft. REVISE of a correct draft breaks it with
  ``p_break``; in MDP v2 (``break_by_feedback``, ``obs_layout="v2"``) with ``p_break_feedback[verdict]``
  instead, ``verdict`` being what fresh feedback on that draft said (``revision_verdict``: ``none``,
  ``fail``: a false alarm, ``pass``). So a changed draft may be fixed, re-flawed or broken: a change does
  not tell.
- a judge request answers FAIL for a flawed draft with ``judge_tpr`` and for a correct one with
  ``judge_fpr``.
- at ``temperature`` 0 (the default) a call's draws come from ``greedy_rng``: a re-CHECK of an unchanged
  draft in an unchanged context gets the same verdict, a REVISE of the same draft with the same feedback
  the same draws; above 0 every call draws afresh from the environment's generator.
- a tool request returns the right next call from the domain's ``tool_pool`` with ``p_tool_correct``,
  otherwise a wrong tool or invalid arguments.
"""

from __future__ import annotations

import hashlib
import struct
from bisect import bisect_right

import numpy as np

from harness_gym.core.task import Task
from harness_gym.core.trajectory import artifact_hash
from harness_gym.executors.base import (
    UNDECLARED_FLAW,
    ArtifactPool,
    DomainView,
    ExecutorRequest,
    ExecutorResponse,
    FlawKind,
    Usage,
)
from harness_gym.executors.costs import CACHE_LIMIT, PromptSizer, completion_tokens, prompt_tokens
from harness_gym.executors.profiles import DomainProfile, feedback_kind, for_domain, revision_verdict

REFLAW_TRIES = 8
"""Draws spent looking for a flawed variant other than the current draft."""
SIMULATOR_VERSION = 2
"""Version of the simulated executor's behaviour. Results files record it (with the reference scores they
were normalised by), and results of different versions are never merged; datasets record it
(``harness_simulator_version``) and so does their manifest (``datasets/MANIFEST.json``). Bump it whenever a
change to the mechanism or a shipped profile changes what an episode yields (2: findings that name
the flaw, evidence-gated revision, greedy repeat draws, call costs, grounding)."""


class HashDraws:
    """Uniform draws in [0, 1) read off a hash (``random()``, as ``numpy.random.Generator`` has): a greedy
    call's draws, far cheaper to set up than a seeded generator."""

    __slots__ = ("_block", "_digest", "_i", "_words")

    def __init__(self, digest: bytes) -> None:
        self._digest, self._block, self._i = digest, 0, 0

    def random(self) -> float:
        i = self._i
        if i == 0:
            self._words = struct.unpack(
                "<8Q", hashlib.blake2b(self._block.to_bytes(4, "little"), key=self._digest).digest()
            )
        value = (self._words[i] >> 11) * (1.0 / 9007199254740992.0)
        if i == 7:  # the block's eight words are used: the next draw hashes the next block
            self._i = 0
            self._block += 1
        else:
            self._i = i + 1
        return value


_ITEM = "\x1f"
"""Between two items of one part of a greedy call's seed (parts are separated by ``\\x1e``)."""


def greedy_rng(request: ExecutorRequest) -> HashDraws:
    """The draws of a greedy (temperature 0) call: seeded by the episode key and everything the call's
    prompt would hold (kind, task, whether it was read, evidence ids, tool results, draft, and for a REVISE
    the fresh feedback), so an identical request in the same episode gets the identical reply."""
    context, draft, feedback = request.context, request.draft or "", request.feedback
    text = (
        f"{request.episode_key}\x1e{request.kind}\x1e{request.task.task_id}\x1e{context.observed}"
        f"\x1e{_ITEM.join(context.evidence)}\x1e{_ITEM.join(context.tool_results)}\x1e{draft}"
    )
    if request.kind == "revise" and feedback is not None and feedback.localizes(artifact_hash(draft)):
        text += "\x1e" + _ITEM.join(feedback.issues)
    return HashDraws(hashlib.blake2b(text.encode(), digest_size=16).digest())


class SimulatedExecutor:
    """The default executor: embedded, offline, deterministic given the env's ``np_random`` (its key at
    temperature 0)."""

    name = "simulated"

    def __init__(
        self, domain: DomainView, profile: DomainProfile | None = None, break_by_feedback: bool = False
    ) -> None:
        self.domain = domain
        self.profile = profile if profile is not None else for_domain(None, type(domain))
        self.break_by_feedback = break_by_feedback
        """MDP v2: a correct draft's risk on REVISE depends on the feedback (``p_break_feedback``)."""
        self._flaws: dict[str, tuple[list[str], list[float], dict[str, list[str]]]] = {}
        self._kinds: dict[str, dict[str, str]] = {}
        self.sizer = PromptSizer(domain)
        self._responses: dict[tuple[str, int, str], ExecutorResponse] = {}

    def describe(self) -> dict[str, object]:
        """Parameters recorded in dataset metadata."""
        from dataclasses import asdict

        profile = asdict(self.profile)
        if not self.break_by_feedback:
            # MDP v1 never reads it: recorded, it would change every v1 dataset's metadata and checksum
            del profile["mechanism"]["p_break_feedback"]
        described = {
            "name": self.name,
            "version": SIMULATOR_VERSION,
            "domain": self.domain.name,
            "profile": profile,
        }
        if self.break_by_feedback:
            described["break_by_feedback"] = True
        return described

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

    def _flaw_of(self, task: Task, pool: ArtifactPool, draft: str) -> FlawKind:
        """The flaw kind of a pool draft as the domain declares it (a text outside the pool: undeclared)."""
        kinds = self._kinds.get(task.task_id)
        if kinds is None:
            kinds = self._kinds[task.task_id] = {item.source: item.flaw for item in pool.flawed}
        kind = kinds.get(draft)
        if kind is None:
            return UNDECLARED_FLAW
        try:
            return self.domain.flaws[kind]
        except KeyError:
            raise ValueError(
                f"{self.domain.name}: flaw kind {kind!r} of task {task.task_id} is not declared in the "
                "domain's flaws"
            ) from None

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
        if p.mechanism.temperature == 0.0:
            rng = greedy_rng(request)
        if request.kind == "tool":
            calls = self.domain.tool_pool(task, request.context)
            if rng.random() < p.draft.p_tool_correct or not calls.flawed:
                text = calls.reference
            else:
                text = self._flawed(f"{task.task_id}/tool:{calls.reference}", calls, rng)
            return self._response(request, text)
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
        return self._response(request, text)

    def _revise(
        self, draft: str, request: ExecutorRequest, pool: ArtifactPool, rng: np.random.Generator
    ) -> str:
        """Fix, re-flaw, keep or break the draft (see the module docstring)."""

        m, key = self.profile.mechanism, request.task.task_id
        if draft == pool.reference:
            if self.break_by_feedback:
                p_break = m.p_break_feedback[revision_verdict(request.feedback, artifact_hash(draft))]
            else:
                p_break = m.p_break
            return self._flawed(key, pool, rng) if rng.random() < p_break else draft
        task = request.task
        flaw = self._flaw_of(task, pool, draft)
        kind = feedback_kind(request.feedback, artifact_hash(draft), flaw)
        uninformed = min(m.p_fix["none"], self.profile.draft.p_correct[task.difficulty])
        evidence = self.domain.evidence(task, request.context, flaw.needs)
        if rng.random() < m.p_fix_after(kind, request.revision, flaw.cls, uninformed, evidence):
            return pool.reference
        if rng.random() < m.p_reflaw:
            return self._flawed(key, pool, rng, avoid=draft)
        return draft

    def _response(self, request: ExecutorRequest, text: str) -> ExecutorResponse:
        """The reply ``text`` with its usage: tokens of the prompt the domain's templates would render and
        of the reply, modelled latency (``CallCosts``). A function of (reply, prompt characters, kind):
        each distinct one is built once (``ExecutorResponse`` and ``Usage`` are frozen, so one instance
        serves every such call)."""
        chars = self.sizer.prompt_chars(request)
        key = (text, chars, request.kind)
        response = self._responses.get(key)
        if response is None:
            costs = self.profile.costs
            prompt = prompt_tokens(costs, chars)
            completion = completion_tokens(costs, request.kind, len(text))
            usage = Usage(
                prompt_tokens=prompt, completion_tokens=completion, latency_s=costs.latency_s(completion)
            )
            if len(self._responses) >= CACHE_LIMIT:
                self._responses.clear()
            response = self._responses[key] = ExecutorResponse(text=text, usage=usage)
        return response
