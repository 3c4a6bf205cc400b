"""Deterministic generator for ``research-v0.jsonl``: 100 multi-hop questions, each over its own corpus.

A template family is a relation chain ("the founder of the company that makes X" -> birthplace) with a
difficulty; every family has its own chain, so held-out families ask different kinds of question. Each
task instantiates its family in a fresh fictional world and writes a small corpus around the chain:

- gold documents, one per hop, each stating that hop's fact;
- near-miss entities (similar names, different facts) and, from standard difficulty on, a whole
  distractor chain starting at a near-miss of the question's entity (hard: every entity on it is a
  near-miss of the gold one);
- superseded documents for facts that changed (moved headquarters, former chief executive, old census);
- decoys that mention an entity of the question without stating its facts, and unrelated pages.

A draw is kept only if each hop's fact is stated by its gold document and by no other document, the last
hop cannot be found by searching with the question alone, and repeated searches (question plus what was
read) reach every gold document within the search cap. Flawed answers imitate what an LLM gets wrong and
are each checked against the verifier.

``--version v1`` writes ``research-v1.jsonl``, the task set of MDP v2 (``FAMILIES_V1``): comparison and
bridge questions in HotpotQA's and MuSiQue's shares (``V1_TYPE_COUNTS``), 4-hop chains among them, the
same difficulty mix in every type and corpora of one size (``CORPUS_V1``).
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness_gym.domains.generation import (
    POOL_MIN,
    VERSION,
    Reject,
    family_records,
    family_splits,
    task_file,
    write_versioned,
)
from harness_gym.domains.research.corpus import MAX_SEARCHES, CorpusSearch, contains_phrase, sentences
from harness_gym.domains.research.verifier import (
    CRITERIA,
    EVAL_FORMATS,
    FORMATS,
    TRAIN_FORMATS,
    AnswerFormat,
    grade,
)
from harness_gym.domains.research.world import (
    ENTITY_TYPES,
    Entity,
    NameBank,
    TaskWorld,
    decoy_doc,
    entity_doc,
    superseded_doc,
    value_text,
)

OUTPUT = task_file("research")
FLAWS = ("distractor_answer", "wrong_hop", "missing_citation", "cite_distractor", "malformed", "outdated")
MAX_ATTEMPTS = 80
PER_FLAW = {
    "distractor_answer": 3,
    "wrong_hop": 2,
    "missing_citation": 2,
    "cite_distractor": 2,
    "malformed": 2,
    "outdated": 1,
}


@dataclass(frozen=True)
class Relation:
    """One hop: a fact of the subject, how a question refers to its object, how it asks for it."""

    attr: str
    subjects: tuple[str, ...]
    object: str
    np: str
    question: str
    changeable: bool = False


RELATIONS: dict[str, Relation] = {
    r.attr: r
    for r in (
        Relation("maker", ("product",), "company", "the company that makes {}", "Which company makes {}?"),
        Relation("director", ("film",), "person", "the director of {}", "Who directed {}?"),
        Relation("author", ("book",), "person", "the author of {}", "Who wrote {}?"),
        Relation("builder", ("ship",), "company", "the shipyard that built {}", "Which shipyard built {}?"),
        Relation("founder", ("company",), "person", "the founder of {}", "Who founded {}?"),
        Relation(
            "chief",
            ("company",),
            "person",
            "the current chief executive of {}",
            "Who is the current chief executive of {}?",
            changeable=True,
        ),
        Relation(
            "hq",
            ("company",),
            "city",
            "the city where {} is headquartered today",
            "In which city is {} headquartered today?",
            changeable=True,
        ),
        Relation(
            "parent", ("company",), "company", "the parent company of {}", "What is the parent company of {}?"
        ),
        Relation("birthplace", ("person",), "city", "the birthplace of {}", "In which city was {} born?"),
        Relation(
            "alma_mater",
            ("person",),
            "university",
            "the university attended by {}",
            "Which university did {} attend?",
        ),
        Relation(
            "location",
            ("university",),
            "city",
            "the city where {} is located",
            "In which city is {} located?",
        ),
        Relation("birth_year", ("person",), "year", "", "In what year was {} born?"),
        Relation("founded", ("company", "university"), "year", "", "In what year was {} founded?"),
        Relation(
            "population",
            ("city",),
            "number",
            "",
            "What is the current population of {}?",
            changeable=True,
        ),
        Relation("region", ("city",), "region", "", "In which province is {}?"),
    )
}
ANCHOR_PHRASE = {"film": "the film {}", "book": "the novel {}", "ship": "the vessel {}", "product": "the {}"}


@dataclass(frozen=True)
class Family:
    """A template family: one relation chain at one difficulty (a bridge question), or, with ``compare``
    set to an entity type, two entities of that type compared on the chain's one relation."""

    difficulty: str
    chain: tuple[str, ...]
    count: int
    compare: str | None = None

    @property
    def template(self) -> str:
        if self.compare is not None:
            return f"compare/{self.compare}.{self.chain[0]}/{self.difficulty}"
        return f"{len(self.chain)}hop/{'>'.join(self.chain)}"


def _families() -> tuple[Family, ...]:
    easy = (
        "founder>birthplace", "maker>hq", "director>birth_year", "author>alma_mater", "alma_mater>location",
        "builder>founded", "hq>region", "chief>birth_year", "parent>founder", "birthplace>population",
    )  # fmt: skip
    standard = (
        "founder>alma_mater", "maker>founder", "director>birthplace", "author>birth_year",
        "location>population", "builder>hq", "parent>chief",
        "maker>founder>birthplace", "director>alma_mater>location", "author>birthplace>region",
        "builder>founder>birth_year", "parent>hq>population", "founder>alma_mater>founded",
        "chief>birthplace>region", "maker>hq>region",
    )  # fmt: skip
    hard = (
        "maker>chief>birthplace", "director>birthplace>population", "author>alma_mater>location",
        "builder>chief>alma_mater", "parent>founder>birthplace", "founder>birthplace>population",
        "maker>founder>alma_mater", "author>alma_mater>founded", "builder>hq>population",
        "chief>alma_mater>location",
    )  # fmt: skip
    out = [Family("easy", tuple(c.split(">")), 2) for c in easy]
    out += [Family("standard", tuple(c.split(">")), 4) for c in standard]
    out += [Family("hard", tuple(c.split(">")), 2) for c in hard]
    for family in out:
        rels = [RELATIONS[r] for r in family.chain]
        for a, b in itertools.pairwise(rels):
            if a.object not in b.subjects:
                raise AssertionError(f"{family.template}: {a.attr} does not lead to {b.attr}")
    return tuple(out)


FAMILIES = _families()

# --------------------------------------------------------------------------------------------------
# The task set of MDP v2 (``research-v1.jsonl``)

V1_TYPE_COUNTS = {"comparison": 20, 2: 42, 3: 25, 4: 13}
"""Tasks per question type in ``research-v1`` (100, as v0). Comparison versus bridge: HotpotQA's dev set
(distractor setting) has 5,918 bridge and 1,487 comparison questions (Yang et al. 2018), 79.9% / 20.1%:
20 comparison questions. Hops of the 80 bridge questions: MuSiQue-Ans dev (Trivedi et al. 2022) has 1,252
2-hop, 760 3-hop and 405 4-hop questions of 2,417, 51.8% / 31.4% / 16.8%: 42 / 25 / 13 of 80 (41.4 / 25.1 /
13.4, rounded so the counts add up)."""
V1_DIFFICULTIES = {
    "comparison": {"easy": 4, "standard": 12, "hard": 4},
    2: {"easy": 8, "standard": 26, "hard": 8},
    3: {"easy": 5, "standard": 15, "hard": 5},
    4: {"easy": 3, "standard": 7, "hard": 3},
}
"""The v0 mix of difficulties (20% easy, 60% standard, 20% hard) within every question type alike, rounded
symmetrically, so the hidden difficulty says nothing about a question's type or hop count (assumption: no
source gives the corpus-side difficulty of a question by its type; that more hops are harder comes from the
search, which has to find one more page per hop)."""
COMPARISONS = {
    ("person", "birth_year"): "Who was born earlier, {} or {}?",
    ("company", "founded"): "Which company was founded earlier, {} or {}?",
    ("university", "founded"): "Which university was founded earlier, {} or {}?",
}
"""HotpotQA's comparison questions ask which of two named entities has the larger or earlier value of one
property; here of a year (the answer is the entity's name)."""
CORPUS_V1 = 17
"""Documents in every v1 corpus, whatever the question's difficulty (the v0 corpora grow with it, 7 to
17): the benchmarks give every question the same number of paragraphs, its supporting ones plus
distractors (MuSiQue 20, Trivedi et al. 2022; HotpotQA's distractor setting 10, Yang et al. 2018). 17, the
largest v0 corpus, is an assumption: it holds the hardest question's structure (four gold pages, four
near-misses, superseded pages, decoys) plus unrelated pages, and a task world's invented first names run
out above it. Unrelated pages fill what the question's structure leaves, so the size of the collection
says nothing about the hidden difficulty."""
MAX_CITATIONS_V1 = 4
"""The longest chain of the v1 tasks, which the CHECK states as the most documents an answer may cite."""


def _v1_chains(hops: int) -> list[tuple[str, ...]]:
    """Every chain of ``hops`` distinct relations in which each hop leads to the next, in a seeded order."""
    rels = list(RELATIONS.values())
    chains = [
        tuple(r.attr for r in combo)
        for combo in itertools.product(rels, repeat=hops)
        if len({r.attr for r in combo}) == hops
        and all(a.object in b.subjects for a, b in itertools.pairwise(combo))
    ]
    random.Random(f"research-v1/chains/{hops}").shuffle(chains)
    return chains


def _families_v1() -> tuple[Family, ...]:
    """Bridge families of one task each (two each for 2-hop, which has fewer distinct chains), then
    comparison families of two or four tasks, difficulties by ``V1_DIFFICULTIES`` within each type."""
    out: list[Family] = []
    for hops in (2, 3, 4):
        per = 2 if hops == 2 else 1
        chains = iter(_v1_chains(hops))
        for difficulty, n in V1_DIFFICULTIES[hops].items():
            for _ in range(n // per):
                out.append(Family(difficulty, next(chains), per))
    kinds = list(COMPARISONS)
    for difficulty, n in V1_DIFFICULTIES["comparison"].items():
        size = 4 if n >= 12 else 2
        for k in range(n // size):
            subject, attr = kinds[k % len(kinds)]
            out.append(Family(difficulty, (attr,), size, compare=subject))
    if sum(f.count for f in out) != sum(V1_TYPE_COUNTS.values()) or any(
        sum(V1_DIFFICULTIES[kind].values()) != n for kind, n in V1_TYPE_COUNTS.items()
    ):
        raise AssertionError("v1 families do not add up to the type counts")
    return tuple(out)


FAMILIES_V1 = _families_v1()
EXTRA_DOCS = {"easy": (4, 0), "standard": (6, 1), "hard": (7, 2)}
"""(unrelated pages, decoy mentions) per difficulty."""


def question_text(chain: Sequence[Relation], anchor: Entity) -> str:
    phrase = ANCHOR_PHRASE.get(anchor.type, "{}").format(anchor.name)
    for rel in chain[:-1]:
        phrase = rel.np.format(phrase)
    return chain[-1].question.format(phrase)


# --------------------------------------------------------------------------------------------------
# Worlds and corpora


@dataclass
class Draft:
    """A task in the making: the corpus with roles, the chain and what the flawed answers need."""

    question: str
    docs: list[dict[str, str]]
    gold: list[int]
    hops: list[dict[str, Any]]
    answer: str
    aliases: list[str]
    chain_entities: list[Entity]
    twins: dict[int, int]
    """hop index -> document index of a near-miss of that hop's subject."""
    distractor_chain: list[int]
    distractor_answer: str | None
    final_twin_answer: str
    superseded: dict[int, int]
    """hop index -> document index of a superseded page about that hop's subject and relation."""
    old_answer: str | None


def _twin(world: TaskWorld, entity: Entity, need: tuple[str, ...], differ: str | None) -> Entity:
    """A near-miss of ``entity``; its ``differ`` attribute must not equal the original's."""
    name = world.near_miss_name(entity)
    for _ in range(20):
        twin = world.new(entity.type, name=name, need=need)
        if differ is None or twin.attrs[differ] != entity.attrs[differ]:
            return twin
    raise Reject("near-miss kept the same value")


def build_world(family: Family, bank: NameBank, rng: random.Random, corpus_size: int | None = None) -> Draft:
    world = TaskWorld(bank, rng)
    chain = [RELATIONS[r] for r in family.chain]
    n = len(chain)
    hard, easy = family.difficulty == "hard", family.difficulty == "easy"
    ents = [world.new(chain[0].subjects[0], need=(chain[0].attr,))]
    for k in range(1, n):
        ents.append(
            world.new(chain[k - 1].object, name=ents[k - 1].attrs[chain[k - 1].attr], need=(chain[k].attr,))
        )
    changed = {k for k, rel in enumerate(chain) if rel.changeable and (k == n - 1 or not easy)}
    for k in changed:
        world.change(ents[k], chain[k].attr)
    answer = value_text(ents[-1], chain[-1].attr)
    last = chain[-1].attr

    docs: list[dict[str, str]] = []

    def add(entity_or_doc: Entity | tuple[str, str], role: str) -> int:
        title, text = entity_doc(entity_or_doc, rng) if isinstance(entity_or_doc, Entity) else entity_or_doc
        docs.append({"title": title, "text": text, "role": role})
        return len(docs) - 1

    gold = [add(e, "gold") for e in ents]
    twins: dict[int, int] = {}
    distractor_chain: list[int] = []
    distractor_answer = None
    if easy:
        final_twin = _twin(world, ents[-1], (last,), last)
        twins[n - 1] = add(final_twin, "near_miss")
    elif not hard:
        final_twin = _twin(world, ents[-1], (last,), last)
        twins[n - 1] = add(final_twin, "near_miss")
        stub = [_twin(world, ents[0], (chain[0].attr,), None)]
        for k in range(1, n):
            stub.append(
                world.new(chain[k - 1].object, name=stub[-1].attrs[chain[k - 1].attr], need=(chain[k].attr,))
            )
        twins[0] = len(docs)
        distractor_chain = [add(e, "distractor_chain") for e in stub]
        distractor_answer = value_text(stub[-1], last)
    else:
        stub = []
        for k in range(n):
            twin = _twin(world, ents[k], (chain[k].attr,), last if k == n - 1 else None)
            if stub:
                stub[-1].attrs[chain[k - 1].attr] = twin.name
            stub.append(twin)
        distractor_chain = [add(e, "near_miss") for e in stub]
        twins = dict(enumerate(distractor_chain))
        final_twin = stub[-1]
        distractor_answer = value_text(stub[-1], last)
    superseded = {k: add(superseded_doc(ents[k], chain[k].attr, rng), "superseded") for k in sorted(changed)}
    old_answer = None
    if n - 1 in changed:
        old = {"hq": "moved_from", "chief": "prev_chief", "population": "prev_population"}[last]
        old_answer = value_text(ents[-1], old)
    unrelated, decoys = EXTRA_DOCS[family.difficulty]
    for entity in ents[:decoys]:
        add(decoy_doc(entity, world), "decoy")
    chain_types = [e.type for e in ents]
    if corpus_size is not None:
        unrelated = corpus_size - len(docs)
    for _ in range(unrelated):
        kind = rng.choice(chain_types) if rng.random() < 0.6 else rng.choice(ENTITY_TYPES)
        other = world.new(kind)
        if kind == "company" and rng.random() < 0.3:
            world.change(other, rng.choice(("hq", "chief")))
        if kind == "city" and rng.random() < 0.3:
            world.change(other, "population")
        add(other, "unrelated")

    hops = [
        {
            "subject": ents[k].name,
            "relation": chain[k].attr,
            "object": ents[k + 1].name if k < n - 1 else answer,
        }
        for k in range(n)
    ]
    aliases = [f"province of {answer}", f"{answer} province"] if last == "region" else []
    return Draft(
        question=question_text(chain, ents[0]),
        docs=docs,
        gold=gold,
        hops=hops,
        answer=answer,
        aliases=aliases,
        chain_entities=ents,
        twins=twins,
        distractor_chain=distractor_chain,
        distractor_answer=distractor_answer,
        final_twin_answer=value_text(final_twin, last),
        superseded=superseded,
        old_answer=old_answer,
    )


def build_comparison(family: Family, bank: NameBank, rng: random.Random, corpus_size: int) -> Draft:
    """Two entities of one type, compared on one year: which comes first. Every difficulty adds a
    near-miss of the answer entity (whose year would reverse the comparison, so confusing the two flips
    the answer); from standard on, a near-miss of the other one too; decoys as for a bridge question;
    unrelated pages up to ``corpus_size``."""
    assert family.compare is not None
    world = TaskWorld(bank, rng)
    attr = family.chain[0]
    pair = [world.new(family.compare, need=(attr,)) for _ in range(2)]
    if pair[0].attrs[attr] == pair[1].attrs[attr]:
        raise Reject("the two values coincide")
    first, other = sorted(pair, key=lambda e: e.attrs[attr])
    docs: list[dict[str, str]] = []

    def add(entity_or_doc: Entity | tuple[str, str], role: str) -> int:
        title, text = entity_doc(entity_or_doc, rng) if isinstance(entity_or_doc, Entity) else entity_or_doc
        docs.append({"title": title, "text": text, "role": role})
        return len(docs) - 1

    gold = [add(e, "gold") for e in pair]
    twin = _twin(world, first, (attr,), attr)
    twin.attrs[attr] = other.attrs[attr] + rng.randint(1, 9)
    twins = {pair.index(first): add(twin, "near_miss")}
    if family.difficulty != "easy":
        second = _twin(world, other, (attr,), attr)
        second.attrs[attr] = first.attrs[attr] - rng.randint(1, 9)
        twins[pair.index(other)] = add(second, "near_miss")
    decoys = EXTRA_DOCS[family.difficulty][1]
    for entity in pair[:decoys]:
        add(decoy_doc(entity, world), "decoy")
    for _ in range(corpus_size - len(docs)):
        kind = family.compare if rng.random() < 0.6 else rng.choice(ENTITY_TYPES)
        add(world.new(kind), "unrelated")
    hops = [{"subject": e.name, "relation": attr, "object": value_text(e, attr)} for e in pair]
    return Draft(
        question=COMPARISONS[(family.compare, attr)].format(pair[0].name, pair[1].name),
        docs=docs,
        gold=gold,
        hops=hops,
        answer=first.name,
        aliases=[],
        chain_entities=pair,
        twins=twins,
        distractor_chain=[],
        distractor_answer=other.name,
        final_twin_answer=twin.name,
        superseded={},
        old_answer=None,
    )


def assign_ids(draft: Draft, rng: random.Random) -> list[str]:
    """Random distinct ``doc-NNN`` ids; documents are then listed in id order."""
    numbers = rng.sample(range(1, 1000), len(draft.docs))
    return [f"doc-{number:03d}" for number in numbers]


def supporting_docs(docs: Sequence[dict[str, str]], hop: dict[str, Any]) -> list[int]:
    return [
        i
        for i, doc in enumerate(docs)
        if any(
            contains_phrase(s, hop["subject"]) and contains_phrase(s, hop["object"])
            for s in sentences(doc["text"])
        )
    ]


def searches_to_cover(docs: Sequence[dict[str, str]], question: str, gold: Sequence[str]) -> tuple[int, bool]:
    """(searches until every gold document was returned, whether the last hop came up in the first)."""
    search = CorpusSearch(docs, question)
    evidence: list[str] = []
    first_has_last = False
    for round_ in range(1, MAX_SEARCHES + 1):
        found = search.next(evidence)
        if not found:
            break
        if round_ == 1:
            first_has_last = gold[-1] in found
        evidence.extend(found)
        if set(gold) <= set(evidence):
            return round_, first_has_last
    return MAX_SEARCHES + 1, first_has_last


# --------------------------------------------------------------------------------------------------
# Flawed answers


def _malformed(fmt: AnswerFormat, answer: str, ids: Sequence[str]) -> list[str]:
    good = fmt.render(answer, ids)
    out = [
        f"The answer is {answer}, according to {' and '.join(ids)}.",
        fmt.render(answer, [i.removeprefix("doc-") for i in ids]),
        good + "\nThis follows from the documents cited above.",
        (FORMATS["json"] if fmt.kind != "json" else FORMATS["caps-comma"]).render(answer, ids),
    ]
    if fmt.kind == "json":
        out.append(json.dumps({"answer": answer, "sources": list(ids), "confidence": "high"}))
    else:
        out.append(good.replace("\n", " "))
    if fmt.kind == "lines":
        out.append(good.replace(f"{fmt.answer_label}: ", f"{fmt.answer_label.lower()} - ", 1))
    return out


def _acceptable(flaw: str, rubric: dict[str, tuple[float, float]]) -> bool:
    """A variant is kept only if it loses points in the way its label says."""
    score = sum(s for s, _ in rubric.values())
    if score >= sum(m for _, m in rubric.values()):
        return False
    answer_ok = rubric["answer_correctness"][0] == rubric["answer_correctness"][1]
    format_ok = rubric["output_format"][0] == rubric["output_format"][1]
    evidence_full = rubric["evidence_support"][0] == rubric["evidence_support"][1]
    if flaw in ("distractor_answer", "wrong_hop", "outdated"):
        return not answer_ok and format_ok
    if flaw in ("missing_citation", "cite_distractor"):
        return answer_ok and not evidence_full
    if flaw == "malformed":
        return not format_ok
    raise ValueError(flaw)


def build_pool(
    draft: Draft, ids: list[str], payload: dict[str, Any], rng: random.Random
) -> list[dict[str, str]]:
    fmt = FORMATS[payload["format"]]
    gold = [ids[i] for i in draft.gold]
    n = len(gold)
    answer = draft.answer
    candidates: dict[str, list[str]] = {flaw: [] for flaw in FLAWS}
    twin_last = ids[draft.twins[n - 1]]
    candidates["distractor_answer"] += [
        fmt.render(draft.final_twin_answer, [*gold[:-1], twin_last]),
        fmt.render(draft.final_twin_answer, [twin_last]),
    ]
    if draft.distractor_chain and draft.distractor_answer is not None:
        chain_ids = [ids[i] for i in draft.distractor_chain]
        candidates["distractor_answer"].append(fmt.render(draft.distractor_answer, chain_ids))
    ents = draft.chain_entities
    candidates["wrong_hop"].append(fmt.render(ents[-1].name, gold[:-1]))
    for k in range(n - 2, 0, -1):
        candidates["wrong_hop"].append(fmt.render(ents[k].name, gold[:k]))
    dropped = rng.randrange(n - 1)
    candidates["missing_citation"] += [
        fmt.render(answer, gold[-1:]),
        fmt.render(answer, [g for i, g in enumerate(gold) if i != dropped]),
    ]
    if rng.random() < 0.4:
        candidates["missing_citation"].append(fmt.render(answer, []))
    unrelated = [ids[i] for i, doc in enumerate(draft.docs) if doc["role"] in ("unrelated", "decoy")]
    for k in rng.sample(range(n), n):
        if k in draft.twins:
            swap = ids[draft.twins[k]]
        elif k in draft.superseded:
            swap = ids[draft.superseded[k]]
        else:
            swap = rng.choice(unrelated)
        candidates["cite_distractor"].append(
            fmt.render(answer, [swap if i == k else g for i, g in enumerate(gold)])
        )
    candidates["malformed"] = rng.sample(_malformed(fmt, answer, gold), 3)
    if draft.old_answer is not None:
        stale = ids[draft.superseded[n - 1]]
        candidates["outdated"].append(fmt.render(draft.old_answer, [*gold[:-1], stale]))
    return _keep(candidates, payload)


def build_comparison_pool(
    draft: Draft, ids: list[str], payload: dict[str, Any], rng: random.Random
) -> list[dict[str, str]]:
    """What goes wrong in a comparison: the other entity (or the answer's near-miss) picked, the year
    given instead of the name, one of the two pages not cited or a near-miss page cited, a format slip."""
    fmt = FORMATS[payload["format"]]
    gold = [ids[i] for i in draft.gold]
    answer, k = draft.answer, [e.name for e in draft.chain_entities].index(draft.answer)
    candidates: dict[str, list[str]] = {flaw: [] for flaw in FLAWS}
    assert draft.distractor_answer is not None
    twin = ids[draft.twins[k]]
    candidates["distractor_answer"] += [
        fmt.render(draft.distractor_answer, gold),
        fmt.render(draft.final_twin_answer, [twin if i == k else g for i, g in enumerate(gold)]),
        fmt.render(draft.final_twin_answer, [twin]),
    ]
    candidates["wrong_hop"].append(fmt.render(payload["hops"][k]["object"], gold))
    candidates["missing_citation"] += [fmt.render(answer, [gold[k]]), fmt.render(answer, [gold[1 - k]])]
    if rng.random() < 0.4:
        candidates["missing_citation"].append(fmt.render(answer, []))
    unrelated = [ids[i] for i, doc in enumerate(draft.docs) if doc["role"] in ("unrelated", "decoy")]
    for j in rng.sample(range(2), 2):
        swap = ids[draft.twins[j]] if j in draft.twins else rng.choice(unrelated)
        cited = [swap if i == j else g for i, g in enumerate(gold)]
        candidates["cite_distractor"].append(fmt.render(answer, cited))
    candidates["malformed"] = rng.sample(_malformed(fmt, answer, gold), 3)
    return _keep(candidates, payload)


def _keep(candidates: dict[str, list[str]], payload: dict[str, Any]) -> list[dict[str, str]]:
    """Up to ``PER_FLAW`` new candidates of each flaw kind that lose points as their label says."""
    reference = payload["reference"]
    seen = {reference}
    pool: list[dict[str, str]] = []
    for flaw in FLAWS:
        kept = 0
        for text in candidates[flaw]:
            if kept == PER_FLAW[flaw] or text in seen:
                continue
            if not _acceptable(flaw, grade(payload, text).rubric):
                continue
            seen.add(text)
            pool.append({"flaw": flaw, "source": text})
            kept += 1
    if len(pool) < POOL_MIN:
        raise Reject("too few flawed answers")
    return pool


# --------------------------------------------------------------------------------------------------
# Tasks


def prompt_text(question: str, n_docs: int, fmt: AnswerFormat) -> str:
    return (
        "Answer the question below from the task's document collection, which you can search "
        f"({n_docs} short documents with ids of the form doc-NNN). Answering takes several lookups, one "
        "fact per document. Some documents describe entities with similar names, and some state facts that "
        "have since changed: rely on the current facts about exactly the entities the question refers to.\n\n"
        f"Question: {question}\n\n"
        f"{fmt.instructions()} Write years and numbers in digits."
    )


def build_task(
    family: Family, fmt_key: str, bank: NameBank, rng: random.Random, version: str = VERSION
) -> tuple[str, dict[str, Any]]:
    compare = family.compare is not None
    try:
        if compare:
            draft = build_comparison(family, bank, rng, CORPUS_V1)
        else:
            draft = build_world(family, bank, rng, None if version == VERSION else CORPUS_V1)
    except RuntimeError as error:  # a task world ran out of invented first names: draw again
        if not str(error).startswith("could not find a fresh"):
            raise
        raise Reject(str(error)) from None
    ids = assign_ids(draft, rng)
    docs = [{"id": ids[i], **doc} for i, doc in enumerate(draft.docs)]
    for k, hop in enumerate(draft.hops):
        if supporting_docs(docs, hop) != [draft.gold[k]]:
            raise Reject(f"hop {k} is stated by other documents too")
    order = sorted(range(len(docs)), key=lambda i: ids[i])
    ordered = [docs[i] for i in order]
    gold = [ids[i] for i in draft.gold]
    searches, first_has_last = searches_to_cover(ordered, draft.question, gold)
    if first_has_last and not compare:
        raise Reject("the last hop is findable from the question alone")
    if searches > MAX_SEARCHES:
        raise Reject("some gold document is not reachable within the search cap")
    hops = [{**hop, "doc": gold[k]} for k, hop in enumerate(draft.hops)]
    fmt = FORMATS[fmt_key]
    payload: dict[str, Any] = {
        "question": draft.question,
        "format": fmt_key,
        "docs": ordered,
        "hops": hops,
        "answer": draft.answer,
        "aliases": draft.aliases,
        "gold_docs": gold,
        "searches_needed": searches,
        "reference": fmt.render(draft.answer, gold),
    }
    if version != VERSION:
        payload["max_citations"] = MAX_CITATIONS_V1
    rubric = grade(payload, payload["reference"]).rubric
    if any(score != top for score, top in rubric.values()) or set(rubric) != set(CRITERIA):
        raise AssertionError(f"reference does not score the maximum: {rubric}")
    payload["pool"] = (build_comparison_pool if compare else build_pool)(draft, ids, payload, rng)
    return prompt_text(draft.question, len(ordered), fmt), payload


def generate_records(version: str = VERSION) -> list[dict[str, Any]]:
    """All task records of the task set ``version`` in id order (v0: ``FAMILIES``, the paper's; v1:
    ``FAMILIES_V1``, MDP v2's), with splits assigned; deterministic for a given code version.

    Each split's families take its answer formats in turn; each split draws names from its own bank."""
    families = FAMILIES if version == VERSION else FAMILIES_V1
    splits = family_splits("research", families)
    used: set[str] = set()
    banks = {name: NameBank(name, used) for name in ("train", "eval")}
    counters = {"train": 0, "eval": 0}
    fmt_keys: dict[str, str] = {}
    for family in families:
        split = splits[family.template]
        formats = TRAIN_FORMATS if split == "train" else EVAL_FORMATS
        fmt_keys[family.template] = formats[counters[split] % len(formats)]
        counters[split] += 1

    def build(family: Family, rng: random.Random) -> tuple[str, dict[str, Any]]:
        return build_task(family, fmt_keys[family.template], banks[splits[family.template]], rng, version)

    return family_records("research", families, build, MAX_ATTEMPTS, version=version)


def main(argv: Sequence[str] | None = None) -> int:
    """``[--version v1] [path]``: write the v0 task set (default) or MDP v2's."""
    return write_versioned("research", generate_records, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
