"""The start-up check of the embedded store's folder: a `memory.faiss.path` nothing can be
written to is a configuration error (exit 2), not a run that quietly stores nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.errors import MemoryConfigError


def check_store_folder(config: MemoryConfig) -> None:
    """For the faiss backend: create `memory.faiss.path` if missing and prove a file can be
    created in it; raise MemoryConfigError naming the path and the reason otherwise."""
    if config.backend != "faiss":
        return
    folder = Path(config.faiss.path)
    setting = f"memory.faiss.path={config.faiss.path}"
    if folder.exists() and not folder.is_dir():
        raise MemoryConfigError(f"{setting} is a file, not a folder; give the path of a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".write-check-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(folder) else ""
        raise MemoryConfigError(
            f"{setting} cannot be used: {exc.strerror or exc}{where}; give a folder this "
            "process can create files in"
        ) from None
