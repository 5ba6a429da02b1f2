"""The per-namespace write lock of the Neo4j fact store, across processes.

A batch of facts is resolved against the stored graph, the time rules applied, then put
(facts/graph.py). Two processes (service workers) doing that at once for one namespace would
both resolve against the same snapshot: two entities for one new person, a repeated fact
stored twice, two current jobs. `Neo4jFactStore.write_lock(namespace)` serialises them:

- It opens a write transaction and in it MERGEs the namespace's lock node
  `(:FactWriteLock {namespace})` and SETs a property. Neo4j gives the transaction that
  node's exclusive lock until the transaction ends; another transaction doing the same
  waits. (A uniqueness constraint on `namespace` makes two first MERGEs one node.)
- The batch's reads run meanwhile (auto-commit reads, routed as writes: in a cluster to the
  leader, which has every committed transaction), and its `put` runs in THIS transaction and
  commits it. So a batch is written only if the lock was held from before its first read
  until its commit: a lock lost midway (connection gone, the server's timeout) fails the put,
  and nothing is written -- no window where two batches both think they hold it.
- Bounded wait: the lock not had within `lock_timeout` seconds gives MemoryBackendError
  naming the namespace. The waiting transaction's connection is then closed, which makes the
  server drop it (checked on Neo4j 5.26: it is gone from SHOW TRANSACTIONS at once).
- Released on every path: by the put's commit; otherwise rolled back when the block exits
  (an error, cancellation, a batch with nothing to write); if that fails, the connection is
  closed, and the server rolls back. A process that dies loses its connection: same.
- A holder that never finishes: the transaction has a server-side timeout (`hold_timeout`,
  from its start), past which the server ends it and the lock is free again.
- The put in it keeps its own time limit, on the client (its statements; past it the
  connection is closed: nothing is written), and is not retried (the lock went with it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from DeepResearch.src.memory.backends.neo4j_connection import (
    Neo4jConnection,
    run_statements,
    tx_runner,
)
from DeepResearch.src.memory.errors import MemoryBackendError

log = logging.getLogger(__name__)


@dataclass(slots=True)
class HeldLock:
    owner: object  # the fact store whose block took it
    namespace: str
    session: Any
    tx: Any
    spent: bool = False  # its transaction was given to a put


# The lock the current task holds (a task writes one batch at a time).
_HELD: ContextVar[HeldLock | None] = ContextVar("neo4j_fact_write_lock", default=None)


def held_by(owner: object) -> HeldLock | None:
    """The lock the current task holds through `owner`, if any."""
    lock = _HELD.get()
    return lock if lock is not None and lock.owner is owner else None


@asynccontextmanager
async def namespace_lock(
    conn: Neo4jConnection, owner: object, statement: str, namespace: str, *,
    lock_timeout: float, hold_timeout: float,
) -> AsyncIterator[None]:
    """Hold `namespace`'s write lock for the block (see the module docstring)."""
    lock = await _take(conn, owner, statement, namespace, lock_timeout, hold_timeout)
    token = _HELD.set(lock)
    try:
        yield
    finally:
        _HELD.reset(token)
        await _release(lock)


async def _take(
    conn: Neo4jConnection, owner: object, statement: str, namespace: str,
    lock_timeout: float, hold_timeout: float,
) -> HeldLock:
    from neo4j import WRITE_ACCESS

    async def op() -> HeldLock:
        session = conn.session(WRITE_ACCESS)
        try:
            tx = await session.begin_transaction(timeout=hold_timeout)
            try:
                async with asyncio.timeout(lock_timeout) as waited:
                    await (await tx.run(statement, {"namespace": namespace})).consume()
            except TimeoutError:
                if waited.expired():  # ours, not a socket's: not to be retried
                    raise MemoryBackendError(
                        f"the fact write lock of namespace {namespace!r} could not be taken "
                        f"within {lock_timeout:g} s: another writer (a process or worker "
                        "writing facts of this namespace) holds it. Nothing was written; "
                        "try again"
                    ) from None
                raise
        except BaseException:
            session.cancel()  # closes the connection: the server drops the transaction
            raise
        return HeldLock(owner, namespace, session, tx)

    return await conn.retrying(f"taking the fact write lock of namespace {namespace!r}", op)


async def commit_in(
    lock: HeldLock, conn: Neo4jConnection, what: str, statements: list[tuple[str, Any]],
    stop: Callable[[int, list[Any]], BaseException | None], timeout: float,
) -> None:
    """Run a put's statements in the lock's transaction and commit it (the lock goes with
    the commit); MemoryBackendError or DataRefused as `conn.write`, not retried."""
    if lock.spent:
        raise MemoryBackendError(
            f"the fact write lock of namespace {lock.namespace!r} ended with the first put "
            "of its block: one put per write_lock block"
        )
    lock.spent = True

    async def op() -> None:
        try:
            async with asyncio.timeout(timeout) as limit:
                await run_statements(tx_runner(lock.tx), statements, stop)
        except TimeoutError:
            if not limit.expired():
                raise
            lock.session.cancel()  # nothing was committed; the server rolls back
            raise MemoryBackendError(
                f"{conn.where()}: {what} timed out after {timeout:g} s (under the write lock "
                f"of namespace {lock.namespace!r}); nothing was written"
            ) from None
        await lock.tx.commit()

    where = f"{what} (in the transaction holding the fact write lock of {lock.namespace!r})"
    await conn.retrying(where, op, retry=False)


async def _release(lock: HeldLock) -> None:
    try:
        if not lock.tx.closed():
            await lock.tx.rollback()
        await lock.session.close()
    except BaseException as exc:
        lock.session.cancel()  # closes the connection: the server rolls back
        if not isinstance(exc, Exception):
            raise
        log.debug("releasing the fact write lock of %r: %s", lock.namespace, exc)
