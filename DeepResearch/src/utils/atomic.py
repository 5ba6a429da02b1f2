"""Files that a crash leaves whole: the old version or the new one, never half of one."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` so that a crash leaves the old file or the new one whole."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not keep the half-written file
        raise
    # The rename is atomic: a killed process leaves the old file or the new one. (The folder
    # is not fsynced too: that would only protect the rename against a power cut, and doubles
    # the cost of a checkpoint on a busy disk.)
    os.replace(tmp, path)
