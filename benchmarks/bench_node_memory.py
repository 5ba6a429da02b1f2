"""Memory work per workflow node: what a node's memory costs a run, embeddings included.

A workflow node recalls before it works (one `retrieve`: the query embedded, dense + lexical
candidates, the ranking pipeline) and stores what it did after (one `store_many` of a few
memories, each embedded by its content). This times that pair on the embedded store (faiss
backend, the default embedding runtime) holding 10k and 100k memories, over a series
of nodes with fresh texts, and reports p50 / p95 per node. Stored texts, questions and results
come from the word corpus (word_corpus.py: Zipf-distributed words of the model's vocabulary),
so the keyword search pays what it pays on a real store. Targets: p50 <= 40 ms at 10k,
<= 60 ms at 100k.

Three ways of writing (memory.storage.vectors):
- `inline`: a store embeds its memories before it returns;
- `behind, agent between`: the default: a store returns once its rows are committed, their
  vectors are filled in the background while the node's agent works (THINK_S of waiting
  between nodes stands for the model call; only the memory calls are timed);
- `behind, back to back`: the same with no time between nodes: the next recall waits for
  the fill (read-your-writes), so the embedding cost comes back.

    python -m benchmarks.bench_node_memory          (BENCH_SIZES=10000,100000 by default)
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import word_corpus  # noqa: E402
from benchmarks.bench_memory import import_word_store  # noqa: E402
from benchmarks.results import save_result  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402

NODES = 60  # timed nodes per store size (after 5 warm-up nodes)
THINK_S = 0.5  # the agent's model call between two nodes (real ones take seconds)
MODES = {"inline": ("inline", 0.0), "behind, agent between": ("behind", THINK_S),
         "behind, back to back": ("behind", 0.0)}
TARGET_P50_MS = {10_000: 40.0, 100_000: 60.0}


async def fill(path: Path, size: int) -> None:
    """A store of `size` memories of the word corpus over 50 earlier runs' sessions (real
    embeddings, cached)."""
    async with MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)})) as client:
        await import_word_store(client, size)


async def time_nodes(path: Path, vectors: str, think: float, seed: int) -> list[float]:
    """Seconds of memory work per node: recall, then store the node's two memories (then
    `think` seconds of the agent's work, not timed)."""
    questions = word_corpus.queries(NODES + 5, seed=seed)
    results = word_corpus.texts(2 * (NODES + 5), seed=seed + 400)
    config = MemoryConfig(backend="faiss", faiss={"path": str(path)},
                          storage={"vectors": vectors})
    per_node = []
    async with MemorySystemClient(config, session_id=f"bench-run-{seed}") as client:
        for i, question in enumerate(questions):
            if think:
                await asyncio.sleep(think)
            started = time.perf_counter()
            await client.retrieve(f"Plan the next step for: {question}", top_k=8, profile="planner")
            await client.store_many([
                {"content": f"Question: {question}\nTool result: {results[2 * i]}",
                 "memory_type": "tool_execution", "metadata": {"tool": "search", "success": True}},
                {"content": f"Question: {question}\nFinding: {results[2 * i + 1]}",
                 "memory_type": "note"},
            ])
            if i >= 5:
                per_node.append(time.perf_counter() - started)
    return per_node


def main() -> dict[str, dict[str, float]]:
    sizes = [int(s) for s in os.environ.get("BENCH_SIZES", "10000,100000").split(",")]
    out: dict[str, dict[str, float]] = {}
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix=f"bench-node-{size}-"))
        try:
            asyncio.run(fill(folder, size))
            timed = {mode: asyncio.run(time_nodes(folder, vectors, think, 500 + 100 * n))
                     for n, (mode, (vectors, think)) in enumerate(MODES.items())}
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        for mode, seconds in timed.items():
            ms = np.array(seconds) * 1000.0
            row = {"p50_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)),
                   "target_p50_ms": TARGET_P50_MS.get(size, float("nan")), "nodes": len(ms)}
            # the default way keeps the plain key the summary reads
            out[str(size) if mode == "behind, agent between" else f"{size} {mode}"] = row
            print(f"  {size:>7} memories, {mode}: memory work per node p50 {row['p50_ms']:.1f} "
                  f"ms, p95 {row['p95_ms']:.1f} ms (target p50 <= {row['target_p50_ms']:.0f} "
                  "ms)", flush=True)
    save_result("node_memory", out)
    return out


if __name__ == "__main__":
    main()
