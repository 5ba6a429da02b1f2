"""The neo4j backend's connection: driver, schema set-up, one bounded retry policy.

- A server that cannot be reached at `open()` gives MemoryBackendError at once (no retries:
  the client then warns once and degrades).
- Retries are ours alone: the driver's own transaction retries are never used (explicit
  transactions and auto-commit reads do not retry), so the two cannot stack. A call that
  fails for a reason worth retrying (connection lost, session expired, a transient server
  error) is retried `retry_attempts` times after `retry_backoff`, doubled each time
  (defaults: 3 retries, 0.5 + 1 + 2 s), then raises MemoryBackendError and marks the server
  down. While it is down, every call makes one connection attempt (refused at once by a
  stopped server) instead of the retry schedule, and raises MemoryBackendError.
- Data the server refuses (a type error, an invalid property name, a constraint) raises
  MemoryInputError with the server's reason, never retried; other refusals (permissions, a
  missing database) raise MemoryBackendError, not retried either.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from DeepResearch.src.memory.backends.base import DEFAULT_NAMESPACE
from DeepResearch.src.memory.backends.neo4j_cypher import Queries
from DeepResearch.src.memory.errors import (
    IndexMismatchError,
    MemoryBackendError,
    MemoryConfigError,
    MemoryInputError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
# `run(query, params)` inside a transaction: the statement's records (see in_transaction)
Run = Callable[[str, dict[str, Any]], Awaitable[list[Any]]]
# Server error classes that mean "this data cannot be stored or matched", not "try later".
DATA_REFUSALS = ("Neo.ClientError.Statement.", "Neo.ClientError.Schema.")


def one_line(exc: BaseException) -> str:
    """The driver's message on one line (ServiceUnavailable spans two): errors of the
    commands and warnings are one line each."""
    return " ".join(str(exc).split())


class DataRefused(MemoryInputError):
    """The server refused the data of a write or read (its code and message are in the text)."""


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
    similarity_to_threshold: float | None
    connection_timeout: float
    retry_attempts: int
    retry_backoff: float


class Neo4jConnection:
    """One driver to one database."""

    def __init__(
        self, settings: Neo4jSettings, queries: Queries, *, dimension: int, similarity: str
    ) -> None:
        self.settings = settings
        self.q = queries
        self.dimension = dimension
        self.similarity = similarity
        self.driver: Any = None
        self.server_agent = ""
        self.down_since: float | None = None  # set when retries ran out; cleared on success

    def where(self) -> str:
        return f"Neo4j at {self.settings.uri} (database {self.settings.database!r})"

    def _auth(self) -> tuple[str, str] | None:
        password = self.settings.password or os.environ.get("NEO4J_PASSWORD")
        return (self.settings.username, password) if password else None

    def _make_driver(self) -> Any:
        from neo4j import AsyncGraphDatabase

        s = self.settings
        return AsyncGraphDatabase.driver(
            s.uri,
            auth=self._auth(),
            max_connection_pool_size=s.max_connection_pool_size,
            connection_timeout=s.connection_timeout,
            connection_acquisition_timeout=max(2 * s.connection_timeout, 1.0),
            max_transaction_retry_time=0.0,  # execute_query (schema set-up) must not retry either
            notifications_min_severity="OFF",
        )

    async def open(self) -> None:
        """Connect, check the server, create the schema; MemoryBackendError if impossible."""
        await self.close()
        from neo4j.exceptions import AuthError, ConfigurationError

        try:
            self.driver = self._make_driver()
        except (ValueError, ConfigurationError) as exc:  # a URI the driver refuses: the setting
            raise MemoryConfigError(
                f"memory.neo4j.uri={self.settings.uri!r}: {one_line(exc)}") from None
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
        except MemoryBackendError:
            await self.close()
            raise
        except Exception as exc:  # Neo4jError, DriverError (ServiceUnavailable...), OSError
            await self.close()
            raise MemoryBackendError(
                f"cannot use {self.where()}: {type(exc).__name__}: {one_line(exc)}. Is the server "
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
        named = await self.driver.execute_query(
            self.q.show_index, {"name": self.q.namespace_index}, database_=self.settings.database
        )
        if not named.records:  # first open by a version with namespaces (before its index)
            async with self.driver.session(database=self.settings.database) as session:
                result = await session.run(
                    self.q.default_namespace, {"namespace": DEFAULT_NAMESPACE}
                )
                await result.consume()
        for statement in self.q.schema:
            await self.create_schema_rule(statement)
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
        self.down_since = None
        driver, self.driver = self.driver, None
        if driver is not None:
            try:
                await driver.close()
            except Exception as exc:  # closing a driver to a dead server must not mask errors
                log.debug("closing the Neo4j driver failed: %s", exc)


    # --- retries -------------------------------------------------------------------------
    async def create_schema_rule(self, statement: str) -> None:
        """One `CREATE ... IF NOT EXISTS` (or other schema statement). Two processes opening
        one database at once may both pass IF NOT EXISTS; the one that loses is told an
        equivalent rule exists, which is what it wanted."""
        from neo4j.exceptions import ClientError

        assert self.driver is not None
        try:
            await self.driver.execute_query(statement, database_=self.settings.database)
        except ClientError as exc:
            if exc.code != "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists":
                raise

    async def retrying(
        self, what: str, op: Callable[[], Awaitable[T]], *, retry: bool = True
    ) -> T:
        """`op()`, retried as the module docstring says; MemoryBackendError or DataRefused.
        `retry=False`: the same errors, but a failure worth retrying is raised at once (for
        an op that cannot be repeated, e.g. statements in a transaction opened before)."""
        from neo4j.exceptions import ClientError, DriverError, Neo4jError

        if self.driver is None:
            raise MemoryBackendError(f"neo4j backend is not open (call open() first) for {what}")
        if self.down_since is not None:
            await self._probe(what)
        attempts = self.settings.retry_attempts + 1
        for attempt in range(attempts):
            try:
                return await op()
            except (UnicodeEncodeError, OverflowError) as exc:  # the driver cannot send it
                raise DataRefused(f"{what}: a value cannot be sent to Neo4j: {exc}") from exc
            except ClientError as exc:
                if str(exc.code).startswith(DATA_REFUSALS):
                    raise DataRefused(
                        f"{self.where()} refused {what}: {exc.code}: {exc.message}"
                    ) from exc
                raise MemoryBackendError(
                    f"{self.where()} rejected {what}: {exc.code}: {exc.message}"
                ) from exc
            except (Neo4jError, DriverError, OSError) as exc:
                retryable = isinstance(exc, OSError) or exc.is_retryable()
                if not retryable or not retry:
                    raise MemoryBackendError(
                        f"{self.where()} failed {what}: {type(exc).__name__}: {one_line(exc)}"
                    ) from exc
                if attempt + 1 == attempts:
                    self.down_since = time.monotonic()
                    raise MemoryBackendError(
                        f"{self.where()} unavailable: {what} failed after {attempts} "
                        f"attempt(s): {type(exc).__name__}: {one_line(exc)}"
                    ) from exc
                delay = self.settings.retry_backoff * 2**attempt
                log.info(
                    "Neo4j %s failed (%s: %s); retry %d/%d in %.2fs",
                    what, type(exc).__name__, exc, attempt + 1, attempts - 1, delay,
                )
                await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _probe(self, what: str) -> None:
        """Known down: one connection attempt instead of the whole retry schedule, so each
        call made during an outage fails at once."""
        try:
            await self.driver.verify_connectivity()
        except Exception as exc:
            raise MemoryBackendError(
                f"{self.where()} unavailable for {time.monotonic() - self.down_since:.0f}s: "
                f"{what} not attempted ({type(exc).__name__}: {one_line(exc)})"
            ) from exc
        self.down_since = None
        log.info("%s is reachable again", self.where())

    def session(self, access_mode: str) -> Any:
        return self.driver.session(
            database=self.settings.database,
            default_access_mode=access_mode,
            # shared by reads and writes: a read routed to a replica sees our last write
            bookmark_manager=self.driver.execute_query_bookmark_manager,
        )

    async def read(
        self, what: str, query: str, params: dict[str, Any], timeout: float | None = None,
        *, leader: bool = False,
    ) -> list[Any]:
        """An auto-commit read; `timeout`: seconds the server may spend on it (None: its
        own limit), past which it is stopped and MemoryBackendError raised (not retried).
        `leader`: routed as a write is (in a cluster, to the leader, which has every
        committed transaction, not only this driver's), for reads that must see them all."""
        from neo4j import READ_ACCESS, WRITE_ACCESS, Query

        async def op() -> list[Any]:
            async with self.session(WRITE_ACCESS if leader else READ_ACCESS) as session:
                result = await session.run(Query(query, timeout=timeout), params)
                return [record async for record in result]

        return await self.retrying(what, op)

    async def write(
        self,
        what: str,
        statements: list[tuple[str, dict[str, Any]]],
        stop: Callable[[int, list[Any]], BaseException | None] | None = None,
        timeout: float | None = None,
    ) -> list[Any]:
        """Run the statements in one write transaction (see `transaction`), with retries."""
        return await self.retrying(
            what, lambda: self.transaction(statements, commit=True, stop=stop, timeout=timeout)
        )

    async def transaction(
        self,
        statements: list[tuple[str, dict[str, Any]]],
        *,
        commit: bool,
        stop: Callable[[int, list[Any]], BaseException | None] | None = None,
        timeout: float | None = None,
    ) -> list[Any]:
        """One write transaction, committed or (`commit=False`) rolled back; the last
        statement's records. `stop(i, records)` may return an exception after statement i:
        the transaction is rolled back and that exception raised. `timeout`: seconds the
        server gives the transaction (None: its own limit). Not retried."""

        return await self.in_transaction(
            lambda run: run_statements(run, statements, stop), commit=commit, timeout=timeout)

    async def in_transaction(
        self, work: Callable[[Run], Awaitable[T]], *, commit: bool = True,
        timeout: float | None = None,
    ) -> T:
        """`await work(run)` inside one write transaction, where `run(query, params)` gives
        a statement's records (so a statement may depend on what an earlier one returned);
        committed (or, `commit=False`, rolled back) when `work` returns, rolled back when it
        raises. Not retried: wrap it in `retrying` (`write_work` does)."""
        from neo4j import WRITE_ACCESS

        async with self.session(WRITE_ACCESS) as session:
            tx = await session.begin_transaction(timeout=timeout)

            try:
                out = await work(tx_runner(tx))
            except BaseException:
                if not tx.closed():
                    try:
                        await tx.close()  # rolls back
                    except Exception as exc:  # the error in flight is the one to report
                        log.debug("rolling back a Neo4j transaction failed: %s", exc)
                raise
            await (tx.commit() if commit else tx.rollback())
            return out

    async def write_work(
        self, what: str, work: Callable[[Run], Awaitable[T]], timeout: float | None = None
    ) -> T:
        """`in_transaction(work)`, committed, with the retries of `write` (a retry runs the
        whole of `work` again, in a new transaction)."""
        return await self.retrying(
            what, lambda: self.in_transaction(work, commit=True, timeout=timeout))


async def run_statements(
    run: Run,
    statements: list[tuple[str, dict[str, Any]]],
    stop: Callable[[int, list[Any]], BaseException | None] | None = None,
) -> list[Any]:
    """Run the statements through `run` (one open transaction, see `in_transaction` and
    `tx_runner`); the last one's records. `stop(i, records)` may return an exception after
    statement i, which is raised (the caller rolls back)."""
    records: list[Any] = []
    for i, (query, params) in enumerate(statements):
        records = await run(query, params)
        refusal = stop(i, records) if stop is not None else None
        if refusal is not None:
            raise refusal
    return records


def tx_runner(tx: Any) -> Run:
    """`run(query, params)` in the open transaction `tx`: the statement's records."""

    async def run(query: str, params: dict[str, Any]) -> list[Any]:
        result = await tx.run(query, params)
        return [record async for record in result]

    return run
