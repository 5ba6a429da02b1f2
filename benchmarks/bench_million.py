"""A million memories on one machine (faiss backend, `index_kind=auto`).

- import: `client.import_records` in batches of 5,000 with vectors given (the bulk path
  `deepresearch-memory import` takes when a line carries its vector), then the store reopened
  like a new run would: past `hnsw_above` it builds its HNSW index from the stored vectors.
- retrieve p50/p95 over every memory, top 10, query embedding included (held-out queries,
  each embedded by the call), and resident memory.
- recall@10 of the HNSW index against exact search (numpy over the same vectors) on the
  held-out query vectors.

Texts: the word corpus (word_corpus.py: words of a real 21,700-word vocabulary drawn by a
Zipf law, so a query word's share of the rows is like a real store's). Vectors: embedding a
million texts takes ~1 hour on 2 cores, so they are the real embeddings of `BASE` of the
texts, each reused with Gaussian noise (sigma 0.05 per dimension, then unit length): clusters
of near neighbours like a real store's, where approximate search has to tell close vectors
apart. Queries: held-out questions drawn the same way (a fifth of common words only), each
embedded by the call.

BENCH_MILLION=1000000 (default) sets the size; BENCH_EF_SEARCH another `faiss.hnsw_ef_search`
than the default (its figures are then saved apart and the docs left alone).
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import word_corpus  # noqa: E402
from benchmarks.bench_memory import cached_vectors, pct, rss_mib  # noqa: E402
from benchmarks.report import write_section  # noqa: E402
from benchmarks.results import save_result  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord  # noqa: E402

BASE = 20_000  # distinct real embeddings the vectors are drawn around
BATCH = 5_000
QUERIES = 300
NOISE = 0.05


def vectors_around(base: np.ndarray, start: int, n: int, rng: np.random.Generator) -> np.ndarray:
    picked = base[np.arange(start, start + n) % len(base)]
    out = picked + rng.normal(scale=NOISE, size=picked.shape).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


async def run(size: int) -> tuple[str, dict[str, float]]:
    from tqdm import tqdm

    workdir = ROOT / "outputs" / "bench-million"
    shutil.rmtree(workdir, ignore_errors=True)
    texts = word_corpus.texts(size, seed=31)
    base = cached_vectors(texts[:BASE], "million-words")
    rng = np.random.default_rng(5)
    faiss_settings: dict[str, Any] = {"path": str(workdir)}
    if os.environ.get("BENCH_EF_SEARCH"):
        faiss_settings["hnsw_ef_search"] = int(os.environ["BENCH_EF_SEARCH"])
    config = MemoryConfig(backend="faiss", faiss=faiss_settings)
    gc.collect()
    before = rss_mib()
    client = MemorySystemClient(config, session_id="million")
    await client.open()
    now = time.time()
    kept = np.empty((size, base.shape[1]), dtype=np.float32)  # for the exact search
    started = time.perf_counter()
    with tqdm(total=size, unit="mem", desc="import") as bar:
        for start in range(0, size, BATCH):
            n = min(BATCH, size - start)
            vectors = vectors_around(base, start, n, rng)
            kept[start:start + n] = vectors
            await client.import_records([
                MemoryRecord(id=f"m{start + i}", session_id=f"s{(start + i) % 1000}",
                             memory_type="note", content=texts[start + i],
                             created_at=now - size + start + i, vector=vectors[i])
                for i in range(n)])
            bar.update(n)
    imported = time.perf_counter() - started
    started = time.perf_counter()
    await client.close()
    closed = time.perf_counter() - started
    client = MemorySystemClient(config, session_id="million")
    started = time.perf_counter()
    await client.open()  # index_kind=auto: past hnsw_above, the HNSW index is built here
    opened = time.perf_counter() - started
    health = await client.health()
    queries = word_corpus.queries(QUERIES, seed=7)  # held out: none is stored
    await client.retrieve(query="warm up", all_sessions=True)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        await client.retrieve(query=q, top_k=10, all_sessions=True)
        times.append(time.perf_counter() - t0)
    after = rss_mib()
    from benchmarks.profile_retrieve import profile

    # other held-out queries (the same ones again would be hot-tier answers), each step timed
    steps = await profile(client, word_corpus.queries(QUERIES, seed=8))
    query_vectors = client.embedder.embed(queries)
    hits = 0
    backend = client.backend
    for qv in query_vectors:
        exact = np.argpartition(-(kept @ qv), 10)[:10]
        found = await backend.vector_search(qv, 10, MemoryFilter(namespaces=(client.namespace,)))
        hits += len({f"m{i}" for i in exact} & {c.record.id for c in found})
    recall = hits / (10 * len(queries))
    await client.close()
    shutil.rmtree(workdir, ignore_errors=True)
    figures = {
        "size": size, "import_s": imported, "import_per_s": size / imported, "close_s": closed,
        "open_s": opened, "p50_ms": pct(times, 50), "p95_ms": pct(times, 95), "recall10": recall,
        "rss_mib": after["total"] - before["total"],
    }
    lines = [
        f"{size:,} memories in one faiss store (`index_kind=auto`, `hnsw_above` "
        f"{config.faiss.hnsw_above:,}; HNSW M {config.faiss.hnsw_m}, efConstruction "
        f"{config.faiss.hnsw_ef_construction}, efSearch {config.faiss.hnsw_ef_search}). "
        f"Vectors: the real embeddings of {BASE:,} texts, each reused with noise (sigma {NOISE}); "
        f"texts and held-out queries: the word corpus (Zipf law over a real vocabulary). Store after reopening: {health.detail}.",
        "",
        "| figure | value | target |",
        "|---|---|---|",
        f"| import, vectors given (`import_records`, batches of {BATCH:,}) | {imported:.0f} s "
        f"({figures['import_per_s']:,.0f} memories/s) | |",
        f"| first close (index file written, SQLite log checkpointed) | {closed:.0f} s | |",
        f"| reopen past `hnsw_above` (HNSW built from the stored vectors) | {opened:.0f} s | |",
        f"| retrieve over every memory, top 10, query embedding included ({len(queries)} held-out "
        f"queries): p50 / p95 | {figures['p50_ms']:.1f} / {figures['p95_ms']:.1f} ms | p95 <= 50 |",
        f"| recall@10 of the HNSW index against exact search | {recall:.3f} | >= 0.95 |",
        f"| resident memory growth (store opened and searched) | {figures['rss_mib']:,.0f} MiB | |",
        "",
        f"Where a retrieve's time goes ({len(queries)} other held-out queries, each step timed where "
        "it runs; `python -m benchmarks.profile_retrieve` does the same on a store of any size). "
        "The backend's searches run on its worker threads, the lexical one beside the query's "
        "embedding:",
        "",
        *steps,
    ]
    return "\n".join(lines), figures


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    size = int(os.environ.get("BENCH_MILLION", "1000000"))
    body, figures = asyncio.run(run(size))
    print(body)
    if os.environ.get("BENCH_EF_SEARCH"):
        save_result(f"million_ef{os.environ['BENCH_EF_SEARCH']}", figures)
        return
    save_result("million", figures)
    path = write_section("million", "A million memories on one machine",
                         "python -m benchmarks.bench_million", body)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
