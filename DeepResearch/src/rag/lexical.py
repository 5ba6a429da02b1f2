"""Keyword search over a fixed list of texts: the default flow's document search and the rag
store's keyword mode. The same BM25 and tokenizer as the memory: SQLite FTS5's bm25() over
the project's tokens (DeepResearch/src/memory/text.py), in an in-memory database."""

from __future__ import annotations

import sqlite3

from DeepResearch.src.memory.text import fts_query, token_string, tokenize

__all__ = ["LexicalIndex", "tokenize"]


class LexicalIndex:
    """BM25 (FTS5's, k1=1.2, b=0.75) over `texts`, addressed by their position."""

    def __init__(self, texts: list[str]) -> None:
        self._n = len(texts)
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute("CREATE VIRTUAL TABLE fts USING fts5 (tokens)")
        self._db.executemany(
            "INSERT INTO fts (rowid, tokens) VALUES (?, ?)",
            ((i + 1, token_string(text)) for i, text in enumerate(texts)),
        )

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(index, score) of the best `k` texts that match a query word, best first."""
        match = fts_query(query)
        if match is None or k <= 0:
            return []
        rows = self._db.execute(
            "SELECT rowid, -bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?",
            (match, k),
        )
        return [(row - 1, score) for row, score in rows]

    def scores(self, query: str) -> list[float]:
        """A score per text (0.0 where no query word occurs)."""
        out = [0.0] * self._n
        for index, score in self.top(query, self._n):
            out[index] = score
        return out
