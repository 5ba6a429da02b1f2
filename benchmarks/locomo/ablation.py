"""Ablation of the retrieval pipeline on LoCoMo: the defaults, then each step switched off (or
changed) in turn, through the public MemorySystemClient with a faiss store -- the protocol of
run.py, except that turn vectors come from the embedding cache (the same model) so each
variant costs seconds. Prints recall@1/5/10/20 overall and recall@5/@10 per conversation.

Run: .venv/bin/python benchmarks/locomo/ablation.py [--only NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchmarks.locomo.baselines import embed_cached
from benchmarks.locomo.data import Conversation, load_conversations
from benchmarks.locomo.metrics import RecallTable
from benchmarks.locomo.project import TOP_K

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "fusion rrf (phase-1 default)": {"fusion": "rrf"},
    "no neighbour smoothing": {"neighbour_smoothing": {"enabled": False}},
    "smoothing without expansion": {"neighbour_smoothing": {"expand": False}},
    "smoothing radius 1": {"neighbour_smoothing": {"radius": 1}},
    "smoothing weight 0.25": {"neighbour_smoothing": {"weight": 0.25}},
    "smoothing weight 0.75": {"neighbour_smoothing": {"weight": 0.75}},
    "dense only (hybrid off)": {"hybrid": False},
    "lexical weight 0.5": {"lexical_weight": 0.5},
    "query rewrite on": {"query_rewrite": True},
    "rrf, no smoothing (phase-1 defaults)": {
        "fusion": "rrf", "neighbour_smoothing": {"enabled": False}
    },
}


async def run_variant(
    conversations: list[Conversation], retrieval: dict[str, Any]
) -> tuple[RecallTable, list[RecallTable]]:
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

    total, per = RecallTable(), []
    with tempfile.TemporaryDirectory(prefix="locomo-ablation-") as path:
        client = MemorySystemClient(
            MemoryConfig(backend="faiss", faiss={"path": path}, retrieval=retrieval)
        )
        try:
            for conv in conversations:
                session = f"locomo-{conv.name}"
                vectors = embed_cached([t.content for t in conv.turns])
                await client.store_many(
                    [
                        {"content": t.content, "metadata": t.metadata, "vector": v}
                        for t, v in zip(conv.turns, vectors, strict=True)
                    ],
                    session_id=session,
                )
                table = RecallTable()
                for q in conv.questions:
                    hits = await client.retrieve(q.question, top_k=TOP_K, session_id=session)
                    ranked = [str(h.metadata.get("dia_id")) for h in hits]
                    table.add(q.category, ranked, q.evidence)
                    total.add(q.category, ranked, q.evidence)
                per.append(table)
        finally:
            await client.close()
    return total, per


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="variants whose name contains this")
    args = parser.parse_args()
    conversations = load_conversations()
    names = [c.name for c in conversations]
    print("| variant | R@1 | R@5 | R@10 | R@20 | " + " | ".join(f"{n} R@5/R@10" for n in names) + " |")
    print("|---|" + "---:|" * (4 + len(names)))
    for name, retrieval in VARIANTS.items():
        if args.only not in name:
            continue
        total, per = asyncio.run(run_variant(conversations, retrieval))
        m = total.mean()
        cells = [f"{m[k]:.3f}" for k in total.ks]
        cells += [f"{t.mean()[5]:.3f}/{t.mean()[10]:.3f}" for t in per]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
