"""Research content: BM25 search, the answer verifier, the shipped ``research-v0`` task set, the env."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from upstream import one_localised_rate

from harness_gym import Action
from harness_gym.core.task import write_jsonl
from harness_gym.domains.research import HarnessResearchEnv, ResearchDomain
from harness_gym.domains.research import generate as gen
from harness_gym.domains.research.corpus import MAX_SEARCHES, BM25Index, CorpusSearch, normalize, terms
from harness_gym.domains.research.verifier import (
    CRITERIA,
    EVAL_FORMATS,
    FORMATS,
    TRAIN_FORMATS,
    artifact_scores,
    grade,
    parse,
    structural_check,
)
from harness_gym.domains.research.world import GENERIC_NAME_WORDS
from harness_gym.evaluation.paper import BASE_G, CALIBRATION_TOLERANCE, EVAL_ROLLOUTS, EVAL_SEEDS
from harness_gym.evaluation.rollout import protocol_episodes
from harness_gym.executors.base import ExecutorRequest, ExecutorResponse

TOP = sum(CRITERIA.values())
FLAWS = set(gen.FLAWS)


def total(rubric: dict[str, tuple[float, float]]) -> float:
    return sum(score for score, _ in rubric.values())


# ---- a hand-made corpus -------------------------------------------------------------------------------


def payload(fmt: str = "caps-comma", **changes: Any) -> dict[str, Any]:
    """Veltrix Labs was founded by Mara Quell, born in Dorrin; Mara Quill (born in Ostra) is a near miss."""
    base = {
        "question": "In which city was the founder of Veltrix Labs born?",
        "format": fmt,
        "docs": [
            {
                "id": "doc-001",
                "title": "Veltrix Labs",
                "text": "Veltrix Labs is a robotics company founded in 1994 by Mara Quell. "
                "Veltrix Labs is headquartered in Tarsk.",
            },
            {
                "id": "doc-002",
                "title": "Mara Quell",
                "text": "Mara Quell is a chemist. Mara Quell was born in Dorrin in 1961.",
            },
            {
                "id": "doc-003",
                "title": "Mara Quill",
                "text": "Mara Quill is a historian. Mara Quill was born in Ostra in 1958.",
            },
            {
                "id": "doc-004",
                "title": "Veltrix Systems",
                "text": "Veltrix Systems is a software company founded in 1990 by Ivo Brand.",
            },
            {
                "id": "doc-005",
                "title": "Lecture notes",
                "text": "Mara Quell gave a lecture on polymers. The lecture was held in Dorrin.",
            },
        ],
        "hops": [
            {"subject": "Veltrix Labs", "relation": "founder", "object": "Mara Quell", "doc": "doc-001"},
            {"subject": "Mara Quell", "relation": "birthplace", "object": "Dorrin", "doc": "doc-002"},
        ],
        "answer": "Dorrin",
        "aliases": [],
    }
    base.update(changes)
    return base


REFERENCE = "ANSWER: Dorrin\nSOURCES: doc-001, doc-002"


def test_reference_scores_the_maximum() -> None:
    scores = artifact_scores(payload(), REFERENCE)
    assert scores == {name: (top, top) for name, top in CRITERIA.items()}
    assert grade(payload(), REFERENCE).claim_support == 1.0


@pytest.mark.parametrize(
    ("artifact", "expected"),
    [
        # wrong value (the near miss's birthplace), citing the near miss's page for the last hop
        ("ANSWER: Ostra\nSOURCES: doc-001, doc-003", {"answer_correctness": 0.0, "evidence_support": 0.5}),
        # stopped one hop early
        ("ANSWER: Mara Quell\nSOURCES: doc-001", {"answer_correctness": 0.0, "evidence_support": 0.5}),
        # a missing citation
        ("ANSWER: Dorrin\nSOURCES: doc-002", {"evidence_support": 0.5}),
        # citing the near-miss company instead of the gold page
        ("ANSWER: Dorrin\nSOURCES: doc-004, doc-002", {"evidence_support": 0.5}),
        # subject and object in different sentences support nothing
        ("ANSWER: Dorrin\nSOURCES: doc-001, doc-005", {"evidence_support": 0.5}),
        # an id that does not exist, and a repeated one
        ("ANSWER: Dorrin\nSOURCES: doc-001, doc-002, doc-999", {"citation_format": 2 / 3}),
        ("ANSWER: Dorrin\nSOURCES: doc-001, doc-001, doc-002", {"citation_format": 2 / 3}),
        # nothing cited
        (
            "ANSWER: Dorrin\nSOURCES:",
            {"evidence_support": 0.0, "citation_format": 0.0, "output_format": 0.0},
        ),
        # ids without their prefix identify no document
        (
            "ANSWER: Dorrin\nSOURCES: 001, 002",
            {"evidence_support": 0.0, "citation_format": 0.0, "output_format": 0.0},
        ),
        # prose: no answer field; the ids in the text still count as cited, but not as a sources field
        (
            "The answer is Dorrin, according to doc-001 and doc-002.",
            {"answer_correctness": 0.0, "citation_format": 0.0, "output_format": 0.0},
        ),
        # a third line, a label slip, both fields on one line
        ("ANSWER: Dorrin\nSOURCES: doc-001, doc-002\nHope this helps.", {"output_format": 0.0}),
        ("answer - Dorrin\nSOURCES: doc-001, doc-002", {"output_format": 0.0}),
        (
            "ANSWER: Dorrin SOURCES: doc-001, doc-002",
            {"answer_correctness": 0.0, "citation_format": 0.0, "output_format": 0.0},
        ),
        # the wrong separator between ids
        ("ANSWER: Dorrin\nSOURCES: doc-001; doc-002", {"output_format": 0.0}),
    ],
)
def test_hand_built_artifacts(artifact: str, expected: dict[str, float]) -> None:
    scores = artifact_scores(payload(), artifact)
    for name, top in CRITERIA.items():
        fraction = expected.get(name, 1.0)
        assert scores[name][0] == pytest.approx(fraction * top), (name, scores)
    assert total(scores) < TOP


def test_answer_normalisation_numbers_and_aliases() -> None:
    p = payload(answer="48,200")
    for good in ("48,200", "48200", "48,200 people", " 48200 inhabitants "):
        assert artifact_scores(p, f"ANSWER: {good}\nSOURCES: doc-001")["answer_correctness"][0] > 0, good
    for bad in ("48,300", "about 48,200", "48.2 thousand"):
        assert artifact_scores(p, f"ANSWER: {bad}\nSOURCES: doc-001")["answer_correctness"][0] == 0, bad
    p = payload(answer="Velmora", aliases=["province of Velmora", "Velmora province"])
    for good in ("Velmora", "velmora.", "the province of Velmora", "Velmora Province"):
        assert artifact_scores(p, f"ANSWER: {good}\nSOURCES: doc-001")["answer_correctness"][0] > 0, good
    assert artifact_scores(p, "ANSWER: Velmor\nSOURCES: doc-001")["answer_correctness"][0] == 0


@pytest.mark.parametrize(
    ("fmt", "good", "slips"),
    [
        (
            "json",
            '{"answer": "Dorrin", "sources": ["doc-001", "doc-002"]}',
            [
                '{"answer": "Dorrin", "sources": ["doc-001", "doc-002"], "confidence": "high"}',
                'Here you go: {"answer": "Dorrin", "sources": ["doc-001", "doc-002"]}',
                '{"answer": "Dorrin", "sources": "doc-001, doc-002"}',
            ],
        ),
        (
            "tags",
            "<answer>Dorrin</answer>\n<sources>doc-001 doc-002</sources>",
            [
                "<answer>Dorrin</answer> <sources>doc-001 doc-002</sources>",
                "<answer>Dorrin</answer>\n<sources>doc-001, doc-002</sources>",
            ],
        ),
        (
            "title-brackets",
            "Answer: Dorrin\nCitations: [doc-001] [doc-002]",
            ["Answer: Dorrin\nCitations: doc-001 doc-002", "ANSWER: Dorrin\nCitations: [doc-001] [doc-002]"],
        ),
        (
            "final-semicolon",
            "FINAL ANSWER: Dorrin\nEVIDENCE: doc-001; doc-002",
            ["FINAL ANSWER: Dorrin\nEVIDENCE: doc-001, doc-002"],
        ),
    ],
)
def test_every_format_parses_its_own_form_and_rejects_slips(fmt: str, good: str, slips: list[str]) -> None:
    p = payload(fmt)
    assert FORMATS[fmt].render("Dorrin", ["doc-001", "doc-002"]) == good
    assert total(artifact_scores(p, good)) == TOP
    for slip in slips:
        scores = artifact_scores(p, slip)
        assert scores["output_format"][0] == 0.0, slip
        assert scores["answer_correctness"][0] == CRITERIA["answer_correctness"], slip
        assert scores["evidence_support"][0] == CRITERIA["evidence_support"], slip
    # another task's format is not this one's
    other = FORMATS["caps-comma" if fmt == "json" else "json"].render("Dorrin", ["doc-001", "doc-002"])
    assert artifact_scores(p, other)["answer_correctness"][0] == 0.0
    assert parse(FORMATS[fmt], other).strict is False


def test_structural_check_reads_only_what_a_harness_sees() -> None:
    p = payload()
    report = structural_check(p, REFERENCE, ["doc-001", "doc-002"])
    assert all(ok for _, ok in report.items) and report.issues == ()
    partial = structural_check(p, REFERENCE, ["doc-001"])
    assert dict(partial.items) == {
        "format": True,
        "citations_well_formed": True,
        "citations_retrieved": False,
        "answer_grounded": False,
    }
    assert any("doc-002 was never retrieved" in issue for issue in partial.issues)
    wrong = structural_check(p, "ANSWER: Ostra\nSOURCES: doc-001, doc-002", ["doc-001", "doc-002", "doc-003"])
    assert dict(wrong.items)["answer_grounded"] is False and dict(wrong.items)["format"] is True
    bad_ids = structural_check(p, "ANSWER: Dorrin\nSOURCES: doc-2", ["doc-002"])
    assert dict(bad_ids.items)["citations_well_formed"] is False
    # the gold answer and the hop facts play no part: changing them changes nothing
    other = payload(answer="Ostra", hops=[])
    for artifact in (REFERENCE, "ANSWER: Ostra\nSOURCES: doc-001, doc-003", "prose doc-001"):
        for gathered in (["doc-001"], ["doc-001", "doc-002", "doc-003"]):
            assert structural_check(p, artifact, gathered) == structural_check(other, artifact, gathered)


# ---- search ---------------------------------------------------------------------------------------------


def test_bm25_matches_the_formula() -> None:
    index = BM25Index(["alpha beta", "alpha gamma gamma", "delta"])
    scores = index.scores(index.query_vector("gamma"))
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / 2)
    assert scores[1] == pytest.approx(idf * 2 * 2.2 / (2 + norm))
    assert scores[0] == scores[2] == 0.0
    both = index.scores(index.query_vector("alpha gamma"))
    assert both[1] > both[0] > 0 and both[2] == 0
    assert index.top(index.query_vector("alpha"), exclude=[0]) == [1]
    assert terms("The founder was founded in 1,994") == ["found", "found", "1994"]
    assert normalize("Tarsk, 48,200 people!") == "tarsk 48200 people"


def test_search_reaches_later_hops_only_through_earlier_ones() -> None:
    p = payload()
    # the question names Veltrix Labs: its page and the near-miss company come first; Mara Quell's page
    # shares only "born" with the question (as does her near miss's)
    search = CorpusSearch(p["docs"], p["question"])
    assert search.next([]) == ("doc-001", "doc-004")
    # reading doc-001 puts "Mara Quell" into the query: her page now beats her near miss's
    assert search.next(["doc-001", "doc-004"]) == ("doc-002", "doc-003")
    alone = search.index.scores(search.question)
    assert alone[search.position["doc-002"]] == alone[search.position["doc-003"]] > 0
    seen: list[str] = []
    while found := search.next(seen):
        seen += found
    assert sorted(seen) == [doc["id"] for doc in p["docs"]]


# ---- the shipped task set --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return gen.generate_records()


def test_regenerating_gives_the_shipped_file(records: list[dict[str, Any]], tmp_path) -> None:
    out = tmp_path / "research.jsonl"
    write_jsonl(records, out)
    assert out.read_bytes() == gen.OUTPUT.read_bytes()
    other = tmp_path / "other-hashseed.jsonl"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run(
        [sys.executable, "-m", "harness_gym.domains.research.generate", str(other)], check=True, env=env
    )
    assert other.read_bytes() == gen.OUTPUT.read_bytes()


def test_records_are_well_formed(records: list[dict[str, Any]]) -> None:
    assert [r["task_id"] for r in records] == [f"research-{i:03d}" for i in range(100)]
    assert {(r["domain"], r["version"]) for r in records} == {("research", "v0")}
    counts = Counter((r["split"], r["difficulty"]) for r in records)
    assert counts == {
        ("train", "easy"): 16, ("train", "standard"): 48, ("train", "hard"): 16,
        ("eval", "easy"): 4, ("eval", "standard"): 12, ("eval", "hard"): 4,
    }  # fmt: skip
    hops_by_difficulty: dict[str, set[int]] = {"easy": set(), "standard": set(), "hard": set()}
    for r in records:
        p = r["payload"]
        ids = [doc["id"] for doc in p["docs"]]
        assert ids == sorted(set(ids)) and all(len(i) == 7 and i.startswith("doc-") for i in ids)
        assert [hop["doc"] for hop in p["hops"]] == p["gold_docs"] and set(p["gold_docs"]) <= set(ids)
        hops_by_difficulty[r["difficulty"]].add(len(p["hops"]))
        assert p["question"] in r["prompt"]
        assert p["answer"] not in r["prompt"] and not any(d["text"] in r["prompt"] for d in p["docs"])
        assert p["format"] in (TRAIN_FORMATS if r["split"] == "train" else EVAL_FORMATS)
        assert p["hops"][-1]["object"] == p["answer"]
    assert hops_by_difficulty == {"easy": {2}, "standard": {2, 3}, "hard": {3}}
    by_template = {r["template"]: r["difficulty"] for r in records}
    assert all(by_template[r["template"]] == r["difficulty"] for r in records)


def test_corpora_hold_the_promised_distractors(records: list[dict[str, Any]]) -> None:
    for r in records:
        roles = Counter(doc["role"] for doc in r["payload"]["docs"])
        assert roles["gold"] == len(r["payload"]["hops"])
        assert roles["near_miss"] >= 1 and roles["unrelated"] >= 4
        if r["difficulty"] == "hard":
            assert roles["near_miss"] == 3 and roles["decoy"] == 2
        elif r["difficulty"] == "standard":
            assert roles["distractor_chain"] == len(r["payload"]["hops"]) and roles["decoy"] == 1
        if r["template"].split(">")[-1] in ("hq", "chief", "population"):
            assert roles["superseded"] >= 1


def _supporting(docs: list[dict[str, str]], hop: dict[str, str]) -> list[str]:
    """Independent of the verifier: documents with a sentence naming the subject and the object."""
    subject, obj = f" {normalize(hop['subject'])} ", f" {normalize(hop['object'])} "
    out = []
    for doc in docs:
        for sentence in doc["text"].split(". "):
            padded = f" {normalize(sentence)} "
            if subject in padded and obj in padded:
                out.append(doc["id"])
                break
    return out


def test_each_hop_is_stated_by_its_gold_document_only(records: list[dict[str, Any]]) -> None:
    for r in records:
        for hop in r["payload"]["hops"]:
            assert _supporting(r["payload"]["docs"], hop) == [hop["doc"]], (r["task_id"], hop)


def test_search_needs_the_hops_in_order(records: list[dict[str, Any]]) -> None:
    needed = Counter()
    for r in records:
        p = r["payload"]
        search = CorpusSearch(p["docs"], p["question"])
        seen: list[str] = []
        rounds = 0
        while rounds < MAX_SEARCHES and (found := search.next(seen)):
            if rounds == 0:
                assert p["gold_docs"][-1] not in found, r["task_id"]
            seen += found
            rounds += 1
            if set(p["gold_docs"]) <= set(seen):
                break
        assert set(p["gold_docs"]) <= set(seen), r["task_id"]
        assert rounds == p["searches_needed"]
        needed[rounds] += 1
    assert len(needed) >= 3  # tasks differ in how much searching they take


def test_references_score_max_and_every_pool_artifact_less(records: list[dict[str, Any]]) -> None:
    kinds: Counter[str] = Counter()
    for r in records:
        p = r["payload"]
        assert total(artifact_scores(p, p["reference"])) == TOP, r["task_id"]
        sources = [item["source"] for item in p["pool"]]
        assert len(sources) == len(set(sources)) and p["reference"] not in sources
        assert len(sources) >= gen.POOL_MIN
        outdated_possible = r["template"].split(">")[-1] in ("hq", "chief", "population")
        for item in p["pool"]:
            scores = artifact_scores(p, item["source"])
            assert total(scores) < TOP, (r["task_id"], item)
            flaw = item["flaw"]
            kinds[flaw] += 1
            answer_ok = scores["answer_correctness"][0] > 0
            if flaw in ("distractor_answer", "wrong_hop", "outdated"):
                assert not answer_ok and scores["output_format"][0] > 0, (r["task_id"], item)
            elif flaw in ("missing_citation", "cite_distractor"):
                assert answer_ok and scores["evidence_support"][0] < CRITERIA["evidence_support"]
            else:
                assert flaw == "malformed" and scores["output_format"][0] == 0.0
            assert flaw != "outdated" or outdated_possible
    assert set(kinds) == FLAWS


def _names(record: dict[str, Any]) -> set[str]:
    docs = record["payload"]["docs"]
    names = {d["title"] for d in docs if d["role"] in ("gold", "near_miss", "distractor_chain", "unrelated")}
    return names | {hop["subject"] for hop in record["payload"]["hops"]}


def test_entities_templates_and_formats_differ_between_splits(records: list[dict[str, Any]]) -> None:
    train = [r for r in records if r["split"] == "train"]
    held_out = [r for r in records if r["split"] == "eval"]
    names = [set().union(*map(_names, part)) for part in (train, held_out)]
    assert not names[0] & names[1]
    words = [{w for n in part for w in n.split()} - GENERIC_NAME_WORDS for part in names]
    assert not words[0] & words[1]
    chains = [{r["template"].split("/")[1] for r in part} for part in (train, held_out)]
    assert not chains[0] & chains[1]
    formats = [{r["payload"]["format"] for r in part} for part in (train, held_out)]
    assert not formats[0] & formats[1]


# ---- the environment -------------------------------------------------------------------------------------


def _play(env: HarnessResearchEnv, actions: list[Any], seed: int) -> tuple[dict[str, Any], bool | None]:
    """Play a script (``"RETRIEVE*"`` = search until masked); returns the final info and whether the
    first draft was the reference."""
    _, info = env.reset(seed=seed)
    first = None
    for action in actions:
        if action == "RETRIEVE*":
            while info["action_mask"][Action.RETRIEVE]:
                _, _, _, _, info = env.step(Action.RETRIEVE)
            continue
        _, _, terminated, truncated, info = env.step(action)
        if action == Action.DRAFT:
            ep = env._ep
            first = ep.draft == env.domain.pool(ep.task).reference
        if terminated or truncated:
            return info, first
    raise AssertionError("script did not end the episode")


def test_gathering_the_chain_makes_correct_answers_likelier() -> None:
    env = HarnessResearchEnv(split="all")
    informed = [_play(env, [Action.OBSERVE, "RETRIEVE*", Action.DRAFT, Action.SUBMIT], s) for s in range(400)]
    blind = [_play(env, [Action.OBSERVE, Action.DRAFT, Action.SUBMIT], s) for s in range(400)]
    p_informed = np.mean([first for _, first in informed])
    p_blind = np.mean([first for _, first in blind])
    assert p_informed > p_blind + 0.08, (p_informed, p_blind)
    assert np.mean([i["G"] for i, _ in informed]) > np.mean([i["G"] for i, _ in blind]) + 0.05
    assert all(i["trajectory"]["signals"]["claim_support"] == 1.0 for i, first in informed if first)


def test_revise_after_an_informative_check_fixes_more() -> None:
    """After Base's one search the check names most flaws (an answer or citation no retrieved document
    backs); with half the gold documents read a localised REVISE reaches about half its full rate
    (evidence-gated revision), a blind one about half the blind rate."""
    env = HarnessResearchEnv(split="all", executor_profile=one_localised_rate(ResearchDomain))

    def fixed(after: list[Action]) -> float:
        hits = flawed = 0
        for seed in range(400):
            env.reset(seed=seed)
            for action in (Action.OBSERVE, Action.RETRIEVE, Action.DRAFT):
                env.step(action)
            reference = env.domain.pool(env._ep.task).reference
            if env._ep.draft == reference:
                continue
            flawed += 1
            for action in after:
                env.step(action)
            hits += env._ep.draft == reference
        return hits / flawed

    fixed_checked, fixed_blind = fixed([Action.CHECK, Action.REVISE]), fixed([Action.REVISE])
    assert fixed_checked > fixed_blind + 0.08, (fixed_checked, fixed_blind)


class _Fixed:
    """An executor that always drafts the same text (and judges PASS)."""

    name = "fixed"

    def __init__(self, text: str) -> None:
        self.text = text

    def complete(self, request: ExecutorRequest, rng: np.random.Generator) -> ExecutorResponse:
        return ExecutorResponse(text="PASS" if request.kind == "judge" else self.text)


def test_observation_never_reveals_the_gold_answer() -> None:
    task_id = "research-040"
    probe = HarnessResearchEnv(split="all")
    pool = probe.domain.pool(next(t for t in probe.tasks if t.task_id == task_id))
    script = [Action.OBSERVE, Action.RETRIEVE, Action.DRAFT, Action.RETRIEVE]
    runs = []
    for text in [pool.reference, *(item.source for item in pool.flawed)]:
        env = HarnessResearchEnv(split="all", executor=_Fixed(text))
        obs, info = env.reset(seed=3, options={"task_id": task_id})
        trace = [obs]
        for action in script:
            obs, _, _, _, info = env.step(action)
            trace.append(obs)
        runs.append((np.stack(trace), info["action_mask"]))
    for trace, mask in runs[1:]:
        assert np.array_equal(trace, runs[0][0]) and np.array_equal(mask, runs[0][1])


def test_retrieve_is_a_search_tool_and_is_masked_when_exhausted() -> None:
    env = HarnessResearchEnv(split="all")
    _, info = env.reset(seed=0, options={"task_id": "research-090"})
    steps = 0
    while info["action_mask"][Action.RETRIEVE]:
        _, _, _, _, info = env.step(Action.RETRIEVE)
        steps += 1
    assert steps == MAX_SEARCHES
    records = env._ep.steps
    assert all(s["tool"] == {"name": "search", "valid": True, "ok": True} for s in records)
    evidence = [e for s in records for e in s["evidence"]]
    assert len(evidence) == len(set(evidence)) and all(1 <= len(s["evidence"]) <= 2 for s in records)
    assert set(env._ep.task.payload["gold_docs"]) <= set(evidence)
    small = HarnessResearchEnv(split="all")
    _, info = small.reset(seed=0, options={"task_id": "research-000"})  # an easy task: 7 documents
    while info["action_mask"][Action.RETRIEVE]:
        _, _, _, _, info = small.step(Action.RETRIEVE)
    assert len(small._ep.context.evidence) == len(small._ep.task.payload["docs"])


def test_check_env_and_random_legal_actions() -> None:
    env = HarnessResearchEnv()
    check_env(env)
    for seed in range(50):
        _, info = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, reward, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            assert 0.0 <= reward <= 1.0
        assert 0.0 <= info["G"] <= 1.0 and set(info["rubric"]) == set(CRITERIA) | {"grounding"}


def test_base_harness_is_calibrated() -> None:
    env = HarnessResearchEnv(split="eval")
    finals = []
    for _, task_id, _, seed in protocol_episodes([t.task_id for t in env.tasks], EVAL_SEEDS, EVAL_ROLLOUTS):
        obs, info = env.reset(seed=seed, options={"task_id": task_id})
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(
                ResearchDomain.base_action(obs, info["action_mask"])
            )
            done = terminated or truncated
        finals.append(info)
    assert len(finals) == 180
    assert [s["action"] for s in finals[0]["trajectory"]["steps"]] == [
        "OBSERVE",
        "RETRIEVE",
        "DRAFT",
        "SUBMIT",
    ]
    assert np.mean([f["G"] for f in finals]) == pytest.approx(
        BASE_G["HarnessResearch-v0"], abs=CALIBRATION_TOLERANCE
    )
    assert not any(f["hms"]["CheckBeforeSubmit"]["fired"] for f in finals)


def test_research_scoring_edges() -> None:
    """A gold answer with words that are not units is text, not a number; padding costs one supported hop
    per extra citation; the sources field, when present, is what is cited (not ids elsewhere in the
    text); a payload without aliases grades as one with none; the format finding shows the form."""
    from harness_gym.domains.research.verifier import (
        Parsed,
        answers_match,
        cited_documents,
        supported_fraction,
    )

    assert not answers_match("12", "12 apples") and answers_match("12 apples", "12 apples")
    assert supported_fraction([True, True], 3) == 0.5 and supported_fraction([True, False], 2) == 0.5
    assert supported_fraction([True, True], 5) == 0.0
    parsed = Parsed("x", ("doc-002", "doc-002"), ("doc-001", "doc-002"), True)
    assert cited_documents(parsed, {"doc-001", "doc-002"}) == ["doc-002"]
    assert cited_documents(Parsed("x", None, ("doc-001", "doc-009"), False), {"doc-001"}) == ["doc-001"]
    p = payload()
    without = {k: v for k, v in p.items() if k != "aliases"}
    assert grade(without, REFERENCE) == grade({**p, "aliases": []}, REFERENCE)
    report = structural_check(p, "Dorrin, doc-001", ["doc-001"])
    assert [str(i) for i in report.issues] == [
        "format: the reply is not exactly in the required form (ANSWER: ... / SOURCES: doc-NNN)",
        "citations: no document ids in the sources field",
        "answer: no answer field could be read",
    ]
    assert [i.component for i in report.issues] == ["format", "no_citation", "answer_missing"]


_RESEARCH_COMPONENTS = {
    "format:": "format",
    "citations: no document ids": "no_citation",
    "citations: '": "unknown_citation",
    "citations: 5 documents cited": "too_many_citations",
    "citations: doc-": "cites_unretrieved",
    "answer: no answer": "answer_missing",
    "answer: '": "answer_ungrounded",
}
"""The component each research CHECK finding is tagged with, by the start of its text."""


def _research_component(text: str) -> str:
    return next(component for start, component in _RESEARCH_COMPONENTS.items() if text.startswith(start))


@pytest.mark.parametrize(
    ("text", "gathered", "items", "issues"),
    [
        (REFERENCE, ["doc-001", "doc-002"], (True, True, True, True), []),
        (
            REFERENCE,
            ["doc-001"],
            (True, True, False, False),
            [
                "citations: doc-002 was never retrieved",
                "answer: 'Dorrin' does not appear in any cited document that was retrieved",
            ],
        ),
        (
            "ANSWER: Ostra\nSOURCES: doc-001, doc-002",
            ["doc-001", "doc-002"],
            (True, True, True, False),
            ["answer: 'Ostra' does not appear in any cited document that was retrieved"],
        ),
        (
            "ANSWER: Dorrin\nSOURCES: doc-2, doc-999",
            ["doc-002"],
            (False, False, False, False),
            [
                "format: the reply is not exactly in the required form (ANSWER: ... / SOURCES: doc-NNN)",
                "citations: 'doc-2' is not the id of a document in the corpus",
                "citations: 'doc-999' is not the id of a document in the corpus",
                "answer: 'Dorrin' does not appear in any cited document that was retrieved",
            ],
        ),
        (
            "ANSWER: Dorrin\nSOURCES: doc-001, doc-002, doc-003, doc-004, doc-005",
            ["doc-001", "doc-002", "doc-003", "doc-004", "doc-005"],
            (True, False, True, True),
            [
                "citations: 5 documents cited; cite only the documents that state the facts of the answer's "
                "chain (at most 3)"
            ],
        ),
        (
            "ANSWER: Dorrin\nSOURCES: doc-001, doc-002, doc-003, doc-001",
            ["doc-001", "doc-002", "doc-003"],
            (True, True, True, True),
            [],
        ),
    ],
)
def test_structural_check_items_and_findings_in_words(
    text: str, gathered: list[str], items: tuple[bool, ...], issues: list[str]
) -> None:
    """The CHECK's four items and its findings, exactly: format (showing the form), citations unknown,
    too many (distinct ids, at most three), never retrieved, and an answer no retrieved cited document
    states; each finding tagged with its component."""
    report = structural_check(payload(), text, gathered)
    names = ("format", "citations_well_formed", "citations_retrieved", "answer_grounded")
    assert report.items == tuple(zip(names, items, strict=True))
    assert [str(i) for i in report.issues] == issues
    assert [i.component for i in report.issues] == [_research_component(i) for i in issues]


# -- the parsing helpers, called directly: ``parse`` keeps its results per text, so a text parsed once
# -- (e.g. by an earlier test in the same process) would not run them again
def test_instructions_state_each_formats_shape_and_example() -> None:
    rule = "List every document you relied on by its id (doc- followed by three digits). Write nothing else."
    assert FORMATS["caps-comma"].instructions() == (
        f"Reply with exactly two lines, in this form:\nANSWER: <answer>\nSOURCES: doc-NNN, doc-NNN\n{rule}"
    )
    assert FORMATS["json"].instructions() == (
        "Reply with a single JSON object with exactly two keys, on its own, in this form:\n"
        f'{{"answer": "<answer>", "sources": ["doc-NNN", "doc-NNN"]}}\n{rule}'
    )
    assert FORMATS["tags"].instructions() == (
        "Reply with exactly two lines of tags, in this form:\n"
        f"<answer><answer></answer>\n<sources>doc-NNN doc-NNN</sources>\n{rule}"
    )


def test_a_field_is_the_one_line_with_its_label_in_any_case_and_separator() -> None:
    from harness_gym.domains.research.verifier import _field

    assert _field("Answer", "intro\n  answer :\tParis  \nSources: doc-001") == "Paris"
    assert _field("FINAL ANSWER", "final answer = 42") == "42"
    assert _field("Sources", "Sources - doc-001") == "doc-001"
    assert _field("Answer", "Answer: a\nAnswer: b") is None  # two lines: which one is meant is unknown
    assert _field("Answer", "Sources: doc-001") is None
    assert _field("A.B", "AxB: 1") is None  # the label is literal text, not a pattern


def test_repeated_json_keys_are_refused() -> None:
    from harness_gym.domains.research.verifier import _unique_keys

    assert _unique_keys([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}
    with pytest.raises(ValueError, match=r"^repeated key in a JSON object$"):
        _unique_keys([("a", 1), ("a", 2)])


def test_id_tokens_split_at_spaces_commas_semicolons_brackets_and_quotes() -> None:
    from harness_gym.domains.research.verifier import _tokens

    assert _tokens(" [doc-001], 'doc-002';\"doc-003\" (doc-004)  ") == (
        "doc-001",
        "doc-002",
        "doc-003",
        "doc-004",
    )
    assert _tokens("") == ()


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ('  {"answer": "x", "sources": []}\n', ({"answer": "x", "sources": []}, True)),
        ("[1, 2]", ([1, 2], True)),
        ('Here it is: {"a": 1} done', ({"a": 1}, False)),  # an object inside other text: not on its own
        ('so {\n"a": 1\n} end', ({"a": 1}, False)),  # over several lines
        ('{"a": 1, "a": 2}', (None, False)),
        ('x {"a": 1, "a": 2} y', (None, False)),
        ("no object here", (None, False)),
        ("x {not json} y", (None, False)),
    ],
)
def test_json_is_read_whole_or_from_the_first_brace_to_the_last(text: str, parsed: tuple) -> None:
    from harness_gym.domains.research.verifier import _parse_json

    assert _parse_json(text) == parsed


def test_a_json_reply_is_rendered_with_its_characters_unescaped() -> None:
    assert FORMATS["json"].render("Zürich", ["doc-001"]) == '{"answer": "Zürich", "sources": ["doc-001"]}'


def test_a_payload_may_allow_more_citations_than_the_v0_chains_need() -> None:
    docs = [{"id": f"doc-00{i}", "text": f"Fact {i}."} for i in range(1, 6)]
    payload = {"format": "caps-comma", "docs": docs}
    text = "ANSWER: x\nSOURCES: doc-001, doc-002, doc-003, doc-004"
    gathered = [d["id"] for d in docs]

    def too_many(payload: dict[str, Any]) -> list[str]:
        found = structural_check(payload, text, gathered).issues
        return [str(i) for i in found if i.component == "too_many_citations"]

    assert too_many(payload) == [
        "citations: 4 documents cited; cite only the documents that state the facts of the answer's chain "
        "(at most 3)"
    ]
    assert too_many({**payload, "max_citations": 4}) == []
