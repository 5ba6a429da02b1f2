"""Ablation of the retrieval pipeline on LoCoMo: the defaults, then each step switched off (or
changed) in turn, through the public MemorySystemClient with a faiss store -- the protocol of
run.py, except that turn vectors come from the embedding cache (the same model) so each
variant costs seconds. Prints recall@1/5/10/20 overall, recall@10 per category, the mean
number of distinct conversation sessions in the top 10, the retrieve latency p50/p95, and
recall@5/@10 per conversation. The "graph" variants first ingest each conversation's turns
through `FactGraph.ingest` (the offline extractor builds the knowledge graph, each turn's id
its facts' evidence), then store the turns under those ids.

Run: .venv/bin/python benchmarks/locomo/ablation.py [--only NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchmarks.locomo.baselines import embed_cached
from benchmarks.locomo.data import SCORED_CATEGORIES, Conversation, load_conversations
from benchmarks.locomo.metrics import RecallTable
from benchmarks.locomo.project import TOP_K

OFF = {"enabled": False}
VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "session coverage (penalty 0.1, quota 2)": {"session_coverage": {"enabled": True}},
    "lexical feedback on": {"feedback": {"enabled": True}},
    "no time match": {"time_query": OFF},
    "no event_at, no as_of": {"_plain": True},
    "no neighbour smoothing": {"neighbour_smoothing": OFF},
    "smoothing without expansion": {"neighbour_smoothing": {"expand": False}},
    "dense only (hybrid off)": {"hybrid": False},
    "fusion rrf": {"fusion": "rrf"},
    "graph path": {"_graph": True, "graph": {"enabled": True}},
    "graph path, every fact": {"_graph": True, "graph": {"enabled": True, "max_fact_evidence": 100_000}},
    "graph path, weight 0.075": {"_graph": True, "graph": {"enabled": True, "weight": 0.075}},
    "graph path, weight 0.1": {"_graph": True, "graph": {"enabled": True, "weight": 0.1}},
    "graph built, path off": {"_graph": True},
}


async def run_variant(
    conversations: list[Conversation], retrieval: dict[str, Any]
) -> tuple[RecallTable, list[RecallTable], list[float]]:
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

    retrieval = dict(retrieval)
    plain = retrieval.pop("_plain", False)  # the turns without their dates, asked "now"
    graph = retrieval.pop("_graph", False)  # the turns ingested first: the graph has facts
    total, per, latencies = RecallTable(), [], []
    with tempfile.TemporaryDirectory(prefix="locomo-ablation-") as path:
        client = MemorySystemClient(
            MemoryConfig(backend="faiss", faiss={"path": path}, retrieval=retrieval)
        )
        try:
            for conv in conversations:
                session = f"locomo-{conv.name}"
                vectors = embed_cached([t.content for t in conv.turns])
                items = conv.stored_items()
                if graph:
                    await ingest_turns(client, conv, items)
                for item, vector in zip(items, vectors, strict=True):
                    item["vector"] = vector
                    if plain:
                        item.pop("event_at")
                await client.store_many(items, session_id=session)
                table = RecallTable()
                as_of = None if plain else conv.last_session_time
                for q in conv.questions:
                    started = time.perf_counter()
                    hits = await client.retrieve(
                        q.question, top_k=TOP_K, session_id=session, as_of=as_of
                    )
                    latencies.append(time.perf_counter() - started)
                    ranked = [str(h.metadata.get("dia_id")) for h in hits]
                    sessions = [h.metadata.get("session") for h in hits]
                    table.add(q.category, ranked, q.evidence, sessions)
                    total.add(q.category, ranked, q.evidence, sessions)
                per.append(table)
        finally:
            await client.close()
    return total, per, latencies


async def ingest_turns(client: Any, conv: Conversation, items: list[dict]) -> None:
    """The conversation's turns through the graph's ingest (the offline extractor), one
    message per turn whose id is the turn memory's id, so the facts' evidence are the turns;
    the turns are then stored under those ids (replacing the episode memories ingest wrote)."""
    from DeepResearch.src.memory.facts.graph import FactGraph

    messages = []
    for i, (turn, item) in enumerate(zip(conv.turns, items, strict=True)):
        item["id"] = f"{conv.name}-{i}"
        when = turn.event_at.timestamp() if turn.event_at else 0.0
        messages.append({"message_id": item["id"], "author_id": turn.speaker,
                         "author_name": turn.speaker, "content": turn.text, "timestamp": when})
    await FactGraph(client).ingest(messages, channel_id=conv.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="variants whose name contains this")
    args = parser.parse_args()
    conversations = load_conversations()
    names = [c.name for c in conversations]
    cats = [f"c{c} R@10" for c in SCORED_CATEGORIES]
    print("| variant | R@1 | R@5 | R@10 | R@20 | " + " | ".join(cats) + " | sessions@10 | p50 ms | p95 ms | "
          + " | ".join(f"{n} R@5/R@10" for n in names) + " |")
    print("|---|" + "---:|" * (7 + len(cats) + len(names)))
    for name, retrieval in VARIANTS.items():
        if args.only not in name:
            continue
        total, per, latencies = asyncio.run(run_variant(conversations, retrieval))
        m = total.mean()
        cells = [f"{m[k]:.3f}" for k in total.ks]
        cells += [f"{total.mean(c)[10]:.3f}" for c in SCORED_CATEGORIES]
        cells += [f"{total.mean_sessions():.2f}"]
        cells += [f"{1000 * float(np.percentile(latencies, q)):.1f}" for q in (50, 95)]
        cells += [f"{t.mean()[5]:.3f}/{t.mean()[10]:.3f}" for t in per]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
