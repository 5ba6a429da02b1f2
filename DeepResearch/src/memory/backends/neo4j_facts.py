"""The FactStore (facts/store.py) of the neo4j backend: entities and time-aware facts as
nodes beside the memories, on the backend's own connection (driver, retries, fail-fast).

- Model and Cypher: neo4j_facts_cypher.py. Why a fact is a node of its own, linked to the
  memory of its sentence, rather than that memory node or a relationship: docs/backends.md.
- `put` is one write transaction (all or nothing): entity deletions, entities (and their
  name-key nodes), facts (and their SUBJECT_OF / OBJECT edges), the memories through the
  memory backend's own statements (neo4j_writes.py, so a memory is written exactly as by
  `upsert`), then the STATES edges. Every item is checked first (MemoryInputError naming it);
  an id of a memory that exists in another namespace, or data the server refuses, rolls the
  whole transaction back.
- Every call carries a server-side transaction timeout (`timeout`, seconds; a put gets it once
  more per WRITE_ITEMS_PER_TIMEOUT items), on top of the connection's bounded retries, so no
  call can hang on a runaway query; a timed-out call raises MemoryBackendError, not retried.
- Namespaces: every query names one; edges link only nodes of one namespace.
- `write_lock(namespace)`: the namespace's write lock across processes (neo4j_fact_lock.py);
  a put inside it runs in the lock's transaction, reads inside it go to the leader.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from DeepResearch.src.memory.backends.base import MemoryRecord
from DeepResearch.src.memory.backends.neo4j_connection import Neo4jConnection, Neo4jSettings, Run
from DeepResearch.src.memory.backends.neo4j_fact_lock import commit_in, held_by, namespace_lock
from DeepResearch.src.memory.backends.neo4j_facts_cypher import (
    FactQueries,
    entity_from,
    entity_row,
    fact_from,
    fact_row,
)
from DeepResearch.src.memory.backends.neo4j_writes import (
    Statement,
    memory_rows,
    memory_statements,
    similar_to_statement,
)
from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.facts.forgetting import Forgotten, Lookup, plan_async
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.store import FactStore, fact_order

DEFAULT_TIMEOUT = 30.0  # seconds the server gives one call of the fact store ...
WRITE_ITEMS_PER_TIMEOUT = 500  # ... and a put once more per this many items it writes
HOLD_TIMEOUT = 3600.0  # seconds the server lets one write_lock block hold the lock at most


def _claim_row(row: dict[str, Any]) -> dict[str, str]:
    return {"id": row["id"], "namespace": row["namespace"]}


def _rows(records: list[Any]) -> list[Any]:
    """The list a read returns in its one record (see neo4j_facts_cypher.py)."""
    return list(records[0]["rows"]) if records else []


class Neo4jFactStore(FactStore):
    def __init__(
        self,
        connection: Neo4jConnection,
        settings: Neo4jSettings,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        lock_timeout: float = DEFAULT_TIMEOUT,
        hold_timeout: float = HOLD_TIMEOUT,
    ) -> None:
        for name, value in (("timeout", timeout), ("lock_timeout", lock_timeout),
                            ("hold_timeout", hold_timeout)):
            if not value > 0:
                raise ValueError(f"{name}={value!r}: must be a positive number of seconds")
        self.conn = connection
        self.settings = settings
        self.timeout = float(timeout)
        self.lock_timeout = float(lock_timeout)  # seconds write_lock waits for the lock
        self.hold_timeout = float(hold_timeout)
        self.fq = FactQueries(settings.node_label)
        self._schema_ready = False
        self._schema_lock = asyncio.Lock()

    async def ensure_schema(self) -> None:
        """Create the constraints and indexes once (idempotent; done on first use)."""
        if self._schema_ready:
            return
        async with self._schema_lock:
            if self._schema_ready:
                return
            database = self.settings.database

            async def create() -> None:
                for statement in self.fq.schema:
                    await self.conn.create_schema_rule(statement)
                await self.conn.driver.execute_query(
                    "CALL db.awaitIndexes(300)", database_=database
                )

            await self.conn.retrying("creating the fact schema", create)
            self._schema_ready = True

    async def _read(self, what: str, query: str, params: dict[str, Any]) -> list[Any]:
        await self.ensure_schema()
        return await self.conn.read(what, query, params, timeout=self.timeout,
                                    leader=held_by(self) is not None)

    # --- writes ----------------------------------------------------------------------------
    @asynccontextmanager
    async def write_lock(self, namespace: str) -> AsyncIterator[None]:
        await self.ensure_schema()  # the lock node's uniqueness constraint
        async with namespace_lock(self.conn, self, self.fq.write_lock, namespace,
                                  lock_timeout=self.lock_timeout,
                                  hold_timeout=self.hold_timeout):
            yield

    async def put(
        self,
        entities: Sequence[Entity] = (),
        facts: Sequence[Fact] = (),
        memories: Sequence[MemoryRecord] = (),
        delete_entity_ids: Sequence[str] = (),
    ) -> None:
        # Everything is checked before the transaction starts.
        entity_rows = [entity_row(e) for e in entities]
        fact_rows = [fact_row(f) for f in facts]
        records = list(memories)
        rows = memory_rows(records, self.conn.dimension)
        deletes = list(dict.fromkeys(delete_entity_ids))
        if not (entity_rows or fact_rows or rows or deletes):
            return
        for i in deletes:
            if not isinstance(i, str) or not i:
                raise MemoryInputError(f"delete_entity_ids: {i!r} is not a non-empty string")
        statements: list[Statement] = []
        checks: dict[int, str] = {}  # statement index -> what its returned row refuses
        if deletes:
            # Only in the namespaces of the batch's other items when it has some: a put
            # for one namespace never deletes another's entity.
            namespaces = {x.namespace for x in (*entities, *facts, *records)}
            params = {"ids": deletes, "namespaces": sorted(namespaces) or None}
            statements.append((self.fq.delete_entities, params))
        for kind, claim, write, batch in (
            ("entity", self.fq.claim_entities, self.fq.write_entities, entity_rows),
            ("fact", self.fq.claim_facts, self.fq.write_facts, fact_rows),
        ):
            if batch:
                checks[len(statements)] = kind
                statements.append((claim, {"rows": [_claim_row(r) for r in batch]}))
                statements.extend((query, {"rows": batch}) for query in write)
        if rows:
            statements.extend(memory_statements(self.conn.q, records, rows))
        if fact_rows and rows:
            statements.append((self.fq.link_statements, {"rows": fact_rows}))

        def stop(i: int, found: list[Any]) -> BaseException | None:
            kind = checks.get(i)
            if kind is None or not found:
                return None
            row = found[0]
            return MemoryBackendError(  # the wording of store.refuse_foreign_ids
                f"{kind} id {row['id']!r} already belongs to namespace {row['namespace']!r}, "
                f"not {row['wanted']!r}: ids are unique across namespaces; nothing of this "
                "batch was written"
            )

        await self.ensure_schema()
        what = (
            f"writing {len(entity_rows)} entities, {len(fact_rows)} facts, {len(rows)} "
            f"memories and deleting {len(deletes)} entities"
        )
        items = len(entity_rows) + len(fact_rows) + len(rows) + len(deletes)
        timeout = self.timeout * (1 + items / WRITE_ITEMS_PER_TIMEOUT)
        lock = held_by(self)
        if lock is None:
            await self.conn.write(what, statements, stop=stop, timeout=timeout)
        else:
            foreign = sorted({x.namespace for x in (*entities, *facts, *records)}
                             - {lock.namespace})
            if foreign:
                raise MemoryBackendError(
                    f"a put under the fact write lock of namespace {lock.namespace!r} "
                    f"cannot write namespace(s) {foreign}; nothing of this batch was written")
            await commit_in(lock, self.conn, what, statements, stop, timeout)
        similar = similar_to_statement(
            self.conn.q, rows, self.settings.similarity_to_threshold, self.conn.similarity
        )
        if similar is not None:  # after the commit, as the memory backend does
            await self.conn.write("linking SIMILAR_TO", [similar], timeout=self.timeout)

    async def lock_namespaces(self, run: Run, namespaces: Iterable[str]) -> None:
        """Inside another write transaction (`run`): take these namespaces' fact write locks
        (those that exist: a namespace never written to has no facts to protect), in sorted
        order, until it ends (a delete: its cascade and `write_lock` writers go one after
        the other)."""
        for namespace in sorted(set(namespaces)):
            await run(self.fq.existing_lock, {"namespace": namespace})

    async def forget(self, run: Run, forgotten: Sequence[Forgotten]) -> list[tuple[str, str]]:
        """Inside the memory backend's delete transaction (`run`: its statements): the facts
        built on the deleted memories are deleted or their evidence cut, as
        facts/forgetting.py plans; returns the (namespace, id) of the sentence memories to
        delete with them."""

        async def touching(lookup: Lookup) -> list[Fact]:
            params = {"namespace": lookup.namespace, "ids": list(lookup.ids),
                      "evidence": list(lookup.evidence)}
            return [fact_from(f) for f in _rows(await run(self.fq.touching_facts, params))]

        plan = await plan_async(forgotten, touching)
        if plan.delete_facts:
            await run(self.fq.delete_facts, {"rows": [
                {"id": i, "namespace": ns} for ns, i in plan.delete_facts]})
        if plan.update_facts:
            await run(self.fq.set_evidence, {"rows": [
                {"id": f.id, "namespace": f.namespace, "evidence": list(f.evidence),
                 "attributes_json": json.dumps(f.attributes, ensure_ascii=False, sort_keys=True)}
                for f in plan.update_facts]})
        return plan.delete_memories

    # --- reads -----------------------------------------------------------------------------
    async def entities_by_key(
        self, namespace: str, keys: Sequence[str], types: Sequence[str] | None = None
    ) -> list[Entity]:
        keys = list(dict.fromkeys(keys))
        if not keys or (types is not None and not types):
            return []
        params = {
            "namespace": namespace,
            "keys": keys,
            "types": None if types is None else list(types),
        }
        rows = await self._read("finding entities by name", self.fq.entities_by_key, params)
        return [entity_from(e) for e in _rows(rows)]

    async def get_entities(self, namespace: str, ids: Sequence[str]) -> list[Entity]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        params = {"namespace": namespace, "ids": ids}
        rows = await self._read("reading entities", self.fq.get_entities, params)
        found = {e["id"]: entity_from(e) for e in _rows(rows)}
        return [found[i] for i in ids if i in found]

    async def entity_keys(
        self, namespace: str, types: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        if types is not None and not types:
            return []
        params = {"namespace": namespace, "types": None if types is None else list(set(types))}
        query = self.fq.entity_keys[types is not None]
        rows = await self._read("reading entity names", query, params)
        return list(zip(rows[0]["ids"], rows[0]["keys"], strict=True)) if rows else []

    async def find_facts(self, query: FactQuery) -> list[Fact]:
        if query.limit <= 0:
            return []
        built = self.fq.find_facts(query)
        if built is None:
            return []
        text, params = built
        params["as_of"] = time.time() if query.as_of is None else float(query.as_of)
        rows = await self._read("finding facts", text, params)
        return sorted((fact_from(f) for f in _rows(rows)), key=fact_order)

