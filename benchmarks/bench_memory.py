"""Memory core benchmark: store throughput and retrieve latency against the raw libraries.

- store: MemorySystemClient.store_many (faiss backend, embedding included) vs raw
  SentenceTransformer.encode of the same texts -> ratio (target >= 0.85).
- retrieve at 10k and 100k memories of the word corpus (word_corpus.py: Zipf-distributed words
  of a real vocabulary, held-out questions, a fifth of common words only): client.retrieve (query embedding, hybrid candidates,
  ranking, SQLite reads) vs raw encode of the query + raw FAISS flat search -> p50/p95 ratio
  (target <= 1.3); also a selective session filter (600 memories among all).
- resident memory per 100k memories (RSS growth when the store is opened and searched).

Corpus embeddings are cached in outputs/bench-cache. BENCH_SIZES=10000,100000 (default),
BENCH_QUERIES=300 (default: retrieve queries per size).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import word_corpus  # noqa: E402
from benchmarks.report import write_section  # noqa: E402
from benchmarks.results import save_result  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402
from DeepResearch.src.memory.backends import MemoryRecord  # noqa: E402
from DeepResearch.src.memory.embeddings import (  # noqa: E402
    DEFAULT_MODEL,
    get_embedder,
    load_sentence_transformer,
    resolve_model_path,
)

CACHE = ROOT / "outputs" / "bench-cache"
TOOLS = ["STAR", "HISAT2", "BWA-MEM", "Bowtie2", "Salmon", "kallisto", "DESeq2", "edgeR",
         "samtools", "GATK", "FastQC", "Trimmomatic", "MACS2", "featureCounts", "BLAST", "MAFFT"]
ORGANISMS = ["human", "mouse", "zebrafish", "yeast", "E. coli", "Arabidopsis", "rat", "fruit fly"]
ACTIONS = ["aligned {n} million paired-end reads", "quantified {n} thousand transcripts",
           "called {n} variants on chromosome {c}", "trimmed adapters from {n} samples",
           "sorted and indexed a {n} GB BAM file", "found {n} differentially expressed genes",
           "built an index for the {o} genome in {n} minutes", "ran quality control on {n} libraries"]
OUTCOMES = ["it finished without errors", "it ran out of memory and was restarted with more RAM",
            "the mapping rate was {p}%", "a version mismatch caused a crash", "results matched the "
            "published ones", "the reviewer asked for a replicate", "the job timed out after {n} hours",
            "duplicates were {p}% of reads"]
EXTRAS = ["Plan: next compare with {t}.", "Note: parameters --threads {n} --sjdbOverhang 100.",
          "Decision: keep the {o} annotation from Ensembl release {n}.", "Question from the user "
          "about batch effects.", "", "", "Observed GC bias in {p}% of samples."]


def corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        t, o = rng.choice(TOOLS), rng.choice(ORGANISMS)
        fill = {"n": rng.randint(2, 400), "c": rng.randint(1, 22), "o": o, "p": rng.randint(1, 99),
                "t": rng.choice(TOOLS)}
        text = (f"Step {i % 97}: {t} {rng.choice(ACTIONS).format(**fill)} for the {o} study; "
                f"{rng.choice(OUTCOMES).format(**fill)}. {rng.choice(EXTRAS).format(**fill)}")
        out.append(text.strip())
    return out


def cached_vectors(texts: list[str], tag: str) -> np.ndarray:
    CACHE.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{tag}-{len(texts)}-{key}.npy"
    if path.exists():
        return np.load(path)
    print(f"  embedding {len(texts)} corpus texts once (cached in {path})", flush=True)
    vectors = get_embedder().embed(texts)
    np.save(path, vectors)
    return vectors


def word_store(size: int) -> tuple[list[str], np.ndarray]:
    """The large-store benchmarks' stored texts (the word corpus, seed 11) and their real
    embeddings (computed once per size, cached)."""
    texts = word_corpus.texts(size, seed=11)
    return texts, cached_vectors(texts, "words")


async def import_word_store(client: MemorySystemClient, size: int, session: Callable[[int], str] | None = None
                            ) -> None:
    """`size` memories of the word store into `client`, vectors given, in batches of 5,000;
    memory i belongs to session `session(i)` (default: 50 earlier runs' sessions)."""
    texts, vectors = word_store(size)
    now = time.time()
    for start in range(0, size, 5000):
        await client.import_records([
            MemoryRecord(id=f"m{i}", session_id=session(i) if session else f"run-{i % 50}",
                         memory_type="note", content=texts[i], created_at=now - size + i,
                         metadata={"i": i}, vector=vectors[i])
            for i in range(start, min(size, start + 5000))])


@functools.cache
def raw_model():  # type: ignore[no-untyped-def]
    """The raw-library baseline: sentence-transformers' SentenceTransformer for the same
    model folder (the client embeds with its own runtime, onnx fp32 by default)."""
    return load_sentence_transformer(resolve_model_path(DEFAULT_MODEL))


def rss_mib() -> dict[str, float]:
    """Resident memory in MiB: `total`, `private` (anonymous: the process's own) and `mapped`
    (file pages it maps; page cache that other processes share and the kernel can drop)."""
    fields = {"VmRSS:": "total", "RssAnon:": "private", "RssFile:": "mapped"}
    out = dict.fromkeys(fields.values(), float("nan"))
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":", 1)[0] + ":"
        if key in fields:
            out[fields[key]] = int(line.split()[1]) / 1024
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000.0, q))


async def bench_store(workdir: Path, n: int = 512, rounds: int = 6) -> dict[str, float]:
    """Alternate raw encode, the client's own embedder and store_many rounds on fresh texts,
    in an order that rotates per round; median rates. (A fixed order charged whatever ran
    after raw for torch's OpenMP threads, which spin on after an encode on 2 cores.)"""
    model = raw_model()
    model.encode(corpus(64, seed=1), batch_size=64)  # warm
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(workdir / "store")}),
                                session_id="bench-store")
    await client.open()
    raw_rates, runtime_rates, our_rates = [], [], []
    async def raw(texts: list[str]) -> None:
        model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)

    async def runtime(texts: list[str]) -> None:
        client.embedder.embed([t + " (runtime)" for t in texts])

    async def ours(texts: list[str]) -> None:
        await client.store_many([{"content": t + " (stored)", "metadata": {"i": i}}
                                 for i, t in enumerate(texts)])

    timed = [(raw, raw_rates), (runtime, runtime_rates), (ours, our_rates)]
    for r in range(rounds):
        texts = corpus(n, seed=100 + r)
        for call, rates in timed[r % 3:] + timed[:r % 3]:
            t0 = time.perf_counter()
            await call(texts)
            rates.append(n / (time.perf_counter() - t0))
    await client.close()
    raw, ours = float(np.median(raw_rates)), float(np.median(our_rates))
    runtime = float(np.median(runtime_rates))
    return {"raw": raw, "runtime": runtime, "runtime_name": client.embedder.model.name,
            "ours": ours, "ratio": ours / raw, "n": n * rounds}


def _config(path: Path, runtime: str) -> MemoryConfig:
    return MemoryConfig(backend="faiss", faiss={"path": str(path)},
                        vector_store={"embedding_runtime": runtime})


async def bench_retrieve(workdir: Path, size: int, queries: list[str]) -> dict[str, float]:
    import faiss

    vectors = word_store(size)[1]
    path = workdir / f"retrieve-{size}"
    shutil.rmtree(path, ignore_errors=True)
    get_embedder(DEFAULT_MODEL, "sentence-transformers").embed(["loaded before RSS is read"])
    gc.collect()
    before = rss_mib()
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)}), session_id="bench")
    await client.open()
    step = max(1, size // 600)
    await import_word_store(client, size, lambda i: "bench" if i % step == 0 else f"other-{i % 50}")
    started = time.perf_counter()
    await client.close()  # writes the index file (none yet) and checkpoints SQLite's log
    closed = time.perf_counter() - started
    # The ratios compare like with like: the client embeds on sentence-transformers too, so
    # they measure the memory layer, not the embedding runtime. (Interleaving two runtimes
    # makes each wait for the other's spinning BLAS/OpenMP threads on 2 cores.) The default
    # runtime (onnx fp32) is timed afterwards, in a block of its own.
    client = MemorySystemClient(_config(path, "sentence-transformers"), session_id="bench")
    started = time.perf_counter()  # reopened like a new run would: reads the index file
    await client.open()
    opened = time.perf_counter() - started
    await client.retrieve(query="warm up query", all_sessions=True)
    after = rss_mib()
    resident = {kind: after[kind] - before[kind] for kind in after}

    model = raw_model()
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    raw_t, ours_t, session_t = [], [], []

    async def raw(q: str) -> None:
        qv = model.encode([q], convert_to_numpy=True, normalize_embeddings=True)
        index.search(np.ascontiguousarray(qv, dtype=np.float32), 5)

    async def ours_all(q: str) -> None:
        client.embedder.clear_cache()  # every timed retrieve embeds its query, like raw
        await client.retrieve(query=q, top_k=5, all_sessions=True)

    async def ours_session(q: str) -> None:
        client.embedder.clear_cache()
        # own session only (~600 of size): named, since a retrieve without a session reads
        # every session, and would repeat ours_all's question (a hot-tier answer)
        await client.retrieve(query=q, top_k=5, session_id="bench")

    # Interleaved, so load from other processes hits all three alike, and in an order that
    # rotates per query: raw FAISS leaves its two OpenMP threads spinning for a few ms after
    # a search, which slows whatever runs next on 2 cores (~3.5 ms on a 10k retrieve); a
    # fixed order would charge that to the call after raw every time.
    timed = [(raw, raw_t), (ours_all, ours_t), (ours_session, session_t)]
    for i, q in enumerate(queries):
        for call, times in timed[i % 3:] + timed[:i % 3]:
            t0 = time.perf_counter()
            await call(q)
            times.append(time.perf_counter() - t0)
    await client.close()
    time.sleep(0.5)  # let torch's OpenMP threads stop spinning
    client = MemorySystemClient(_config(path, "auto"), session_id="bench")
    await client.open()
    await client.retrieve(query="warm up query", all_sessions=True)
    default_t = []
    for q in queries:
        client.embedder.clear_cache()
        t0 = time.perf_counter()
        await client.retrieve(query=q, top_k=5, all_sessions=True)
        default_t.append(time.perf_counter() - t0)
    default_runtime = client.embedder.model.name
    in_session = (await client.stats()).in_session
    await client.close()
    index.reset()  # frees its vectors before the next size
    return {
        "size": size, "raw_p50": pct(raw_t, 50), "raw_p95": pct(raw_t, 95),
        "ours_p50": pct(ours_t, 50), "ours_p95": pct(ours_t, 95),
        "sess_p50": pct(session_t, 50), "sess_p95": pct(session_t, 95),
        "in_session": in_session, "rss": resident, "open_ms": opened * 1000, "close_ms": closed * 1000,
        "default_p50": pct(default_t, 50), "default_p95": pct(default_t, 95),
        "default_runtime": default_runtime,
    }


async def bench_retrieve_cpu(workdir: Path, calls: int = 500, per_session: int = 1000) -> dict[str, float]:
    """Process CPU per retrieve (every thread: the query embedding runs on a worker) in a
    session of `per_session` memories, against the same runtime's raw query embedding plus a
    raw FAISS flat search over the same vectors: what the memory layer adds to one search."""
    import faiss

    texts = corpus(per_session, seed=5)
    path = workdir / "retrieve-cpu"
    shutil.rmtree(path, ignore_errors=True)
    client = MemorySystemClient(_config(path, "auto"), session_id="cpu")
    await client.open()
    await client.store_many([{"content": t} for t in texts])
    await client.flush()
    runtime = client.embedder.model
    vectors = client.embedder.embed(texts)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    queries = corpus(2 * calls + 20, seed=23)
    for q in queries[:20]:  # warm-up: both paths loaded
        await client.retrieve(query=q)
        index.search(runtime.encode([q], 1), 10)
    ours, raw = 0.0, 0.0
    # Alternating blocks of 50 calls, so load from other processes hits both alike.
    for start in range(20, 20 + 2 * calls, 100):
        block = queries[start:start + 50]
        t0 = time.process_time()
        for q in block:
            await client.retrieve(query=q)
        ours += time.process_time() - t0
        t0 = time.process_time()
        for q in queries[start + 50:start + 100]:
            index.search(runtime.encode([q], 1), 10)
        raw += time.process_time() - t0
    await client.close()
    return {"calls": calls, "memories": per_session, "runtime": runtime.name,
            "ours_ms": ours / calls * 1000, "raw_ms": raw / calls * 1000, "ratio": ours / raw}


async def run() -> str:
    import faiss

    sizes = [int(s) for s in os.environ.get("BENCH_SIZES", "10000,100000").split(",")]
    workdir = ROOT / "outputs" / "bench-memory"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    get_embedder().embed(["load the model"])
    queries = word_corpus.queries(int(os.environ.get("BENCH_QUERIES", "300")), seed=3)
    store = await bench_store(workdir)
    print(f"  store: {store}", flush=True)
    cpu = await bench_retrieve_cpu(workdir)
    print(f"  retrieve CPU: {cpu}", flush=True)
    rows = []
    for size in sizes:
        r = await bench_retrieve(workdir, size, queries)
        print(f"  retrieve: {r}", flush=True)
        rows.append(r)
    shutil.rmtree(workdir, ignore_errors=True)
    save_result("memory", {
        "store_ratio": store["ratio"],
        "retrieve_cpu_ratio": cpu["ratio"],
        "retrieve": {str(r["size"]): {"p50_ratio": r["ours_p50"] / r["raw_p50"],
                                      "p95_ratio": r["ours_p95"] / r["raw_p95"],
                                      "p50_ms": r["default_p50"]} for r in rows},
    })
    defaults = MemoryConfig().retrieval
    lines = [
        "Raw and client calls are interleaved in one process, in an order that rotates per "
        "query (raw FAISS's OpenMP threads spin for a few ms after a search and slow whatever "
        "runs next on 2 cores); raw FAISS searches with its "
        f"default OpenMP threads ({faiss.omp_get_max_threads()}). The backend searches a FAISS "
        "IndexIDMap2(IndexFlatIP) (the default flat kind) on its worker threads, one OpenMP "
        "thread each, and ranks text with SQLite FTS5's bm25(). Default config: faiss backend, flat index, cosine, "
        f"hybrid dense + FTS5 BM25 candidates fused by {defaults.fusion}, neighbour smoothing "
        f"{'on' if defaults.neighbour_smoothing.enabled else 'off'}, SQLite synchronous=FULL. "
        "\"Raw\" is sentence-transformers on the same model, the library a user would call "
        "otherwise. The store rows use the client's default runtime (`embedding_runtime=auto`: "
        f"{store['runtime_name']} for all-MiniLM-L6-v2). The retrieve table's corpus is the word "
        "corpus (benchmarks/word_corpus.py: words of the model's 21,700-word vocabulary drawn by "
        "a Zipf law; held-out questions, a fifth of them of common words only). The retrieve ratios use a client on sentence-transformers "
        "too, interleaved with raw, so they measure the memory layer; the default runtime's "
        "retrieve is timed in a block of its own (two runtimes interleaved in one process wait "
        "for each other's spinning BLAS/OpenMP threads on 2 cores).",
        "",
        "| store (faiss, embedding included) | memories/s |",
        "|---|---|",
        f"| raw `SentenceTransformer.encode`, batch 64 ({store['n']} texts, 6 rounds in rotating order, median) | {store['raw']:.0f} |",
        f"| the client's embedder alone ({store['runtime_name']} runtime), same texts | {store['runtime']:.0f} |",
        f"| `MemorySystemClient.store_many` | {store['ours']:.0f} |",
        f"| **ratio** (target >= 0.85) | **{store['ratio']:.2f}** |",
        "",
        f"| retrieve, top 5, query embedding included ({len(queries)} queries) | p50 ms | p95 ms | "
        "ratio p50 / p95 (target <= 1.3) |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines += [
            f"| {r['size']:,} memories: raw encode + raw FAISS flat search | {r['raw_p50']:.1f} | {r['raw_p95']:.1f} | |",
            f"| {r['size']:,} memories: `client.retrieve`, all sessions | {r['ours_p50']:.1f} | {r['ours_p95']:.1f} | "
            f"**{r['ours_p50'] / r['raw_p50']:.2f} / {r['ours_p95'] / r['raw_p95']:.2f}** |",
            f"| {r['size']:,} memories: `client.retrieve`, own session ({r['in_session']} memories) | "
            f"{r['sess_p50']:.1f} | {r['sess_p95']:.1f} | {r['sess_p50'] / r['raw_p50']:.2f} / "
            f"{r['sess_p95'] / r['raw_p95']:.2f} |",
            f"| {r['size']:,} memories: `client.retrieve`, all sessions, default "
            f"({r['default_runtime']}) runtime, timed apart | {r['default_p50']:.1f} | "
            f"{r['default_p95']:.1f} | {r['default_p50'] / r['raw_p50']:.2f} / "
            f"{r['default_p95'] / r['raw_p95']:.2f} |",
        ]
    lines += [
        "",
        f"| process CPU per call, one session of {cpu['memories']:,} memories, top 10, "
        f"{cpu['calls']} calls each ({cpu['runtime']} runtime) | ms |",
        "|---|---|",
        f"| raw query embedding + raw FAISS flat search | {cpu['raw_ms']:.1f} |",
        f"| `client.retrieve` | {cpu['ours_ms']:.1f} |",
        f"| **ratio** (target <= 3) | **{cpu['ratio']:.2f}** |",
        "",
        "CPU time of the whole process (every thread), in alternating blocks of 50 calls; "
        "retrieve adds the lexical search, the candidates' records read from SQLite, the "
        "ranking steps and the neighbours of the best 40 candidates.",
    ]
    lines += ["", "| store of | open, ms | close that writes the index file, ms |", "|---|---|---|"]
    lines += [f"| {r['size']:,} memories | {r['open_ms']:.0f} | {r['close_ms']:.0f} |" for r in rows]
    lines += ["", "Open: a new client on the store its import left (SQLite's quick_check, "
              "the index file read and its checksum verified, the index caught up with the "
              "records). Close: the first after the import, so it writes the index file "
              "(atomically, synced) and SQLite checkpoints its write-ahead log; later closes "
              "rewrite it only once catching up on open would cost more."]
    lines += ["", "| resident memory growth after opening and searching the store | MiB | MiB per 100k "
              "| of which private / mapped files, MiB per 100k |",
              "|---|---|---|---|"]
    for r in rows:
        per = 100_000 / r["size"]
        rss = r["rss"]
        lines.append(f"| {r['size']:,} memories | {rss['total']:.0f} | {rss['total'] * per:.0f} "
                     f"| {rss['private'] * per:.0f} / {rss['mapped'] * per:.0f} |")
    lines += ["", "The smallest size measured first also carries the process's one-time growth (worker "
              "threads, allocator arenas, the first search's buffers): read the per-100k cost off the "
              "largest size. Mapped files are file pages the process maps (libraries, SQLite's shared "
              "WAL index): shared with other processes and dropped by the kernel under memory "
              "pressure; private memory is the process's own (the FAISS index lives there)."]
    return "\n".join(lines)


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    body = asyncio.run(run())
    path = write_section("memory", "Memory core (faiss backend)",
                         "make bench  (python benchmarks/bench_memory.py)", body)
    print(body)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
