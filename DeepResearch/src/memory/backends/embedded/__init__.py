"""The embedded backend (`memory.backend=faiss`): SQLite + FTS5 + FAISS in one folder."""

from DeepResearch.src.memory.backends.embedded.database import DB_FILE
from DeepResearch.src.memory.backends.embedded.store import EmbeddedBackend
from DeepResearch.src.memory.backends.embedded.vectors import INDEX_FILE

__all__ = ["DB_FILE", "INDEX_FILE", "EmbeddedBackend"]
