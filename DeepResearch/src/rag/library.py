"""DocumentLibrary: the run's documents, searchable lexically or through the FAISS store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from DeepResearch.src.datatypes.documents import Document
from DeepResearch.src.rag.faiss_store import FAISSVectorStore
from DeepResearch.src.rag.lexical import LexicalIndex, tokenize
from DeepResearch.src.rag.loader import DEFAULT_EXTENSIONS, load_documents


def best_passage(text: str, query: str, max_chars: int = 400) -> str:
    """The paragraph of `text` sharing most terms with `query` (trimmed to max_chars)."""
    terms = set(tokenize(query))
    paragraphs = [p.strip() for p in text.split("\n\n") if p.strip() and not p.startswith("#")]
    if not paragraphs:
        return text[:max_chars]
    best = max(paragraphs, key=lambda p: len(terms & set(tokenize(p))))
    return best if len(best) <= max_chars else best[: max_chars - 3].rstrip() + "..."


class DocumentLibrary:
    def __init__(self, folder: Path, documents: Sequence[Document]) -> None:
        self.folder = folder
        self.documents = {doc.id: doc for doc in documents}
        self._order = list(self.documents)
        self._lexical = LexicalIndex([doc.content for doc in documents])
        self.vector_store: FAISSVectorStore | None = None

    @classmethod
    def from_folder(
        cls, folder: Path, extensions: Sequence[str] = DEFAULT_EXTENSIONS
    ) -> DocumentLibrary:
        return cls(folder, load_documents(folder, extensions))

    @property
    def search_mode(self) -> str:
        return "faiss" if self.vector_store is not None else "lexical"

    async def enable_vector_search(self, store: FAISSVectorStore) -> int:
        """Index every document into `store`; search goes through it from now on."""
        await store.add_documents([doc.model_copy() for doc in self.documents.values()])
        self.vector_store = store
        return len(store)

    def get(self, source: str) -> Document | None:
        doc = self.documents.get(source)
        if doc is None:  # tolerate a bare file name or a missing extension
            for candidate in self.documents.values():
                name = candidate.id.rsplit("/", 1)[-1]
                if source in (name, name.rsplit(".", 1)[0]):
                    return candidate
        return doc

    def listing(self) -> list[dict[str, str]]:
        return [
            {"source": doc.id, "title": str(doc.metadata.get("title", doc.id))}
            for doc in self.documents.values()
        ]

    async def search(
        self, query: str, top_k: int = 3, score_threshold: float | None = None
    ) -> list[dict[str, Any]]:
        """Best documents for `query`: source, title, score, excerpt, search mode."""
        if self.vector_store is not None:
            hits = await self.vector_store.search(
                query, top_k=top_k * 3, score_threshold=score_threshold
            )
            seen: dict[str, dict[str, Any]] = {}
            for hit in hits:
                source = str(hit.document.metadata["document_id"])
                if source not in seen:
                    seen[source] = self._hit(source, hit.score, hit.document.content, "faiss")
            return list(seen.values())[:top_k]
        return [
            self._hit(
                self._order[i],
                score,
                best_passage(self.documents[self._order[i]].content, query),
                "lexical",
            )
            for i, score in self._lexical.top(query, top_k)
            if score_threshold is None or score >= score_threshold
        ]

    def _hit(self, source: str, score: float, excerpt: str, mode: str) -> dict[str, Any]:
        doc = self.documents[source]
        return {
            "source": source,
            "title": str(doc.metadata.get("title", source)),
            "score": round(float(score), 4),
            "excerpt": excerpt,
            "search": mode,
        }
