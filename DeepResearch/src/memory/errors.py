"""Errors of the memory subsystem; each message names the offending value and what is allowed."""


class MemorySubsystemError(Exception):
    """Base class of every error the memory subsystem raises on purpose."""


class MemoryConfigError(MemorySubsystemError, ValueError):
    """A configuration value is invalid (message names key, value and the choices)."""


class EmbeddingModelError(MemoryConfigError):
    """The configured embedding model cannot be loaded on the configured runtime. `model` and
    `reason` let a caller whose setting chose the model (the rag flow's
    `flows.rag.embedding_model`) name that setting instead of memory's."""

    def __init__(self, message: str, *, model: str = "", reason: str = "") -> None:
        super().__init__(message)
        self.model = model
        self.reason = reason or message


class MemoryInputError(MemorySubsystemError, ValueError):
    """Content, metadata, filters or vectors given to the client are invalid."""


class ConfirmationRequired(MemoryInputError):
    """A forget would delete more memories than memory.forget.confirm_above without the
    caller's confirmation (`count`: how many it would delete)."""

    def __init__(self, message: str, count: int) -> None:
        super().__init__(message)
        self.count = count


class MemoryBackendError(MemorySubsystemError, RuntimeError):
    """The backend cannot do what was asked (down, corrupt, mismatched)."""


class IndexMismatchError(MemoryBackendError):
    """A persisted index does not match the configured model / dimension / metric."""
