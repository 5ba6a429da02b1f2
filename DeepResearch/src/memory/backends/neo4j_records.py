"""`MemoryRecord` <-> the properties of a `(:Memory)` node, and the check that Neo4j can store
a record, made before any write transaction so one bad record never reaches the server.

Properties: the record's fields (`namespace` and `session_id` indexed), the metadata verbatim
as JSON text (`metadata_json`; Neo4j cannot store maps) and, for filtering, each scalar
metadata value also as a property `md.<key>` (read with the dynamic lookup `m[$key]`).
What Neo4j (or its driver) refuses, and `record_row` refuses first with MemoryInputError
naming the record: a property name (metadata key) containing NUL, text that is not valid
UTF-8 (a lone surrogate), values that are not JSON, vectors of the wrong shape or not finite.
A record without a vector (filled behind, vector_fill.py) gets a fresh `vector_token`.
A node whose properties cannot be decoded back (decoding.py) raises DamagedRecord.
"""

from __future__ import annotations

import json
import math
import numbers
import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends.base import DEFAULT_NAMESPACE, MemoryRecord
from DeepResearch.src.memory.backends.decoding import DamagedRecord, decode_json
from DeepResearch.src.memory.backends.neo4j_cypher import META_PREFIX, rel_type
from DeepResearch.src.memory.backends.record import patched
from DeepResearch.src.memory.compression import content_problem
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.text import token_string

_INT64 = (-(2**63), 2**63 - 1)
_TEXT_FIELDS = ("id", "namespace", "session_id", "memory_type", "content")
_OPTIONAL_TEXT_FIELDS = ("agent_type", "content_codec")
_NUMBER_FIELDS = ("created_at", "importance", "temporal_weight", "expires_at", "event_at")
_OPTIONAL_NUMBER_FIELDS = ("expires_at", "event_at")


def _utf8(value: str, what: str, rid: object) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MemoryInputError(
            f"record {rid!r}: {what} is not valid UTF-8 text ({exc.reason} at position "
            f"{exc.start}: {value[max(exc.start - 10, 0) : exc.end + 10]!r}); Neo4j stores "
            "only UTF-8 strings"
        ) from None
    return value


def _text(record: MemoryRecord, name: str, optional: bool) -> str | None:
    value = getattr(record, name)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise MemoryInputError(f"record {record.id!r}: {name}={value!r} must be a string")
    return _utf8(value, name, record.id)


def _number(record: MemoryRecord, name: str) -> float | None:
    value = getattr(record, name)
    if value is None and name in _OPTIONAL_NUMBER_FIELDS:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise MemoryInputError(f"record {record.id!r}: {name}={value!r} must be a finite number")
    return float(value)


def _flat_metadata(metadata: Mapping[Any, Any], rid: object) -> tuple[dict[str, Any], list[str]]:
    """`md.<key>` properties for scalar values; the keys whose values cannot be filtered on."""
    flat: dict[str, Any] = {}
    complex_keys: list[str] = []
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise MemoryInputError(
                f"record {rid!r}: metadata key {key!r} is a {type(key).__name__}; keys "
                "must be strings"
            )
        if "\x00" in key:
            raise MemoryInputError(
                f"record {rid!r}: metadata key {key!r} contains NUL (\\x00); Neo4j "
                "cannot store a property name with NUL: rename the key"
            )
        _utf8(key, f"metadata key {key!r}", rid)
        if value is None:
            continue
        if isinstance(value, bool | str | float) or (
            isinstance(value, int) and _INT64[0] <= value <= _INT64[1]
        ):
            flat[META_PREFIX + key] = value
        else:
            complex_keys.append(key)
    return flat, complex_keys


def metadata_props(metadata: Mapping[Any, Any], rid: object) -> dict[str, Any]:
    """The node properties holding `metadata`: `metadata_json`, `md_complex` and the
    `md.<key>` of each scalar value; MemoryInputError naming the record when Neo4j could not
    store them."""
    flat, complex_keys = _flat_metadata(metadata, rid)
    try:
        metadata_json = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MemoryInputError(f"record {rid!r}: metadata is not JSON-serialisable ({exc})") from None
    _utf8(metadata_json, "metadata (a nested key or value)", rid)
    return {**flat, "metadata_json": metadata_json, "md_complex": complex_keys or None}


def patch_props(stored: Any, patch: Mapping[str, Any], rid: str) -> dict[str, Any] | None:
    """The properties `SET m += ...` writes to apply `patch` (record.metadata_patch) to the
    node whose `metadata_json` is `stored`: the new metadata_json and md_complex, and the
    `md.<key>` of each patched key (null, which removes it, for a removed or non-scalar
    value). None when `stored` is no JSON object (a damaged node)."""
    try:
        metadata = json.loads(stored or "{}")
    except (TypeError, ValueError, RecursionError):
        return None
    if not isinstance(metadata, dict):
        return None
    props = metadata_props(patched(metadata, patch), rid)
    return {**{k: v for k, v in props.items() if not k.startswith(META_PREFIX)},
            **{META_PREFIX + key: props.get(META_PREFIX + key) for key in patch}}


def vector_list(vector: Any, dimension: int, rid: object) -> list[float]:
    """`vector` as the float list Neo4j stores; MemoryInputError naming `rid` when it is not
    `dimension` finite floats."""
    arr = np.asarray(vector, dtype=np.float32)
    if arr.shape != (dimension,) or not np.all(np.isfinite(arr)):
        raise MemoryInputError(
            f"record {rid!r}: vector of shape {arr.shape} (finite: "
            f"{bool(np.all(np.isfinite(arr)))}), expected ({dimension},) finite floats"
        )
    return arr.tolist()


def _vector(record: MemoryRecord, dimension: int) -> list[float] | None:
    return None if record.vector is None else vector_list(record.vector, dimension, record.id)


def record_row(record: MemoryRecord, dimension: int) -> dict[str, Any]:
    """The UNWIND row for one record, {id, namespace, props, vector}; MemoryInputError naming
    the record and the field when Neo4j could not store it."""
    if not isinstance(record.id, str) or not record.id:
        raise MemoryInputError(f"record id {record.id!r}: must be a non-empty string")
    texts = {name: _text(record, name, False) for name in _TEXT_FIELDS}
    texts |= {name: _text(record, name, True) for name in _OPTIONAL_TEXT_FIELDS}
    numbers = {name: _number(record, name) for name in _NUMBER_FIELDS}
    metadata = metadata_props(record.metadata, record.id)
    for rel, target in record.relations:
        rel_type(rel)
        if not isinstance(target, str):
            raise MemoryInputError(f"record {record.id!r}: relation target {target!r} must be a string")
        _utf8(target, f"relation target {target!r}", record.id)
    blob = record.content_blob
    vector = _vector(record, dimension)
    props: dict[str, Any] = {
        **metadata,
        **texts,
        **numbers,
        "search_text": token_string(record.content),  # what the full-text index matches
        "content_blob": None if blob is None else bytes(blob),
        "relations_json": json.dumps([[t, target] for t, target in record.relations]),
        # without a vector: this version of the content awaits one (neo4j_cypher.py)
        "vector_token": uuid.uuid4().hex if vector is None else None,
    }
    return {"id": record.id, "namespace": record.namespace, "props": props, "vector": vector}


def _relations(text: Any, rid: str) -> list[tuple[str, str]]:
    pairs = decode_json(text, "relations", rid, "[]")
    if not isinstance(pairs, list) or not all(
        isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
        for pair in pairs
    ):
        raise DamagedRecord(rid, "stored relations are not a list of [type, target] pairs")
    return [(t, target) for t, target in pairs]


def record_from_props(p: Mapping[str, Any]) -> MemoryRecord:
    """The record of a node's properties; DamagedRecord when they cannot be decoded."""
    vector = p.get("embedding")
    blob = None if p.get("content_blob") is None else bytes(p["content_blob"])
    rid = p["id"]
    problem = content_problem(p.get("content_codec"), blob)
    if problem is not None:
        raise DamagedRecord(rid, problem)
    return MemoryRecord(
        id=p["id"],
        namespace=p.get("namespace") or DEFAULT_NAMESPACE,
        session_id=p["session_id"],
        memory_type=p["memory_type"],
        content=p.get("content") or "",
        created_at=float(p["created_at"]),
        agent_type=p.get("agent_type"),
        importance=float(p.get("importance", 0.5)),
        temporal_weight=float(p.get("temporal_weight", 1.0)),
        expires_at=None if p.get("expires_at") is None else float(p["expires_at"]),
        event_at=None if p.get("event_at") is None else float(p["event_at"]),
        content_codec=p.get("content_codec"),
        content_blob=blob,
        metadata=decode_json(p.get("metadata_json"), "metadata", rid, "{}"),
        relations=_relations(p.get("relations_json"), rid),
        vector=None if vector is None else np.asarray(vector, dtype=np.float32),
    )
