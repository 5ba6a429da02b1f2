"""Validation of what callers hand the client: content, metadata, vectors, relations, filters.

Every check raises MemoryInputError naming the offending value and what is allowed, before
anything is stored. Types and ranges of single values are pydantic TypeAdapters (strict: a bool
is no number, text is no number); what pydantic does not say (JSON round trips, metadata keys,
filter operators, vectors) is checked here.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any
from uuid import uuid4

import numpy as np
from pydantic import Field, TypeAdapter, ValidationError

from DeepResearch.src.memory.backends.base import JSONScalar, MemoryRecord
from DeepResearch.src.memory.compression import compress_content
from DeepResearch.src.memory.config_base import ID_RULE, MAX_TOP_K, TEXT, is_valid_id, number_in
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.models import RelationType

if TYPE_CHECKING:
    from DeepResearch.src.memory.config import MemoryConfig, ProfileConfig

RESERVED_FILTER_KEYS = {"memory_type": "memory_types", "agent_type": "agent_types", "session_id": "session_ids", "id": "ids"}
RECORD_FIELDS = frozenset(
    {"namespace", "content", "created_at", "expires_at", "event_at", "importance", "temporal_weight",
     "relations", "vector"}
)
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")  # filterable keys
_METADATA_STORE_KEY = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")
# Namespaces, sessions, memory and loop ids: safe in a file name, a log line and a query.
MAX_METADATA_BYTES = 65_536
MAX_METADATA_DEPTH = 32
# Names a metadata key may not take: the record's own fields (and the filter keys for them).
RECORD_FIELD_NAMES = frozenset(
    {"id", "namespace", "session_id", "memory_type", "agent_type", "content", "created_at",
     "expires_at", "event_at", "importance", "temporal_weight", "relations", "vector", "ttl"}
)
_RELATION_TYPES = [r.value for r in RelationType]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_TEXT = TypeAdapter(TEXT)
_TIME = TypeAdapter(Annotated[float, Field(strict=True, allow_inf_nan=False)])  # finite
_TOP_K = TypeAdapter(Annotated[int, Field(strict=True, ge=1, le=MAX_TOP_K)])


def error_kind(exc: ValidationError) -> str:
    """The type of a pydantic error's first complaint (e.g. 'float_type', 'less_than_equal')."""
    return exc.errors(include_url=False)[0]["type"]


def is_valid(adapter: TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


def clean_content(content: Any, max_bytes: int, *, what: str = "content") -> str:
    """A non-empty valid UTF-8 str of at most max_bytes bytes (bytes are decoded strictly)."""
    if isinstance(content, bytes | bytearray):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MemoryInputError(
                f"{what}: bytes that are not valid UTF-8 ({exc.reason} at byte {exc.start}); "
                "pass text (str) or UTF-8 encoded bytes"
            ) from None
    if not isinstance(content, str):
        raise MemoryInputError(f"{what} must be a str, got {type(content).__name__}")
    if not content.strip():
        raise MemoryInputError(f"{what} is empty ({_short(content)}); give some text")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise MemoryInputError(
            f"{what} is not valid Unicode text ({exc.reason} at position {exc.start}, "
            "e.g. a lone surrogate); pass properly decoded text"
        ) from None
    if size > max_bytes:
        raise MemoryInputError(
            f"{what} is {size} bytes of UTF-8, above memory.max_content_bytes={max_bytes}"
        )
    return content


def clean_metadata(metadata: Any, max_bytes: int = MAX_METADATA_BYTES) -> dict[str, Any]:
    """A dict that survives a JSON round trip unchanged (so it is returned as stored), at most
    MAX_METADATA_DEPTH levels deep and `max_bytes` of JSON, whose keys are printable text and
    whose top-level keys are not record field names (a filter on such a key would reach the
    field, never the metadata)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise MemoryInputError(f"metadata must be a dict, got {type(metadata).__name__}")
    data = dict(metadata)
    shadowing = sorted(k for k in data if k in RECORD_FIELD_NAMES)
    if shadowing:
        raise MemoryInputError(
            f"metadata key(s) {shadowing} name record fields; pass them as store arguments "
            f"(e.g. {shadowing[0]}=...) or rename the key (e.g. 'meta_{shadowing[0]}')"
        )
    _check_shape(data)
    try:
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise MemoryInputError(
            f"metadata must be JSON data (str keys; str, int, float, bool, None, lists, dicts; "
            f"no NaN/inf): {exc}"
        ) from None
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise MemoryInputError(
            f"metadata is {size} bytes as JSON, above the limit of {max_bytes}; keep large "
            "data in the content or in a file the metadata names"
        )
    if json.loads(text) != data:
        raise MemoryInputError(
            f"metadata {_short(data)} would not come back unchanged (tuples or non-str keys "
            "inside?); use lists and str keys"
        )
    return data


def _check_shape(data: dict[str, Any]) -> None:
    """Depth and keys, walked without recursion (a 5,000-level dict must not overflow)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise MemoryInputError(
                f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels; flatten it"
            )
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise MemoryInputError(f"metadata key {_short(key)} must be a str")
                if not _METADATA_STORE_KEY.match(key):
                    raise MemoryInputError(
                        f"metadata key {_short(key)}: use 1-128 printable characters (no "
                        "control characters such as NUL or newlines)"
                    )
                stack.append((item, depth + 1))
        elif isinstance(value, list | tuple):
            stack.extend((item, depth + 1) for item in value)


def clean_vector(vector: Any, dimension: int) -> np.ndarray:
    """A finite, non-zero float32 vector of `dimension`, normalised to unit length."""
    arr = np.asarray(vector, dtype=np.float32)
    if arr.shape != (dimension,):
        raise MemoryInputError(f"vector has shape {arr.shape}, expected ({dimension},)")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise MemoryInputError(f"vector has a non-finite value {arr[bad]} at index {bad}")
    norm = float(np.linalg.norm(arr))
    if norm == 0.0:
        raise MemoryInputError("vector is all zeros; it has no direction to search by")
    return np.ascontiguousarray(arr / norm, dtype=np.float32)


def clean_unit_float(value: Any, name: str, low: float = 0.0, high: float = 1.0) -> float:
    try:
        return number_in(low, high).validate_python(value)
    except ValidationError as exc:
        if error_kind(exc) == "float_type" or value != value:  # not a number, or NaN
            raise MemoryInputError(
                f"{name} must be a number in [{low}, {high}], got {_short(value)}"
            ) from None
        raise MemoryInputError(f"{name}={value} is outside [{low}, {high}]") from None


def clean_time(value: Any, name: str) -> float:
    """A point in time as UNIX epoch seconds: a datetime (naive ones are read as UTC) or a
    number of epoch seconds in [0, 1e12]."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return clean_unit_float(aware.timestamp(), name, 0.0, 1e12)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MemoryInputError(
            f"{name} must be a datetime or epoch seconds (int/float), got "
            f"{type(value).__name__} {_short(value)}"
        )
    return clean_unit_float(value, f"{name} (epoch seconds)", 0.0, 1e12)


def clean_name(value: Any, name: str) -> str:
    try:
        return _TEXT.validate_python(value)
    except ValidationError:
        raise MemoryInputError(f"{name} must be a non-empty str, got {_short(value)}") from None


def clean_id(value: Any, name: str) -> str:
    """A namespace, session, loop or memory id: ID_RULE."""
    if not is_valid_id(value):
        raise MemoryInputError(f"{name}={_short(value)} is not a valid id: use {ID_RULE}")
    return value


def clean_profile(config: MemoryConfig, name: Any) -> ProfileConfig | None:
    """The profile a caller names (None: none); MemoryInputError naming the value and the
    configured profiles otherwise."""
    if name is None:
        return None
    if not isinstance(name, str) or name not in config.profiles:
        raise MemoryInputError(
            f"profile={_short(name)} is not a configured profile; choices: "
            f"{sorted(config.profiles)}"
        )
    return config.profiles[name]


def clean_top_k(top_k: Any) -> int:
    try:
        return _TOP_K.validate_python(top_k)
    except ValidationError:
        raise MemoryInputError(
            f"top_k must be an int in [1, {MAX_TOP_K}], got {_short(top_k)}"
        ) from None


def clean_relations(relations: Any) -> list[tuple[str, str]]:
    """(type, target id) pairs; type one of RelationType's values."""
    if relations is None:
        return []
    out: list[tuple[str, str]] = []
    for item in relations:
        if isinstance(item, Mapping):
            rel_type, target = item.get("type"), item.get("target_id")
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
            rel_type, target = item
        else:
            raise MemoryInputError(
                f"relation {_short(item)}: give (type, target_id) or {{'type', 'target_id'}}"
            )
        rel_type = getattr(rel_type, "value", rel_type)
        if rel_type not in _RELATION_TYPES:
            raise MemoryInputError(f"relation type {_short(rel_type)}: choices {_RELATION_TYPES}")
        out.append((rel_type, clean_name(target, "relation target_id")))
    return out


def parse_filters(filters: Mapping[str, Any] | None) -> dict[str, Any]:
    """Split caller filters into MemoryFilter keyword arguments.

    Keys: memory_type, agent_type, session_id, id (reserved), or a metadata key (bare, or
    prefixed `metadata.`). Values: a scalar (equality) or a list of scalars (any of them).
    """
    out: dict[str, Any] = {}
    metadata: dict[str, tuple[JSONScalar, ...]] = {}
    if filters is None:
        return out
    if not isinstance(filters, Mapping):
        raise MemoryInputError(f"filters must be a dict, got {type(filters).__name__}")
    for key, value in filters.items():
        if not isinstance(key, str):
            raise MemoryInputError(f"filter key {_short(key)} must be a str")
        values = _filter_values(key, value)
        if key in RESERVED_FILTER_KEYS:
            if any(not isinstance(v, str) for v in values):
                raise MemoryInputError(f"filter {key!r}: values must be str, got {_short(value)}")
            out[RESERVED_FILTER_KEYS[key]] = tuple(values)  # type: ignore[arg-type]
            continue
        meta_key = key.removeprefix("metadata.")
        if key in RECORD_FIELDS:
            raise MemoryInputError(
                f"filter key {key!r} is a record field, not filterable; use one of "
                f"{sorted(RESERVED_FILTER_KEYS)} or a metadata key (e.g. 'metadata.{key}')"
            )
        if not _METADATA_KEY.match(meta_key):
            raise MemoryInputError(
                f"filter key {key!r} is not a valid metadata key (letters, digits, _ . -; no "
                f"operators like '$gt'); allowed: {sorted(RESERVED_FILTER_KEYS)} or metadata keys"
            )
        metadata[meta_key] = tuple(values)
    if metadata:
        out["metadata"] = metadata
    return out


def _filter_values(key: str, value: Any) -> list[JSONScalar]:
    values = list(value) if isinstance(value, list | tuple | set | frozenset) else [value]
    if not values:
        raise MemoryInputError(f"filter {key!r}: an empty list matches nothing; give values")
    for v in values:
        if isinstance(v, Mapping):
            raise MemoryInputError(
                f"filter {key!r}: operators ({_short(v)}) are not supported; give a value or a "
                "list of values (equality / any-of)"
            )
        if v is not None and not isinstance(v, str | int | float | bool):
            raise MemoryInputError(
                f"filter {key!r}: value {_short(v)} is not a str, int, float, bool or None"
            )
        if isinstance(v, float) and not math.isfinite(v):
            raise MemoryInputError(f"filter {key!r}: value {v} is not finite")
        if isinstance(v, str) and "\x00" in v:  # backends disagree on NUL: none takes it
            raise MemoryInputError(
                f"filter {key!r}: value {_short(v)} contains NUL (\\x00), which no filter accepts"
            )
    return values


STORE_FIELDS = frozenset(
    {"content", "metadata", "memory_type", "agent_type", "importance", "temporal_weight",
     "relations", "id", "vector", "ttl", "created_at", "event_at", "session_id"}
)


def fields_from_metadata(
    item: Any, where: str, session: str, namespace: str
) -> Any:
    """`item` with its top-level metadata keys named like record fields (`agent_type`,
    `session_id`, `memory_type`, ...) read as those fields; the rule (docs/memory.md):

    - the record's field wins: it is what is stored, returned and filtered on, and the key
      leaves the metadata;
    - where the call leaves the field unset, the metadata value sets it
      (`metadata={"agent_type": "planner"}` stores a planner memory);
    - where the call sets it (an argument; for `session_id`, `namespace` and `content` the
      session and namespace the client writes to, the content given), a different metadata
      value is an error naming both; an equal one is accepted;
    - `expires_at` is derived from `ttl`: give `ttl`.
    Anything that is not a dict with a dict `metadata` is returned as is (prepare_record says
    what is wrong with it)."""
    if not isinstance(item, Mapping) or not isinstance(item.get("metadata"), Mapping):
        return item
    named = [k for k in item["metadata"] if k in RECORD_FIELD_NAMES]
    if not named:
        return item
    out = dict(item)
    metadata = dict(item["metadata"])
    fixed = {"session_id": item.get("session_id") or session, "namespace": namespace,
             "content": item.get("content")}
    for key in named:
        value = metadata.pop(key)
        if key == "expires_at":
            raise MemoryInputError(f"{where}: metadata key 'expires_at' is derived from ttl; "
                                   "give ttl=<seconds> instead")
        current = fixed[key] if key in fixed else out.get(key)
        if current is None:
            out[key] = value
        elif getattr(current, "value", current) != getattr(value, "value", value):
            raise MemoryInputError(
                f"{where}: metadata {key}={_short(value)} disagrees with the record's "
                f"{key}={_short(current)}; the record's field is what is stored and filtered "
                "on: give one value (or drop the metadata key)")
    out["metadata"] = metadata
    return out


def prepare_record(
    item: Mapping[str, Any], config: MemoryConfig, default_session: str, index: int,
    namespace: str, dimension: int,
) -> MemoryRecord:
    """One `store_many` item validated into a record (compressed; vector checked if given)."""
    where = f"item {index}"
    if not isinstance(item, Mapping):
        raise MemoryInputError(f"{where}: expected a dict with 'content', got {type(item).__name__}")
    unknown = sorted(set(item) - STORE_FIELDS)
    if unknown:
        raise MemoryInputError(f"{where}: unknown fields {unknown}; allowed: {sorted(STORE_FIELDS)}")
    content = clean_content(item.get("content"), config.max_content_bytes, what=f"{where} content")
    now = time.time()
    created_at = item.get("created_at")
    created = now if created_at is None else clean_unit_float(created_at, "created_at", 0.0, 1e12)
    event_at = item.get("event_at")
    ttl = item.get("ttl", config.session_ttl)
    if ttl is not None:
        ttl = clean_unit_float(ttl, "ttl", 1e-9, 1e12)
    stored, codec, blob = compress_content(content, config.compression)
    vector = item.get("vector")
    memory_type = item.get("memory_type") or "note"
    return MemoryRecord(
        id=clean_id(item.get("id") or uuid4().hex, f"{where} id"),
        namespace=namespace,
        session_id=clean_id(item.get("session_id") or default_session, f"{where} session_id"),
        memory_type=clean_name(getattr(memory_type, "value", memory_type), "memory_type"),
        agent_type=None if item.get("agent_type") is None else clean_name(item["agent_type"], "agent_type"),
        content=stored,
        created_at=created,
        importance=clean_unit_float(item.get("importance", 0.5), "importance"),
        temporal_weight=clean_unit_float(item.get("temporal_weight", 1.0), "temporal_weight", 0.0, 1e6),
        expires_at=None if ttl is None else created + ttl,
        content_codec=codec,
        content_blob=blob,
        metadata=clean_metadata(item.get("metadata"), config.max_metadata_bytes),
        relations=clean_relations(item.get("relations")),
        vector=None if vector is None else clean_vector(vector, dimension),
        event_at=None if event_at is None else clean_time(event_at, f"{where} event_at"),
    )


def unreadable(record: MemoryRecord) -> str | None:
    """Why a stored record cannot be served (written by hand or by an older version with
    values `store` refuses), or None when it is fine. Reads skip such records."""
    for name in ("namespace", "session_id"):
        value = getattr(record, name)
        if not isinstance(value, str) or not is_valid_id(value):
            return f"{name}={_short(value)} is not a valid id"
    if not isinstance(record.content, str) or not record.content.strip():
        return "empty content"
    for name, value, low, high in (
        ("importance", record.importance, 0.0, 1.0),
        ("temporal_weight", record.temporal_weight, 0.0, 1e6),
        ("created_at", record.created_at, 0.0, 1e12),
    ):
        if not is_valid(number_in(low, high), value):
            return f"{name}={_short(value)} outside [{low}, {high}]"
    for name, value in (("expires_at", record.expires_at), ("event_at", record.event_at)):
        if value is not None and not is_valid(_TIME, value):
            return f"{name}={_short(value)} is not a time"
    if any(t not in _RELATION_TYPES for t, _ in record.relations):
        return f"unknown relation type in {_short(record.relations)}"
    if record.vector is not None:
        vector = np.asarray(record.vector)
        # sqrt(v.v): the value np.linalg.norm computes for a 1-D vector, without its argument
        # handling (this check runs on every record a retrieve reads)
        norm = math.sqrt(float(np.dot(vector, vector))) if vector.ndim == 1 else math.inf
        if not math.isfinite(norm) or abs(norm - 1.0) > 1e-3:
            return f"vector norm {norm:.3g} (stored vectors are unit length)"
    return None
