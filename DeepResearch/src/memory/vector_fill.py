"""Vectors filled behind the writes (`memory.storage.vectors=behind`; `auto`, the default,
is behind on faiss and inline on Neo4j).

On a backend that `fills_vectors_behind` (faiss, neo4j), a store is acknowledged once its rows are
committed (durable, and found by lexical search at once); the embedding of their content runs
after, here, one filler per client, and gives each row its vector (dense search finds it
then). The rules:

- The rows are the queue. A client's filler fills what the client stored, after each write;
  at open it also sweeps whatever else waits in the store (another process's, what a crash
  left), oldest first. Clients sharing one store in a process do not embed each other's rows.
- Read-your-writes: a client's reads first wait for the vectors of the memories it stored
  (`settle`). Within a process only where the time is spent changes: in a workflow the
  embedding runs while the model thinks, not on the node's path.
- Bounded lag: a store embeds inline once more than `storage.max_pending_vectors` of the
  client's memories are waiting.
- A failed fill (the backend lost, the disk full) is retried with backoff; the rows stay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from DeepResearch.src.memory.errors import MemoryBackendError

if TYPE_CHECKING:
    from DeepResearch.src.memory.backends.base import MemoryBackend
    from DeepResearch.src.memory.config import MemoryConfig
    from DeepResearch.src.memory.embeddings import Embedder
    from DeepResearch.src.memory.hot_tier import HotTier

log = logging.getLogger(__name__)
MAX_BACKOFF = 30.0
MAX_ASKED = 500  # ids of this client's waiting memories per lookup


class Owner(Protocol):
    """What the filler needs of the client that owns it (client.py)."""

    config: MemoryConfig
    namespace: str
    available: bool
    hot: HotTier

    @property
    def backend(self) -> MemoryBackend: ...

    @property
    def embedder(self) -> Embedder: ...


class VectorFiller:
    def __init__(self, client: Owner) -> None:
        self.client = client
        self.owed: set[str] = set()  # ids this client stored whose vectors are not filled yet
        self.filled = 0
        self.failures = 0
        self.last_failure = ""
        self._skip: set[Any] = set()  # rows whose content cannot be read: never filled
        self._sweep = False  # the next background pass fills any waiting row, not just ours
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def _bind(self) -> None:
        """Lock, event and task belong to the running loop (an exit flush runs on a new one)."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._lock, self._wake, self._task = loop, asyncio.Lock(), asyncio.Event(), None

    @property
    def enabled(self) -> bool:
        backend, mode = self.client.backend, self.client.config.storage.vectors
        return backend.fills_vectors_behind and (
            mode == "behind" or (mode == "auto" and backend.vectors_behind_by_default))

    def defers(self, count: int) -> bool:
        """Whether a store of `count` memories may leave its vectors to the filler."""
        return (self.enabled and self.client.available
                and len(self.owed) + count <= self.client.config.storage.max_pending_vectors)

    def counters(self) -> dict[str, Any]:
        return {"awaiting_vectors": len(self.owed), "vectors_filled": self.filled,
                "vector_fill_failures": self.failures}

    def start(self) -> None:
        """Fill whatever waits in the store (a crash's leftovers too) once, in the
        background; after that only what this client stores. Also with `vectors=inline`:
        rows left by a client that deferred are filled whatever this one's setting."""
        if self.client.backend.fills_vectors_behind:
            self._sweep = True
            self._poke()

    def wrote(self, ids: Iterable[str]) -> None:
        """Records committed without vectors (writes.py calls this after the commit)."""
        new = set(ids)
        if new:
            self.owed |= new
            self._poke()

    def _poke(self) -> None:
        with contextlib.suppress(RuntimeError):  # no running loop: the next read fills
            self._bind()
            self._wake.set()
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(self._run())

    async def settle(self) -> None:
        """Return once the memories this client stored have their vectors (filling them
        here if the background has not yet); a fill that fails is logged, not raised: the
        read goes on, finding those memories by their words only."""
        while self.owed and self.client.available:
            try:
                if not await self.fill_once():
                    return
            except Exception as exc:  # the read must go on
                self._failed(exc)
                return

    async def fill_once(self, *, sweep: bool = False) -> int:
        """Embed and store one batch of the rows this client stored without vectors (with
        `sweep`: of any rows waiting in the store); how many were waiting in it."""
        self._bind()
        async with self._lock:
            limit = self.client.config.storage.batch_size
            asked = None if sweep else sorted(self.owed)[:MAX_ASKED]
            if asked == []:
                return 0
            owed_before = set(self.owed)  # a write committed during the lookup is not in it
            waiting = await self.client.backend.pending_vectors(
                limit, tuple(self._skip),
                None if asked is None else (self.client.namespace, asked))
            keys = [key for key, text in waiting.items() if text is not None]
            self._skip |= {key for key, text in waiting.items() if text is None}
            ids: list[str] = []
            if keys:
                vectors = await asyncio.to_thread(self.client.embedder.embed,
                                                  [waiting[k] for k in keys])
                ids = await self.client.backend.fill_vectors(list(zip(keys, vectors, strict=True)))
                self.owed.difference_update(ids)
                self.filled += len(ids)
                self.client.hot.changed(ids)  # dense results may differ now
            # Every row asked for is filled now, or was not waiting. Unless a fill was
            # refused: that memory was replaced since it was read (or deleted, or filled
            # elsewhere), and a new version may wait; it stays owed until a lookup says.
            if len(waiting) < limit and len(ids) == len(keys):
                self.owed.difference_update(owed_before if asked is None else asked)
            return len(waiting)

    async def _run(self) -> None:
        delay = 0.0
        while True:
            if not self.client.available:
                return  # reconnecting writes poke it again
            try:
                if self._sweep:
                    await self._sweep_once()
                    self._sweep = False
                waited = await self.fill_once()
                delay = 0.0
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the rows stay; retried
                self._failed(exc)
                delay = min(MAX_BACKOFF, max(0.5, 2 * delay))
                await asyncio.sleep(delay)
                continue
            if not waited:
                self._wake.clear()
                await self._wake.wait()

    async def _sweep_once(self) -> None:
        """Fill what waited in the store when the client opened, and no more: another
        process still writing is left to its own filler, not followed forever."""
        budget = (await self.client.backend.pending_figures())[0]
        while budget > 0:
            waited = await self.fill_once(sweep=True)
            if not waited:
                return
            budget -= waited

    def _failed(self, exc: Exception) -> None:
        self.failures += 1
        cause = str(exc) if isinstance(exc, MemoryBackendError) else f"{type(exc).__name__}: {exc}"
        if cause != self.last_failure:
            log.warning("memory: filling the vectors of stored memories failed (%s); they are "
                        "found by their words until a retry succeeds", cause)
        self.last_failure = cause

    async def close(self) -> None:
        """Fill what this client owes, then stop the background task."""
        await self.settle()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
