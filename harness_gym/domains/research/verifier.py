"""Judging a research answer: parse it in the task's answer format, then score it against the corpus.

An answer artifact is text in one of the ``FORMATS`` (the task prompt states which), carrying an answer
value and the ids of the documents it cites, e.g.::

    ANSWER: Tarsk
    SOURCES: doc-017, doc-203

Rubric (``CRITERIA``, maxima):

- ``answer_correctness``: the parsed answer equals the gold answer after normalisation (case, articles,
  punctuation, thousands separators; numbers compared as numbers; listed aliases accepted).
- ``evidence_support``: per hop of the question's chain, whether some cited document has a sentence
  stating that hop's fact (its subject and its object named together); credit is the supported fraction,
  less one hop for every cited document beyond one per hop (citing the whole corpus supports nothing).
  This reads the cited documents' text, never a list of gold ids.
- ``citation_format``: the fraction of the cited ids that are well formed (``doc-NNN``), exist in the
  corpus and are not repeated; 0 when nothing is cited in the sources field.
- ``output_format``: the artifact is exactly the required structure, nothing more.

``structural_check`` is what a harness CHECK may compute (format, citation ids, citations among the
retrieved documents, no more citations than the longest chain has hops, the answer appearing in a cited
retrieved document): it never reads the gold answer or the hop facts.

What earns nothing: an answer that is not the one parsed value (two answer fields, or a JSON object
with a repeated key, leave no answer; a list of candidates or padding around the value does not
normalise to the gold answer), citations of ids
that are not in the corpus, and citing many documents to cover every hop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from harness_gym.domains.research.corpus import contains_phrase, normalize, normalize_answer, sentences
from harness_gym.executors.base import Finding

CRITERIA: dict[str, float] = {
    "answer_correctness": 7.0,
    "evidence_support": 2.0,
    "citation_format": 0.5,
    "output_format": 0.5,
}
"""The answer carries most of the weight and its support most of the rest: a well-cited, well-formatted
answer about the wrong entity earns little (0.1 to 0.23), a right answer with a missing or wrong
citation keeps most (0.7 to 0.93); format slips cost 0.05 to 0.8 depending on what can still be read.
Chosen together with ``ResearchCompetence`` to calibrate the Base harness."""

DOC_ID = re.compile(r"doc-\d{3}")
_LOOSE_ID = re.compile(r"(?<![\w-])doc-\d+(?![\w-])", re.IGNORECASE)
_ID_SPLIT = re.compile(r"[\s,;\[\]\"'()]+")
_UNITS = frozenset({"people", "inhabitants", "residents"})
MAX_HOPS = 3
"""The longest question chain of the v0 tasks: a CHECK flags drafts citing more documents than that (a task
set with longer chains states its own limit, ``max_citations`` in every payload)."""


@dataclass(frozen=True)
class AnswerFormat:
    """One required output format: how the answer and the cited ids are laid out."""

    key: str
    kind: Literal["lines", "json", "tags"]
    answer_label: str = ""
    sources_label: str = ""
    joiner: str = ", "
    brackets: bool = False

    def render(self, answer: str, ids: Sequence[str]) -> str:
        if self.kind == "json":
            return json.dumps({"answer": answer, "sources": list(ids)}, ensure_ascii=False)
        if self.kind == "tags":
            return f"<answer>{answer}</answer>\n<sources>{' '.join(ids)}</sources>"
        cited = self.joiner.join(f"[{i}]" if self.brackets else i for i in ids)
        return f"{self.answer_label}: {answer}\n{self.sources_label}: {cited}"

    def instructions(self) -> str:
        """The format as the task prompt states it."""
        example = self.render("<answer>", ["doc-NNN", "doc-NNN"])
        if self.kind == "json":
            shape = "a single JSON object with exactly two keys, on its own"
        elif self.kind == "tags":
            shape = "exactly two lines of tags"
        else:
            shape = "exactly two lines"
        return (
            f"Reply with {shape}, in this form:\n{example}\n"
            "List every document you relied on by its id (doc- followed by three digits). Write nothing else."
        )

    @property
    def ids_pattern(self) -> re.Pattern[str]:
        one = r"\[doc-\d{3}\]" if self.brackets else r"doc-\d{3}"
        return re.compile(rf"{one}(?:{re.escape(self.joiner)}{one})*")


FORMATS: dict[str, AnswerFormat] = {
    fmt.key: fmt
    for fmt in (
        AnswerFormat("caps-comma", "lines", "ANSWER", "SOURCES", ", "),
        AnswerFormat("title-brackets", "lines", "Answer", "Citations", " ", brackets=True),
        AnswerFormat("json", "json"),
        AnswerFormat("final-semicolon", "lines", "FINAL ANSWER", "EVIDENCE", "; "),
        AnswerFormat("tags", "tags", joiner=" "),
    )
}
TRAIN_FORMATS: tuple[str, ...] = ("caps-comma", "title-brackets", "json")
EVAL_FORMATS: tuple[str, ...] = ("final-semicolon", "tags")
"""Held-out families require output formats that no training family uses."""


@dataclass(frozen=True)
class Parsed:
    """What could be read out of an artifact (leniently), and whether it is exactly in format."""

    answer: str | None
    sources: tuple[str, ...] | None
    """Tokens of the sources field; None when the artifact has no sources field."""
    loose_ids: tuple[str, ...]
    """Anything shaped like a document id anywhere in the text (fallback when there is no field)."""
    strict: bool


def _field(label: str, text: str) -> str | None:
    """The value of the one line labelled ``label`` (None when there is none or more than one)."""
    found = re.findall(rf"^[ \t]*{re.escape(label)}[ \t]*[:=\-][ \t]*(.*?)[ \t]*$", text, re.I | re.M)
    return found[0] if len(found) == 1 else None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing repeated keys (json.loads would keep the last silently)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("repeated key in a JSON object")
    return obj


def _tokens(field: str) -> tuple[str, ...]:
    return tuple(t for t in _ID_SPLIT.split(field) if t)


def _parse_json(text: str) -> tuple[Any, bool]:
    stripped = text.strip()
    try:
        return json.loads(stripped, object_pairs_hook=_unique_keys), True
    except (ValueError, RecursionError):
        pass
    match = re.search(r"\{.*\}", text, re.S)
    if match:
        try:
            return json.loads(match.group(0), object_pairs_hook=_unique_keys), False
        except (ValueError, RecursionError):
            pass
    return None, False


@lru_cache(maxsize=4096)
def parse(fmt: AnswerFormat, text: str) -> Parsed:
    """Read the answer and the cited ids of an artifact in the given format (kept per format and text: a
    check is redone on every new retrieval, with the same draft)."""
    loose = tuple(m.group(0) for m in _LOOSE_ID.finditer(text))
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if fmt.kind == "json":
        obj, whole = _parse_json(text)
        if not isinstance(obj, dict):
            return Parsed(None, None, loose, False)
        answer = obj.get("answer")
        answer = answer.strip() if isinstance(answer, str) and answer.strip() else None
        raw = obj.get("sources")
        if isinstance(raw, list):
            sources: tuple[str, ...] | None = tuple(str(item).strip() for item in raw)
        elif isinstance(raw, str):
            sources = _tokens(raw)
        else:
            sources = None
        strict = (
            whole
            and set(obj) == {"answer", "sources"}
            and answer is not None
            and isinstance(raw, list)
            and bool(raw)
            and all(isinstance(item, str) and DOC_ID.fullmatch(item) for item in raw)
        )
        return Parsed(answer, sources, loose, bool(strict))
    if fmt.kind == "tags":
        a = re.findall(r"<answer>(.*?)</answer>", text, re.I | re.S)
        s = re.search(r"<sources>(.*?)</sources>", text, re.I | re.S)
        answer = a[0].strip() or None if len(a) == 1 else None
        sources = _tokens(s.group(1)) if s else None
        strict = (
            len(lines) == 2
            and re.fullmatch(r"<answer>[^<>\n]*\S[^<>\n]*</answer>", lines[0]) is not None
            and s is not None
            and lines[1] == f"<sources>{s.group(1)}</sources>"
            and fmt.ids_pattern.fullmatch(s.group(1)) is not None
        )
        return Parsed(answer, sources, loose, bool(strict))
    answer_field = _field(fmt.answer_label, text)
    sources_field = _field(fmt.sources_label, text)
    answer = answer_field or None
    sources = _tokens(sources_field) if sources_field is not None else None
    strict = (
        len(lines) == 2
        and answer is not None
        and lines[0] == f"{fmt.answer_label}: {answer}"
        and sources_field is not None
        and lines[1] == f"{fmt.sources_label}: {sources_field}"
        and fmt.ids_pattern.fullmatch(sources_field) is not None
    )
    return Parsed(answer, sources, loose, bool(strict))


def _number(text: str) -> float | None:
    words = normalize(text).split()
    if not words or any(w not in _UNITS for w in words[1:]):
        return None
    try:
        return float(words[0])
    except ValueError:
        return None


def answers_match(answer: str, gold: str, aliases: Sequence[str] = ()) -> bool:
    """Normalised string match against the gold answer or an alias; numbers compare as numbers."""
    gold_number = _number(gold)
    if gold_number is not None:
        return _number(answer) == gold_number
    got = normalize_answer(answer)
    return bool(got) and any(got == normalize_answer(g) for g in (gold, *aliases))


def _documents(payload: Mapping[str, Any]) -> dict[str, str]:
    return {doc["id"]: doc["text"] for doc in payload["docs"]}


def cited_documents(parsed: Parsed, existing: Collection[str]) -> list[str]:
    """Existing document ids the artifact cites, in order, without repeats (fallback: ids in the text)."""
    tokens = parsed.sources if parsed.sources is not None else parsed.loose_ids
    out: list[str] = []
    for token in tokens:
        if token in existing and token not in out:
            out.append(token)
    return out


def hop_support(payload: Mapping[str, Any], cited: Sequence[str]) -> list[bool]:
    """Per hop: does some cited document have a sentence naming the hop's subject and object together?"""
    docs = _documents(payload)
    cited_sentences = [s for doc_id in cited if doc_id in docs for s in sentences(docs[doc_id])]
    return [
        any(contains_phrase(s, hop["subject"]) and contains_phrase(s, hop["object"]) for s in cited_sentences)
        for hop in payload["hops"]
    ]


def supported_fraction(support: Sequence[bool], n_cited: int) -> float:
    """Supported hops, less one for each cited document beyond one per hop, as a fraction of the hops."""
    padding = max(0, n_cited - len(support))
    return max(0, sum(support) - padding) / len(support)


def citation_quality(parsed: Parsed, existing: Collection[str]) -> float:
    """Fraction of the sources field's tokens that are well-formed, existing, unrepeated ids."""
    if not parsed.sources:
        return 0.0
    seen: set[str] = set()
    good = 0
    for token in parsed.sources:
        if DOC_ID.fullmatch(token) and token in existing and token not in seen:
            good += 1
        seen.add(token)
    return good / len(parsed.sources)


@dataclass(frozen=True)
class Grade:
    rubric: dict[str, tuple[float, float]]
    claim_support: float


def grade(payload: Mapping[str, Any], text: str) -> Grade:
    """The terminal rubric of an artifact and the fraction of hops its citations support."""
    fmt = FORMATS[payload["format"]]
    parsed = parse(fmt, text)
    existing = _documents(payload).keys()
    correct = parsed.answer is not None and answers_match(
        parsed.answer, payload["answer"], payload.get("aliases", ())
    )
    cited = cited_documents(parsed, existing)
    support = hop_support(payload, cited)
    credited = supported_fraction(support, len(cited))
    rubric = {
        "answer_correctness": (CRITERIA["answer_correctness"] * correct, CRITERIA["answer_correctness"]),
        "evidence_support": (CRITERIA["evidence_support"] * credited, CRITERIA["evidence_support"]),
        "citation_format": (
            CRITERIA["citation_format"] * citation_quality(parsed, existing),
            CRITERIA["citation_format"],
        ),
        "output_format": (CRITERIA["output_format"] * parsed.strict, CRITERIA["output_format"]),
    }
    return Grade(rubric=rubric, claim_support=credited)


def artifact_scores(payload: Mapping[str, Any], text: str) -> dict[str, tuple[float, float]]:
    return grade(payload, text).rubric


@dataclass(frozen=True)
class CheckReport:
    """Observable check items of a draft: each ``(name, passed)``, plus issue messages."""

    items: tuple[tuple[str, bool], ...]
    issues: tuple[str, ...]


def structural_check(payload: Mapping[str, Any], text: str, gathered: Collection[str]) -> CheckReport:
    """Format, citation ids, citations among the retrieved documents, answer found in a cited one.

    Uses the task's answer format, the corpus ids (the search index knows them) and the texts of the
    documents the harness retrieved; never the gold answer or the hop facts.
    """
    fmt = FORMATS[payload["format"]]
    parsed = parse(fmt, text)
    docs = _documents(payload)
    issues: list[Finding] = []
    example = fmt.render("...", ["doc-NNN"]).replace("\n", " / ")
    if not parsed.strict:
        issues.append(Finding("format", f"format: the reply is not exactly in the required form ({example})"))
    tokens = parsed.sources or ()
    if not tokens:
        issues.append(Finding("no_citation", "citations: no document ids in the sources field"))
    bad = [t for t in tokens if not DOC_ID.fullmatch(t) or t not in docs]
    issues += [
        Finding("unknown_citation", f"citations: {t!r} is not the id of a document in the corpus")
        for t in bad
    ]
    limit = payload.get("max_citations", MAX_HOPS)
    padded = len(set(tokens)) > limit
    if padded:
        issues.append(
            Finding(
                "too_many_citations",
                f"citations: {len(set(tokens))} documents cited; cite only the documents that state the "
                f"facts of the answer's chain (at most {limit})",
            )
        )
    unread = [t for t in tokens if t in docs and t not in gathered]
    issues += [Finding("cites_unretrieved", f"citations: {t} was never retrieved") for t in unread]
    readable = [t for t in tokens if t in docs and t in gathered]
    grounded = parsed.answer is not None and any(contains_phrase(docs[t], parsed.answer) for t in readable)
    if parsed.answer is None:
        issues.append(Finding("answer_missing", "answer: no answer field could be read"))
    elif not grounded:
        issues.append(
            Finding(
                "answer_ungrounded",
                f"answer: {parsed.answer!r} does not appear in any cited document that was retrieved",
            )
        )
    items = (
        ("format", parsed.strict),
        ("citations_well_formed", bool(tokens) and not bad and not padded),
        ("citations_retrieved", bool(tokens) and not bad and not unread),
        ("answer_grounded", grounded),
    )
    return CheckReport(items=items, issues=tuple(issues))
