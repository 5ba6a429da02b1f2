"""Where a retrieve's time goes on a large store, step by step (faiss, or Neo4j with
`--backend neo4j`: the test suite's server, or NEO4J_URI).

Imports `--size` memories of the word corpus (word_corpus.py) with vectors given (the real
embeddings of `--base` texts, each reused with noise, as bench_million does), reopens the
store, and times `--queries` held-out retrieves over every session (top 10, query embedding
included). Each step is timed where it runs: the query's embedding, the backend's dense and
lexical searches (on faiss the lexical one split into choosing its terms, the FTS5 match and
reading its records), every other backend read, and each ranking step. Medians and p95 in ms.

    python -m benchmarks.profile_retrieve --size 100000
    python -m benchmarks.profile_retrieve --size 1000000 --index-kind hnsw --keep
    python -m benchmarks.profile_retrieve --backend neo4j --size 10000
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import word_corpus  # noqa: E402
from benchmarks.bench_memory import cached_vectors  # noqa: E402
from benchmarks.bench_million import vectors_around  # noqa: E402
from benchmarks.neo4j_server import neo4j_auth, neo4j_server  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402
from DeepResearch.src.memory.backends import MemoryRecord  # noqa: E402
from DeepResearch.src.memory.backends.embedded import records as records_module  # noqa: E402

TIMES: dict[str, list[float]] = defaultdict(list)


def timed_sync(name: str, fn):  # type: ignore[no-untyped-def]
    @functools.wraps(fn)
    def inner(*args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[name].append(time.perf_counter() - t0)
    return inner


def timed_async(name: str, fn):  # type: ignore[no-untyped-def]
    @functools.wraps(fn)
    async def inner(*args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            TIMES[name].append(time.perf_counter() - t0)
    return inner


def instrument(client: MemorySystemClient) -> Callable[[], None]:
    """Time each step of `client`'s retrieves into TIMES; returns what undoes it."""
    undo: list[tuple[object, str, object]] = []

    def wrap(owner: object, name: str, label: str, make) -> None:  # type: ignore[no-untyped-def]
        undo.append((owner, name, getattr(owner, name)))
        setattr(owner, name, make(label, getattr(owner, name)))

    backend = client.backend
    for name in ("vector_search", "text_search", "session_neighbours", "related_many", "get",
                 "record_access"):
        wrap(backend, name, f"backend.{name} (async, incl. waiting)", timed_async)
    if client.config.backend == "faiss":  # inside the embedded store's SQLite reads
        records = backend.require()
        wrap(records_module, "match_expression", "  lexical: choose terms (fts_vocab)", timed_sync)
        for name in ("text_search", "by_seqs", "matching_seqs", "seqs_matching"):
            wrap(records, name, f"  records.{name}", timed_sync)
    wrap(client.embedder, "embed_query", "query embedding", timed_sync)
    for step in client.steps:
        wrap(step.__class__, "__call__", f"step {step.name}", timed_async)

    def restore() -> None:
        for owner, name, original in reversed(undo):
            setattr(owner, name, original)
    return restore


async def profile(client: MemorySystemClient, queries: list[str]) -> list[str]:
    """A markdown table: each step's calls, p50, p95 and mean time per retrieve over
    `queries` (retrieves over every session, top 10, each embedding its query; queries the
    client was asked before would be answered by its hot tier)."""
    TIMES.clear()
    restore = instrument(client)
    total = []
    try:
        for q in queries:
            client.embedder.clear_cache()
            t0 = time.perf_counter()
            await client.retrieve(query=q, top_k=10, all_sessions=True)
            total.append(time.perf_counter() - t0)
    finally:
        restore()
    n = len(total)
    lines = ["| step | calls per retrieve | p50 ms | p95 ms | mean ms per retrieve |",
             "|---|---:|---:|---:|---:|"]
    for name, values in [("retrieve (whole call, instrumented)", total), *sorted(TIMES.items())]:
        ms = np.array(values) * 1000
        lines.append(f"| {name.strip()} | {len(values) / n:.1f} | {np.percentile(ms, 50):.2f} | "
                     f"{np.percentile(ms, 95):.2f} | {ms.sum() / n:.2f} |")
    return lines


async def build(config: MemoryConfig, path: Path, size: int, base_n: int) -> MemoryConfig:
    texts = word_corpus.texts(size, seed=31)
    # bench_million's base vectors (texts(n) is not a prefix of texts(m > n): draw a million)
    base = cached_vectors(word_corpus.texts(1_000_000, seed=31)[:base_n], "million-words")
    rng = np.random.default_rng(5)
    if config.backend == "faiss" and (path / "memory.sqlite3").exists():
        return config
    client = MemorySystemClient(config, session_id="profile")
    await client.open()
    now = time.time()
    for start in range(0, size, 5000):
        n = min(5000, size - start)
        vectors = vectors_around(base, start, n, rng)
        await client.import_records([
            MemoryRecord(id=f"m{start + i}", session_id=f"s{(start + i) % 1000}",
                         memory_type="note", content=texts[start + i],
                         created_at=now - size + start + i, vector=vectors[i])
            for i in range(n)])
    await client.close()
    return config


async def run(args: argparse.Namespace, neo4j_uri: str | None) -> None:
    path = ROOT / "outputs" / f"profile-{args.size}-{args.index_kind}"
    if neo4j_uri:
        auth = neo4j_auth()
        config = MemoryConfig(backend="neo4j", neo4j={"uri": neo4j_uri,
                                                      "password": auth[1] if auth else None})
    else:
        config = MemoryConfig(backend="faiss",
                              faiss={"path": str(path), "index_kind": args.index_kind})
        if not args.keep:
            shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    await build(config, path, args.size, args.base)
    print(f"store ready in {time.perf_counter() - t0:.0f} s", flush=True)
    if args.max_postings:
        config.retrieval.lexical_max_postings = args.max_postings
    client = MemorySystemClient(config, session_id="profile")
    t0 = time.perf_counter()
    await client.open()
    print(f"opened in {time.perf_counter() - t0:.1f} s", flush=True)
    queries = word_corpus.queries(args.queries + 10, seed=7)
    for q in queries[:10]:
        await client.retrieve(query=q, top_k=10, all_sessions=True)
    lines = await profile(client, queries[10:])
    await client.close()
    if not args.keep:
        shutil.rmtree(path, ignore_errors=True)
    where = "neo4j" if neo4j_uri else f"faiss, {config.faiss.index_kind} index"
    print(f"\n{args.size:,} memories ({where}), {len(queries) - 10} retrieves, "
          f"lexical_max_postings {config.retrieval.lexical_max_postings:,}")
    print("\n".join(lines))


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--base", type=int, default=20_000, help="distinct real embeddings")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--index-kind", default="auto", choices=["auto", "flat", "hnsw"])
    parser.add_argument("--max-postings", type=int, default=0, help="0: the default")
    parser.add_argument("--keep", action="store_true", help="keep (and reuse) the faiss store")
    parser.add_argument("--backend", default="faiss", choices=["faiss", "neo4j"])
    args = parser.parse_args()
    if args.backend == "neo4j":
        with neo4j_server() as uri:
            asyncio.run(run(args, uri))
    else:
        asyncio.run(run(args, None))


if __name__ == "__main__":
    main()
