"""The memory subsystem: `MemorySystemClient` (async) / `SyncMemorySystemClient`, configured
by `MemoryConfig` (the `memory` Hydra group). See docs/memory.md.

The names below are imported on first use, so importing one small module of the package
(`memory.errors`, `memory.text`) does not load the client, its backends and their libraries.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient
    from DeepResearch.src.memory.config import MemoryConfig, ProfileConfig
    from DeepResearch.src.memory.errors import (
        IndexMismatchError,
        MemoryBackendError,
        MemoryConfigError,
        MemoryInputError,
        MemorySubsystemError,
    )
    from DeepResearch.src.memory.models import (
        MemoryDocument,
        MemoryHealth,
        MemoryStats,
        MemoryType,
        RelatedMemory,
        Relation,
        RelationType,
        RetrievedMemory,
    )
    from DeepResearch.src.memory.sync import SyncMemorySystemClient
    from DeepResearch.src.memory.toolset import MemoryBinding, memory_toolset

# public name -> the module that defines it
_HOMES = {
    "MemorySystemClient": "client",
    "MemoryConfig": "config",
    "ProfileConfig": "config",
    "IndexMismatchError": "errors",
    "MemoryBackendError": "errors",
    "MemoryConfigError": "errors",
    "MemoryInputError": "errors",
    "MemorySubsystemError": "errors",
    "MemoryDocument": "models",
    "MemoryType": "models",
    "RelatedMemory": "models",
    "Relation": "models",
    "RelationType": "models",
    "RetrievedMemory": "models",
    "MemoryHealth": "models",
    "MemoryStats": "models",
    "SyncMemorySystemClient": "sync",
    "MemoryBinding": "toolset",
    "memory_toolset": "toolset",
}
__all__ = [
    "IndexMismatchError",
    "MemoryBackendError",
    "MemoryBinding",
    "MemoryConfig",
    "MemoryConfigError",
    "MemoryDocument",
    "MemoryHealth",
    "MemoryInputError",
    "MemoryStats",
    "MemorySubsystemError",
    "MemorySystemClient",
    "MemoryType",
    "ProfileConfig",
    "RelatedMemory",
    "Relation",
    "RelationType",
    "RetrievedMemory",
    "SyncMemorySystemClient",
    "memory_toolset",
]


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next access is a plain attribute
    return value
