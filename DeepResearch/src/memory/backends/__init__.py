"""Memory backends behind one interface (base.py); `create_backend` picks one by config.

Imports are lazy: choosing `in_memory` never imports FAISS, and nothing here imports the
neo4j driver unless the neo4j backend is configured.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from DeepResearch.src.memory.backends.base import (
    BackendHealth,
    Candidate,
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
)
from DeepResearch.src.memory.errors import MemoryConfigError

if TYPE_CHECKING:
    from DeepResearch.src.memory.config import MemoryConfig

BACKENDS = ("in_memory", "faiss", "neo4j")
# Seconds the first create_backend() of a kind spent importing its module and libraries
# (the embedded backend's, with FAISS; the neo4j driver's): a per-process cost the run
# reports apart.
IMPORT_SECONDS: dict[str, float] = {}

__all__ = [
    "BACKENDS",
    "IMPORT_SECONDS",
    "BackendHealth",
    "Candidate",
    "MemoryBackend",
    "MemoryFilter",
    "MemoryRecord",
    "RelatedRecord",
    "create_backend",
]


def create_backend(config: MemoryConfig, dimension: int) -> MemoryBackend:
    """A new, not yet opened backend for `config.backend` with vectors of `dimension`."""
    if config.backend == "in_memory":
        from DeepResearch.src.memory.backends.in_memory import InMemoryBackend

        return InMemoryBackend(dimension, config.retrieval.lexical_max_postings)
    if config.backend == "faiss":
        started = time.perf_counter()
        from DeepResearch.src.memory.backends.embedded import EmbeddedBackend
        from DeepResearch.src.memory.embeddings import vector_identity

        IMPORT_SECONDS.setdefault("faiss", time.perf_counter() - started)
        return EmbeddedBackend(
            config.faiss,
            dimension=dimension,
            metric=config.vector_store.index_type,
            model=vector_identity(config.vector_store.embedding_model,
                                  config.vector_store.embedding_runtime),
            lexical_max_postings=config.retrieval.lexical_max_postings,
        )
    if config.backend == "neo4j":
        started = time.perf_counter()
        from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend

        IMPORT_SECONDS.setdefault("neo4j", time.perf_counter() - started)
        return Neo4jBackend(config.neo4j, dimension=dimension, metric=config.vector_store.index_type)
    raise MemoryConfigError(f"memory.backend={config.backend!r}: choices are {list(BACKENDS)}")
