"""The neo4j backend's connection: driver, schema set-up, retries with backoff.

A server that cannot be reached at `open()` gives MemoryBackendError at once (no retries: the
client then warns once and degrades). An operation that loses the server later is retried
`retry_attempts` times with exponential backoff (`retry_backoff`, doubled each time; the
driver's own transaction retries are bounded by `max_transaction_retry_time`), then raises
MemoryBackendError, so the client's outbox keeps the write for later. While the server is known
to be down, each call first probes it once and fails fast instead of retrying again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from DeepResearch.src.memory.backends.neo4j_cypher import Queries
from DeepResearch.src.memory.errors import (
    IndexMismatchError,
    MemoryBackendError,
    MemoryConfigError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
_existing_driver: Any = None


class Neo4jSettings(Protocol):
    """What the backend reads from `memory.neo4j` (config.Neo4jConfig satisfies it)."""

    uri: str
    username: str
    password: str | None
    database: str
    index_name: str
    fulltext_index_name: str
    node_label: str
    max_connection_pool_size: int
    batch_size: int
    use_existing_connection: bool
    similarity_to_threshold: float | None
    connection_timeout: float
    max_transaction_retry_time: float
    retry_attempts: int
    retry_backoff: float


def register_existing_driver(driver: Any) -> None:
    """Share the framework's own neo4j AsyncDriver (its `db.neo4j` connection) with memory
    backends configured with `use_existing_connection: true`. They never close it."""
    global _existing_driver
    _existing_driver = driver


class Neo4jConnection:
    """One driver (ours, or an existing one we never close) to one database."""

    def __init__(
        self,
        settings: Neo4jSettings,
        queries: Queries,
        *,
        dimension: int,
        similarity: str,
        driver: Any = None,
    ) -> None:
        self.settings = settings
        self.q = queries
        self.dimension = dimension
        self.similarity = similarity
        self._given_driver = driver
        self.driver: Any = None
        self._owns_driver = False
        self.server_agent = ""
        self.down_since: float | None = None  # set when retries ran out; cleared on success

    def where(self) -> str:
        return f"Neo4j at {self.settings.uri} (database {self.settings.database!r})"

    def _auth(self) -> tuple[str, str] | None:
        password = self.settings.password or os.environ.get("NEO4J_PASSWORD")
        return (self.settings.username, password) if password else None

    def _make_driver(self) -> tuple[Any, bool]:
        if self.settings.use_existing_connection:
            driver = self._given_driver or _existing_driver
            if driver is None:
                raise MemoryConfigError(
                    "memory.neo4j.use_existing_connection=true but no existing Neo4j driver "
                    "was given: pass driver= or call register_existing_driver(driver) first"
                )
            return driver, False
        if self._given_driver is not None:
            return self._given_driver, False
        from neo4j import AsyncGraphDatabase

        s = self.settings
        driver = AsyncGraphDatabase.driver(
            s.uri,
            auth=self._auth(),
            max_connection_pool_size=s.max_connection_pool_size,
            connection_timeout=s.connection_timeout,
            connection_acquisition_timeout=max(2 * s.connection_timeout, 1.0),
            max_transaction_retry_time=s.max_transaction_retry_time,
            notifications_min_severity="OFF",
        )
        return driver, True

    async def open(self) -> None:
        """Connect, check the server, create the schema; MemoryBackendError if impossible."""
        await self.close()
        from neo4j.exceptions import AuthError

        try:
            self.driver, self._owns_driver = self._make_driver()
        except MemoryConfigError:
            raise
        except ValueError as exc:  # e.g. a malformed URI
            raise MemoryBackendError(f"memory.neo4j.uri={self.settings.uri!r}: {exc}") from exc
        try:
            await self.driver.verify_connectivity()
            info = await self.driver.get_server_info()
            self.server_agent = str(info.agent)
            await self._ensure_schema()
        except AuthError as exc:
            await self.close()
            raise MemoryBackendError(
                f"{self.where()} refused the credentials of user {self.settings.username!r} "
                "(memory.neo4j.username / memory.neo4j.password or NEO4J_PASSWORD)"
            ) from exc
        except (MemoryBackendError, MemoryConfigError):
            await self.close()
            raise
        except Exception as exc:  # Neo4jError, DriverError (ServiceUnavailable...), OSError
            await self.close()
            raise MemoryBackendError(
                f"cannot use {self.where()}: {type(exc).__name__}: {exc}. Is the server "
                "running and memory.neo4j.uri right? (memory.backend=faiss needs no server)"
            ) from exc

    async def _ensure_schema(self) -> None:
        version = self.server_agent.partition("/")[2].split(".")
        if len(version) >= 2 and version[0].isdigit() and version[1].isdigit():
            if (int(version[0]), int(version[1])) < (5, 18):
                raise MemoryBackendError(
                    f"{self.where()} runs {self.server_agent}; the neo4j memory backend "
                    "needs Neo4j 5.18 or newer (vector index, Cypher 5 subqueries)"
                )
        for statement in self.q.schema:
            await self.driver.execute_query(statement, database_=self.settings.database)
        await self.driver.execute_query(
            self.q.create_vector_index,
            {"dimensions": self.dimension, "similarity": self.similarity},
            database_=self.settings.database,
        )
        await self._check_vector_index()
        await self._check_fulltext_index()
        await self.driver.execute_query(
            "CALL db.awaitIndexes(300)", database_=self.settings.database
        )

    async def _check_vector_index(self) -> None:
        result = await self.driver.execute_query(
            self.q.show_index, {"name": self.q.vector_index}, database_=self.settings.database
        )
        name = self.q.vector_index
        if not result.records:
            raise IndexMismatchError(
                f"{self.where()}: vector index {name!r} was not created, probably because "
                f"another index already covers :{self.q.label}(embedding); drop it or set "
                "memory.neo4j.index_name to that index's name"
            )
        row = result.records[0]
        config = (row["options"] or {}).get("indexConfig", {})
        dims = config.get("vector.dimensions")
        sim = str(config.get("vector.similarity_function", "")).lower()
        if (
            row["type"] != "VECTOR"
            or list(row["labelsOrTypes"] or []) != [self.q.label]
            or list(row["properties"] or []) != ["embedding"]
            or dims != self.dimension
            or sim != self.similarity
        ):
            raise IndexMismatchError(
                f"{self.where()}: index {name!r} is {row['type']} on {row['labelsOrTypes']}"
                f"{row['properties']} with dimensions={dims}, similarity={sim!r}; this "
                f"configuration needs VECTOR on ['{self.q.label}']['embedding'] with "
                f"dimensions={self.dimension}, similarity={self.similarity!r}. Drop the index "
                "or choose another memory.neo4j.index_name / node_label"
            )

    async def _check_fulltext_index(self) -> None:
        result = await self.driver.execute_query(
            self.q.show_index, {"name": self.q.fulltext_index}, database_=self.settings.database
        )
        row = result.records[0] if result.records else None
        if row is None or list(row["properties"] or []) != ["search_text"]:
            found = "missing" if row is None else f"on {row['labelsOrTypes']}{row['properties']}"
            raise IndexMismatchError(
                f"{self.where()}: full-text index {self.q.fulltext_index!r} is {found}; this "
                f"version needs it on ['{self.q.label}']['search_text'] (pre-tokenised text). "
                "Drop it and re-import older memories (`deepresearch-memory export` then "
                "`import` writes search_text), or set memory.neo4j.fulltext_index_name"
            )

    async def close(self) -> None:
        driver, self.driver = self.driver, None
        if driver is not None and self._owns_driver:
            try:
                await driver.close()
            except Exception as exc:  # closing a driver to a dead server must not mask errors
                log.debug("closing the Neo4j driver failed: %s", exc)

    # --- retries -------------------------------------------------------------------------
    async def retrying(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        from neo4j.exceptions import (
            ClientError,
            DriverError,
            Neo4jError,
            ServiceUnavailable,
            SessionExpired,
            TransientError,
        )

        if self.driver is None:
            raise MemoryBackendError(f"neo4j backend is not open (call open() first) for {what}")
        if self.down_since is not None:
            # Known down: one cheap probe instead of the full retry schedule, so every call
            # made during an outage does not stall for the whole backoff.
            try:
                await self.driver.verify_connectivity()
            except Exception as exc:
                raise MemoryBackendError(
                    f"{self.where()} unavailable for {time.monotonic() - self.down_since:.0f}s: "
                    f"{what} not attempted ({type(exc).__name__}: {exc})"
                ) from exc
            self.down_since = None
            log.warning("%s is reachable again", self.where())
        attempts = self.settings.retry_attempts + 1
        last: Exception | None = None
        for attempt in range(attempts):
            try:
                return await op()
            except ClientError as exc:  # a query the server rejects will not succeed later
                raise MemoryBackendError(
                    f"{self.where()} rejected {what}: {exc.code}: {exc.message}"
                ) from exc
            except (
                TimeoutError,
                ServiceUnavailable,
                SessionExpired,
                TransientError,
                DriverError,
                Neo4jError,
                OSError,
            ) as exc:
                last = exc
                if attempt + 1 < attempts:
                    delay = self.settings.retry_backoff * 2**attempt
                    log.info(
                        "Neo4j %s failed (%s: %s); retry %d/%d in %.2fs",
                        what,
                        type(exc).__name__,
                        exc,
                        attempt + 1,
                        attempts - 1,
                        delay,
                    )
                    await asyncio.sleep(delay)
        self.down_since = time.monotonic()
        raise MemoryBackendError(
            f"{self.where()} unavailable: {what} failed after {attempts} attempt(s): "
            f"{type(last).__name__}: {last}"
        ) from last

    async def read(self, what: str, query: str, params: dict[str, Any]) -> list[Any]:
        from neo4j import RoutingControl

        async def op() -> list[Any]:
            result = await self.driver.execute_query(
                query, params, database_=self.settings.database, routing_=RoutingControl.READ
            )
            return list(result.records)

        return await self.retrying(what, op)

    async def write(self, what: str, statements: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Run the statements in one write transaction; the last one's records."""

        async def work(tx: Any) -> list[Any]:
            records: list[Any] = []
            for query, params in statements:
                result = await tx.run(query, params)
                records = [r async for r in result]
            return records

        async def op() -> list[Any]:
            async with self.driver.session(
                database=self.settings.database,
                # the bookmarks execute_query uses: reads routed to a replica see this write
                bookmark_manager=self.driver.execute_query_bookmark_manager,
            ) as session:
                return await session.execute_write(work)

        return await self.retrying(what, op)
