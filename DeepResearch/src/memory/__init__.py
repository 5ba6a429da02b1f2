"""The memory subsystem: `MemorySystemClient` (async) / `SyncMemorySystemClient`, configured
by `MemoryConfig` (the `memory` Hydra group). See docs/memory.md."""

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
    MemoryType,
    RelatedMemory,
    Relation,
    RelationType,
    RetrievedMemory,
)
from DeepResearch.src.memory.status import MemoryHealth, MemoryStats
from DeepResearch.src.memory.sync import SyncMemorySystemClient

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
    # The agent toolset imports pydantic-ai: only when asked for.
    if name in ("memory_toolset", "MemoryBinding"):
        from DeepResearch.src.memory import toolset

        return getattr(toolset, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
