"""Research: multi-hop questions over a generated corpus; RETRIEVE is a real BM25 search."""

from __future__ import annotations

from collections.abc import Mapping

from harness_gym.core.task import Task
from harness_gym.domains.base import (
    GROUNDING_WEIGHT,
    TOOL_EVENTS,
    EvidenceSetting,
    check_outcome,
    content,
    form,
    grounding,
    with_judge,
)
from harness_gym.domains.research import features as task_features
from harness_gym.domains.research.corpus import MAX_SEARCHES, CorpusSearch
from harness_gym.domains.research.prompts import ResearchPrompts
from harness_gym.domains.research.verifier import CRITERIA, grade, structural_check
from harness_gym.envs.domain import VERIFIER_CACHE, Episode, Outcome, Verdict
from harness_gym.envs.env import HarnessEnv
from harness_gym.envs.features import declare
from harness_gym.executors.base import Context
from harness_gym.executors.profiles import DraftParams

OBSERVE_SHARE = 0.1
"""Part of informedness that reading the question and the answer format gives; the rest is evidence."""


DRAFT_PARAMS = DraftParams(
    p_correct={"easy": 0.04, "standard": 0.01, "hard": 0.0},
    informed_gain=0.2,
    flaw_weights={
        "distractor_answer": 5.0,
        "wrong_hop": 4.0,
        "outdated": 4.0,
        "missing_citation": 0.25,
        "cite_distractor": 0.25,
        "malformed": 0.25,
    },
)
"""Simulated LLM answering multi-hop questions (defaults calibrated on the Base harness only).

P(correct answer) = p_correct[difficulty] + informed_gain * informedness, where informedness is
0.1 for reading the task plus 0.9 x the fraction of the question's gold documents retrieved. One
search (the Base harness) reliably finds only the first hop's page (informedness 0.55 on two-hop,
0.4 on three-hop questions), so Base answers from a partial chain: P(correct) is about 0.1 there and
about 0.2 once every hop's page was read. The uninformed rates are near zero because the questions
are about invented entities: nothing can be answered from memory. With these values and the rubric
weights of ``verifier.CRITERIA`` the Base harness scores G = 0.31 on the eval split (paper: 0.314).

Wrong answers are mostly the errors multi-hop QA is known for: following a similarly named entity
(``distractor_answer``), stopping one hop early (``wrong_hop``) or quoting a superseded fact
(``outdated``, where the asked fact changed); right answers with missing or wrong citations or a
format slip are rare (each 2 to 3% of wrong drafts).
"""


FLAWS = {
    "distractor_answer": content("answer_ungrounded", "cites_unretrieved", needs="gold_documents"),
    "wrong_hop": content("answer_ungrounded", needs="gold_documents"),
    "outdated": content("answer_ungrounded", needs="gold_documents"),
    "missing_citation": content(
        "no_citation", "too_many_citations", "unknown_citation", "answer_ungrounded", needs="gold_documents"
    ),
    "cite_distractor": content(
        "cites_unretrieved", "unknown_citation", "answer_ungrounded", needs="gold_documents"
    ),
    "malformed": form("format", "answer_missing", "no_citation", "unknown_citation"),
}
"""Which findings name each flaw kind, its class and what its fix needs: every content flaw is fixed
from the gold documents (``gold_documents``: the fraction of them retrieved, reading the task alone
does not count); a malformed reply needs nothing gathered."""


GROUNDING = frozenset({"cites_unretrieved", "answer_ungrounded"})
"""The check components the ``grounding`` criterion scores: the cited documents and the answer must come
from what was retrieved."""


class ResearchDomain(EvidenceSetting):
    """RETRIEVE is a search (a ``search`` tool record), so tool use is judged too."""

    name = "research"
    mdp2_task_file = "research-v1.jsonl"
    features = declare(name, task_features)
    draft_params = DRAFT_PARAMS
    prompts_cls = ResearchPrompts
    flaws = FLAWS
    criteria: Mapping[str, float] = {**CRITERIA, "grounding": GROUNDING_WEIGHT}
    events = EvidenceSetting.events | TOOL_EVENTS
    max_searches = MAX_SEARCHES

    def search_engine(self, task: Task) -> CorpusSearch:
        """The task's BM25 engine, built on first use and kept."""
        payload = task.payload
        return self.per_task("search", task, lambda: CorpusSearch(payload["docs"], payload["question"]))

    def informedness(self, task: Task, context: Context) -> float:
        gold = self.per_task("gold", task, lambda: frozenset(task.payload["gold_docs"]))
        found = len(gold.intersection(context.evidence)) / len(gold)
        return OBSERVE_SHARE * context.observed + (1.0 - OBSERVE_SHARE) * found

    def evidence(self, task: Task, context: Context, needs: str) -> float:
        """``gold_documents``: the fraction of the gold documents retrieved (reading the task is no help)."""
        if needs != "gold_documents":
            return super().evidence(task, context, needs)
        gold = self.per_task("gold", task, lambda: frozenset(task.payload["gold_docs"]))
        return len(gold.intersection(context.evidence)) / len(gold)

    def can_retrieve(self, ep: Episode) -> bool:
        # every search leaves one tool record (the only tool here), so tool_results counts the searches
        searches = len(ep.context.tool_results)
        return searches < self.max_searches and bool(self.search_engine(ep.task).next(ep.context.evidence))

    def observe(self, ep: Episode) -> Outcome:
        n = len(ep.task.payload["docs"])
        return Outcome(text=f"read the question and the answer format; the collection has {n} documents")

    def retrieve(self, ep: Episode) -> Outcome:
        found = self.search_engine(ep.task).next(ep.context.evidence)
        return Outcome(
            text=f"search returned {', '.join(found)}" if found else "search returned nothing new",
            evidence=found,
            tool={"name": "search", "valid": True, "ok": bool(found)},
        )

    def observable(self, ep: Episode, draft: str):
        """The structural check of ``draft`` against the documents retrieved (cached)."""
        payload, evidence = ep.task.payload, ep.context.evidence
        return VERIFIER_CACHE.get(
            "check:" + ",".join(evidence), ep.task, draft, lambda: structural_check(payload, draft, evidence)
        )

    def check(self, ep: Episode) -> Outcome:
        assert ep.draft is not None and ep.draft_hash is not None
        report = self.observable(ep, ep.draft)
        passed, total, issues = with_judge(ep, (ok for _, ok in report.items), report.issues)
        return check_outcome(
            ep,
            f"checked the answer: {passed}/{total} items pass, {len(issues)} issue(s)",
            passed / total,
            issues,
        )

    def score(self, ep: Episode, artifact: str) -> Verdict:
        result = VERIFIER_CACHE.get("score", ep.task, artifact, lambda: grade(ep.task.payload, artifact))
        rubric = {**result.rubric, **grounding(self.observable(ep, artifact).issues, GROUNDING)}
        return Verdict(rubric=rubric, signals={"claim_support": result.claim_support})


class HarnessResearchEnv(HarnessEnv):
    """Research: answer a multi-hop question from a searchable corpus, citing the documents used.

    ## Description

    Each task asks a question that takes two or three lookups ("In which city was the founder of the
    company that makes the Kalover K4 born?") over its own generated corpus of 7 to 17 short documents:
    one gold document per hop, near-miss entities with confusable names, superseded facts, decoys that
    only mention a name, and unrelated pages. The answer is text in a format the task prescribes (e.g.
    ``ANSWER: <value>`` then ``SOURCES: doc-017, doc-203``), citing documents by id.

    - OBSERVE: read the question and the required answer format.
    - RETRIEVE: a BM25 search over the task's corpus whose query is the question plus the text of every
      document retrieved so far, so a later hop is only found after the earlier hop's document was
      read; returns the best 1-2 unseen document ids (a ``search`` tool record). Masked after 5 searches
      or when nothing new matches. Retrieving the gold documents raises the executor's P(correct answer).
    - CHECK: observable checks only: exact format, well-formed existing citation ids, citations among the
      retrieved documents, the answer appearing in a cited retrieved document, plus an LLM judge call.
      Coverage is the fraction of these five items that pass; the issues are handed to the next REVISE.
    - CALL_TOOL: not available (always masked).

    MDP v2 (``obs_layout="v2"``) plays its own task set, ``research-v1.jsonl`` (``generate.py --version
    v1``): 20 comparison questions ("Who was born earlier, A or B?", both pages found by one search) and
    80 bridge questions of 2, 3 or 4 hops (42 / 25 / 13), the shares of HotpotQA's dev set (20.1%
    comparison, Yang et al. 2018) and of MuSiQue-Ans dev (51.8% / 31.4% / 16.8% 2- / 3- / 4-hop,
    Trivedi et al. 2022); every difficulty mix is the same in each type and every corpus has 17
    documents, so only the question tells what a task needs; a CHECK there allows four citations.

    Rubric (maxima): ``answer_correctness`` 7 (normalised match with the gold answer; numbers as
    numbers), ``evidence_support`` 2 (fraction of hops whose fact a cited document's text states),
    ``citation_format`` 0.5 (well-formed, existing, unrepeated ids), ``output_format`` 0.5 (exactly the
    required form). HMS reads ``claim_support`` (the supported fraction of hops). Default ``max_steps``
    12. Base harness: OBSERVE, RETRIEVE (once), DRAFT, SUBMIT.
    """

    domain_cls = ResearchDomain
