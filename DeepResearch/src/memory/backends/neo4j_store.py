"""`neo4j`: memories as `(:Memory)` nodes with a native vector index, a full-text index and
relationship edges, in a Neo4j 5.26+ server (a single instance, a cluster or a hosted one).

- Vectors: `CREATE VECTOR INDEX ... IF NOT EXISTS` with the configured dimension. The index
  similarity is 'cosine' for metric cosine *and* dot_product (vectors are unit-norm, so the
  two orders agree and Neo4j has no dot-product index), 'euclidean' for euclidean. Whatever
  the index, candidates are re-scored with the exact cosine similarity in [-1, 1].
- Search: `db.index.vector.queryNodes` over-fetches, then filters, fetching 4x more while
  the filter leaves fewer than k; past MAX_ANN_FETCH, or when the filter names sessions/ids
  with few records, an exact filtered scan answers.
- Namespaces: every node carries `namespace` (indexed); a memory is known by (namespace,
  id), so two namespaces may each have a memory "1"; filters, walks and deletes honour
  `MemoryFilter.namespaces`.
- Bad records: each is checked before the write (neo4j_records.py); data the server still
  refuses raises MemoryInputError naming the record and the server's reason. Neither is
  retried, and a batch refused writes nothing.
- Vectors filled behind (vector_fill.py): a memory may be committed without its vector,
  labelled awaiting one (neo4j_cypher.py); `pending_vectors` / `fill_vectors` work on those.
- Faults: see neo4j_connection.py (bounded retries, then fail fast while the server is down).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from DeepResearch.src.memory.backends.base import (
    DEFAULT_NAMESPACE,
    AccessStats,
    BackendHealth,
    Candidate,
    MemoryBackend,
    MemoryFilter,
    MemoryRecord,
    RelatedRecord,
    by_namespace,
    walk_namespace,
)
from DeepResearch.src.memory.backends.decoding import (
    damaged_summary,
    decoded,
    readable_content,
    stored_problem,
)
from DeepResearch.src.memory.backends.neo4j_connection import (
    DataRefused,
    Neo4jConnection,
    Neo4jSettings,
    Run,
    run_statements,
)
from DeepResearch.src.memory.backends.neo4j_cypher import (
    ALL_REL_TYPES,
    REL_VALUES,
    Queries,
    filter_clause,
    fulltext_query,
    is_selective,
    rel_type,
)
from DeepResearch.src.memory.backends.neo4j_records import (
    metadata_props,
    patch_props,
    record_from_props,
    vector_list,
)
from DeepResearch.src.memory.backends.neo4j_writes import (
    memory_rows,
    memory_statements,
    similar_to_statement,
)
from DeepResearch.src.memory.backends.record import (
    live_namespace,
    metadata_patch,
    record_matches,
)
from DeepResearch.src.memory.errors import (
    MemoryBackendError,
    MemoryConfigError,
    MemoryInputError,
)
from DeepResearch.src.memory.facts.forgetting import Forgotten

if TYPE_CHECKING:
    from DeepResearch.src.memory.backends.neo4j_facts import Neo4jFactStore

log = logging.getLogger(__name__)
METRICS = {"cosine": "cosine", "dot_product": "cosine", "euclidean": "euclidean"}
OVERFETCH = 4  # index hits fetched per wanted result before filtering (and growth factor)
EXACT_BELOW = 2000  # a session/id filter matching at most this many records is scanned exactly
MAX_ANN_FETCH = 10_000  # vector hits read at most before an exact filtered scan answers
MAX_TEXT_FETCH = 100_000  # full-text hits read at most before filtering
VERIFY_PAGE = 2000  # memories read per query by verify()


class Neo4jBackend(MemoryBackend):
    name: ClassVar[str] = "neo4j"
    lexical_in_process: ClassVar[bool] = False  # Lucene runs on the server
    # A memory node can be committed before its vector (neo4j_cypher.py: the awaiting label).
    fills_vectors_behind: ClassVar[bool] = True
    # Measured on 2 cores with the server on them: acknowledged ingest faster (88 against 63
    # messages/s), sustained slower (37): each memory costs a second write transaction.
    vectors_behind_by_default: ClassVar[bool] = False

    def __init__(self, settings: Neo4jSettings, *, dimension: int, metric: str = "cosine") -> None:
        if not isinstance(dimension, int) or not 1 <= dimension <= 4096:
            raise MemoryConfigError(
                f"the embedding model (memory.vector_store.embedding_model) gives {dimension!r}-"
                "dimensional vectors: Neo4j vector indexes take 1..4096 dimensions"
            )
        if metric not in METRICS:
            raise MemoryConfigError(
                f"memory.vector_store.index_type={metric!r}: choices are {sorted(METRICS)}"
            )
        self.settings = settings
        self.dimension = dimension
        self.metric = metric
        self.similarity = METRICS[metric]
        self.q = Queries(settings.node_label, settings.index_name, settings.fulltext_index_name)
        self.conn = Neo4jConnection(
            settings, self.q, dimension=dimension, similarity=self.similarity
        )
        self._facts: Neo4jFactStore | None = None

    async def open(self) -> None:
        """Connect, check the server, create the schema; MemoryBackendError if impossible."""
        self._facts = None  # its schema is checked again on first use
        await self.conn.open()

    async def close(self) -> None:
        await self.conn.close()

    def fact_store(self) -> Neo4jFactStore:
        """Entities and facts on this backend's connection (neo4j_facts.py)."""
        from DeepResearch.src.memory.backends.neo4j_facts import Neo4jFactStore

        if self._facts is None:
            self._facts = Neo4jFactStore(self.conn, self.settings)
        return self._facts

    def _where(self) -> str:
        return self.conn.where()

    # --- writes --------------------------------------------------------------------------
    async def upsert(self, records: Sequence[MemoryRecord]) -> None:
        rows = memory_rows(records, self.dimension)  # all checked before any write
        size = self.settings.batch_size
        for start in range(0, len(rows), size):
            await self._write_batch(records[start : start + size], rows[start : start + size])

    def _batch_statements(
        self, records: Sequence[MemoryRecord], rows: list[dict[str, Any]]
    ) -> list[tuple[str, dict[str, Any]]]:
        return memory_statements(self.q, records, rows)

    async def _write_batch(
        self, records: Sequence[MemoryRecord], rows: list[dict[str, Any]]
    ) -> None:
        what = f"writing {len(rows)} memories"
        statements = self._batch_statements(records, rows)
        try:
            await self.conn.write(what, statements)
        except DataRefused as exc:
            raise await self._name_refused(records, rows, exc) from exc
        await self.link_similar(rows)

    async def link_similar(self, rows: list[dict[str, Any]]) -> None:
        """SIMILAR_TO edges of freshly committed rows, when configured."""
        threshold = self.settings.similarity_to_threshold
        statement = similar_to_statement(self.q, rows, threshold, self.similarity)
        if statement is not None:
            await self.conn.write("linking SIMILAR_TO", [statement])

    async def _name_refused(
        self, records: Sequence[MemoryRecord], rows: list[dict[str, Any]], exc: DataRefused
    ) -> MemoryInputError:
        """The server refused a batch: find one record it refuses on its own, by halving the
        batch in transactions that are rolled back, and name it with the server's reason."""
        group = list(zip(records, rows, strict=True))
        while len(group) > 1:
            half = group[: len(group) // 2]
            refused = await self._refusal([g[0] for g in half], [g[1] for g in half])
            group = half if refused is not None else group[len(group) // 2 :]
        record, row = group[0]
        reason = await self._refusal([record], [row])
        if reason is None:  # refused only together: name the batch
            ids = ", ".join(repr(r.id) for r in records[:5])
            more = f" and {len(records) - 5} more" if len(records) > 5 else ""
            return MemoryInputError(f"records {ids}{more}: {exc} (nothing of them written)")
        return MemoryInputError(
            f"record {record.id!r} cannot be stored: {reason} (nothing of its batch of "
            f"{len(records)} was written)"
        )

    async def _refusal(
        self, records: Sequence[MemoryRecord], rows: list[dict[str, Any]]
    ) -> DataRefused | None:
        try:
            await self.conn.retrying(
                "checking memories",
                lambda: self.conn.transaction(self._batch_statements(records, rows), commit=False),
            )
        except DataRefused as exc:
            return exc
        return None

    async def delete(self, flt: MemoryFilter) -> int:
        """Batches of matching memories, each in one transaction with what forgetting them
        does to the facts built on them (facts/forgetting.py, neo4j_facts.py)."""
        where, params = filter_clause(flt)
        batch = self.settings.batch_size
        facts = self.fact_store()
        await facts.ensure_schema()  # before the transactions: the cascade's index hints

        async def one_batch(run: Run) -> tuple[int, int]:
            # The namespaces' fact write locks first (another worker's ingest must not write
            # back a fact this cascade edits); those of a delete naming none, once known.
            await facts.lock_namespaces(run, {live_namespace(n) for n in flt.namespaces or ()})
            rows = await run(self.q.delete_batch(where), {**params, "batch": batch})
            gone = [Forgotten.of(*g) for g in rows[0]["gone"]] if rows else []
            if gone and not flt.namespaces:
                await facts.lock_namespaces(run, {g.namespace for g in gone})
            more = await facts.forget(run, gone) if gone else []
            cascaded = 0
            for namespace, ids in by_namespace(more):
                by_id, id_params = filter_clause(MemoryFilter(ids=tuple(ids),
                                                              namespaces=(namespace,)))
                rows = await run(self.q.delete_batch(by_id), {**id_params, "batch": len(ids)})
                cascaded += len(rows[0]["gone"]) if rows else 0
            return len(gone), cascaded

        total = 0
        while True:
            selected, cascaded = await self.conn.write_work("deleting memories", one_batch)
            total += selected + cascaded
            if selected < batch:
                break
        if total:
            await self.conn.write("dropping placeholders", [(self.q.drop_orphan_pending(), {})])
        return total

    async def move(
        self, ids: Sequence[str], from_namespace: str, to_namespace: str,
        metadata: Mapping[str, Any | None] | None = None,
    ) -> int:
        """The nodes re-filed and their metadata patched in one transaction
        (Queries.move_statements; with a patch the stored metadata is read in that
        transaction and written back edited, neo4j_records.patch_props); no fact is touched
        (facts cite ids, not nodes)."""
        ids = list(dict.fromkeys(ids))
        patch = metadata_patch(metadata)
        if not ids:
            return 0
        metadata_props({k: v for k, v in patch.items() if v is not None}, "(metadata patch)")
        params: dict[str, Any] = {"ids": ids, "from": from_namespace, "to": to_namespace}
        statements = self.q.move_statements(replace=from_namespace != to_namespace)

        async def work(run: Run) -> int:
            rows = [{"id": i, "props": {}} for i in ids]
            if patch:
                found = await run(self.q.move_metadata(), params)
                rows = [{"id": r["id"], "props": props} for r in found
                        if (props := patch_props(r["metadata"], patch, r["id"])) is not None]
                if not rows:
                    return 0
            moving = {**params, "ids": [r["id"] for r in rows], "rows": rows}
            found = await run_statements(run, [(q, moving) for q in statements])
            return int(found[0]["n"]) if found else 0

        return await self.conn.write_work(f"moving {len(ids)} memories to {to_namespace!r}", work)

    # --- vectors filled behind (vector_fill.py) --------------------------------------------
    async def pending_vectors(
        self, limit: int, skip: Sequence[Any] = (), among: tuple[str, Sequence[str]] | None = None,
    ) -> dict[Any, str | None]:
        """{vector_token: full content} of up to `limit` memories awaiting their vectors,
        oldest first; the token names that version of the content (a fill of a memory
        replaced since changes nothing)."""
        if limit <= 0:
            return {}
        params: dict[str, Any] = {"limit": int(limit), "skip": list(skip)}
        query = self.q.pending_vectors
        if among is not None:
            query = self.q.pending_vectors_among
            params |= {"namespace": among[0], "ids": list(among[1])}
        rows = await self.conn.read("reading memories without vectors", query, params)
        return {r["token"]: readable_content(r["id"], r["content"] or "", r["codec"],
                                             None if r["blob"] is None else bytes(r["blob"]))
                for r in rows}

    async def fill_vectors(self, items: Sequence[tuple[Any, Any]]) -> list[str]:
        """The vectors of memories `pending_vectors` named, in one transaction, each only on
        the node still awaiting with that token; the ids filled. SIMILAR_TO edges follow."""
        rows = sorted(({"token": str(token), "vector": vector_list(vector, self.dimension, token)}
                       for token, vector in items), key=lambda r: r["token"])
        if not rows:
            return []
        found = await self.conn.write(f"storing {len(rows)} vectors",
                                      [(self.q.fill_vectors, {"rows": rows})])
        vectors = {r["token"]: r["vector"] for r in rows}
        await self.link_similar([{"namespace": r["namespace"], "id": r["id"],
                                  "vector": vectors[r["token"]]} for r in found])
        return [r["id"] for r in found]

    async def pending_figures(self) -> tuple[int, float | None]:
        rows = await self.conn.read("counting memories without vectors",
                                    self.q.pending_figures, {})
        if not rows:
            return 0, None
        oldest = rows[0]["oldest"]
        return int(rows[0]["n"]), None if oldest is None else float(oldest)

    async def record_access(self, ids: Sequence[str], namespace: str, at: float) -> None:
        counts = Counter(ids)
        if counts:
            rows = [{"id": i, "n": n} for i, n in counts.items()]
            await self.conn.write("recording accesses", [(self.q.record_access, {
                "rows": rows, "namespace": namespace, "at": float(at)})])

    async def access_stats(self, ids: Sequence[str], namespace: str) -> dict[str, AccessStats]:
        if not ids:
            return {}
        rows = await self.conn.read("reading access statistics", self.q.access_stats,
                                    {"ids": list(dict.fromkeys(ids)), "namespace": namespace})
        found = {r["id"]: AccessStats(int(r["n"]), r["at"]) for r in rows}
        return {i: found[i] for i in ids if i in found}

    # --- reads ---------------------------------------------------------------------------
    async def get(
        self, ids: Sequence[str], namespace: str = DEFAULT_NAMESPACE
    ) -> list[MemoryRecord]:
        if not ids:
            return []
        rows = await self.conn.read("reading memories", self.q.get(),
                                    {"ids": list(ids), "namespace": namespace})
        found = {r.id: r for r in decoded(rows, lambda r: record_from_props(r["m"]))}
        return [found[i] for i in ids if i in found]

    async def _total(self) -> int:
        rows = await self.conn.read("counting memories", self.q.total, {})
        return int(rows[0]["n"]) if rows else 0

    def _candidates(
        self, found: list[Any], query: np.ndarray | None, k: int
    ) -> list[Candidate]:
        out = []
        for record, hit in decoded(found, lambda hit: (record_from_props(hit["m"]), hit)):
            score = float(hit["score"])
            if query is not None and record.vector is not None:
                norm = float(np.linalg.norm(record.vector)) or 1.0
                score = float(np.dot(query, record.vector)) / norm
            out.append(Candidate(record, score))
        if query is not None:
            out.sort(key=lambda c: -c.score)
        return out[:k]

    async def _overfetch(
        self, what: str, query: str, params: dict[str, Any], k: int, cap: int
    ) -> tuple[list[Any], bool]:
        """The best k index hits passing the filter, fetching OVERFETCH x more hits while the
        filter leaves fewer than k and the index has more, up to `cap` hits; and whether
        that is the full answer (False: `cap` hits were not enough)."""
        fetch = max(k * OVERFETCH, k + 16)
        while True:
            rows = await self.conn.read(what, query, {**params, "fetch": fetch})
            raw, found = (int(rows[0]["raw"]), list(rows[0]["found"])) if rows else (0, [])
            if len(found) >= k or raw < fetch or fetch >= cap:
                return found, len(found) >= k or raw < fetch
            fetch = min(fetch * OVERFETCH, cap)

    async def vector_search(self, vector: np.ndarray, k: int, flt: MemoryFilter) -> list[Candidate]:
        query = np.asarray(vector, dtype=np.float32)
        if query.shape != (self.dimension,) or not np.all(np.isfinite(query)):
            raise MemoryInputError(
                f"query vector of shape {query.shape}: expected ({self.dimension},) finite floats"
            )
        if k <= 0:
            return []
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            raise MemoryInputError("query vector has zero norm: cosine similarity is undefined")
        query = query / norm
        where, params = filter_clause(flt)
        params = {**params, "vector": query.tolist(), "k": k, "index": self.q.vector_index}
        found, complete = [], False
        if not (is_selective(flt) and await self._count_upto(flt, EXACT_BELOW + 1) <= EXACT_BELOW):
            found, complete = await self._overfetch(
                "vector search", self.q.vector_ann(where), params, k, max(MAX_ANN_FETCH, k)
            )
        if not complete:
            rows = await self.conn.read("exact vector search", self.q.vector_exact(where), params)
            found = [{"m": r["m"], "score": r["score"]} for r in rows]
        return self._candidates(found, query, k)

    async def text_search(self, query: str, k: int, flt: MemoryFilter) -> list[Candidate]:
        lucene = fulltext_query(query)
        if not lucene or k <= 0:
            return []
        where, params = filter_clause(flt)
        params = {**params, "query": lucene, "k": k, "index": self.q.fulltext_index}
        cap = max(MAX_TEXT_FETCH, k)
        # past `cap` hits, the best k of those is the answer
        found, _ = await self._overfetch("text search", self.q.text(where), params, k, cap)
        return self._candidates(found, None, k)

    async def scan(
        self, flt: MemoryFilter, limit: int | None = None, offset: int = 0
    ) -> list[MemoryRecord]:
        if limit is not None and limit <= 0:
            return []
        where, params = filter_clause(flt)
        params = {**params, "offset": max(int(offset), 0)}
        if limit is not None:
            params["limit"] = int(limit)
        rows = await self.conn.read(
            "scanning memories", self.q.scan(where, limit is not None), params
        )
        return decoded(rows, lambda r: record_from_props(r["m"]))

    async def _count_upto(self, flt: MemoryFilter, bound: int) -> int:
        where, params = filter_clause(flt)
        rows = await self.conn.read(
            "counting memories", self.q.count(where, bounded=True), {**params, "bound": bound}
        )
        return int(rows[0]["n"]) if rows else 0

    async def count(self, flt: MemoryFilter) -> int:
        where, params = filter_clause(flt)
        rows = await self.conn.read("counting memories", self.q.count(where), params)
        return int(rows[0]["n"]) if rows else 0

    async def related_many(
        self, record_ids: Sequence[str], relation_types: Sequence[str] | None, depth: int,
        flt: MemoryFilter | None = None,
    ) -> dict[str, list[RelatedRecord]]:
        """One query for all starts (the base class walks `related` once per id: a round
        trip each, for the ~20 candidates neighbour smoothing asks about). The walk stays
        inside `walk_namespace(flt)` (start included); the rest of `flt` is applied to what
        it returns."""
        starts = list(dict.fromkeys(record_ids))
        if depth <= 0 or not starts:
            return {}
        types = ALL_REL_TYPES if relation_types is None else [rel_type(t) for t in relation_types]
        if not types:
            return {}
        params = {"ids": starts, "types": types, "namespace": walk_namespace(flt)}
        rows = await self.conn.read("walking relations", self.q.related(depth), params)
        out: dict[str, list[RelatedRecord]] = {}
        for record, r in decoded(rows, lambda r: (record_from_props(r["m"]), r)):
            if flt is None or record_matches(record, flt):
                found = RelatedRecord(record, REL_VALUES[r["rel"]], int(r["depth"]))
                out.setdefault(r["start"], []).append(found)
        return out

    async def get_marker(self, namespace: str, name: str) -> float | None:
        # routed to the leader: a marker another machine just set is seen
        rows = await self.conn.read("reading a store marker", self.q.get_marker,
                                    {"namespace": namespace, "name": name}, leader=True)
        value = rows[0]["value"] if rows else None
        return float(value) if isinstance(value, int | float) else None

    async def set_marker(self, namespace: str, name: str, value: float) -> None:
        await self.conn.write("recording a store marker", [(self.q.set_marker, {
            "namespace": namespace, "name": name, "value": float(value)})])

    async def verify(self) -> list[str]:
        """The full check: the memories whose stored properties a read cannot decode
        (decoding.py; reads skip them)."""
        damaged: dict[str, str] = {}
        ns, after = "", ""
        while True:
            rows = await self.conn.read("checking memories", self.q.stored_page,
                                        {"ns": ns, "after": after, "n": VERIFY_PAGE})
            for r in rows:
                blob = None if r["blob"] is None else bytes(r["blob"])
                problem = stored_problem(r["metadata"], r["relations"], r["codec"], blob)
                if problem is not None:
                    damaged[r["id"]] = problem
            if len(rows) < VERIFY_PAGE:
                return damaged_summary(damaged)
            ns, after = rows[-1]["ns"], rows[-1]["id"]

    async def health(self) -> BackendHealth:
        if self.conn.driver is None:
            return BackendHealth(ok=False, backend=self.name, detail=f"{self._where()}: not open")
        try:
            await self.conn.driver.verify_connectivity()
            total = await self._total()
        except MemoryBackendError as exc:
            return BackendHealth(ok=False, backend=self.name, detail=str(exc))
        except Exception as exc:  # the driver's own errors: report, do not raise
            return BackendHealth(
                ok=False, backend=self.name, detail=f"{self._where()}: {type(exc).__name__}: {exc}"
            )
        return BackendHealth(
            ok=True,
            backend=self.name,
            detail=f"{self.conn.server_agent} at {self.settings.uri}, {total} memories",
        )
