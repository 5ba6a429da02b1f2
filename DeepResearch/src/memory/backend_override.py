"""`memory.backend=X` on a command line means the config group option `memory/backend=X`.

The backend is a Hydra config group (conf/memory/backend/): each option composes `backend` and
its own section only. Hydra reads `memory.backend=neo4j` as a plain value, which would keep the
faiss section and reject `memory.neo4j.uri=...` beside it. Both commands (`deepresearch`,
`deepresearch-memory`) pass their arguments through `as_group_choice` so the two spellings
choose the backend the same way, and a name that is no backend gets one line naming the choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

from DeepResearch.src.memory.config import BackendName
from DeepResearch.src.memory.errors import MemoryConfigError

FORMS = ("memory.backend=", "memory/backend=")
CHOICES = get_args(BackendName)


def as_group_choice(overrides: Sequence[str]) -> list[str]:
    """`overrides` with every `memory.backend=X` written `memory/backend=X`.

    Raises MemoryConfigError when X (or one of a sweep's X,Y) is not a backend."""
    out = []
    for arg in overrides:
        form = next((f for f in FORMS if arg.startswith(f)), None)
        if form is None:
            out.append(arg)
            continue
        value = arg[len(form):]
        unknown = [v for v in value.split(",") if v.strip() not in CHOICES]
        if unknown:
            raise MemoryConfigError(f"memory.backend={unknown[0]!r}: choices are {list(CHOICES)}")
        out.append(FORMS[1] + value)
    return out
