"""Keyword search over one task's chat sessions: BM25 with pseudo-relevance feedback.

RETRIEVE asks this index for sessions. The query is the question's terms (weight 1), their thesaurus
neighbours (weight ``SYNONYM_WEIGHT``: a fixed synonym list such as a search engine's synonym filter, so
"instrument" also finds "lessons" and "practise"), plus every term of the sessions retrieved so far
(weight ``FEEDBACK_WEIGHT``), so a second search follows the values and words the first one surfaced (a
moved-from city leads to the move). Each call returns the best one or two sessions not yet retrieved;
sessions scoring zero are never returned.

Everything is precomputed per task (term weights per session) and each result is memoised by the
retrieved-so-far tuple, so a repeated search costs one dictionary lookup.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

K1, B = 1.2, 0.75
FEEDBACK_WEIGHT = 0.25
SYNONYM_WEIGHT = 0.5
PER_CALL = 2
SECOND_RATIO = 0.5
"""The second session is returned only when it scores at least this fraction of the first."""

STOPWORDS = frozenset(
    (
        "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
        "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for",
        "from", "get", "got", "had", "has", "have", "he", "her", "here", "him", "his", "how", "i", "if",
        "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "not", "now", "of",
        "off", "on", "once", "one", "only", "or", "other", "our", "out", "over", "own", "so", "some",
        "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
        "those", "to", "too", "under", "up", "us", "very", "was", "we", "were", "what", "when", "where",
        "which", "while", "who", "why", "will", "with", "would", "you", "your", "yes", "hi", "hey", "s",
        "t", "ll", "ve", "re", "d", "m", "user", "assistant",
    )
)  # fmt: skip


def stem(word: str) -> str:
    """A light suffix stripper: enough for lives/living/lived -> liv, moves/moved -> mov."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def terms(text: str) -> list[str]:
    return [stem(w) for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOPWORDS]


_SYNONYMS: dict[str, str] = {
    "city": "live moved relocated flat based",
    "live": "moved relocated based flat",
    "living": "moved relocated based flat",
    "company": "job work offer joined hired team",
    "employer": "job work offer joined hired team",
    "work": "job offer joined hired team",
    "pet": "dog cat puppy kitten adopted named",
    "cuisine": "food favourite cooking restaurant",
    "instrument": "lessons practise playing plays teacher",
    "coffee": "café order barista morning",
    "café": "coffee order barista morning",
    "physio": "physiotherapist clinic booked appointment rescheduled",
    "appointment": "physio clinic booked rescheduled",
    "car": "drive bought sold dealer",
    "drive": "car bought sold dealer",
    "language": "learning studying course class fluent",
    "gym": "membership member train joined trial",
}
THESAURUS: dict[str, tuple[str, ...]] = {
    stem(word): tuple(stem(w) for w in related.split()) for word, related in _SYNONYMS.items()
}
"""Stemmed query term -> stemmed related terms added to the query."""


class SessionIndex:
    """BM25 weights of every session of one task, and the memoised retrieval sequence."""

    def __init__(self, sessions: Sequence[Mapping[str, Any]], question: str) -> None:
        self.ids: tuple[str, ...] = tuple(s["id"] for s in sessions)
        bags = [Counter(terms(s["text"])) for s in sessions]
        n = len(bags)
        avg = sum(sum(bag.values()) for bag in bags) / n
        df: Counter[str] = Counter()
        for bag in bags:
            df.update(bag.keys())
        idf = {t: math.log(1.0 + (n - k + 0.5) / (k + 0.5)) for t, k in df.items()}
        self.weights: list[dict[str, float]] = []
        for bag in bags:
            norm = K1 * (1.0 - B + B * sum(bag.values()) / avg)
            self.weights.append({t: idf[t] * tf * (K1 + 1.0) / (tf + norm) for t, tf in bag.items()})
        self.bags = [frozenset(bag) for bag in bags]
        asked = terms(question)
        self.query: dict[str, float] = {}
        for term in asked:
            for related in THESAURUS.get(term, ()):
                self.query[related] = max(self.query.get(related, 0.0), SYNONYM_WEIGHT)
        self.query.update(dict.fromkeys(asked, 1.0))
        self._memo: dict[tuple[str, ...], tuple[str, ...]] = {}

    def scores(self, retrieved: Sequence[str]) -> list[float]:
        """BM25 score of every session for the question plus feedback from ``retrieved``."""
        query = dict(self.query)
        position = {sid: i for i, sid in enumerate(self.ids)}
        for sid in retrieved:
            for term in self.bags[position[sid]]:
                query[term] = query.get(term, 0.0) + FEEDBACK_WEIGHT
        return [sum(w.get(t, 0.0) * q for t, q in query.items()) for w in self.weights]

    def next(self, retrieved: Sequence[str]) -> tuple[str, ...]:
        """The next one or two unseen sessions by score (empty when no unseen session matches at all)."""
        key = tuple(retrieved)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        seen = set(key)
        scored = sorted(
            ((score, i) for i, score in enumerate(self.scores(key)) if self.ids[i] not in seen and score > 0),
            key=lambda pair: (-pair[0], pair[1]),
        )
        out: list[str] = []
        for score, i in scored[:PER_CALL]:
            if out and score < SECOND_RATIO * scored[0][0]:
                break
            out.append(self.ids[i])
        result = tuple(out)
        self._memo[key] = result
        return result
