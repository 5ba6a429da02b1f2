"""MemoryFilter -> an SQL WHERE expression over the records table (embedded backend)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.errors import MemoryBackendError


def filter_sql(
    flt: MemoryFilter, alias: str = "", *, use_indexes: bool = True
) -> tuple[str, list[Any]]:
    """A WHERE expression (never empty: '1' when unconditional) and its parameters.

    `use_indexes=False` writes each column as `+column`, which keeps SQLite from answering
    the query through an index on a filter column: for a query that names its rows by key,
    the key's index is the fast one, but without statistics SQLite prefers, say, the
    memory_type index for `id IN (...) AND memory_type IN (...)` and reads every row of
    those types."""
    a = ("" if use_indexes else "+") + (f"{alias}." if alias else "")
    parts: list[str] = []
    params: list[Any] = []

    def one_of(column: str, values: Sequence[Any]) -> None:
        if not values:
            parts.append("0")
            return
        parts.append(f"{a}{column} IN ({','.join('?' * len(values))})")
        params.extend(values)

    if flt.ids is not None:
        one_of("id", flt.ids)
    if flt.namespaces is not None:
        one_of("namespace", flt.namespaces)
    if flt.session_ids is not None:
        one_of("session_id", flt.session_ids)
    if flt.memory_types is not None:
        one_of("memory_type", flt.memory_types)
    if flt.agent_types is not None:
        one_of("agent_type", flt.agent_types)
    if flt.live_at is not None:
        parts.append(f"({a}expires_at IS NULL OR {a}expires_at > ?)")
        params.append(flt.live_at)
    if flt.created_after is not None:
        parts.append(f"{a}created_at >= ?")
        params.append(flt.created_after)
    if flt.created_before is not None:
        parts.append(f"{a}created_at <= ?")
        params.append(flt.created_before)
    for key, allowed in flt.metadata.items():
        if '"' in key or "\\" in key:
            raise MemoryBackendError(f"metadata filter key {key!r} may not contain quotes")
        path = f'$."{key}"'
        scalars = [v for v in allowed if v is not None]
        cond = []
        if scalars:
            cond.append(
                f"(json_type({a}metadata, ?) NOT IN ('array', 'object') AND "
                f"json_extract({a}metadata, ?) IN ({','.join('?' * len(scalars))}))"
            )
            params.extend([path, path, *scalars])
        if len(scalars) < len(allowed):
            cond.append(f"json_extract({a}metadata, ?) IS NULL")
            params.append(path)
        # a row whose metadata is damaged JSON matches no metadata condition (json_type
        # would fail the whole query on it; reads skip such rows, decoding.py)
        parts.append(f"CASE WHEN json_valid({a}metadata) THEN ({' OR '.join(cond)}) ELSE 0 END"
                     if cond else "0")
    return (" AND ".join(parts) if parts else "1"), params
