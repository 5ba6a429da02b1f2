"""A small BM25 index over texts: the default flow's document search (no model needed)."""

from __future__ import annotations

import math
import re
from collections import Counter

_TOKEN = re.compile(r"[a-z0-9][a-z0-9+\-]*")
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it of on or should that the "
    "this to what when where which who why with my me you your suits suit best use used".split()
)


def _stem(token: str) -> str:
    """A light plural stem so that "aligners" matches "aligner"."""
    if len(token) > 4 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def tokenize(text: str) -> list[str]:
    tokens = [t.strip("-") for t in _TOKEN.findall(text.lower())]
    return [_stem(t) for t in tokens if t and t not in STOPWORDS]


class LexicalIndex:
    """BM25 (k1=1.5, b=0.75) over a fixed list of texts."""

    def __init__(self, texts: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._docs = [Counter(tokenize(text)) for text in texts]
        self._lengths = [sum(doc.values()) for doc in self._docs]
        self._avg = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0
        df: Counter[str] = Counter()
        for doc in self._docs:
            df.update(doc.keys())
        n = len(self._docs)
        self._idf = {term: math.log(1 + (n - f + 0.5) / (f + 0.5)) for term, f in df.items()}

    def scores(self, query: str) -> list[float]:
        terms = tokenize(query)
        results: list[float] = []
        for doc, length in zip(self._docs, self._lengths, strict=True):
            score = 0.0
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    norm = tf + self.k1 * (1 - self.b + self.b * length / (self._avg or 1.0))
                    score += self._idf[term] * tf * (self.k1 + 1) / norm
            results.append(score)
        return results

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(index, score) of the best `k` texts with a positive score, best first."""
        ranked = sorted(enumerate(self.scores(query)), key=lambda pair: -pair[1])
        return [(i, s) for i, s in ranked[:k] if s > 0]
