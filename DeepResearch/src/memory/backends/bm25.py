"""A small incremental BM25 index (Okapi, k1=1.2, b=0.75) over `text.tokenize` tokens."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable

from DeepResearch.src.memory.text import tokenize

K1 = 1.2
B = 0.75


class BM25Index:
    """Documents can be added and removed one by one; scores use the live statistics."""

    def __init__(self) -> None:
        self._postings: dict[str, dict[str, int]] = defaultdict(dict)
        self._lengths: dict[str, int] = {}
        self._doc_tokens: dict[str, tuple[str, ...]] = {}
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, doc_id: str, text: str) -> None:
        self.remove(doc_id)
        counts = Counter(tokenize(text))
        for token, tf in counts.items():
            self._postings[token][doc_id] = tf
        length = sum(counts.values())
        self._doc_tokens[doc_id] = tuple(counts)
        self._lengths[doc_id] = length
        self._total_length += length

    def remove(self, doc_id: str) -> None:
        length = self._lengths.pop(doc_id, None)
        if length is None:
            return
        self._total_length -= length
        for token in self._doc_tokens.pop(doc_id, ()):
            docs = self._postings[token]
            docs.pop(doc_id, None)
            if not docs:
                del self._postings[token]

    def search(
        self, query: str, k: int, accept: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """The k best (doc_id, score) pairs with score > 0, among docs `accept` allows."""
        n = len(self._lengths)
        if n == 0 or k <= 0:
            return []
        avg_len = self._total_length / n or 1.0
        scores: dict[str, float] = defaultdict(float)
        for token in set(tokenize(query)):
            docs = self._postings.get(token)
            if not docs:
                continue
            idf = math.log(1.0 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
            for doc_id, tf in docs.items():
                if accept is not None and not accept(doc_id):
                    continue
                norm = K1 * (1.0 - B + B * self._lengths[doc_id] / avg_len)
                scores[doc_id] += idf * tf * (K1 + 1.0) / (tf + norm)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return best[:k]
