"""Long memory: answer a question about the user from a dated multi-session chat history."""

from __future__ import annotations

from collections.abc import Mapping

from harness_gym.core.task import Task
from harness_gym.domains.base import (
    GROUNDING_WEIGHT,
    EvidenceSetting,
    check_outcome,
    content,
    form,
    grounding,
    with_judge,
)
from harness_gym.domains.long_memory import features as task_features
from harness_gym.domains.long_memory.prompts import LongMemoryPrompts
from harness_gym.domains.long_memory.search import SessionIndex
from harness_gym.domains.long_memory.verifier import CRITERIA, artifact_scores, claim_support, review
from harness_gym.envs.domain import VERIFIER_CACHE, Episode, Outcome, Verdict
from harness_gym.envs.env import HarnessEnv
from harness_gym.envs.features import declare
from harness_gym.executors.base import Context
from harness_gym.executors.profiles import DraftParams

MAX_RETRIEVED = 8
"""RETRIEVE is masked once this many sessions were gathered (about four searches)."""


DRAFT_PARAMS = DraftParams(
    p_correct={"easy": 0.05, "standard": 0.04, "hard": 0.0},
    informed_gain=0.40,
    flaw_weights={
        "outdated_value": 4.0,
        "distractor_value": 3.0,
        "wrong_source": 1.0,
        "missing_source": 0.5,
        "malformed": 0.5,
    },
)
"""Simulated LLM answering from chat history (defaults calibrated on the Base harness only).

Without the sessions that state the fact the executor can only guess, so the uninformed
``p_correct`` is near zero and its accuracy comes from ``informed_gain`` (informedness = fraction of
the gold sessions, introduction and updates up to the asked time, that were retrieved): drafting
blind is right about 2% of the time, after one search about 22%, after four about 36%. The Base
harness (OBSERVE, RETRIEVE once, DRAFT, SUBMIT) gets one or two sessions, all the gold of most easy
tasks but only part of a standard or hard timeline; with these values and the flaw mix below its
mean G under the protocol (eval split, seeds 0-2, 3 rollouts) is 0.455 against the paper's 0.453.

Memory failures dominate (a stale value, another person's value; they score 0.14 to 0.43), citation
slips come next (right value, wrong or no session) and layout slips are rare.
"""


FLAWS = {
    "outdated_value": content("timeline_contradiction"),
    "distractor_value": content("timeline_contradiction", "answer_not_in_cited"),
    "wrong_source": content(
        "cites_unretrieved", "answer_not_in_cited", "too_many_citations", "timeline_contradiction"
    ),
    "missing_source": form("layout", "cites_unretrieved", "answer_not_in_cited", needs="any_session"),
    "malformed": form("layout"),
}
"""Which findings name each flaw kind, its class and what its fix needs: the right value and session
come from the gold sessions (informedness: the latest update for an outdated value); a missing source
field is filled from any retrieved session (``any_session``); a broken layout needs nothing."""


GROUNDING = frozenset({"cites_unretrieved"})
"""The check component the ``grounding`` criterion scores: the cited session must have been retrieved."""


class LongMemoryDomain(EvidenceSetting):
    name = "long_memory"
    mdp2_task_file = "long_memory-v1.jsonl"
    features = declare(name, task_features)
    draft_params = DRAFT_PARAMS
    prompts_cls = LongMemoryPrompts
    flaws = FLAWS
    criteria: Mapping[str, float] = {**CRITERIA, "grounding": GROUNDING_WEIGHT}

    def index(self, task: Task) -> SessionIndex:
        """The task's search index, built on first use."""
        payload = task.payload
        return self.per_task("index", task, lambda: SessionIndex(payload["sessions"], payload["question"]))

    def informedness(self, task: Task, context: Context) -> float:
        gold = self.per_task("gold", task, lambda: frozenset(task.payload["gold_sessions"]))
        return len(gold.intersection(context.evidence)) / len(gold)

    def evidence(self, task: Task, context: Context, needs: str) -> float:
        """``any_session``: whether any session was retrieved (a source to cite)."""
        if needs != "any_session":
            return super().evidence(task, context, needs)
        return float(bool(context.evidence))

    def can_retrieve(self, ep: Episode) -> bool:
        evidence = ep.context.evidence
        return len(evidence) < MAX_RETRIEVED and bool(self.index(ep.task).next(evidence))

    def observe(self, ep: Episode) -> Outcome:
        sessions = ep.task.payload["sessions"]
        return Outcome(
            text=f"read the question and the index of {len(sessions)} sessions "
            f"({sessions[0]['date']} to {sessions[-1]['date']})"
        )

    def retrieve(self, ep: Episode) -> Outcome:
        found = self.index(ep.task).next(ep.context.evidence)
        sessions = ep.task.payload["sessions"]
        shown = ", ".join(f"{sid} ({sessions[int(sid[1:]) - 1]['date']})" for sid in found)
        return Outcome(text=f"searched the history: {shown}", evidence=found)

    def observable(self, ep: Episode, draft: str):
        """The review of ``draft`` against the sessions retrieved (cached)."""
        payload, evidence = ep.task.payload, tuple(ep.context.evidence)
        return VERIFIER_CACHE.get(
            "review", ep.task, (draft, *evidence), lambda: review(payload, draft, evidence)
        )

    def check(self, ep: Episode) -> Outcome:
        assert ep.draft is not None and ep.draft_hash is not None
        report = self.observable(ep, ep.draft)
        passed, total, issues = with_judge(ep, report.passed, report.issues)
        text = f"checked the answer against the retrieved sessions: {passed}/{total} items pass"
        return check_outcome(ep, text, passed / total, issues)

    def score(self, ep: Episode, artifact: str) -> Verdict:
        payload = ep.task.payload
        rubric = VERIFIER_CACHE.get("score", ep.task, artifact, lambda: artifact_scores(payload, artifact))
        support = VERIFIER_CACHE.get("support", ep.task, artifact, lambda: claim_support(payload, artifact))
        rubric = {**rubric, **grounding(self.observable(ep, artifact).issues, GROUNDING)}
        return Verdict(rubric=rubric, signals={"claim_support": support})


class HarnessLongMemoryEnv(HarnessEnv):
    """Long memory: answer a question about the user from many dated chat sessions, citing the source.

    ## Description

    Each task is a history of 6 to 20 dated chat sessions (``s01``..``sNN``) between a user and an
    assistant. A fact about the user (home city, employer, pet, an appointment, ...) is introduced and,
    in standard and hard tasks, changed one to three times; distractor sessions state the same kind of
    fact about other people, and hard histories add a value the user considered but rejected and
    passing mentions of the current value. The question asks for the fact's current value, its value
    before the latest change, or its value as of a date. The answer names the value and the session
    that establishes it, in the layout the prompt fixes (e.g. ``ANSWER: Lisbon`` / ``SOURCE: s14``).

    - OBSERVE: read the question and the session index (ids and dates).
    - RETRIEVE: keyword (BM25) search over the sessions with the question plus the text already
      retrieved; returns the best one or two sessions not yet retrieved. The executor's P(correct draft)
      rises with the fraction of gold sessions (introduction and updates up to the asked time)
      retrieved. Masked after 8 sessions or when nothing new matches.
    - CHECK: layout; the cited session was retrieved and names the answer; no retrieved session states
      a value for the asked time that contradicts the draft (e.g. a later update); plus an LLM judge
      call. Coverage is the fraction of these five items that pass; the issues localise the fault.
    - CALL_TOOL: not available (always masked).

    MDP v2 (``obs_layout="v2"``) plays its own task set, ``long_memory-v1.jsonl`` (``generate.py
    --version v1``), with LongMemEval's question types (Wu et al. 2024) in their shares among the three
    it covers: 43 single-session questions (a fact stated once, asked without "now"), 21 knowledge
    updates (the value after one or more changes) and 36 temporal questions (18 the value before the
    latest change, 18 the value as of a date); every difficulty mix is the same in each form.

    Rubric: ``answer_correctness`` (2, normalised exact match), ``source_match`` (1, the cited session
    is the one establishing the asked value, cited alone; several cited earn 0), ``output_format``
    (0.5, the required layout with valid session ids); G is their sum over 3.5. The verdict's
    ``claim_support`` signal (EvidenceBeforeClaim) is 1 when a cited session names the answer. Default
    ``max_steps`` 12.
    Base harness: OBSERVE, RETRIEVE, DRAFT, SUBMIT.
    """

    domain_cls = LongMemoryDomain


__all__ = ["HarnessLongMemoryEnv", "LongMemoryDomain"]
