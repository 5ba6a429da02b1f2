"""API keys -> namespaces, and one `MemorySystemClient` per namespace over ONE shared backend
and embedder (the service's whole state of memory).

A request reaches the namespace of its key and nothing else, whatever its body says: the
namespace is chosen here, from the key, and the client it gets is bound to it. With no key
configured the service is a local single-user server: every request gets `memory.namespace`.
"""

from __future__ import annotations

import asyncio
import hmac
import importlib
import json
import logging
import os
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from DeepResearch.src.memory.backends import create_backend
from DeepResearch.src.memory.backends.shared import SharedBackend
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.memory.config import MemoryConfig, check_api_keys
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryConfigError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.service.batching import BatchingEmbedder
from DeepResearch.src.memory.service.coalesce import StoreCoalescer
from DeepResearch.src.memory.service.work_loop import WorkLoop

log = logging.getLogger("DeepResearch.memory.service")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
T = TypeVar("T")
SERVICE_SESSION = "default"  # the session of a memory stored without a session_id


class AuthError(Exception):
    """401: no key or an unknown key."""


def load_api_keys(config: MemoryConfig, environ: dict[str, str] | None = None) -> dict[str, str]:
    """`service.api_keys` plus the keys in the env var named by `service.api_keys_env`
    ("key=namespace,key2=namespace2" or a JSON object); MemoryConfigError on a bad entry."""
    environ = dict(os.environ) if environ is None else environ
    keys = dict(config.service.api_keys)
    var = config.service.api_keys_env
    raw = environ.get(var, "").strip()
    if raw:
        if raw.startswith("{"):
            try:
                extra = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise MemoryConfigError(f"${var}: not a JSON object ({exc.msg})") from None
            if not isinstance(extra, dict):
                raise MemoryConfigError(f"${var}: expected a JSON object of key -> namespace")
        else:
            extra = {}
            for part in filter(None, (p.strip() for p in raw.split(","))):
                key, sep, namespace = part.partition("=")
                if not sep:
                    raise MemoryConfigError(
                        f"${var}: entry {key[:4]!r}... has no '='; expected key=namespace,..."
                    )
                extra[key.strip()] = namespace.strip()
        try:
            keys.update(check_api_keys({str(k): v for k, v in extra.items()}, f"${var}"))
        except ValueError as exc:
            raise MemoryConfigError(str(exc)) from None
    return keys


def check_binding(config: MemoryConfig, keys: dict[str, str]) -> None:
    """No API key = local single user: refuse any host but the loopback one."""
    host = config.service.host
    if not keys and host not in LOCAL_HOSTS:
        raise MemoryConfigError(
            f"memory.service.host={host!r} with no API key configured: without keys the "
            "service is a local single-user server and binds 127.0.0.1 only; set "
            f"memory.service.api_keys or ${config.service.api_keys_env} to serve {host!r}"
        )


@dataclass
class WriteState:
    """The outcome of the last write: health reports the backend down while writes fail
    (reads of an embedded store can still work when its database is locked)."""

    failing: bool = False
    cause: str = ""
    since: float = 0.0  # when writes began to fail
    probed: float = 0.0  # when health last retried them

    def failed(self, cause: str) -> None:
        if not self.failing:
            self.since = self.probed = time.time()
        self.failing, self.cause = True, cause

    def ok(self) -> None:
        self.failing, self.cause = False, ""


class Namespaces:
    """The service's clients: `client_for(key)` -> the client of that key's namespace."""

    def __init__(
        self, config: MemoryConfig, keys: dict[str, str], *, embedder: Embedder | None = None
    ) -> None:
        # A service answers errors, it does not run without memory: a backend failure
        # reaches the request (503) instead of an empty answer.
        self.config = config.model_copy(update={"on_unavailable": "fail"})
        self.keys = dict(keys)
        self.local = not keys
        store = config.vector_store
        base = embedder or get_embedder(store.embedding_model, store.embedding_runtime)
        self.embedder = BatchingEmbedder(base)  # concurrent requests' texts in one encode
        self.backend = SharedBackend(create_backend(self.config, self.embedder.dimension))
        self.writes = WriteState()
        self._clients: dict[str, MemorySystemClient] = {}
        self._graphs: dict[str, FactGraph] = {}
        self._coalescers: dict[str, StoreCoalescer] = {}
        self._lock = asyncio.Lock()
        self._blas: object | None = None
        self.work = WorkLoop()  # every call into the clients runs there (work_loop.py)

    async def run(self, call: Coroutine[Any, Any, T]) -> T:
        """`await call` on the work loop (work_loop.py): the memory's own calls never hold
        up the loop that serves HTTP."""
        return await self.work.run(call)

    def namespace_for(self, key: str | None) -> str:
        if self.local:
            return self.config.namespace
        if not key:
            raise AuthError("missing API key: send it as 'X-API-Key: <key>' or "
                            "'Authorization: Bearer <key>'")
        for known, namespace in self.keys.items():
            if hmac.compare_digest(known.encode(), key.encode()):
                return namespace
        raise AuthError("unknown API key")

    def client(self, namespace: str) -> MemorySystemClient:
        client = self._clients.get(namespace)
        if client is None:
            client = MemorySystemClient(
                self.config, namespace=namespace, session_id=SERVICE_SESSION,
                embedder=self.embedder, backend=self.backend,  # type: ignore[arg-type]
            )
            self._clients[namespace] = client
        return client

    def clients(self) -> list[MemorySystemClient]:
        """The clients made so far (one per namespace served)."""
        return list(self._clients.values())

    def coalescer(self, namespace: str) -> StoreCoalescer:
        """Group commit of `namespace`'s store requests (coalesce.py)."""
        found = self._coalescers.get(namespace)
        if found is None:
            found = self._coalescers[namespace] = StoreCoalescer(self.client(namespace))
        return found

    def graph(self, namespace: str) -> FactGraph:
        """The knowledge graph of `namespace` (over that namespace's client)."""
        graph = self._graphs.get(namespace)
        if graph is None:
            graph = self._graphs[namespace] = FactGraph(self.client(namespace), self.config.facts)
        return graph

    @property
    def model_loaded(self) -> bool:
        return getattr(self.embedder, "_model", None) is not None

    async def start(self) -> None:
        """Start the work loop, load the model and open the backend; a backend down at start
        is logged and the service starts all the same (health says 503 until it is back)."""
        self.work.start()
        try:
            await self.run(self._start())
        except BaseException:  # no start, no stop: the loop's thread ends here
            await self.work.stop()
            raise

    async def _start(self) -> None:
        threads = self.config.service.blas_threads
        if threads:
            from DeepResearch.src.memory.blas_threads import BlasThreadLimit

            self._blas = BlasThreadLimit(threads)
            self._blas.__enter__()  # for the life of the process (restored at stop)
        await asyncio.to_thread(self.embedder.embed, ["warm up"])
        # imported now, not by the first request that needs them (seconds on a busy machine)
        for module in ("DeepResearch.src.memory.agent.retrieval",
                       "DeepResearch.src.memory.facts.extraction"):
            await asyncio.to_thread(importlib.import_module, module)
        try:
            await self.backend.open()
        except MemoryBackendError as exc:
            log.warning("memory backend %r unavailable at start: %s", self.config.backend, exc)

    async def flush(self) -> int:
        """Retry every client's outbox now; the number written."""
        return await self.run(self._flush())

    async def _flush(self) -> int:
        written = 0
        for client in list(self._clients.values()):
            written += await client.writes.flush(force=True)
        return written

    def outbox(self) -> int:
        """Memories waiting in the clients' outboxes (failed writes, never acknowledged)."""
        return sum(len(c.writes.outbox) for c in self._clients.values())

    async def stop(self) -> None:
        """Flush and close every client, then the shared backend (graceful shutdown: every
        acknowledged write is committed already; anything in an outbox is written or
        spilled), then stop the work loop."""
        try:
            await self.run(self._stop())
        finally:
            await self.work.stop()

    async def _stop(self) -> None:
        errors: list[str] = []
        for coalescer in list(self._coalescers.values()):
            await coalescer.drain()
        for namespace, client in list(self._clients.items()):
            try:
                await client.close()
            except MemoryBackendError as exc:
                errors.append(f"{namespace}: {exc}")
        try:
            await self.backend.close_shared()
        except MemoryBackendError as exc:
            errors.append(f"closing the backend: {exc}")
        for error in errors:
            log.error("memory service shutdown: %s", error)
        if self._blas is not None:
            self._blas.__exit__(None, None, None)  # type: ignore[attr-defined]
            self._blas = None
