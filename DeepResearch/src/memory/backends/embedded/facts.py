"""The embedded backend's FactStore: three tables in the memories' SQLite database.

- `fact_entities` (one row per entity), `fact_entity_keys` (one row per name key of an entity:
  name, real name, aliases; the exact-match step and the fuzzy pool), `facts`.
- `put` writes entities, facts and the memories carrying the facts' sentences in ONE
  transaction (`Records.write`, the same statements as an upsert); the FAISS index catches up
  with those memories as it does after any upsert: at the next read (`data_version`).
- The tables are created idempotently at open (`ensure_schema`), only when missing, so an
  open of a current store takes no write lock.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from DeepResearch.src.memory.backends.base import MemoryRecord, indexed_text
from DeepResearch.src.memory.backends.embedded.records import chunks
from DeepResearch.src.memory.facts.forgetting import Forgotten, Lookup, plan_sync
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.store import (
    FactStore,
    entity_name_keys,
    name_key,
    refuse_foreign_ids,
)

if TYPE_CHECKING:
    from DeepResearch.src.memory.backends.embedded.database import Database
    from DeepResearch.src.memory.backends.embedded.records import Records


T = TypeVar("T")


class Host(Protocol):
    """What the fact store needs of the embedded backend that owns it (store.py)."""

    def check_vectors(self, records: Sequence[MemoryRecord]) -> None: ...

    def require(self) -> Records: ...

    async def run(self, doing: str, fn: Callable[..., T], *args: Any) -> T: ...

SCHEMA = """
CREATE TABLE IF NOT EXISTS fact_entities (
    id TEXT PRIMARY KEY, namespace TEXT NOT NULL, type TEXT NOT NULL, name TEXT NOT NULL,
    real_name TEXT, aliases TEXT NOT NULL, attributes TEXT NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS fact_entity_keys (
    namespace TEXT NOT NULL, key TEXT NOT NULL, entity_id TEXT NOT NULL, type TEXT NOT NULL,
    PRIMARY KEY (namespace, key, entity_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS fact_entity_keys_entity ON fact_entity_keys (entity_id);
CREATE INDEX IF NOT EXISTS fact_entity_keys_type ON fact_entity_keys (namespace, type);
CREATE TABLE IF NOT EXISTS facts (
    id TEXT PRIMARY KEY, namespace TEXT NOT NULL, subject_id TEXT NOT NULL,
    predicate TEXT NOT NULL, object_id TEXT, object_value TEXT, object_key TEXT,
    confidence REAL NOT NULL, evidence TEXT NOT NULL, created_at REAL NOT NULL,
    valid_at REAL, invalid_at REAL, expired_at REAL, attributes TEXT NOT NULL
);
-- Ids are unique across namespaces, so the namespace leads no index: queries name it as
-- `+namespace`, and SQLite cannot prefer a namespace-wide index scan (it did, without
-- statistics: 170 ms for 30 facts by id in a 100k-fact namespace) to these.
DROP INDEX IF EXISTS facts_subject;
DROP INDEX IF EXISTS facts_object;
DROP INDEX IF EXISTS facts_value;
CREATE INDEX IF NOT EXISTS facts_by_subject ON facts (subject_id, predicate);
CREATE INDEX IF NOT EXISTS facts_by_object ON facts (object_id, predicate);
CREATE INDEX IF NOT EXISTS facts_by_value ON facts (object_key, predicate);
CREATE INDEX IF NOT EXISTS facts_by_predicate ON facts (predicate, namespace);
"""
FACT_COLUMNS = (
    "id, namespace, subject_id, predicate, object_id, object_value, confidence, evidence, "
    "created_at, valid_at, invalid_at, expired_at, attributes"
)
ENTITY_COLUMNS = "id, namespace, type, name, real_name, aliases, attributes, created_at"
ORDER = "ORDER BY valid_at IS NULL, valid_at DESC, created_at DESC, id"


def ensure_schema(db: Database) -> None:
    """Create the fact tables when the database lacks them (a write only then)."""
    with db.lock:
        found = db.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'facts_by_predicate'"
        ).fetchone()
        if found is None:
            db.conn.executescript(f"BEGIN IMMEDIATE;{SCHEMA}COMMIT;")


class EmbeddedFactStore(FactStore):
    def __init__(self, backend: Host) -> None:
        self.backend = backend

    # -- writes ---------------------------------------------------------------------------
    async def put(
        self,
        entities: Sequence[Entity] = (),
        facts: Sequence[Fact] = (),
        memories: Sequence[MemoryRecord] = (),
        delete_entity_ids: Sequence[str] = (),
    ) -> None:
        self.backend.check_vectors(memories)
        texts = [indexed_text(r) for r in memories]  # before the write lock is taken

        def write() -> None:
            records = self.backend.require()
            with records.db.transaction() as conn:
                _refuse_other_namespaces(conn, "fact_entities", [*entities])
                _refuse_other_namespaces(conn, "facts", [*facts])
                records.write(memories, texts)
                gone = [*delete_entity_ids, *(e.id for e in entities)]
                for chunk in chunks(gone):
                    marks = ",".join("?" * len(chunk))
                    conn.execute(f"DELETE FROM fact_entity_keys WHERE entity_id IN ({marks})", chunk)
                    conn.execute(f"DELETE FROM fact_entities WHERE id IN ({marks})", chunk)
                conn.executemany(
                    f"INSERT INTO fact_entities ({ENTITY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?)",
                    [(e.id, e.namespace, e.type, e.name, e.real_name, json.dumps(list(e.aliases)),
                      json.dumps(e.attributes), e.created_at) for e in entities],
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO fact_entity_keys (namespace, key, entity_id, type) "
                    "VALUES (?,?,?,?)",
                    [(e.namespace, key, e.id, e.type) for e in entities
                     for key in entity_name_keys(e)],
                )
                conn.executemany(
                    f"INSERT OR REPLACE INTO facts ({FACT_COLUMNS}, object_key) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [_fact_row(f) for f in facts],
                )

        await self.backend.run("storing facts", write)

    def forget(self, forgotten: list[Forgotten]) -> list[tuple[str, str]]:
        """Called by `Records.delete` inside its transaction, holding the database lock: the
        facts built on the deleted memories are deleted or their evidence cut, as
        facts/forgetting.py plans; returns the sentence memories to delete with them."""
        conn = self.backend.require().db.conn
        plan = plan_sync(forgotten, lambda lookup: _touching(conn, lookup))
        for chunk in chunks([fact_id for _, fact_id in plan.delete_facts]):
            conn.execute(f"DELETE FROM facts WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        conn.executemany("UPDATE facts SET evidence = ?, attributes = ? WHERE id = ?",
                         [(json.dumps(list(f.evidence)), json.dumps(f.attributes), f.id)
                          for f in plan.update_facts])
        return plan.delete_memories

    # -- reads ----------------------------------------------------------------------------
    async def _query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        def read() -> list[tuple[Any, ...]]:
            db = self.backend.require().db
            with db.lock:
                return db.conn.execute(sql, list(params)).fetchall()

        return await self.backend.run("reading facts", read)

    async def entities_by_key(
        self, namespace: str, keys: Sequence[str], types: Sequence[str] | None = None
    ) -> list[Entity]:
        if not keys:
            return []
        type_sql, type_params = _one_of("k.type", types)
        rows = await self._query(
            f"SELECT DISTINCT {_prefixed('e.', ENTITY_COLUMNS)} FROM fact_entity_keys k "
            "JOIN fact_entities e ON e.id = k.entity_id "
            f"WHERE k.namespace = ? AND k.key IN ({','.join('?' * len(keys))}){type_sql} "
            "ORDER BY e.id",
            [namespace, *keys, *type_params],
        )
        return [_entity(r) for r in rows]

    async def get_entities(self, namespace: str, ids: Sequence[str]) -> list[Entity]:
        found: dict[str, Entity] = {}
        for chunk in chunks(list(ids)):
            rows = await self._query(
                f"SELECT {ENTITY_COLUMNS} FROM fact_entities "
                f"WHERE namespace = ? AND id IN ({','.join('?' * len(chunk))})",
                [namespace, *chunk],
            )
            found.update((r[0], _entity(r)) for r in rows)
        return [found[i] for i in ids if i in found]

    async def entity_keys(
        self, namespace: str, types: Sequence[str] | None = None
    ) -> list[tuple[str, str]]:
        type_sql, type_params = _one_of("type", types)
        rows = await self._query(
            f"SELECT entity_id, key FROM fact_entity_keys WHERE namespace = ?{type_sql}",
            [namespace, *type_params],
        )
        return [(r[0], r[1]) for r in rows]

    async def find_facts(self, query: FactQuery) -> list[Fact]:
        selective = query.ids or query.subject_ids or query.object_ids or query.object_values
        # by namespace only when nothing narrower is asked (see SCHEMA)
        where = ["+namespace = ?" if selective else "namespace = ?"]
        params: list[Any] = [query.namespace]
        for column, values in (
            ("id", query.ids), ("subject_id", query.subject_ids),
            ("+predicate" if selective else "predicate", query.predicates),
            ("object_id", query.object_ids),
            ("object_key", None if query.object_values is None
             else [name_key(v) for v in query.object_values]),
        ):
            if values is not None:
                if not values:
                    return []
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                params.extend(values)
        if query.min_confidence > 0:
            where.append("confidence >= ?")
            params.append(query.min_confidence)
        if not query.include_history:
            at = time.time() if query.as_of is None else query.as_of
            where.append("(valid_at IS NULL OR valid_at <= ?) AND (invalid_at IS NULL OR "
                         "invalid_at > ?) AND (expired_at IS NULL OR expired_at > ?)")
            params.extend([at, at, at])
        rows = await self._query(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE {' AND '.join(where)} {ORDER} LIMIT ?",
            [*params, query.limit],
        )
        return [_fact(r) for r in rows]


def _refuse_other_namespaces(
    conn: sqlite3.Connection, table: str, items: Sequence[Entity | Fact]
) -> None:
    owner: dict[str, str] = {}
    for chunk in chunks([i.id for i in items]):
        owner.update(conn.execute(
            f"SELECT id, namespace FROM {table} WHERE id IN ({','.join('?' * len(chunk))})",
            chunk).fetchall())
    refuse_foreign_ids(items, owner)


def _touching(conn: sqlite3.Connection, lookup: Lookup) -> list[Fact]:
    """The facts of `lookup` (history too): by id, and those citing one of its evidence ids
    (a scan of the namespace's facts: evidence is a JSON list, not indexed; deletes are rare,
    and the store's ~100k facts take ~0.1 s)."""
    found: dict[str, Fact] = {}
    for chunk in chunks(list(lookup.ids)):
        rows = conn.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE id IN "
                            f"({','.join('?' * len(chunk))}) AND +namespace = ?",
                            [*chunk, lookup.namespace]).fetchall()
        found.update((r[0], _fact(r)) for r in rows)
    for chunk in chunks(list(lookup.evidence)):
        rows = conn.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE namespace = ? AND EXISTS "
                            "(SELECT 1 FROM json_each(facts.evidence) WHERE value IN "
                            f"({','.join('?' * len(chunk))}))",
                            [lookup.namespace, *chunk]).fetchall()
        found.update((r[0], _fact(r)) for r in rows)
    return list(found.values())


def _one_of(column: str, values: Sequence[str] | None) -> tuple[str, list[str]]:
    if values is None:
        return "", []
    if not values:
        return " AND 0", []
    return f" AND {column} IN ({','.join('?' * len(values))})", list(values)


def _prefixed(prefix: str, columns: str) -> str:
    return ", ".join(prefix + c for c in columns.split(", "))


def _fact_row(f: Fact) -> tuple[Any, ...]:
    return (f.id, f.namespace, f.subject_id, f.predicate, f.object_id, f.object_value,
            f.confidence, json.dumps(list(f.evidence)), f.created_at, f.valid_at, f.invalid_at,
            f.expired_at, json.dumps(f.attributes),
            None if f.object_value is None else name_key(f.object_value))


def _fact(r: Sequence[Any]) -> Fact:
    return Fact(
        id=r[0], namespace=r[1], subject_id=r[2], predicate=r[3], object_id=r[4],
        object_value=r[5], confidence=r[6], evidence=tuple(json.loads(r[7])), created_at=r[8],
        valid_at=r[9], invalid_at=r[10], expired_at=r[11], attributes=json.loads(r[12]),
    )


def _entity(r: Sequence[Any]) -> Entity:
    return Entity(
        id=r[0], namespace=r[1], type=r[2], name=r[3], real_name=r[4],
        aliases=tuple(json.loads(r[5])), attributes=json.loads(r[6]), created_at=r[7],
    )

