"""Sessions and nested contexts: a loop's session is named after its parent ('<parent>/<loop>'),
sees its ancestors' memories through that name, and is merged back into the parent at its end.
A mixin of MemorySystemClient (the public methods live on the client)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING
from uuid import uuid4

import numpy as np

from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.inputs import clean_name
from DeepResearch.src.memory.models import RelationType

if TYPE_CHECKING:
    from DeepResearch.src.memory.client import MemorySystemClient

NESTED_SEPARATOR = "/"


def new_session_id() -> str:
    return uuid4().hex


def ancestor_sessions(session_id: str) -> list[str]:
    """'a/b/c' -> ['a/b', 'a']: nested contexts are named after their parents."""
    parts = session_id.split(NESTED_SEPARATOR)
    return [NESTED_SEPARATOR.join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


class NestedContexts:
    """create_nested_context / merge_nested_context of MemorySystemClient."""

    def create_nested_context(self: MemorySystemClient, parent_session_id: str, loop_id: str) -> str:
        """The session id of a loop nested in `parent_session_id`: '<parent>/<loop_id>'. It sees
        its own memories and, with memory.nested.include_ancestors, its ancestors'."""
        parent = clean_name(parent_session_id, "parent_session_id")
        loop = clean_name(loop_id, "loop_id")
        if NESTED_SEPARATOR in loop:
            raise MemoryInputError(f"loop_id {loop!r} may not contain {NESTED_SEPARATOR!r}")
        return f"{parent}{NESTED_SEPARATOR}{loop}"

    async def merge_nested_context(self: MemorySystemClient, child_session_id: str, parent_session_id: str) -> int:
        """Copy the child's memories into the parent session, each PART_OF its original,
        skipping content the parent already holds. Returns how many were copied."""
        child = clean_name(child_session_id, "child_session_id")
        parent = clean_name(parent_session_id, "parent_session_id")
        if not await self._ready():
            return 0
        try:
            return await self._merge(child, parent)
        except MemoryBackendError as exc:
            self._lost(exc)
            return 0

    async def _merge(self: MemorySystemClient, child: str, parent: str) -> int:
        await self.writes.drain_pending()
        from DeepResearch.src.memory.compression import full_content

        def text(r: MemoryRecord) -> str:
            return full_content(r.content, r.content_codec, r.content_blob)

        existing = {text(r) for r in await self.backend.scan(MemoryFilter(session_ids=(parent,)))}
        copies = []
        for record in await self.backend.scan(MemoryFilter(session_ids=(child,))):
            if text(record) in existing:
                continue
            existing.add(text(record))
            copies.append(
                replace(
                    record,
                    id=uuid4().hex,
                    session_id=parent,
                    metadata={**record.metadata},
                    relations=[(RelationType.PART_OF.value, record.id)],
                    vector=np.array(record.vector, copy=True),
                )
            )
        await self._link_follows(copies)
        await self.writes.submit(copies)
        return len(copies)
