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
]
