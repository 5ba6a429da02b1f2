"""Shared pieces of the ranking experiments: per-conversation features and an evaluator.

Everything here is general text retrieval (no speaker names, no question templates): the
experiments only decide which steps of the ranking pipeline are worth making defaults.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from benchmarks.locomo.baselines import BM25Retriever, embed_cached
from benchmarks.locomo.data import Conversation, load_conversations
from benchmarks.locomo.metrics import RecallTable


def stop_words() -> frozenset[str]:
    """A broad English stop-word list (scikit-learn's), used to strip question words."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def strip_query(query: str, words: frozenset[str]) -> str:
    """The query without stop words and punctuation; the query itself if nothing is left."""
    import re

    kept = [w for w in re.findall(r"[\w'-]+", query) if w.lower() not in words]
    return " ".join(kept) or query


def window_texts(conv: Conversation, before: int, after: int) -> list[str]:
    """Each turn with up to BEFORE/AFTER neighbouring turns of the same session around it."""
    turns = conv.turns
    texts = []
    for i, turn in enumerate(turns):
        lo, hi = max(0, i - before), min(len(turns), i + after + 1)
        parts = [t.content for t in turns[lo:hi] if t.session == turn.session]
        texts.append("\n".join(parts))
    return texts


@dataclass
class Features:
    """What the scorers of one conversation may use."""

    conv: Conversation
    ids: list[str]
    sessions: np.ndarray
    turn_vecs: np.ndarray
    query_vecs: np.ndarray
    bm25: BM25Retriever
    bm25_stem: BM25Retriever

    def neighbours(self, i: int, radius: int = 1) -> list[int]:
        lo, hi = max(0, i - radius), min(len(self.ids), i + radius + 1)
        return [j for j in range(lo, hi) if j != i and self.sessions[j] == self.sessions[i]]


def build_features(conv: Conversation) -> Features:
    texts = [t.content for t in conv.turns]
    return Features(
        conv=conv,
        ids=[t.dia_id for t in conv.turns],
        sessions=np.array([t.session for t in conv.turns]),
        turn_vecs=embed_cached(texts),
        query_vecs=embed_cached([q.question for q in conv.questions]),
        bm25=BM25Retriever(texts),
        bm25_stem=BM25Retriever(texts, stemmer="english"),
    )


def load_features(limit: int | None = None) -> list[Features]:
    return [build_features(c) for c in load_conversations(limit=limit)]


# A ranker gets (features, question index) and returns turn indices, best first.
Ranker = Callable[[Features, int], list[int]]


def evaluate(
    rankers: dict[str, Ranker], features: Iterable[Features], k: int = 20
) -> dict[str, tuple[RecallTable, list[float]]]:
    """Recall table and per-query compute time (s, query embedding excluded) per ranker."""
    results = {name: (RecallTable(), []) for name in rankers}
    for feat in features:
        for qi, q in enumerate(feat.conv.questions):
            for name, ranker in rankers.items():
                start = time.perf_counter()
                ranking = ranker(feat, qi)[:k]
                results[name][1].append(time.perf_counter() - start)
                results[name][0].add(q.category, [feat.ids[i] for i in ranking], q.evidence)
    return results


def print_results(results: dict[str, tuple[RecallTable, list[float]]]) -> None:
    print(f"{'ranker':44s} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'R@20':>6} {'p95 ms':>7}")
    for name, (table, times) in results.items():
        m = table.mean()
        p95 = float(np.percentile(np.array(times) * 1000, 95))
        print(f"{name:44s} " + " ".join(f"{m[k]:6.3f}" for k in table.ks) + f" {p95:7.2f}")
