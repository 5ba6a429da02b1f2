"""The protocol's reference retrievers: BM25 (bm25s), dense (MiniLM, exact inner product), RRF.

Each retriever is built on one conversation's turn contents and returns, per query, the
indices of the top-k turns in rank order. Embeddings of turns and questions are cached on
disk (outputs/bench-cache/) keyed by model and text, so reruns do not re-encode.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from tqdm import tqdm

from benchmarks.locomo.data import REPO_ROOT, Conversation
from benchmarks.locomo.metrics import RecallTable

CACHE_DIR = REPO_ROOT / "outputs" / "bench-cache" / "locomo"
RRF_K = 60


def embed_cached(texts: Sequence[str], model: str = "all-MiniLM-L6-v2") -> np.ndarray:
    """Unit-norm float32 embeddings of TEXTS through the project's embedder, cached on disk."""
    digest = hashlib.sha256("\x1e".join([model, *texts]).encode("utf-8")).hexdigest()[:24]
    path = CACHE_DIR / f"{model.replace('/', '_')}-{digest}.npy"
    if path.exists():
        return np.load(path)
    from DeepResearch.src.memory.embeddings import get_embedder

    vectors = get_embedder(model).embed(list(texts))
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


class BM25Retriever:
    """Okapi BM25 (bm25s, Lucene variant) over lowercased word tokens minus English stop words."""

    def __init__(self, corpus: Sequence[str], stemmer: str | None = None) -> None:
        import bm25s

        self._bm25s = bm25s
        self._stemmer = None
        if stemmer:
            import Stemmer

            self._stemmer = Stemmer.Stemmer(stemmer)
        self.size = len(corpus)
        tokens = bm25s.tokenize(
            list(corpus), stopwords="en", stemmer=self._stemmer, show_progress=False
        )
        self.model = bm25s.BM25()
        self.model.index(tokens, show_progress=False)
        self.vocab = tokens.vocab

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every turn for QUERY (terms unseen in the corpus are ignored)."""
        words = self._bm25s.tokenize(
            [query], stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )[0]
        if not words:  # only stop words: nothing to match
            return np.zeros(self.size, dtype=np.float64)
        return np.asarray(self.model.get_scores(words), dtype=np.float64)

    def search(self, query: str, k: int) -> list[int]:
        return top_k(self.scores(query), k)


class DenseRetriever:
    """Exact inner-product search (FAISS IndexFlatIP) over unit-norm MiniLM embeddings."""

    def __init__(self, vectors: np.ndarray) -> None:
        import faiss

        self.index = faiss.IndexFlatIP(vectors.shape[1])
        self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self.size = vectors.shape[0]

    def search_vector(self, query: np.ndarray, k: int) -> list[int]:
        _, ids = self.index.search(query.reshape(1, -1).astype(np.float32), min(k, self.size))
        return [int(i) for i in ids[0] if i >= 0]


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the K highest scores, best first; ties keep corpus order (stable)."""
    order = np.argsort(-scores, kind="stable")
    return [int(i) for i in order[:k]]


def rrf(rankings: Sequence[Sequence[int]], k: int, constant: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion: sum of 1 / (constant + rank) over RANKINGS (rank from 1)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (constant + rank)
    return sorted(fused, key=lambda item: (-fused[item], item))[:k]


RRF_DEPTH = 50  # candidates taken from each list; reproduces the protocol's reference figures
BASELINES = ("BM25", "dense (MiniLM)", "RRF(BM25, dense)")


def run_baselines(conversations: Sequence[Conversation], k: int = 20) -> dict[str, RecallTable]:
    """Recall tables of the three reference retrievers over CONVERSATIONS."""
    tables = {name: RecallTable() for name in BASELINES}
    for conv in tqdm(conversations, desc="baselines", unit="conv"):
        ids = [t.dia_id for t in conv.turns]
        sessions = [t.session for t in conv.turns]
        texts = [t.content for t in conv.turns]
        bm25 = BM25Retriever(texts)
        dense = DenseRetriever(embed_cached(texts))
        query_vectors = embed_cached([q.question for q in conv.questions])
        for q, vector in zip(conv.questions, query_vectors, strict=True):
            lexical = bm25.search(q.question, RRF_DEPTH)
            semantic = dense.search_vector(vector, RRF_DEPTH)
            fused = rrf([lexical, semantic], k)
            for name, ranking in zip(BASELINES, (lexical, semantic, fused), strict=True):
                tables[name].add(q.category, [ids[i] for i in ranking[:k]], q.evidence,
                                 [sessions[i] for i in ranking[:k]])
    return tables
