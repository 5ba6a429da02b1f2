"""The hot tier (memory.hot): how often it answers, and what a retrieve costs with and without it.

- **Workflow**: offline research runs (the checkpoint benchmark's question and config, faiss
  store, notes on) on one store; the hot tier's hits and misses summed over the runs' clients.
- **Repeated questions**: an embedded (faiss) store of 10k memories; one session asks
  QUESTIONS distinct questions ROUNDS times each (round-robin, no write in between), with the
  hot tier on and off (twice each: on, off, off, on). Retrieve latency p50 / p95 of the first
  ask, of the repeats and of the same repeats without the tier; the same for a profile with
  recency weighting (its answer depends on the time asked: the tier passes it to the stores);
  and `get` of the recalled memories.

    python -m benchmarks.bench_hot_tier [--runs N] [--size N]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import word_corpus  # noqa: E402
from benchmarks.bench_memory import import_word_store  # noqa: E402
from benchmarks.report import write_section  # noqa: E402
from benchmarks.results import save_result  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402

QUESTIONS, ROUNDS = 40, 5
COMMAND = "python -m benchmarks.bench_hot_tier"


# -- the workflow ------------------------------------------------------------------------
async def workflow_runs(runs: int) -> dict[str, Any]:
    from benchmarks.bench_checkpoint import QUESTION, config
    from DeepResearch.src.workflow.hooks import NodeHook
    from DeepResearch.src.workflow.run import create_run_services, run_research

    clients: list[MemorySystemClient] = []

    class Keep(NodeHook):
        async def after_node(self, node: Any, ctx: Any, result: Any) -> None:
            client = ctx.state.memory_client
            if client is not None and all(client is not c for c in clients):
                clients.append(client)

    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            cfg = config(Path(tmp), notes=True)
            services = create_run_services(cfg)
            services.node_hooks.append(Keep())
            await run_research(QUESTION, cfg, services)
    hits = sum(c.hot.hits for c in clients)
    misses = sum(c.hot.misses for c in clients)
    return {"runs": runs, "hits": hits, "misses": misses,
            "hit_ratio": hits / (hits + misses) if hits + misses else None}


# -- repeated questions ------------------------------------------------------------------
async def fill(path: Path, size: int) -> None:
    """A store of `size` memories of the word corpus over 50 earlier runs' sessions (real
    embeddings, cached)."""
    async with MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)})) as client:
        await import_word_store(client, size)


async def ask(path: Path, hot: bool, profile: str | None) -> dict[str, list[float]]:
    """Seconds per retrieve: first asks, repeats; and per get of what was recalled."""
    config = MemoryConfig(backend="faiss", faiss={"path": str(path)}, hot={"enabled": hot})
    questions = word_corpus.queries(QUESTIONS, seed=500)
    out: dict[str, list[float]] = {"first": [], "repeat": [], "get": []}
    async with MemorySystemClient(config, session_id="bench-hot") as client:
        await client.retrieve("warm up the model and the index", top_k=8)
        recalled: list[str] = []
        for round_ in range(ROUNDS):
            for question in questions:
                started = time.perf_counter()
                found = await client.retrieve(question, top_k=8, profile=profile)
                out["first" if round_ == 0 else "repeat"].append(time.perf_counter() - started)
                if round_ == 0:
                    recalled += [m.id for m in found[:2]]
        for memory_id in recalled:
            started = time.perf_counter()
            await client.get(memory_id)
            out["get"].append(time.perf_counter() - started)
        out["hit_ratio"] = [client.hot.hits / max(1, client.hot.hits + client.hot.misses)]
    return out


def p(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000.0, q))


async def repeated(size: int) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="bench-hot-"))
    try:
        await fill(folder, size)
        rows: dict[str, Any] = {}
        for profile in (None, "planner"):
            runs: dict[bool, dict[str, list[float]]] = {True: {}, False: {}}
            for hot in (True, False, False, True):  # each setting once early, once late
                for part, values in (await ask(folder, hot, profile)).items():
                    runs[hot].setdefault(part, []).extend(values)
            name = profile or "default"
            rows[name] = {
                "hit_ratio": float(np.mean(runs[True]["hit_ratio"])),
                "first_p50_ms": p(runs[True]["first"], 50),
                "repeat_p50_ms": p(runs[True]["repeat"], 50),
                "repeat_p95_ms": p(runs[True]["repeat"], 95),
                "off_repeat_p50_ms": p(runs[False]["repeat"], 50),
                "off_repeat_p95_ms": p(runs[False]["repeat"], 95),
                "get_p50_ms": p(runs[True]["get"], 50),
                "off_get_p50_ms": p(runs[False]["get"], 50),
            }
        return rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(flow: dict[str, Any], rows: dict[str, Any], size: int) -> str:
    ratio = "n/a" if flow["hit_ratio"] is None else f"{flow['hit_ratio']:.2f}"
    lines = [
        f"**Workflow** ({flow['runs']} offline research runs on one faiss store): the hot tier "
        f"answered {flow['hits']} of {flow['hits'] + flow['misses']} lookups (hit ratio {ratio}). "
        "Every recall of a run follows a write of that run (each node stores what it did), and a "
        "write in the namespace makes every kept answer stale, so the recalls go to the stores.",
        "",
        f"**Repeated questions** ({size:,} memories, faiss; {QUESTIONS} questions asked "
        f"{ROUNDS} times each by one session, no write in between):",
        "",
        "| retrieve | hit ratio | first ask p50 (ms) | repeat p50 / p95 (ms) | without the tier: "
        "repeat p50 / p95 (ms) | get p50, with / without (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        label = ("default (no profile)" if name == "default"
                 else f"profile `{name}` (recency weighting: reads the clock)")
        lines.append(
            f"| {label} | {r['hit_ratio']:.2f} | {r['first_p50_ms']:.1f} | "
            f"{r['repeat_p50_ms']:.2f} / {r['repeat_p95_ms']:.2f} | "
            f"{r['off_repeat_p50_ms']:.2f} / {r['off_repeat_p95_ms']:.2f} | "
            f"{r['get_p50_ms']:.3f} / {r['off_get_p50_ms']:.3f} |")
    lines += [
        "",
        "A repeat answered by the tier costs a lookup and a copy of the answer. The tier does not "
        "keep the answers of the `planner` profile: its recency weighting scores by age, so the "
        "same question asked later may rank otherwise; those retrieves go to the stores (the "
        "memories they recall are kept for `get`). The embedding of a repeated query is cached "
        "by the embedder with or without the tier.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="offline workflow runs")
    parser.add_argument("--size", type=int, default=10_000, help="memories in the store")
    args = parser.parse_args(argv if argv is not None else [])
    flow = asyncio.run(workflow_runs(args.runs))
    print(f"  workflow: {flow}", flush=True)
    rows = asyncio.run(repeated(args.size))
    for name, row in rows.items():
        print(f"  {name}: {row}", flush=True)
    result = {"workflow": flow, "repeated": rows, "size": args.size}
    save_result("hot_tier", result)
    path = write_section("hot_tier", "Hot tier: hit ratio and latency", COMMAND, report(flow, rows, args.size))
    print(f"  wrote {path}", flush=True)
    return result


if __name__ == "__main__":
    main()
