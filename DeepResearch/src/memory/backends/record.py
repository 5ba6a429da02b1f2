"""What every backend stores and is asked for: `MemoryRecord`, `MemoryFilter` (and how it is
evaluated in Python, `record_matches`), the candidates and walks a backend answers with.
The contract that uses them is base.py; this module imports nothing of the backends."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.text import token_string

JSONScalar = str | int | float | bool | None
FOLLOWS = "follows"  # RelationType.FOLLOWS: a memory follows the previous one of its session
DEFAULT_NAMESPACE = "default"
# The archive of namespace N is the namespace `N~archive` of the same store: `~` is not an id
# character (config_base.ID_RULE), so no client opens it and no user namespace is named so.
ARCHIVE_SUFFIX = "~archive"


def archive_namespace(namespace: str) -> str:
    """The namespace holding the archived memories of `namespace`."""
    if is_archive_namespace(namespace):
        raise MemoryBackendError(f"namespace {namespace!r} is already an archive")
    return namespace + ARCHIVE_SUFFIX


def is_archive_namespace(namespace: str) -> bool:
    return namespace.endswith(ARCHIVE_SUFFIX)


def live_namespace(namespace: str) -> str:
    """The namespace whose archive `namespace` is (itself when it is no archive): the one
    whose facts cite the archived memories."""
    return namespace.removesuffix(ARCHIVE_SUFFIX)


@dataclass(frozen=True, slots=True)
class AccessStats:
    """How often retrieves returned a memory, and when last (epoch seconds; None: never)."""

    count: int = 0
    last_accessed: float | None = None


@dataclass(slots=True)
class MemoryRecord:
    """A memory as a backend stores it. Times are UNIX epoch seconds (float, UTC)."""

    id: str
    session_id: str
    memory_type: str
    content: str  # the full text, or a searchable prefix when content_blob holds it compressed
    created_at: float
    agent_type: str | None = None
    importance: float = 0.5
    temporal_weight: float = 1.0
    expires_at: float | None = None
    content_codec: str | None = None  # None | "lz4" | "gzip" | "zstd"
    content_blob: bytes | None = None  # the full content, compressed with content_codec
    metadata: dict[str, Any] = field(default_factory=dict)  # JSON-serialisable, returned unchanged
    relations: list[tuple[str, str]] = field(default_factory=list)  # (RelationType value, target id)
    vector: np.ndarray | None = None  # float32, shape (dimension,), L2-normalised
    # The hard boundary (user / tenant / project): no read, filter, walk or delete crosses it.
    # A record is known by (namespace, id): two namespaces may each have a record "1".
    namespace: str = DEFAULT_NAMESPACE
    # When what the memory tells of happened (e.g. the date of a conversation's session), if
    # the caller knows it; `created_at` is when it was stored. Time-aware ranking reads it.
    event_at: float | None = None


def metadata_patch(patch: Mapping[str, Any] | None) -> dict[str, Any]:
    """`patch` checked (what `MemoryBackend.move` applies to the metadata of the records it
    moves: a key with value None is removed, the others set): string keys, JSON values.
    MemoryInputError naming the bad key or value; {} for None. The values come back as JSON
    reads them (a copy: every backend stores the same thing)."""
    if patch is None:
        return {}
    if not isinstance(patch, Mapping):
        raise MemoryInputError(f"metadata patch must be a mapping, got {patch!r:.80}")
    out: dict[str, Any] = {}
    for key, value in patch.items():
        if not isinstance(key, str):
            raise MemoryInputError(f"metadata patch key {key!r} must be a string")
        try:
            out[key] = json.loads(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError, RecursionError) as exc:
            raise MemoryInputError(
                f"metadata patch value of {key!r} is not JSON-serialisable ({exc})") from None
    return out


def patched(metadata: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`metadata` with `patch` (checked by `metadata_patch`) applied: keys whose patch value
    is None removed, the others set."""
    out = dict(metadata)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def by_namespace(keys: Iterable[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """(namespace, its ids in order, each once) of (namespace, id) keys."""
    groups: dict[str, dict[str, None]] = {}
    for namespace, record_id in keys:
        groups.setdefault(namespace, {})[record_id] = None
    return [(namespace, list(ids)) for namespace, ids in groups.items()]


def walk_namespace(flt: MemoryFilter | None) -> str:
    """The namespace a relation walk stays in: the filter's one namespace, or the default
    one (a record's relations name ids of its own namespace)."""
    if flt is None or flt.namespaces is None:
        return DEFAULT_NAMESPACE
    if len(flt.namespaces) != 1:
        raise MemoryBackendError(
            f"a relation walk stays in one namespace, the filter names {len(flt.namespaces)}"
        )
    return flt.namespaces[0]


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """A conjunction of conditions; None means "no condition on this field".

    `metadata` maps a metadata key to the values it may take (one value = equality).
    `live_at` keeps only memories not expired at that epoch time.
    """

    ids: tuple[str, ...] | None = None
    namespaces: tuple[str, ...] | None = None
    session_ids: tuple[str, ...] | None = None
    memory_types: tuple[str, ...] | None = None
    agent_types: tuple[str, ...] | None = None
    metadata: Mapping[str, tuple[JSONScalar, ...]] = field(default_factory=dict)
    live_at: float | None = None
    created_after: float | None = None
    created_before: float | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A record found by a candidate query, with that query's score (higher is better).

    For vector search the score is cosine similarity in [-1, 1] whatever the index metric;
    for text search it is the backend's lexical score (only its order is used).
    """

    record: MemoryRecord
    score: float


@dataclass(frozen=True, slots=True)
class RelatedRecord:
    record: MemoryRecord
    relation: str  # RelationType value of the edge that reached it
    depth: int  # 1 = directly related


@dataclass(frozen=True, slots=True)
class BackendHealth:
    ok: bool
    backend: str
    detail: str = ""


def record_matches(record: MemoryRecord, flt: MemoryFilter) -> bool:
    """True when `record` satisfies every condition of `flt`.

    A metadata condition with the value None matches a missing key or an explicit null.
    """
    if flt.ids is not None and record.id not in flt.ids:
        return False
    if flt.namespaces is not None and record.namespace not in flt.namespaces:
        return False
    if flt.session_ids is not None and record.session_id not in flt.session_ids:
        return False
    if flt.memory_types is not None and record.memory_type not in flt.memory_types:
        return False
    if flt.agent_types is not None and record.agent_type not in flt.agent_types:
        return False
    if flt.live_at is not None and record.expires_at is not None and record.expires_at <= flt.live_at:
        return False
    if flt.created_after is not None and record.created_at < flt.created_after:
        return False
    if flt.created_before is not None and record.created_at > flt.created_before:
        return False
    for key, allowed in flt.metadata.items():
        value = record.metadata.get(key)
        if isinstance(value, list | dict):
            return False  # only scalar metadata values can be filtered on
        if value not in allowed:
            return False
    return True


def indexed_text(record: MemoryRecord) -> str:
    """What the FTS5 row of `record` holds: the tokens of its full (decompressed) content."""
    return token_string(full_content(record.content, record.content_codec, record.content_blob))
