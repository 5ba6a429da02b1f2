"""`MemoryFilter` evaluated in Python, for backends that hold records in process memory."""

from __future__ import annotations

from DeepResearch.src.memory.backends.base import MemoryFilter, MemoryRecord


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
