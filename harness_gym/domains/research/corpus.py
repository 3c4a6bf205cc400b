"""Text machinery shared by the generator, the search action and the verifier.

- ``normalize``: the one canonical form used to compare answers and to look for facts in sentences
  (lower case, thousands separators dropped, punctuation to spaces).
- ``terms``: search terms (normalised tokens minus stop words, lightly stemmed so that "founder" and
  "founded" meet).
- ``BM25Index``: Okapi BM25 (k1 = 1.2, b = 0.75) over one task's corpus, as dense numpy arrays: a task
  corpus has a few dozen short documents, so a query is one small matrix-vector product.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")

STOP_WORDS: frozenset[str] = frozenset(
    {
        "a", "an", "the", "of", "in", "on", "at", "to", "for", "by", "with", "and", "or", "is", "was", "were",
        "be", "been", "being", "which", "what", "who", "whom", "whose", "where", "when", "how", "that",
        "this", "these", "those", "it", "its", "from", "as", "into", "since", "than", "then", "there",
        "their", "they", "he", "she", "his", "her", "has", "have", "had", "do", "does", "did", "not", "no",
        "today", "current", "currently", "about", "also", "after", "before", "under", "over",
    }
)  # fmt: skip
_SUFFIXES = ("ing", "ed", "er", "es", "s")


def normalize(text: str) -> str:
    """Canonical comparison form: lower case, ``48,200`` -> ``48200``, punctuation to single spaces."""
    return _NON_WORD.sub(" ", _THOUSANDS.sub("", text.lower())).strip()


def normalize_answer(text: str) -> str:
    """``normalize`` plus a leading article dropped: "the Velmora province" ~ "Velmora province"."""
    out = normalize(text)
    for article in ("the ", "a ", "an "):
        if out.startswith(article):
            return out[len(article) :]
    return out


def contains_phrase(haystack: str, needle: str) -> bool:
    """Whether normalised ``needle`` occurs in normalised ``haystack`` on token boundaries."""
    needle = normalize(needle)
    return bool(needle) and f" {needle} " in f" {normalize(haystack)} "


def sentences(text: str) -> list[str]:
    """Split a document's text into sentences (the generator writes one fact per sentence)."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """Search terms of a text (with repeats)."""
    return [_stem(w) for w in normalize(text).split() if w not in STOP_WORDS]


class BM25Index:
    """Okapi BM25 over a small corpus; queries are sets of terms (each query term counted once)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        docs = [terms(text) for text in texts]
        vocab: dict[str, int] = {}
        for doc in docs:
            for word in doc:
                vocab.setdefault(word, len(vocab))
        n, v = len(docs), len(vocab)
        tf = np.zeros((n, v), dtype=np.float64)
        for i, doc in enumerate(docs):
            for word in doc:
                tf[i, vocab[word]] += 1.0
        present = tf > 0
        df = present.sum(axis=0)
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        length = tf.sum(axis=1)
        norm = k1 * (1.0 - b + b * length / max(float(length.mean()), 1e-9))
        self.vocab = vocab
        self.weights = idf * tf * (k1 + 1.0) / (tf + norm[:, None])
        self.present = present
        self.n_docs = n

    def query_vector(self, text: str) -> np.ndarray:
        """Indicator vector of the query's known terms."""
        vec = np.zeros(len(self.vocab), dtype=bool)
        for word in terms(text):
            index = self.vocab.get(word)
            if index is not None:
                vec[index] = True
        return vec

    def expand(self, query: np.ndarray, docs: Iterable[int]) -> np.ndarray:
        """The query plus every term of the given documents (relevance feedback from what was read)."""
        out = query.copy()
        for i in docs:
            out |= self.present[i]
        return out

    def scores(self, query: np.ndarray) -> np.ndarray:
        return self.weights @ query.astype(np.float64)

    def top(self, query: np.ndarray, exclude: Iterable[int] = (), k: int = 2) -> list[int]:
        """The ``k`` best documents with a positive score, excluding some; ties go to the lower index."""
        scores = self.scores(query)
        skip = set(exclude)
        ranked = sorted(
            (i for i in range(self.n_docs) if i not in skip and scores[i] > 0.0),
            key=lambda i: (-scores[i], i),
        )
        return ranked[:k]


RESULTS_PER_SEARCH = 2
"""A search returns at most this many documents the harness has not seen yet."""
MAX_SEARCHES = 5
"""RETRIEVE cap per episode; the generator keeps only tasks whose gold documents are reachable within it."""


def indexed_text(doc: Mapping[str, str]) -> str:
    """What the search engine indexes of a document: its title and its text."""
    return f"{doc['title']}. {doc['text']}"


class CorpusSearch:
    """The RETRIEVE engine of one task: BM25 with the question plus everything read so far as query.

    Deterministic: the result depends only on which documents were already retrieved, so results are
    memoised by that sequence (a RETRIEVE after the first costs a dictionary lookup).
    """

    def __init__(
        self, docs: Sequence[Mapping[str, str]], question: str, per_search: int = RESULTS_PER_SEARCH
    ):
        self.ids = tuple(doc["id"] for doc in docs)
        self.position = {doc_id: i for i, doc_id in enumerate(self.ids)}
        self.index = BM25Index([indexed_text(doc) for doc in docs])
        self.question = self.index.query_vector(question)
        self.per_search = per_search
        self._memo: dict[tuple[str, ...], tuple[str, ...]] = {}

    def next(self, evidence: Sequence[str]) -> tuple[str, ...]:
        """The best unseen documents for the question expanded with the texts of ``evidence``."""
        key = tuple(evidence)
        hit = self._memo.get(key)
        if hit is None:
            seen = [self.position[e] for e in key if e in self.position]
            query = self.index.expand(self.question, seen)
            hit = tuple(self.ids[i] for i in self.index.top(query, seen, self.per_search))
            self._memo[key] = hit
        return hit
