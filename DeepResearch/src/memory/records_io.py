"""Conversions of `MemoryRecord`: to the documents callers see, and to/from JSON lines
(CLI export/import, the spill file of unwritten memories). JSON keeps ids, epoch times,
metadata, relations and the vector exactly, so export -> import round-trips."""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from DeepResearch.src.memory.backends.base import DEFAULT_NAMESPACE, MemoryRecord
from DeepResearch.src.memory.compression import compress_content, full_content
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.inputs import (
    clean_content,
    clean_id,
    clean_metadata,
    clean_name,
    clean_relations,
    clean_unit_float,
    clean_vector,
)
from DeepResearch.src.memory.models import MemoryDocument, Relation, RelationType

if TYPE_CHECKING:
    from DeepResearch.src.memory.config import MemoryConfig

JSON_FIELDS = (
    "id", "namespace", "session_id", "memory_type", "agent_type", "content", "created_at", "expires_at",
    "event_at",
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
        event_at=to_datetime(record.event_at),
        relations=[Relation(type=RelationType(t), target_id=d) for t, d in record.relations],
    )


def record_to_json(record: MemoryRecord, *, include_vector: bool = True) -> dict[str, Any]:
    vector = None
    if include_vector and record.vector is not None:
        raw = np.ascontiguousarray(record.vector, dtype="<f4").tobytes()
        vector = base64.b64encode(raw).decode("ascii")
    line = {
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
    if record.event_at is not None:  # absent otherwise: exports of older versions stay as they were
        line["event_at"] = record.event_at
    return line


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


def record_from_json(data: Any, where: str, config: MemoryConfig, dimension: int) -> MemoryRecord:
    """One exported (or spilled) JSON line as a record, checked like `store` checks its
    items (inputs.py); raises MemoryInputError prefixed with `where`. A vector of another
    dimension than the configured one is dropped (the caller embeds the content again); a
    non-finite or zero vector is refused, a vector of another length is normalised."""
    try:
        data = check_json_line(data, where)
        content = clean_content(data["content"], config.max_content_bytes)
        created = clean_unit_float(data["created_at"], "created_at", 0.0, 1e12)
        expires = data.get("expires_at")
        if expires is not None:
            expires = clean_unit_float(expires, "expires_at (epoch seconds)", 0.0, 1e12)
        event = data.get("event_at")
        if event is not None:
            event = clean_unit_float(event, "event_at (epoch seconds)", 0.0, 1e12)
        agent = data.get("agent_type")
        if not isinstance(data.get("relations") or [], list):
            raise MemoryInputError(
                f"relations must be a list of [type, target_id], got {type(data['relations']).__name__}"
            )
        namespace = clean_id(data.get("namespace") or DEFAULT_NAMESPACE, "namespace")
        if namespace != config.namespace:
            raise MemoryInputError(
                f"namespace {namespace!r} is not the configured memory.namespace="
                f"{config.namespace!r}; import this file with memory.namespace={namespace}"
            )
        stored, codec, blob = compress_content(content, config.compression)
        return MemoryRecord(
            id=clean_id(data["id"], "id"),
            session_id=clean_id(data["session_id"], "session_id"),
            namespace=namespace,
            # absent: a note; present, it must be a type (an empty one is refused)
            memory_type=clean_name(data.get("memory_type", "note"), "memory_type"),
            agent_type=None if agent is None else clean_name(agent, "agent_type"),
            content=stored, content_codec=codec, content_blob=blob,
            created_at=created, expires_at=expires, event_at=event,
            importance=clean_unit_float(data.get("importance", 0.5), "importance"),
            temporal_weight=clean_unit_float(
                data.get("temporal_weight", 1.0), "temporal_weight", 0.0, 1e6
            ),
            metadata=clean_metadata(data.get("metadata"), config.max_metadata_bytes),
            relations=clean_relations(data.get("relations")),
            vector=_checked_vector(data, where, dimension),
        )
    except MemoryInputError as exc:
        text = str(exc)
        raise MemoryInputError(text if text.startswith(where) else f"{where}: {text}") from None


def _checked_vector(data: dict[str, Any], where: str, dimension: int) -> np.ndarray | None:
    vector = json_vector(data, where)
    if vector is None or vector.shape != (dimension,):
        return None
    unit = clean_vector(vector, dimension)
    # An exported vector is unit length already: keep its exact bits (export -> import -> export
    # gives the same file); only a vector off unit length is replaced by its normalised copy.
    return vector if abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5 else unit
