"""Conversions of `MemoryRecord`: to the documents callers see, and to/from JSON lines
(CLI export/import, the spill file of unwritten memories). JSON keeps ids, epoch times,
metadata, relations and the vector exactly, so export -> import round-trips."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.models import MemoryDocument, Relation, RelationType

JSON_FIELDS = (
    "id", "namespace", "session_id", "memory_type", "agent_type", "content", "created_at", "expires_at",
    "importance", "temporal_weight", "metadata", "relations", "vector",
)


def to_datetime(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC)


def to_document(record: MemoryRecord) -> MemoryDocument:
    """The caller's view: full (decompressed) content, metadata exactly as stored."""
    return MemoryDocument(
        id=record.id,
        content=full_content(record.content, record.content_codec, record.content_blob),
        metadata=record.metadata,
        created_at=to_datetime(record.created_at),
        memory_type=record.memory_type,
        agent_type=record.agent_type,
        session_id=record.session_id,
        importance=record.importance,
        temporal_weight=record.temporal_weight,
        expires_at=to_datetime(record.expires_at),
        relations=[Relation(type=RelationType(t), target_id=d) for t, d in record.relations],
    )


def record_to_json(record: MemoryRecord, *, include_vector: bool = True) -> dict[str, Any]:
    vector = None
    if include_vector and record.vector is not None:
        raw = np.ascontiguousarray(record.vector, dtype="<f4").tobytes()
        vector = base64.b64encode(raw).decode("ascii")
    return {
        "id": record.id,
        "namespace": record.namespace,
        "session_id": record.session_id,
        "memory_type": record.memory_type,
        "agent_type": record.agent_type,
        "content": full_content(record.content, record.content_codec, record.content_blob),
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "importance": record.importance,
        "temporal_weight": record.temporal_weight,
        "metadata": record.metadata,
        "relations": [[t, d] for t, d in record.relations],
        "vector": vector,
    }


def json_vector(data: dict[str, Any], where: str) -> np.ndarray | None:
    """The base64 float32 vector of an exported line, or None when absent."""
    encoded = data.get("vector")
    if encoded is None:
        return None
    try:
        return np.frombuffer(base64.b64decode(encoded, validate=True), dtype="<f4").astype(np.float32)
    except (ValueError, TypeError) as exc:
        raise MemoryInputError(f"{where}: 'vector' is not base64 float32 data ({exc})") from None


def check_json_line(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise MemoryInputError(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(JSON_FIELDS))
    if unknown:
        raise MemoryInputError(f"{where}: unknown fields {unknown}; allowed: {list(JSON_FIELDS)}")
    for required in ("id", "session_id", "content", "created_at"):
        if data.get(required) is None:
            raise MemoryInputError(f"{where}: missing {required!r}")
    return data
