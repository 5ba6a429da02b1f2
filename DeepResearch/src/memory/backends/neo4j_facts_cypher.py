"""The Cypher and the node properties of the Neo4j fact store (neo4j_facts.py).

Graph model (labels derived from `memory.neo4j.node_label`: `Entity`, `EntityKey`, `Fact`
and `FactWriteLock` for the default `Memory`, `<label>Entity`, ... for another label):

    (:EntityKey {namespace, key, type, entity_id})<-[:NAMED]-(:Entity {namespace, id, ...})
    (:Entity)-[:SUBJECT_OF]->(:Fact {namespace, id, predicate, ...})-[:OBJECT]->(:Entity)
    (:Memory {id})-[:STATES]->(:Fact {id})      the memory carrying the fact's sentence
    (:FactWriteLock {namespace, taken_at})      the namespace's write lock (neo4j_fact_lock.py)

An entity or fact id belongs to one namespace, as a memory id does (the FactStore interface
names them by id alone: `delete_entity_ids`): a uniqueness constraint on `id` per label (a
composite (namespace, id) one works on Community 5.26 too, NODE KEY is Enterprise-only, but
would add nothing), and `put` claims its ids first, refusing one of another namespace.
A fact keeps its subject / object ids as properties too: queries select facts through the
(namespace, ...) indexes on those, and the edges are the graph to look at and walk; they are
linked whenever both ends exist in the same namespace (edges never cross namespaces).

Injection safety as in neo4j_cypher.py: labels are validated names; every value is a
parameter; find_facts' query text is assembled from constant fragments chosen by which
FactQuery fields are set.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from typing import Any

from DeepResearch.src.memory.backends.neo4j_cypher import check_name
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.model import Entity, Fact, FactQuery
from DeepResearch.src.memory.facts.store import entity_name_keys, name_key

# FactQuery field -> Fact node property, in the order a query is anchored on them (the
# first one set is the index seek; the others filter what it found).
ANCHORS = (
    ("ids", "id"),
    ("subject_ids", "subject_id"),
    ("object_ids", "object_id"),
    ("object_values", "object_value_key"),
    ("predicates", "predicate"),
)
FACT_FIELDS = (
    "id namespace subject_id predicate object_id object_value confidence evidence created_at "
    "valid_at invalid_at expired_at attributes_json"
).split()
ENTITY_FIELDS = "id namespace type name created_at real_name aliases attributes_json".split()


def labels_for(memory_label: str) -> tuple[str, str, str, str]:
    """(entity, entity key, fact, fact write lock) labels for the memory label (validated)."""
    base = "" if memory_label == "Memory" else memory_label
    return tuple(  # type: ignore[return-value]
        check_name(base + name, "node_label")
        for name in ("Entity", "EntityKey", "Fact", "FactWriteLock")
    )


class FactQueries:
    def __init__(self, memory_label: str) -> None:
        M = f"`{check_name(memory_label, 'node_label')}`"
        self.entity, self.key, self.fact, self.lock = labels_for(memory_label)
        E, K, F = f"`{self.entity}`", f"`{self.key}`", f"`{self.fact}`"
        self._fact_sql = F
        e, k, f, lock = self.entity, self.key, self.fact, self.lock
        self.schema = [
            # An id belongs to one namespace (as a memory's does): unique per label, and the
            # claim below refuses it from another namespace. See the module docstring.
            f"CREATE CONSTRAINT `{e}_id_unique` IF NOT EXISTS FOR (e:{E}) REQUIRE e.id IS UNIQUE",
            f"CREATE CONSTRAINT `{f}_id_unique` IF NOT EXISTS FOR (f:{F}) REQUIRE f.id IS UNIQUE",
            f"CREATE INDEX `{e}_namespace` IF NOT EXISTS FOR (e:{E}) ON (e.namespace)",
            f"CREATE INDEX `{k}_namespace_key` IF NOT EXISTS FOR (k:{K}) ON (k.namespace, k.key)",
            # every property entity_keys reads: it answers from the index alone
            f"CREATE INDEX `{k}_pool` IF NOT EXISTS "
            f"FOR (k:{K}) ON (k.namespace, k.type, k.entity_id, k.key)",
            f"CREATE INDEX `{f}_namespace` IF NOT EXISTS FOR (f:{F}) ON (f.namespace)",
            *(
                f"CREATE INDEX `{f}_{prop}` IF NOT EXISTS FOR (f:{F}) ON (f.namespace, f.{prop})"
                for _, prop in ANCHORS[1:]
            ),
            # one lock node per namespace (neo4j_fact_lock.py); unique, so that two first
            # MERGEs at once make one node
            f"CREATE CONSTRAINT `{lock}_namespace_unique` IF NOT EXISTS "
            f"FOR (l:`{lock}`) REQUIRE l.namespace IS UNIQUE",
        ]
        # Writing a property of the node takes its exclusive lock, held until the
        # transaction ends; another transaction doing the same waits for it.
        self.write_lock = (
            f"MERGE (l:`{lock}` {{namespace: $namespace}}) SET l.taken_at = timestamp()"
        )
        # A delete takes the lock only where facts were ever written (it exists): deleting
        # memories of a namespace without facts leaves no lock node behind.
        self.existing_lock = (
            f"MATCH (l:`{lock}` {{namespace: $namespace}}) SET l.taken_at = timestamp()"
        )
        # Only entities of the batch's namespaces ($namespaces; null: the ids' own).
        self.delete_entities = (
            f"UNWIND $ids AS id MATCH (e:{E} {{id: id}}) USING INDEX e:{E}(id) "
            "WHERE $namespaces IS NULL OR e.namespace IN $namespaces "
            f"CALL (e) {{ MATCH (e)-[:NAMED]->(k:{K}) DETACH DELETE k }} DETACH DELETE e"
        )
        self.claim_entities = self._claim(E)
        self.claim_facts = self._claim(F)
        # Replace each (claimed) entity and its key nodes; a new entity is linked to the
        # facts that already name it (an existing one is: facts link to it when written).
        # One statement each: every extra statement re-sends the rows (measured slower).
        self.write_entities = [(
            f"UNWIND $rows AS r MATCH (e:{E} {{id: r.id}}) "
            "WITH e, r, e.claimed_new IS NOT NULL AS created SET e = r.props "
            f"WITH e, r, created CALL (e) {{ MATCH (e)-[:NAMED]->(k:{K}) DETACH DELETE k }} "
            f"CALL (e, r) {{ UNWIND r.keys AS key CREATE (e)-[:NAMED]->(:{K} "
            "{namespace: r.namespace, key: key, type: r.props.type, entity_id: r.id}) } "
            "WITH e, r, created WHERE created "
            f"CALL (e, r) {{ MATCH (f:{F} {{namespace: r.namespace, subject_id: r.id}}) "
            f"USING INDEX f:{F}(namespace, subject_id) "
            "MERGE (e)-[:SUBJECT_OF]->(f) } "
            f"CALL (e, r) {{ MATCH (f:{F} {{namespace: r.namespace, object_id: r.id}}) "
            f"USING INDEX f:{F}(namespace, object_id) "
            "MERGE (f)-[:OBJECT]->(e) }"
        )]
        self.write_facts = [(
            f"UNWIND $rows AS r MATCH (f:{F} {{id: r.id}}) SET f = r.props WITH f, r "
            "CALL (f) { MATCH (f)-[x:OBJECT]->() DELETE x } "
            "CALL (f) { MATCH ()-[x:SUBJECT_OF]->(f) DELETE x } "
            f"CALL (f, r) {{ MATCH (s:{E} {{id: r.subject_id}}) USING INDEX s:{E}(id) "
            "WHERE s.namespace = r.namespace "
            "CREATE (s)-[:SUBJECT_OF]->(f) } "
            f"CALL (f, r) {{ MATCH (o:{E} {{id: r.object_id}}) USING INDEX o:{E}(id) "
            "WHERE o.namespace = r.namespace "
            "CREATE (f)-[:OBJECT]->(o) }"
        )]
        # After the memories of the same put: the sentence's memory states its fact.
        # Index hints throughout: a plan depends on the statistics, and once picked the
        # namespace index here (every fact of the namespace scanned per row).
        self.link_statements = (
            f"UNWIND $rows AS r MATCH (f:{F} {{id: r.id}}) USING INDEX f:{F}(id) "
            f"WHERE f.namespace = r.namespace MATCH (m:{M} {{namespace: r.namespace, id: r.id}}) "
            f"USING INDEX m:{M}(namespace, id) "
            "MERGE (m)-[:STATES]->(f)"
        )
        # Reads return ONE record holding a list: the driver's per-record cost (~0.5 ms per
        # record on a loaded 2-core machine) dwarfed the server's time for a few dozen rows.
        entity_projection = "e {" + ", ".join(f".{p}" for p in ENTITY_FIELDS) + "}"
        self.entities_by_key = (
            f"UNWIND $keys AS key MATCH (k:{K} {{namespace: $namespace, key: key}})<-[:NAMED]-"
            f"(e:{E}) USING INDEX k:{K}(namespace, key) WHERE $types IS NULL OR e.type IN $types "
            f"WITH DISTINCT e ORDER BY e.id RETURN collect({entity_projection}) AS rows"
        )
        self.get_entities = (
            f"UNWIND $ids AS id MATCH (e:{E} {{id: id}}) USING INDEX e:{E}(id) "
            "WHERE e.namespace = $namespace "
            f"RETURN collect({entity_projection}) AS rows"
        )
        # From the pool index alone (the key nodes carry the entity's id and type; no node
        # is read), as one record of two lists: ~30k pairs at 10k people, a record each is
        # several times slower. [0] every type, [1] the types in $types.
        pool = (
            f"USING INDEX k:{K}(namespace, type, entity_id, key) "
            "WHERE k.type IS NOT NULL AND k.entity_id IS NOT NULL AND k.key IS NOT NULL "
            "RETURN collect(k.entity_id) AS ids, collect(k.key) AS keys"
        )
        self.entity_keys = (
            f"MATCH (k:{K} {{namespace: $namespace}}) {pool}",
            f"UNWIND $types AS t MATCH (k:{K} {{namespace: $namespace, type: t}}) {pool}",
        )
        self.fact_projection = "f {" + ", ".join(f".{p}" for p in FACT_FIELDS) + "}"
        # The forgetting cascade (facts/forgetting.py), inside a memory delete's transaction:
        # facts by id, and those citing evidence ids (a scan of the namespace's facts: a
        # list property has no index; deletes are rare).
        self.touching_facts = (
            f"CALL () {{ UNWIND $ids AS x MATCH (f:{F} {{id: x}}) USING INDEX f:{F}(id) "
            "WHERE f.namespace = $namespace RETURN f "
            f"UNION MATCH (f:{F} {{namespace: $namespace}}) USING INDEX f:{F}(namespace) "
            "WHERE any(e IN f.evidence WHERE e IN $evidence) RETURN f } "
            f"RETURN collect({self.fact_projection}) AS rows"
        )
        self.delete_facts = (
            f"UNWIND $rows AS r MATCH (f:{F} {{id: r.id}}) USING INDEX f:{F}(id) "
            "WHERE f.namespace = r.namespace DETACH DELETE f"
        )
        self.set_evidence = (
            f"UNWIND $rows AS r MATCH (f:{F} {{id: r.id}}) USING INDEX f:{F}(id) "
            "WHERE f.namespace = r.namespace "
            "SET f.evidence = r.evidence, f.attributes_json = r.attributes_json"
        )

    @staticmethod
    def _claim(label: str) -> str:
        """MERGE the ids first (it locks them, so two writers of one id cannot both pass);
        a row back names an id that exists in another namespace (the put is refused)."""
        return (
            f"UNWIND $rows AS r MERGE (n:{label} {{id: r.id}}) "
            "ON CREATE SET n.namespace = r.namespace, n.claimed_new = true "
            "WITH n, r WHERE n.namespace <> r.namespace "
            "RETURN n.id AS id, n.namespace AS namespace, r.namespace AS wanted LIMIT 1"
        )

    def find_facts(self, query: FactQuery) -> tuple[str, dict[str, Any]] | None:
        """The query text and parameters for `query`; None when it cannot match anything
        (an empty list of allowed values)."""
        F = self._fact_sql
        params: dict[str, Any] = {"namespace": query.namespace, "limit": int(query.limit)}
        anchor: str | None = None
        conds: list[str] = []
        for attr, prop in ANCHORS:
            values = getattr(query, attr)
            if values is None:
                continue
            values = list(dict.fromkeys(str(v) for v in values))
            if attr == "object_values":
                values = list(dict.fromkeys(name_key(v) for v in values))
            if not values:
                return None
            params[attr] = values
            if anchor is not None:
                conds.append(f"f.{prop} IN ${attr}")
            elif prop == "id":  # the first condition set is the index seek
                anchor = f"UNWIND $ids AS x MATCH (f:{F} {{id: x}}) USING INDEX f:{F}(id)"
                conds.append("f.namespace = $namespace")
            else:
                anchor = (
                    f"UNWIND ${attr} AS x MATCH (f:{F} {{namespace: $namespace, {prop}: x}}) "
                    f"USING INDEX f:{F}(namespace, {prop})"
                )
        if anchor is None:
            anchor = f"MATCH (f:{F} {{namespace: $namespace}})"
        if query.min_confidence > 0:
            conds.append("f.confidence >= $min_confidence")
            params["min_confidence"] = float(query.min_confidence)
        if not query.include_history:
            conds.append(
                "(f.valid_at IS NULL OR f.valid_at <= $as_of) "
                "AND (f.invalid_at IS NULL OR $as_of < f.invalid_at) "
                "AND (f.expired_at IS NULL OR $as_of < f.expired_at)"
            )
        where = " WHERE " + " AND ".join(conds) if conds else ""
        # The order and limit first, on four properties; the projection of the few kept after.
        # (The caller sorts the rows again: RETURN does not promise the WITH's order.)
        text = (
            f"{anchor}{where} WITH f "
            "ORDER BY f.valid_at IS NULL, f.valid_at DESC, f.created_at DESC, f.id LIMIT $limit "
            f"RETURN collect({self.fact_projection}) AS rows"
        )
        return text, params


# --- rows: checked before any write, so one bad item never reaches the server ------------
def _text(value: object, what: str, optional: bool = False, empty: bool = True) -> str | None:
    """`value` if it is text Neo4j stores (None allowed when `optional`, "" unless not
    `empty`); MemoryInputError naming `what` otherwise."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not empty and not value):
        raise MemoryInputError(f"{what}={value!r} must be a{' non-empty' * (not empty)} string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise MemoryInputError(f"{what}={value!r} is not valid UTF-8 text ({exc.reason})") from None
    return value


def _time(value: object, what: str, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise MemoryInputError(f"{what}={value!r} must be a finite number (epoch seconds)")
    return float(value)


def _json(value: Mapping[str, Any], what: str) -> str:
    try:
        text = json.dumps(dict(value), ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:
        raise MemoryInputError(f"{what} is not JSON-serialisable ({exc})") from None
    return str(_text(text, what))


def entity_row(e: Entity) -> dict[str, Any]:
    who = f"entity {e.id!r}"
    aliases = [str(_text(a, f"{who}: alias")) for a in e.aliases]
    props = {
        "id": _text(e.id, "entity id", empty=False),
        "namespace": _text(e.namespace, f"{who}: namespace", empty=False),
        "type": _text(e.type, f"{who}: type", empty=False),
        "name": _text(e.name, f"{who}: name"),
        "real_name": _text(e.real_name, f"{who}: real_name", optional=True),
        "aliases": aliases,
        "created_at": _time(e.created_at, f"{who}: created_at", optional=False),
        "attributes_json": _json(e.attributes, f"{who}: attributes"),
    }
    keys = entity_name_keys(e)
    props["name_keys"] = keys
    return {"id": e.id, "namespace": e.namespace, "props": props, "keys": keys}


def fact_row(f: Fact) -> dict[str, Any]:
    who = f"fact {f.id!r}"
    confidence = _time(f.confidence, f"{who}: confidence", optional=False)
    if not 0.0 <= confidence <= 1.0:  # type: ignore[operator]
        raise MemoryInputError(f"{who}: confidence={f.confidence!r} must be in [0, 1]")
    if isinstance(f.evidence, str) or not f.evidence:
        raise MemoryInputError(
            f"{who}: evidence={f.evidence!r} must name at least one message / memory / document"
        )
    value = _text(f.object_value, f"{who}: object_value", optional=True)
    props = {
        "id": _text(f.id, "fact id", empty=False),
        "namespace": _text(f.namespace, f"{who}: namespace", empty=False),
        "subject_id": _text(f.subject_id, f"{who}: subject_id", empty=False),
        "predicate": _text(f.predicate, f"{who}: predicate", empty=False),
        "object_id": _text(f.object_id, f"{who}: object_id", optional=True),
        "object_value": value,
        "object_value_key": None if value is None else name_key(value),
        "confidence": confidence,
        "evidence": [str(_text(x, f"{who}: evidence")) for x in f.evidence],
        "created_at": _time(f.created_at, f"{who}: created_at", optional=False),
        "valid_at": _time(f.valid_at, f"{who}: valid_at"),
        "invalid_at": _time(f.invalid_at, f"{who}: invalid_at"),
        "expired_at": _time(f.expired_at, f"{who}: expired_at"),
        "attributes_json": _json(f.attributes, f"{who}: attributes"),
    }
    return {
        "id": f.id,
        "namespace": f.namespace,
        "subject_id": f.subject_id,
        "object_id": f.object_id,
        "props": props,
    }


def entity_from(p: Mapping[str, Any]) -> Entity:
    return Entity(
        id=p["id"],
        namespace=p["namespace"],
        type=p["type"],
        name=p["name"],
        created_at=float(p["created_at"]),
        real_name=p.get("real_name"),
        aliases=tuple(p.get("aliases") or ()),
        attributes=json.loads(p.get("attributes_json") or "{}"),
    )


def _opt(value: Any) -> float | None:
    return None if value is None else float(value)


def fact_from(p: Mapping[str, Any]) -> Fact:
    return Fact(
        id=p["id"],
        namespace=p["namespace"],
        subject_id=p["subject_id"],
        predicate=p["predicate"],
        object_id=p.get("object_id"),
        object_value=p.get("object_value"),
        confidence=float(p["confidence"]),
        evidence=tuple(p.get("evidence") or ()),
        created_at=float(p["created_at"]),
        valid_at=_opt(p.get("valid_at")),
        invalid_at=_opt(p.get("invalid_at")),
        expired_at=_opt(p.get("expired_at")),
        attributes=json.loads(p.get("attributes_json") or "{}"),
    )

