"""Neo4j backend benchmark, against the raw driver on the same server in the same run.

- store: Neo4jBackend.upsert of 10k records of the word corpus (word_corpus.py), vectors
  precomputed (batches of memory.neo4j.batch_size)
  vs a raw `UNWIND ... CREATE ... db.create.setNodeVectorProperty` of the same rows.
- retrieve at 10k memories, top 5: `backend.vector_search` (query vector given) vs the raw
  `db.index.vector.queryNodes`, and `client.retrieve` (query embedding, hybrid candidates,
  ranking) vs raw encode + raw queryNodes. Raw and ours are interleaved per query.

The server: NEO4J_URI if set (NEO4J_USERNAME / NEO4J_PASSWORD), else the embedded test server
of tests/neo4j_support.py. BENCH_NEO4J_SIZE changes the 10k.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import word_corpus  # noqa: E402
from benchmarks.bench_memory import pct, raw_model, word_store  # noqa: E402
from benchmarks.neo4j_server import neo4j_auth, neo4j_server  # noqa: E402
from benchmarks.report import write_section  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord  # noqa: E402
from DeepResearch.src.memory.backends.neo4j_store import Neo4jBackend  # noqa: E402

RAW_LABEL = "RawBench"
RAW_INDEX = "raw_bench_embedding"
RAW_WRITE = (
    f"UNWIND $rows AS r CREATE (m:{RAW_LABEL} {{id: r.id, content: r.content}}) "
    "WITH m, r CALL db.create.setNodeVectorProperty(m, 'embedding', r.vector)"
)
RAW_QUERY = (
    "CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node, score "
    "RETURN node.id AS id, node.content AS content, score"
)


async def clear(driver: object) -> None:
    """Empty the database (CALL ... IN TRANSACTIONS needs an auto-commit transaction)."""
    async with driver.session() as session:  # type: ignore[attr-defined]
        result = await session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS")
        await result.consume()


async def run(uri: str, auth: tuple[str, str] | None, size: int) -> str:
    from neo4j import AsyncGraphDatabase, RoutingControl

    texts, vectors = word_store(size)  # the memory benchmark's store (and its embedding cache)
    model = raw_model()
    queries = word_corpus.queries(100, seed=3)
    config = MemoryConfig(
        backend="neo4j",
        neo4j={"uri": uri, "password": auth[1] if auth else None},
        retrieval={"min_similarity": -1.0},
        # like raw: the ratio measures the memory layer, not the embedding runtime
        vector_store={"embedding_runtime": "sentence-transformers"},
    )
    settings = config.neo4j
    driver = AsyncGraphDatabase.driver(uri, auth=auth)
    await clear(driver)
    await driver.execute_query(
        f"CREATE VECTOR INDEX {RAW_INDEX} IF NOT EXISTS FOR (m:{RAW_LABEL}) ON m.embedding "
        "OPTIONS {indexConfig: {`vector.dimensions`: $d, `vector.similarity_function`: 'cosine'}}",
        d=int(vectors.shape[1]),
    )
    backend = Neo4jBackend(settings, dimension=int(vectors.shape[1]), metric="cosine")
    await backend.open()

    now = time.time()
    records = [
        MemoryRecord(id=f"m{i}", session_id="bench", memory_type="note", content=text,
                     created_at=now - size + i, metadata={"i": i}, vector=vec)
        for i, (text, vec) in enumerate(zip(texts, vectors, strict=True))
    ]
    rows = [{"id": r.id, "content": r.content, "vector": r.vector.tolist()} for r in records]
    batch = settings.batch_size
    t0 = time.perf_counter()
    for start in range(0, size, batch):
        await driver.execute_query(RAW_WRITE, rows=rows[start : start + batch])
    raw_store = size / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    await backend.upsert(records)
    ours_store = size / (time.perf_counter() - t0)
    await driver.execute_query("CALL db.awaitIndexes(600)")

    client = MemorySystemClient(config, session_id="bench")
    await client.open()
    await client.retrieve(query="warm up query")
    qvecs = model.encode(queries, convert_to_numpy=True, normalize_embeddings=True)
    flt = MemoryFilter(live_at=time.time())
    times: dict[str, list[float]] = {"raw": [], "backend": [], "raw_e2e": [], "client": []}
    for q, qv in zip(queries, qvecs, strict=True):
        params = {"index": RAW_INDEX, "k": 5, "vector": qv.tolist()}
        t0 = time.perf_counter()
        await driver.execute_query(RAW_QUERY, params, routing_=RoutingControl.READ)
        times["raw"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await backend.vector_search(qv, 5, flt)
        times["backend"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        v = model.encode([q + " "], convert_to_numpy=True, normalize_embeddings=True)[0]
        await driver.execute_query(RAW_QUERY, {**params, "vector": v.tolist()}, routing_=RoutingControl.READ)  # fmt: skip
        times["raw_e2e"].append(time.perf_counter() - t0)
        client.embedder.clear_cache()  # the timed retrieve embeds its query, like raw
        t0 = time.perf_counter()
        await client.retrieve(query=q, top_k=5)
        times["client"].append(time.perf_counter() - t0)
    await client.close()
    await backend.close()
    await clear(driver)
    await driver.execute_query(f"DROP INDEX {RAW_INDEX} IF EXISTS")
    server = (await driver.get_server_info()).agent
    await driver.close()

    p = {name: (pct(ts, 50), pct(ts, 95)) for name, ts in times.items()}

    def ratio(ours: str, raw: str) -> str:
        return f"**{p[ours][0] / p[raw][0]:.2f} / {p[ours][1] / p[raw][1]:.2f}**"

    lines = [
        f"Server: {server} on 127.0.0.1 (embedded test server: heap 1 GiB, page cache 64 MiB, "
        "unless NEO4J_URI named another). Default memory.neo4j config: batch 500, cosine vector "
        "index (HNSW, Neo4j defaults), ANN over-fetch x4 then filters, exact cosine re-score.",
        "",
        f"| store {size:,} memories (vectors precomputed) | memories/s |",
        "|---|---|",
        f"| raw driver: `UNWIND ... CREATE ... setNodeVectorProperty`, batch {batch} | {raw_store:.0f} |",
        f"| `Neo4jBackend.upsert` (MERGE, metadata, relations, FOLLOWS-ready) | {ours_store:.0f} |",
        f"| **ratio** | **{ours_store / raw_store:.2f}** |",
        "",
        f"| retrieve at {size:,} memories, top 5 ({len(queries)} queries) | p50 ms | p95 ms | ratio p50 / p95 |",
        "|---|---|---|---|",
        f"| raw `db.index.vector.queryNodes` (driver, vector given) | {p['raw'][0]:.1f} | {p['raw'][1]:.1f} | |",
        f"| `Neo4jBackend.vector_search` (vector given, TTL filter) | {p['backend'][0]:.1f} | {p['backend'][1]:.1f} | {ratio('backend', 'raw')} |",
        f"| raw encode + raw `queryNodes` | {p['raw_e2e'][0]:.1f} | {p['raw_e2e'][1]:.1f} | |",
        f"| `client.retrieve` (embedding on sentence-transformers like raw, hybrid dense + full-text, ranking) | {p['client'][0]:.1f} | {p['client'][1]:.1f} | {ratio('client', 'raw_e2e')} |",
    ]  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    size = int(os.environ.get("BENCH_NEO4J_SIZE", "10000"))
    with neo4j_server() as uri:
        body = asyncio.run(run(uri, neo4j_auth(), size))
    path = write_section(
        "neo4j", "Neo4j backend", "make bench  (python benchmarks/bench_neo4j.py)", body
    )
    print(body)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
