"""Sessions and nested contexts: a loop's session is named after its parent ('<parent>/<loop>'),
sees its ancestors' memories through that name, and is merged back into the parent at its end.
A mixin of MemorySystemClient (the public methods live on the client).

A merge copies the child's memories and skips what the parent holds: it reads both sessions,
unless both are sessions this client made up (its own, when no session_id was given, and the
nested contexts named after it). Those hold only what this client wrote, which it keeps in
`NewSessionRecords`, so their merge reads nothing: a workflow's nested loop writes its
memories and merges them in one backend write, and the merges of a run with many loops do not
read an ever larger parent again and again.
"""

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

NESTED_SEPARATOR = ":"
KEPT_RECORDS = 10_000  # records NewSessionRecords holds at most; beyond, merges read


def new_session_id() -> str:
    return uuid4().hex


def ancestor_sessions(session_id: str) -> list[str]:
    """'a/b/c' -> ['a/b', 'a']: nested contexts are named after their parents."""
    parts = session_id.split(NESTED_SEPARATOR)
    return [NESTED_SEPARATOR.join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


class NewSessionRecords:
    """The records a client wrote into the sessions it made up; `of(session)` gives them in
    the order `scan` of that session would. `None` once it may not know all of them: after
    a delete or an import (sessions may have lost or gained records) or past KEPT_RECORDS."""

    def __init__(self, limit: int = KEPT_RECORDS) -> None:
        self.limit = limit
        self._records: dict[str, list[MemoryRecord]] | None = {}
        self._count = 0

    def add(self, records: list[MemoryRecord]) -> None:
        if self._records is None:
            return
        self._count += len(records)
        if self._count > self.limit:
            self.forget()
            return
        for record in records:
            self._records.setdefault(record.session_id, []).append(record)

    def of(self, session_id: str) -> list[MemoryRecord] | None:
        if self._records is None:
            return None
        return sorted(self._records.get(session_id, ()), key=lambda r: (r.created_at, r.id))

    def forget(self) -> None:
        """From now on merges read their sessions."""
        self._records = None


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
        from DeepResearch.src.memory.compression import full_content

        def text(r: MemoryRecord) -> str:
            return full_content(r.content, r.content_codec, r.content_blob)

        known = [self._written.of(s) if self._is_new_session(s) else None for s in (parent, child)]
        if known[0] is not None and known[1] is not None:
            in_parent, in_child = known[0], known[1]
        else:
            await self.writes.drain_pending()
            in_parent = await self.backend.scan(MemoryFilter(session_ids=(parent,)))
            in_child = await self.backend.scan(MemoryFilter(session_ids=(child,)))
        existing = {text(r) for r in in_parent}
        copies = []
        for record in in_child:
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
        self._written.add([c for c in copies if self._is_new_session(c.session_id)])
        await self.writes.submit(copies)
        return len(copies)
