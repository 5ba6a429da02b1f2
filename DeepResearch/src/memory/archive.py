"""The archive tier and pins of MemorySystemClient: `archive`, `restore`, `archived`, `pin`,
`unpin`, and the retention purge `expire()` runs. A mixin (the public methods live on the
client).

The archive of namespace N is the namespace `N~archive` of the same store
(backends/record.py): no read, search, count or walk of N sees it, and a memory moves there
and back whole (`MemoryBackend.move`: same vector, relations, times; facts keep citing it).
An archived memory carries metadata "archived_at" (epoch seconds) and "archive_reason",
set (and on restore removed) by that move, in its one transaction.
A pinned memory has metadata "pinned" = True: pruning and consolidation leave it alone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from DeepResearch.src.memory.backends.record import MemoryFilter, MemoryRecord, archive_namespace
from DeepResearch.src.memory.client_parts import ClientParts
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.inputs import clean_id, clean_name
from DeepResearch.src.memory.models import MemoryDocument
from DeepResearch.src.memory.records_io import to_document

ARCHIVED_AT = "archived_at"
ARCHIVE_REASON = "archive_reason"
PINNED = "pinned"


def clean_ids(ids: Any, what: str = "ids") -> list[str]:
    """A list of memory ids (a single str is refused: it would be read as characters)."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        raise MemoryInputError(f"{what} must be a list of memory ids, got {ids!r:.80}")
    return list(dict.fromkeys(clean_id(i, "memory id") for i in ids))


def is_pinned(record: MemoryRecord) -> bool:
    return record.metadata.get(PINNED) is True


class Archive(ClientParts):
    """archive / restore / archived / pin / unpin of MemorySystemClient."""

    @property
    def archive_namespace(self) -> str:
        return archive_namespace(self.namespace)

    async def _writable(self) -> None:
        """Opened, pending writes written (what is archived or pinned is in the store), and
        the backend available; MemoryBackendError naming why not."""
        await self.open()
        await self.writes.drain_pending()
        if not self.available:
            raise MemoryBackendError(f"memory backend unavailable: {self._unavailable_reason}")
        await self.filler.settle()  # a memory moves with its vector, not for a later sweep

    async def _refile(
        self, ids: list[str], source: str, target: str, metadata: dict[str, Any]
    ) -> int:
        """Move the records `ids` of `source` that exist to `target`, their metadata patched
        by `metadata` (None removes a key) in the same transaction: a failure leaves them
        where and as they were."""
        try:
            moved = await self.backend.move(ids, source, target, metadata)
        finally:  # a retrieve cached before the move must not serve a memory it moved
            self.hot.changed(ids)
        self._forget_session_tails()  # the last memory of a session may have moved
        return moved

    async def archive(self, ids: Sequence[str], *, reason: str) -> int:
        """Move memories of this namespace to its archive: retrieval, get, list and walks no
        longer see them; `restore` brings them back unchanged. Sets metadata "archived_at"
        (now, epoch seconds) and "archive_reason" in the move's transaction. A memory
        already archived under an id is replaced by the one archived now. Returns how many
        moved (missing ids skipped)."""
        wanted = clean_ids(ids)
        reason = clean_name(reason, "reason")
        await self._writable()
        mark = {ARCHIVED_AT: time.time(), ARCHIVE_REASON: reason}
        return await self._refile(wanted, self.namespace, self.archive_namespace, mark)

    async def restore(self, ids: Sequence[str]) -> int:
        """Move archived memories back to this namespace (a live memory with the same id is
        replaced), without "archived_at" and "archive_reason" (removed in the move's
        transaction). Returns how many moved."""
        wanted = clean_ids(ids)
        await self._writable()
        unmark = {ARCHIVED_AT: None, ARCHIVE_REASON: None}
        return await self._refile(wanted, self.archive_namespace, self.namespace, unmark)

    async def archived(self, limit: int | None = None, offset: int = 0) -> list[MemoryDocument]:
        """The archived memories of this namespace, oldest first (created_at, then id)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise MemoryInputError(f"limit must be an int >= 0 or None, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise MemoryInputError(f"offset must be an int >= 0, got {offset!r}")
        await self._writable()
        flt = MemoryFilter(namespaces=(self.archive_namespace,))
        return [to_document(r) for r in await self.backend.scan(flt, limit, offset)]

    async def pin(self, ids: Sequence[str]) -> int:
        """Pin memories of this namespace (metadata "pinned" = True): pruning and
        consolidation never archive them. Returns how many were found."""
        return await self._set_pinned(clean_ids(ids), True)

    async def unpin(self, ids: Sequence[str]) -> int:
        """Remove the pin of memories of this namespace. Returns how many were found."""
        return await self._set_pinned(clean_ids(ids), False)

    async def _set_pinned(self, ids: list[str], pinned: bool) -> int:
        await self._writable()
        records = await self.backend.get(ids, self.namespace)
        changed = [r for r in records if is_pinned(r) != pinned]
        for record in changed:
            if pinned:
                record.metadata[PINNED] = True
            else:
                record.metadata.pop(PINNED, None)
        if changed:
            try:
                await self.backend.upsert(changed)
            finally:
                self.hot.changed(r.id for r in changed)
        return len(records)

    async def purge_archive(self, now: float | None = None) -> int:
        """Delete the archived memories older than `memory.archive.retention_days` (by
        "archived_at"; none when it is null); returns how many (facts' cascade included)."""
        days = self.config.archive.retention_days
        if days is None:
            return 0
        cutoff = (time.time() if now is None else now) - days * 86400.0
        return await self._delete_where(MemoryFilter(namespaces=(self.archive_namespace,)),
                                        lambda r: _archived_before(r, cutoff))


def _archived_before(record: MemoryRecord, cutoff: float) -> bool:
    """Archived at or before `cutoff`; a record without a readable time is kept."""
    at = record.metadata.get(ARCHIVED_AT)
    return isinstance(at, int | float) and not isinstance(at, bool) and at <= cutoff
