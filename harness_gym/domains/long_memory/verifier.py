"""Long-memory answers: the required output formats, their parsers and the rubric.

An answer names one value and the session that establishes it, in the layout the task asks for. Six
layouts exist; training families use the first three and held-out families the other three:

========== ================================================
``kv``     ``ANSWER: Lisbon`` / ``SOURCE: s14`` (two lines)
``json``   ``{"answer": "Lisbon", "source": "s14"}``
``inline`` ``Answer: Lisbon [s14]``
``final``  ``FINAL ANSWER: Lisbon`` / ``SESSION: s14``
``tags``   ``<answer>Lisbon</answer><source>s14</source>``
``pipe``   ``Lisbon | source=s14``
========== ================================================

Scoring parses the required layout strictly (``output_format``); when that fails a lenient reader (any
known layout, or an ``answer:`` key, plus every session id in the text) still recovers what it can, so a
layout slip costs the format point but not necessarily the answer. ``answer_correctness`` is a
normalised exact match (case, punctuation and the filler words *the, a, an, at, on* ignored);
``source_match`` needs the cited session to be the one that establishes the asked value (for a current
value, the latest update), cited alone: an answer citing several sessions names no source and earns no
credit (citing every session would otherwise always find the right one).

What earns nothing: a second answer field with another value or a repeated JSON key (no answer is
read), a list of candidate values or padding around the value (it no longer normalises to the gold
value), several cited sessions, session ids the history does not have (the strict layout fails).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness_gym.domains.long_memory.facts import stated_values
from harness_gym.executors.base import Finding

CRITERIA: dict[str, float] = {"answer_correctness": 2.0, "source_match": 1.0, "output_format": 0.5}
"""Rubric criteria and maxima: the value is what the question asks for and weighs most, where it came
from next, the layout least (a layout slip alone costs a seventh of G)."""

SESSION_ID = re.compile(r"\bs\d{2}\b")
_IDS = r"s\d{2}(?:\s*,\s*s\d{2})*"
_FILLER_WORDS = frozenset({"the", "a", "an", "at", "on"})


def normalize(text: str) -> str:
    """Lower case, punctuation to spaces, filler words dropped (``'Tuesday at 10:30'``: ``tuesday 10 30``)."""
    words = re.findall(r"[0-9a-z]+", text.lower())
    return " ".join(w for w in words if w not in _FILLER_WORDS)


def contains_value(text: str, value: str) -> bool:
    """Whether ``value`` occurs in ``text`` as whole words, after normalisation."""
    needle = normalize(value)
    return bool(needle) and f" {needle} " in f" {normalize(text)} "


@dataclass(frozen=True)
class AnswerFormat:
    """One required layout: the prompt instruction, a renderer and a strict parser."""

    name: str
    instruction: str
    pattern: re.Pattern[str] | None
    """Strict regex with groups ``answer`` and ``source`` (``None``: parsed as JSON)."""
    render: Callable[[str, str], str]
    render_without_source: Callable[[str], str]


def _json_render(answer: str, source: str) -> str:
    return json.dumps({"answer": answer, "source": source})


FORMATS: dict[str, AnswerFormat] = {
    "kv": AnswerFormat(
        "kv",
        "Reply with exactly two lines: 'ANSWER: <value>' and then 'SOURCE: <session id>' (e.g. s07).",
        re.compile(rf"ANSWER:[ \t]*(?P<answer>[^\n]+?)[ \t]*\nSOURCE:[ \t]*(?P<source>{_IDS})"),
        lambda a, s: f"ANSWER: {a}\nSOURCE: {s}",
        lambda a: f"ANSWER: {a}",
    ),
    "json": AnswerFormat(
        "json",
        'Reply with one JSON object and nothing else: {"answer": "<value>", "source": "<session id>"}.',
        None,
        _json_render,
        lambda a: json.dumps({"answer": a}),
    ),
    "inline": AnswerFormat(
        "inline",
        "Reply with one line: 'Answer: <value> [<session id>]', e.g. 'Answer: Oslo [s03]'.",
        re.compile(rf"Answer:[ \t]*(?P<answer>[^\n\[\]]+?)[ \t]*\[(?P<source>{_IDS})\]"),
        lambda a, s: f"Answer: {a} [{s}]",
        lambda a: f"Answer: {a}",
    ),
    "final": AnswerFormat(
        "final",
        "Reply with exactly two lines: 'FINAL ANSWER: <value>' and then 'SESSION: <session id>'.",
        re.compile(rf"FINAL ANSWER:[ \t]*(?P<answer>[^\n]+?)[ \t]*\nSESSION:[ \t]*(?P<source>{_IDS})"),
        lambda a, s: f"FINAL ANSWER: {a}\nSESSION: {s}",
        lambda a: f"FINAL ANSWER: {a}",
    ),
    "tags": AnswerFormat(
        "tags",
        "Reply with '<answer>value</answer><source>session id</source>' and nothing else.",
        re.compile(
            rf"<answer>[ \t]*(?P<answer>[^<\n]+?)[ \t]*</answer>\s*"
            rf"<source>[ \t]*(?P<source>{_IDS})[ \t]*</source>"
        ),
        lambda a, s: f"<answer>{a}</answer><source>{s}</source>",
        lambda a: f"<answer>{a}</answer>",
    ),
    "pipe": AnswerFormat(
        "pipe",
        "Reply with one line: '<value> | source=<session id>', e.g. 'Oslo | source=s03'.",
        re.compile(rf"(?P<answer>[^\n|]+?)[ \t]*\|[ \t]*source=(?P<source>{_IDS})"),
        lambda a, s: f"{a} | source={s}",
        lambda a: f"{a} | source=",
    ),
}  # fmt: skip
TRAIN_FORMATS: tuple[str, ...] = ("kv", "json", "inline")
EVAL_FORMATS: tuple[str, ...] = ("final", "tags", "pipe")

# Lenient readers, tried in order when the required layout does not parse: other layouts, then keys.
_LOOSE_ANSWER = (
    re.compile(
        r"(?im)^[\s*_#>-]*(?:final\s+)?answer[\s*_]*[:=][\s*_]*(?P<answer>[^\n\[\];|*]+?)[\s*_]*(?:[\[;|]|$)"
    ),
    re.compile(r"(?i)<answer>\s*(?P<answer>[^<\n]+?)\s*</answer>"),
    re.compile(r'(?i)"answer"\s*:\s*"(?P<answer>[^"\n]+)"'),
    re.compile(r"(?m)^\s*(?P<answer>[^\n|]+?)\s*\|\s*source\s*="),
)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing repeated keys (json.loads would keep the last silently)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("repeated key in a JSON object")
    return obj


def _loose_answer(text: str) -> str | None:
    """The answer a lenient reader finds: the first pattern's first match, unless the text gives another
    value anywhere (``ANSWER: x`` then ``<answer>y</answer>``): several answers are no answer. Values
    that contain one another (``Answer: Oslo`` read whole by the pipe pattern, and ``Oslo``) agree."""
    values = [m.group("answer").strip() for p in _LOOSE_ANSWER for m in p.finditer(text)]
    values = [v for v in values if v]
    if not values:
        return None
    keys = [f" {normalize(v)} " for v in values]
    if any(a not in b and b not in a for a in keys for b in keys):
        return None
    return values[0]


@dataclass(frozen=True)
class Parsed:
    """What an artifact says: its answer, the cited session ids, whether it is in the required layout."""

    answer: str | None
    sources: tuple[str, ...]
    well_formed: bool
    problems: tuple[str, ...]


def _strict(fmt: AnswerFormat, text: str) -> tuple[str, tuple[str, ...]] | None:
    stripped = text.strip()
    if fmt.pattern is None:
        try:
            obj = json.loads(stripped, object_pairs_hook=_unique_keys)
        except (ValueError, RecursionError):
            return None
        if not (isinstance(obj, dict) and set(obj) == {"answer", "source"}):
            return None
        answer, source = obj["answer"], obj["source"]
        if not (isinstance(answer, str) and isinstance(source, str) and answer.strip()):
            return None
        if not re.fullmatch(_IDS, source.strip()):
            return None
        return answer.strip(), tuple(re.findall(r"s\d{2}", source))
    match = fmt.pattern.fullmatch(stripped)
    if match is None:
        return None
    return match.group("answer").strip(), tuple(re.findall(r"s\d{2}", match.group("source")))


@lru_cache(maxsize=16384)
def parse_answer(text: str, format_name: str, session_ids: tuple[str, ...]) -> Parsed:
    """Read an artifact in the required layout; fall back to a lenient reading for the fields."""
    fmt = FORMATS[format_name]
    strict = _strict(fmt, text)
    known = set(session_ids)
    if strict is not None:
        answer, sources = strict
        unknown = [s for s in sources if s not in known]
        if not unknown:
            return Parsed(answer, sources, True, ())
        return Parsed(answer, sources, False, (f"cites unknown session(s) {', '.join(unknown)}",))
    answer = None
    for other in FORMATS.values():
        if other is not fmt and (loose := _strict(other, text)) is not None:
            answer = loose[0]
            break
    if answer is None:
        answer = _loose_answer(text)
    sources = tuple(dict.fromkeys(SESSION_ID.findall(text)))
    problems = [f"not in the required {format_name} layout: {fmt.instruction}"]
    if answer is None:
        problems.append("no answer field found")
    if not sources:
        problems.append("no source session cited")
    return Parsed(answer, sources, False, tuple(problems))


def session_text(payload: Mapping[str, Any], session_id: str) -> str:
    return payload["sessions"][int(session_id[1:]) - 1]["text"]


def artifact_scores(payload: Mapping[str, Any], text: str) -> dict[str, tuple[float, float]]:
    """Per-criterion ``(score, max)`` of an answer artifact against the task's gold value and source."""
    ids = tuple(s["id"] for s in payload["sessions"])
    parsed = parse_answer(text, payload["answer_format"], ids)
    correct = parsed.answer is not None and normalize(parsed.answer) == normalize(payload["answer"])
    cited = set(parsed.sources)
    gold = payload["source"]
    source = float(cited == {gold})
    return {
        "answer_correctness": (CRITERIA["answer_correctness"] * correct, CRITERIA["answer_correctness"]),
        "source_match": (CRITERIA["source_match"] * source, CRITERIA["source_match"]),
        "output_format": (CRITERIA["output_format"] * parsed.well_formed, CRITERIA["output_format"]),
    }


def claim_support(payload: Mapping[str, Any], text: str) -> float:
    """1 when a cited session's text contains the answer value, else 0 (no answer or no citation: 0)."""
    ids = tuple(s["id"] for s in payload["sessions"])
    parsed = parse_answer(text, payload["answer_format"], ids)
    if parsed.answer is None:
        return 0.0
    known = set(ids)
    return float(
        any(contains_value(session_text(payload, s), parsed.answer) for s in parsed.sources if s in known)
    )


@dataclass(frozen=True)
class Review:
    """What a harness CHECK can establish about a draft from the sessions it has retrieved."""

    passed: tuple[bool, ...]
    """Format; cited sessions retrieved; a cited session names the answer; retrieved timeline agrees."""
    issues: tuple[str, ...]


def _stated_timeline(payload: Mapping[str, Any], retrieved: Sequence[str]) -> list[tuple[str, str, str]]:
    """(date, session, value) of every retrieved session in which the user states the asked fact."""
    out = []
    for sid in dict.fromkeys(retrieved):
        session = payload["sessions"][int(sid[1:]) - 1]
        values = stated_values(payload["fact_kind"], session["text"])
        if values:
            out.append((session["date"], sid, values[-1]))
    return sorted(out)


def review(payload: Mapping[str, Any], text: str, retrieved: Sequence[str]) -> Review:
    """Observable checks of a draft: layout, and the draft against the text of the retrieved sessions.

    The timeline check reads, from the retrieved sessions only, where the user states the asked fact and
    picks the statement the question points at (the latest; the one before it; the latest on or before
    the asked date) and fails when the draft disagrees with it. It passes when no retrieved session
    states the fact, and when the draft cites a later session the harness never retrieved (which may be
    the update that superseded the statement), so it is only as good as what was retrieved.
    """
    ids = tuple(s["id"] for s in payload["sessions"])
    parsed = parse_answer(text, payload["answer_format"], ids)
    issues: list[Finding] = [Finding("layout", problem) for problem in parsed.problems]
    seen = set(retrieved)
    known = set(ids)
    cited = [s for s in parsed.sources if s in known]
    unretrieved = [s for s in cited if s not in seen]
    retrieved_ok = len(set(cited)) == 1 and not unretrieved
    if len(set(parsed.sources)) > 1:
        issues.append(
            Finding(
                "too_many_citations",
                f"cites {len(set(parsed.sources))} sessions; cite the one session that establishes the "
                "answer",
            )
        )
    if unretrieved:
        issues.append(
            Finding(
                "cites_unretrieved",
                f"cited session(s) {', '.join(unretrieved)} were not retrieved, so the claim is unverified",
            )
        )
    answer = parsed.answer
    supports = answer is not None and any(
        contains_value(session_text(payload, s), answer) for s in cited if s in seen
    )
    if answer is not None and not supports and cited and not unretrieved:
        issues.append(Finding("answer_not_in_cited", f"no cited session mentions {answer!r}"))
    timeline = _stated_timeline(payload, retrieved)
    form = payload["question_form"]
    if form in ("current", "single"):  # a single-session fact: its one statement is the latest
        candidates = timeline[-1:]
    elif form == "previous":
        candidates = timeline[-2:-1]
    else:
        candidates = [t for t in timeline if t[0] <= payload["as_of"]][-1:]
    consistent = answer is not None
    if candidates and answer is not None:
        date, sid, value = candidates[0]
        # a statement older than a cited session the harness never retrieved says nothing against the
        # draft: that session may be the update that superseded it (``cites_unretrieved`` reports it)
        later_unread = any(
            s not in seen and payload["sessions"][int(s[1:]) - 1]["date"] > date for s in cited
        )
        if not later_unread and (normalize(value) != normalize(answer) or set(cited) != {sid}):
            consistent = False
            where = ", ".join(cited) or "no session"
            issues.append(
                Finding(
                    "timeline_contradiction",
                    f"retrieved session {sid} ({date}) gives {value!r} for the asked value; "
                    f"the draft answers {answer!r} citing {where}",
                )
            )
    return Review((parsed.well_formed, retrieved_ok, supports, consistent), tuple(issues))
