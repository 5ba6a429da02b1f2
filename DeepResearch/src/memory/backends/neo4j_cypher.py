"""The Cypher of the neo4j backend (the node properties are built in neo4j_records.py).

Injection safety: every value a user can influence (ids, content, metadata keys and values,
vectors, filters, the text query) travels as a query *parameter*. The only things formatted
into query text are (a) the node label and index names, validated against `NAME_PATTERN` when
the backend is built, (b) relationship types taken from the fixed `REL_TYPES` table after the
value was checked against `RelationType`, (c) a traversal depth checked to be an int in
1..MAX_DEPTH, and (d) constant WHERE fragments chosen by which filter fields are set.

Graph model: `(:Memory {id, namespace, session_id, memory_type, content, created_at, ...})`;
metadata values are read by filters with the dynamic lookup `m[$key]` (keys need no escaping).
Relations are edges FOLLOWS / CAUSED_BY / REFERENCES / PART_OF / SIMILAR_TO from the record to
its target; a target not written yet is a placeholder node labelled `<Label>Pending` until its
memory arrives. Namespaces: a node is known by (namespace, id) (a composite uniqueness
constraint; two namespaces may each have a memory "1"); every filtered query tests
`m.namespace IN $f_namespaces`, and a relation walk only steps on memories of its namespace.
Store markers (MemoryBackend.get_marker) are `(:<Label>Marker {namespace, name, value})`.
A memory committed before its vector (vector_fill.py) has no `embedding` (the vector index
does not see it; the full-text index does) and a second label `<Label>AwaitingVector` with a
`vector_token` naming that version of its content: a fill applies only while both are there.
"""

from __future__ import annotations

import re
from typing import Any

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.errors import MemoryConfigError, MemoryInputError
from DeepResearch.src.memory.models import RelationType
from DeepResearch.src.memory.text import tokenize

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
META_PREFIX = "md."
MAX_DEPTH = 10
# RelationType value -> relationship type. The only source of relationship types in queries.
REL_TYPES: dict[str, str] = {t.value: t.value.upper() for t in RelationType}
ALL_REL_TYPES = list(REL_TYPES.values())
REL_VALUES = {v: k for k, v in REL_TYPES.items()}

# Fields read back into a MemoryRecord (a fixed projection: no md.* copies over the wire).
RETURN_FIELDS = (
    "id namespace session_id memory_type content created_at agent_type importance temporal_weight "
    "expires_at event_at content_codec content_blob metadata_json relations_json embedding"
).split()
PROJECTION = "m {" + ", ".join(f".{f}" for f in RETURN_FIELDS) + "}"


def check_name(value: str, key: str) -> str:
    """A label or index name that is safe to format into Cypher, or MemoryConfigError."""
    if not isinstance(value, str) or not NAME_PATTERN.match(value) or len(value) > 63:
        raise MemoryConfigError(
            f"memory.neo4j.{key}={value!r}: must match {NAME_PATTERN.pattern} "
            "(letters, digits, underscore; at most 63 characters)"
        )
    return value


def rel_type(value: str) -> str:
    """The relationship type for a RelationType value, or MemoryInputError naming the choices."""
    try:
        return REL_TYPES[str(value)]
    except KeyError:
        raise MemoryInputError(
            f"relation type {value!r} is not one of {sorted(REL_TYPES)}"
        ) from None


# --- filters ---------------------------------------------------------------------------------
def filter_clause(flt: MemoryFilter, var: str = "m") -> tuple[str, dict[str, Any]]:
    """`(cond AND cond ...)` for `flt` (or `true`) and its parameters (all named `f_*`)."""
    conds: list[str] = []
    params: dict[str, Any] = {}
    for attr, prop in (
        ("ids", "id"),
        ("namespaces", "namespace"),
        ("session_ids", "session_id"),
        ("memory_types", "memory_type"),
        ("agent_types", "agent_type"),
    ):
        values = getattr(flt, attr)
        if values is not None:
            conds.append(f"{var}.{prop} IN $f_{attr}")
            params[f"f_{attr}"] = list(values)
    if flt.live_at is not None:
        conds.append(f"({var}.expires_at IS NULL OR {var}.expires_at > $f_live_at)")
        params["f_live_at"] = float(flt.live_at)
    if flt.created_after is not None:
        conds.append(f"{var}.created_at >= $f_created_after")
        params["f_created_after"] = float(flt.created_after)
    if flt.created_before is not None:
        conds.append(f"{var}.created_at <= $f_created_before")
        params["f_created_before"] = float(flt.created_before)
    for i, (key, allowed) in enumerate(flt.metadata.items()):
        params[f"f_mk{i}"] = META_PREFIX + str(key)
        params[f"f_mkey{i}"] = str(key)
        values = [v for v in allowed if v is not None]
        cond = f"{var}[$f_mk{i}] IN $f_mv{i}"
        params[f"f_mv{i}"] = values
        if len(values) != len(allowed):  # None matches a missing key or an explicit null
            cond = (
                f"({cond} OR ({var}[$f_mk{i}] IS NULL AND "
                f"NOT $f_mkey{i} IN coalesce({var}.md_complex, [])))"
            )
        conds.append(cond)
    return ("(" + " AND ".join(conds) + ")" if conds else "true"), params


def is_selective(flt: MemoryFilter) -> bool:
    """True when the filter names ids or sessions (index-backed, usually few records)."""
    return flt.ids is not None or flt.session_ids is not None


# --- text query ------------------------------------------------------------------------------
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')


def lucene_escape(text: str) -> str:
    """Backslash-escape every character Lucene's query parser treats as syntax."""
    return _LUCENE_SPECIAL.sub(r"\\\1", text)


def fulltext_query(text: str, max_terms: int = 512) -> str:
    """A Lucene query matching any term of `text` (OR), with no syntax from the user.

    Terms come from the shared tokeniser (text.py), as the indexed `search_text` does, so a
    word matches here exactly as in the other backends (stemmed, stop words dropped).
    Tokens are lower-cased word characters (AND/OR/NOT become plain words); escaping stays
    as a second guard."""
    words = list(dict.fromkeys(tokenize(text)))[:max_terms]
    return " ".join(lucene_escape(w) for w in words)


# --- query texts (label/index names validated by the caller) ---------------------------------
class Queries:
    """Every query the backend runs, built once for one validated label and index pair."""

    def __init__(self, label: str, vector_index: str, fulltext_index: str) -> None:
        self.label = check_name(label, "node_label")
        self.pending = check_name(label + "Pending", "node_label")
        self.marker = check_name(label + "Marker", "node_label")
        self.awaiting = check_name(label + "AwaitingVector", "node_label")
        self.vector_index = check_name(vector_index, "index_name")
        self.fulltext_index = check_name(fulltext_index, "fulltext_index_name")
        L, P, K = f"`{self.label}`", f"`{self.pending}`", f"`{self.marker}`"
        A = f"`{self.awaiting}`"
        self.namespace_index = f"{self.label}_namespace"
        self.schema = [
            # Ids are scoped by namespace: the id-only constraints of older versions go, and
            # placeholders written before take the namespace of a memory pointing at them.
            f"DROP CONSTRAINT `{self.label}_id_unique` IF EXISTS",
            f"DROP CONSTRAINT `{self.pending}_id_unique` IF EXISTS",
            f"MATCH (p:{P}) WHERE p.namespace IS NULL OPTIONAL MATCH (p)<--(m:{L}) "
            "WITH p, head(collect(m.namespace)) AS ns SET p.namespace = coalesce(ns, 'default')",
            f"CREATE CONSTRAINT `{self.label}_namespace_id_unique` IF NOT EXISTS "
            f"FOR (m:{L}) REQUIRE (m.namespace, m.id) IS UNIQUE",
            f"CREATE CONSTRAINT `{self.pending}_namespace_id_unique` IF NOT EXISTS "
            f"FOR (m:{P}) REQUIRE (m.namespace, m.id) IS UNIQUE",
            # one marker node per (namespace, name): two first MERGEs at once make one node
            f"CREATE CONSTRAINT `{self.marker}_namespace_name_unique` IF NOT EXISTS "
            f"FOR (k:{K}) REQUIRE (k.namespace, k.name) IS UNIQUE",
            f"CREATE INDEX `{self.label}_session_id` IF NOT EXISTS FOR (m:{L}) ON (m.session_id)",
            f"CREATE INDEX `{self.namespace_index}` IF NOT EXISTS FOR (m:{L}) ON (m.namespace)",
            f"CREATE INDEX `{self.label}_created_at` IF NOT EXISTS FOR (m:{L}) ON (m.created_at)",
            f"CREATE INDEX `{self.awaiting}_token` IF NOT EXISTS FOR (m:{A}) ON (m.vector_token)",
            # Pre-tokenised text (text.py) split on white space: the same terms as the BM25 index.
            f"CREATE FULLTEXT INDEX `{self.fulltext_index}` IF NOT EXISTS "
            f"FOR (m:{L}) ON EACH [m.search_text] "
            "OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace'}}",
        ]
        self.create_vector_index = (
            f"CREATE VECTOR INDEX `{self.vector_index}` IF NOT EXISTS FOR (m:{L}) ON m.embedding "
            "OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, "
            "`vector.similarity_function`: $similarity}}"
        )
        self.show_index = (
            "SHOW INDEXES YIELD name, type, labelsOrTypes, properties, options "
            "WHERE name = $name RETURN type, labelsOrTypes, properties, options"
        )
        # $rows / $keys: {namespace, id} maps (a node is known by both).
        self.promote_pending = (
            f"UNWIND $keys AS k MATCH (p:{P} {{namespace: k.namespace, id: k.id}}) "
            f"REMOVE p:{P} SET p:{L}"
        )
        # Nodes written before namespaces existed belong to the default one (auto-commit only).
        self.default_namespace = (
            f"MATCH (m:{L}) WHERE m.namespace IS NULL "
            "CALL (m) { SET m.namespace = $namespace } IN TRANSACTIONS OF 10000 ROWS"
        )
        self.clear_outgoing = (
            f"UNWIND $keys AS k MATCH (m:{L} {{namespace: k.namespace, id: k.id}})-[r]->() "
            "WHERE type(r) IN $types DELETE r"
        )
        # One pass: replace every property but the access statistics (a replaced memory keeps
        # them), then the vector (compact float storage), or, for a row without one (its
        # props carry a fresh vector_token), the awaiting label.
        self.write_nodes = (
            f"UNWIND $rows AS r MERGE (m:{L} {{namespace: r.namespace, id: r.id}}) "
            "WITH m, r, m.access_count AS access_count, m.last_accessed AS last_accessed "
            "SET m = r.props SET m.access_count = access_count, m.last_accessed = last_accessed "
            f"REMOVE m:{A} "
            f"FOREACH (_ IN CASE WHEN r.vector IS NULL THEN [1] ELSE [] END | SET m:{A}) "
            "WITH m, r WHERE r.vector IS NOT NULL "
            "CALL db.create.setNodeVectorProperty(m, 'embedding', r.vector)"
        )
        # Vectors filled behind (vector_fill.py): the oldest waiting memories, then each fill
        # applied only to the node still awaiting with the token read (the SET takes its
        # write lock first, so a replacement committed meanwhile is seen and refuses it).
        waiting = (
            "RETURN m.vector_token AS token, m.id AS id, m.content AS content, "
            "m.content_codec AS codec, m.content_blob AS blob "
            "ORDER BY m.created_at, m.id LIMIT $limit"
        )
        self.pending_vectors = (
            f"MATCH (m:{A}) WHERE m:{L} AND NOT m.vector_token IN $skip " + waiting)
        self.pending_vectors_among = (
            f"UNWIND $ids AS id MATCH (m:{L} {{namespace: $namespace, id: id}}) "
            f"WHERE m:{A} AND NOT m.vector_token IN $skip WITH DISTINCT m " + waiting)
        self.fill_vectors = (
            f"UNWIND $rows AS r MATCH (m:{A} {{vector_token: r.token}}) "
            "SET m.vector_fill_lock = true REMOVE m.vector_fill_lock "
            f"WITH m, r WHERE m:{A} AND m:{L} AND m.vector_token = r.token "
            f"REMOVE m:{A} REMOVE m.vector_token "
            "WITH m, r CALL db.create.setNodeVectorProperty(m, 'embedding', r.vector) "
            "RETURN r.token AS token, m.namespace AS namespace, m.id AS id"
        )
        self.pending_figures = (
            f"MATCH (m:{A}) WHERE m:{L} RETURN count(m) AS n, min(m.created_at) AS oldest")
        self.ensure_targets = (
            f"UNWIND $keys AS k OPTIONAL MATCH (t:{L} {{namespace: k.namespace, id: k.id}}) "
            f"WITH k, t WHERE t IS NULL MERGE (:{P} {{namespace: k.namespace, id: k.id}})"
        )
        self._label_sql = L
        self._pending_sql = P
        self.similar_to = (
            f"UNWIND $rows AS r MATCH (m:{L} {{namespace: r.namespace, id: r.id}}) "
            "CALL db.index.vector.queryNodes($index, $k, r.vector) YIELD node, score "
            "WITH m, node, score WHERE node <> m AND score >= $min_score "
            "AND node.namespace = m.namespace "
            "MERGE (m)-[s:SIMILAR_TO]->(node) SET s.score = score"
        )
        self.total = f"MATCH (m:{L}) RETURN count(m) AS n"
        # Store markers (MemoryBackend.get_marker): a number per (namespace, name).
        self.get_marker = (
            f"MATCH (k:{K} {{namespace: $namespace, name: $name}}) RETURN k.value AS value"
        )
        self.set_marker = (
            f"MERGE (k:{K} {{namespace: $namespace, name: $name}}) SET k.value = $value"
        )
        # Access statistics: properties of the memory node ($rows: {id, n} with n accesses).
        self.record_access = (
            f"UNWIND $rows AS r MATCH (m:{L} {{namespace: $namespace, id: r.id}}) "
            "SET m.access_count = coalesce(m.access_count, 0) + r.n, "
            "m.last_accessed = CASE WHEN m.last_accessed IS NULL OR m.last_accessed < $at "
            "THEN $at ELSE m.last_accessed END"
        )
        self.access_stats = (
            f"UNWIND $ids AS id MATCH (m:{L} {{namespace: $namespace, id: id}}) "
            "RETURN m.id AS id, coalesce(m.access_count, 0) AS n, m.last_accessed AS at"
        )
        # The stored columns a read decodes, a page at a time in (namespace, id) order (health)
        self.stored_page = (
            f"MATCH (m:{L}) WHERE m.namespace > $ns OR (m.namespace = $ns AND m.id > $after) "
            "RETURN m.namespace AS ns, m.id AS id, m.metadata_json AS metadata, "
            "m.relations_json AS relations, m.content_codec AS codec, m.content_blob AS blob "
            "ORDER BY ns, id LIMIT $n"
        )

    def write_edges(self, rel: str) -> str:
        """Edges of one relationship type; `rel` must come from REL_TYPES."""
        if rel not in REL_VALUES:
            raise MemoryInputError(f"relationship type {rel!r} is not one of {ALL_REL_TYPES}")
        L, P = self._label_sql, self._pending_sql
        return (
            f"UNWIND $pairs AS p MATCH (a:{L} {{namespace: p.namespace, id: p.src}}) "
            f"OPTIONAL MATCH (b1:{L} {{namespace: p.namespace, id: p.dst}}) "
            f"OPTIONAL MATCH (b2:{P} {{namespace: p.namespace, id: p.dst}}) "
            f"WITH a, coalesce(b1, b2) AS b WHERE b IS NOT NULL MERGE (a)-[:`{rel}`]->(b)"
        )

    # -- move (the archive): $ids of $from re-filed under $to --------------------------------
    def move_metadata(self) -> str:
        """The stored metadata of the memories $ids of $from (what a move's patch edits)."""
        return (f"UNWIND $ids AS id MATCH (m:{self._label_sql} {{namespace: $from, id: id}}) "
                "RETURN m.id AS id, m.metadata_json AS metadata")

    def move_statements(self, replace: bool = True) -> list[str]:
        """One transaction, in order: (with `replace`) a node of $to with a moved id (a
        memory, or a placeholder of one that other memories point at) hands its incoming
        edges to the moved node and is deleted, as `upsert` replaces a memory and keeps what
        points at it; then each moved node ($rows: {id, props}) takes $to as namespace and
        `props` (its metadata patch; a null removes a property), its edges, to each other
        and to the rest, staying. The last statement returns `n`, how many moved."""
        L, P = self._label_sql, self._pending_sql

        def pair(label: str) -> str:
            return (f"UNWIND $ids AS id MATCH (s:{L} {{namespace: $from, id: id}}) "
                    f"MATCH (d:{label} {{namespace: $to, id: id}}) ")

        out = [
            pair(label) + f"MATCH (a)-[r:`{rel}`]->(d) WHERE a <> s "
            f"MERGE (a)-[:`{rel}`]->(s) DELETE r"
            for label in (L, P) for rel in ALL_REL_TYPES
        ]
        out += [pair(label) + "DETACH DELETE d" for label in (L, P)]
        if not replace:
            out = []
        out.append(f"UNWIND $rows AS r MATCH (m:{L} {{namespace: $from, id: r.id}}) "
                   "SET m += r.props, m.namespace = $to RETURN count(m) AS n")
        return out

    def _filtered_hits(self, where: str) -> str:
        """One row: `raw` = how many hits the index gave, `found` = the best $k of those
        passing the filter (the index call comes first and yields `node, score`)."""
        return (
            "WITH collect({m: node, score: score}) AS hits "
            "RETURN size(hits) AS raw, COLLECT { UNWIND hits AS hit "
            f"WITH hit.m AS m, hit.score AS score WHERE m:{self._label_sql} AND {where} "
            f"RETURN {{m: {PROJECTION}, score: score}} ORDER BY score DESC LIMIT $k }} AS found"
        )

    def vector_ann(self, where: str) -> str:
        """Top $fetch from the vector index, then the filter."""
        return (
            "CALL db.index.vector.queryNodes($index, $fetch, $vector) YIELD node, score "
            + self._filtered_hits(where)
        )

    def vector_exact(self, where: str) -> str:
        return (
            f"MATCH (m:{self._label_sql}) WHERE {where} AND m.embedding IS NOT NULL "
            "WITH m, vector.similarity.cosine(m.embedding, $vector) AS score "
            f"ORDER BY score DESC LIMIT $k RETURN {PROJECTION} AS m, score"
        )

    def text(self, where: str) -> str:
        """Top $fetch from the full-text index, then the filter."""
        return (
            "CALL db.index.fulltext.queryNodes($index, $query, {limit: $fetch}) "
            "YIELD node, score " + self._filtered_hits(where)
        )

    def get(self) -> str:
        return (
            f"UNWIND $ids AS id MATCH (m:{self._label_sql} {{namespace: $namespace, id: id}}) "
            f"RETURN {PROJECTION} AS m"
        )

    def scan(self, where: str, limited: bool) -> str:
        tail = " SKIP $offset" + (" LIMIT $limit" if limited else "")
        return (
            f"MATCH (m:{self._label_sql}) WHERE {where} "
            f"RETURN {PROJECTION} AS m ORDER BY m.created_at, m.id{tail}"
        )

    def count(self, where: str, bounded: bool = False) -> str:
        """count(m), or with `bounded` at most $bound (stops reading early)."""
        cap = " WITH m LIMIT $bound" if bounded else ""
        return f"MATCH (m:{self._label_sql}) WHERE {where}{cap} RETURN count(m) AS n"

    def delete_batch(self, where: str) -> str:
        """Delete up to $batch matching memories; one record: `gone`, the [id, namespace,
        memory_type, metadata message_id] of each (what the fact cascade reads). One still
        referenced by another memory becomes a placeholder again, so re-writing it restores
        the incoming relations."""
        L, P = self._label_sql, self._pending_sql
        return (
            f"MATCH (m:{L}) WHERE {where} WITH m LIMIT $batch "
            f"WITH m, [m.id, m.namespace, m.memory_type, m.`{META_PREFIX}message_id`] AS gone "
            "CALL (m) { MATCH (m)-[r]->() DELETE r } "
            "WITH m, gone, EXISTS { (m)<--() } AS referenced "
            f"CALL (m, referenced) {{ WITH * WHERE referenced REMOVE m:{L}:`{self.awaiting}` "
            f"SET m = {{namespace: m.namespace, id: m.id}} SET m:{P} }} "
            "CALL (m, referenced) { WITH * WHERE NOT referenced DELETE m } "
            "RETURN collect(gone) AS gone"
        )

    def drop_orphan_pending(self) -> str:
        return f"MATCH (p:{self._pending_sql}) WHERE NOT (p)--() DELETE p"

    def related(self, depth: int) -> str:
        """For every start id in $ids (of namespace $namespace) at once: the memories within
        `depth` hops over the relationship types in $types (both directions), with the hop
        count and the type of the edge that reached each. Every step is a memory of
        $namespace (the walk never passes through another one)."""
        _check_depth(depth)
        L = self._label_sql
        return (
            f"UNWIND $ids AS start MATCH p = ANY SHORTEST (s:{L} {{namespace: $namespace, id: start}})"
            f"(()-[r WHERE type(r) IN $types]-(x:{L} WHERE x.namespace = $namespace)){{1,{depth}}}"
            f"(t:{L}) WHERE t <> s "
            f"WITH start, t AS m, length(p) AS depth, type(last(relationships(p))) AS rel "
            f"RETURN start, {PROJECTION} AS m, depth, rel ORDER BY start, depth, m.created_at, m.id"
        )


def _check_depth(depth: object) -> None:
    if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= MAX_DEPTH:
        raise MemoryInputError(f"depth={depth!r}: must be an int in 1..{MAX_DEPTH}")
