"""FAISSVectorStore: chunks of Documents embedded with THE embedder, in a FAISS index.

Inner product over unit vectors (= cosine). Every chunk is its own index entry; deleting a
document removes all its chunks. `search_type`: "similarity" (dense) or "keyword" (BM25
over the same chunks, for exact terms such as tool names).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from DeepResearch.src.datatypes.documents import Document, SearchResult
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.faiss_pool import run_faiss
from DeepResearch.src.rag.chunking import chunk_text
from DeepResearch.src.rag.lexical import LexicalIndex

SEARCH_TYPES = ("similarity", "keyword")


@dataclass
class _Chunk:
    document_id: str
    index: int
    text: str
    metadata: dict[str, Any]


def _matches(metadata: Mapping[str, Any], filters: Mapping[str, Any] | None) -> bool:
    """Equality filters; a list/tuple/set value means "any of these"."""
    for key, wanted in (filters or {}).items():
        value = metadata.get(key)
        if isinstance(wanted, list | tuple | set):
            if value not in wanted:
                return False
        elif value != wanted:
            return False
    return True


class FAISSVectorStore:
    def __init__(
        self, embedder: Embedder, *, chunk_size: int = 700, chunk_overlap: int = 120
    ) -> None:
        import faiss

        self._faiss = faiss
        self.embedder = embedder
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(embedder.dimension))
        self._chunks: dict[int, _Chunk] = {}
        self._by_document: dict[str, list[int]] = {}
        self._next_id = 0
        self._lexical: LexicalIndex | None = None
        self._lexical_ids: list[int] = []

    def __len__(self) -> int:
        return len(self._chunks)

    @property
    def document_ids(self) -> list[str]:
        return list(self._by_document)

    async def add_documents(self, documents: Sequence[Document]) -> list[str]:
        """Chunk, embed and index `documents` (replacing any with the same id); their ids."""
        return await asyncio.to_thread(self._add, list(documents))

    def _add(self, documents: list[Document]) -> list[str]:
        self._delete([doc.id for doc in documents if doc.id in self._by_document])
        new_chunks: list[tuple[int, _Chunk]] = []
        for doc in documents:
            doc.chunks = chunk_text(doc.content, self.chunk_size, self.chunk_overlap)
            ids: list[int] = []
            for i, text in enumerate(doc.chunks):
                chunk = _Chunk(doc.id, i, text, {**doc.metadata, "document_id": doc.id})
                new_chunks.append((self._next_id, chunk))
                ids.append(self._next_id)
                self._next_id += 1
            self._by_document[doc.id] = ids
        if new_chunks:
            vectors = self.embedder.embed([chunk.text for _, chunk in new_chunks])
            labels = np.array([label for label, _ in new_chunks], dtype=np.int64)
            self._index.add_with_ids(vectors, labels)
            self._chunks.update(new_chunks)
        self._lexical = None
        return [doc.id for doc in documents]

    async def delete_documents(self, document_ids: Sequence[str]) -> int:
        """Remove these documents (all their chunks); the number of chunks removed."""
        return await asyncio.to_thread(self._delete, list(document_ids))

    def _delete(self, document_ids: list[str]) -> int:
        labels = [label for doc_id in document_ids for label in self._by_document.pop(doc_id, [])]
        if labels:
            self._index.remove_ids(np.array(labels, dtype=np.int64))
            for label in labels:
                del self._chunks[label]
            self._lexical = None
        return len(labels)

    async def search(
        self,
        query: str,
        search_type: str = "similarity",
        top_k: int = 4,
        score_threshold: float | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> list[SearchResult]:
        """Best chunks for `query`, each as a Document (id "<doc id>#<chunk>") with its score."""
        if search_type not in SEARCH_TYPES:
            raise ValueError(
                f"search_type {search_type!r} is not supported; use one of {SEARCH_TYPES}"
            )
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, got {top_k}")
        if not self._chunks:
            return []
        if search_type == "keyword":
            scored = self._keyword(query)
        else:
            vector = await asyncio.to_thread(self.embedder.embed_query, query)
            scored = await run_faiss(self._dense, vector, top_k, filters)
        results: list[SearchResult] = []
        for label, score in scored:
            chunk = self._chunks[label]
            if score_threshold is not None and score < score_threshold:
                continue
            if not _matches(chunk.metadata, filters):
                continue
            document = Document(
                id=f"{chunk.document_id}#{chunk.index}",
                content=chunk.text,
                metadata={**chunk.metadata, "chunk_index": chunk.index},
            )
            results.append(
                SearchResult(document=document, score=float(score), rank=len(results) + 1)
            )
            if len(results) == top_k:
                break
        return results

    def _dense(
        self, query_vector: np.ndarray, top_k: int, filters: Mapping[str, Any] | None
    ) -> list[tuple[int, float]]:
        vector = query_vector.reshape(1, -1)
        # With filters, look further down the list so that top_k can still be filled.
        k = len(self._chunks) if filters else min(len(self._chunks), top_k)
        scores, labels = self._index.search(vector, k)
        return [(int(i), float(s)) for i, s in zip(labels[0], scores[0], strict=True) if i >= 0]

    def _keyword(self, query: str) -> list[tuple[int, float]]:
        if self._lexical is None:
            self._lexical_ids = list(self._chunks)
            self._lexical = LexicalIndex([self._chunks[i].text for i in self._lexical_ids])
        ranked = self._lexical.top(query, len(self._lexical_ids))
        return [(self._lexical_ids[i], score) for i, score in ranked]
