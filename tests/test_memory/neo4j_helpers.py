"""Shared helpers of the neo4j backend tests (real server; see tests/neo4j_support.py)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend
from DeepResearch.src.memory.config import Neo4jConfig

DIM = 8
# A label and index names of their own: the contract suite's 384-d `Memory` index stays apart.
LABEL = "BackendTestMemory"


def settings(uri: str, **overrides: Any) -> Neo4jConfig:
    data: dict[str, Any] = {
        "uri": uri,
        "password": None,
        "node_label": LABEL,
        "index_name": "backend_test_vectors",
        "fulltext_index_name": "backend_test_text",
        "batch_size": 50,
        "connection_timeout": 2.0,
        "retry_attempts": 2,
        "retry_backoff": 0.1,
    }
    data.update(overrides)
    return Neo4jConfig(**data)


def backend(uri: str, **overrides: Any) -> Neo4jBackend:
    return Neo4jBackend(settings(uri, **overrides), dimension=DIM, metric="cosine")


def unit(seed: int | list[float]) -> np.ndarray:
    if isinstance(seed, int):
        vec = np.random.default_rng(seed).normal(size=DIM)
    else:
        vec = np.asarray(seed, dtype=np.float64)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def record(
    rid: str,
    *,
    session: str = "s1",
    content: str | None = None,
    vector: np.ndarray | None = None,
    seed: int = 0,
    created_at: float | None = None,
    **fields: Any,
) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        session_id=session,
        memory_type=fields.pop("memory_type", "note"),
        content=content if content is not None else f"memory {rid}",
        created_at=created_at if created_at is not None else time.time(),
        vector=vector if vector is not None else unit(seed),
        **fields,
    )
