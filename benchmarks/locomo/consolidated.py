"""LoCoMo dev recall before and after `consolidate` on the LoCoMo store.

The protocol of run.py (one memory per turn, one session per conversation, `retrieve(top_k=20)`
per question `as_of` the conversation's last session) on a faiss store holding every
conversation, with the turn vectors from the embedding cache (the same model): every question
is asked, then the store is consolidated once, namespace-wide, through the same call as
`deepresearch-memory consolidate` (`memory.consolidation.grace_hours=0`: the turns were all
stored seconds ago), then every question is asked again. A consolidated memory stands for its
sources: in the ranking it counts as the dia_ids of the sources it was derived from (their
text is in it), its representative's first. Goal: recall@10 within 0.01 of before, overall
and per category.

    python -m benchmarks.locomo.consolidated
"""

from __future__ import annotations

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
from benchmarks.locomo.data import SCORED_CATEGORIES, Conversation, load_conversations
from benchmarks.locomo.metrics import RecallTable
from benchmarks.locomo.project import TOP_K
from benchmarks.report import write_section
from benchmarks.results import save_result

COMMAND = "python -m benchmarks.locomo.consolidated"
NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def ranked_dia_ids(hits: list[Any], conv: str, dia_of: dict[str, tuple[str, str]]) -> list[str]:
    """The dia_ids of `hits` in order; a consolidated hit gives its sources' (of `conv`)."""
    out: list[str] = []
    for hit in hits:
        ids = [hit.id, *(hit.metadata.get("derived_from") or [])]
        for memory_id in ids:
            owner = dia_of.get(memory_id)
            if owner is not None and owner[0] == conv and owner[1] not in out:
                out.append(owner[1])
    return out


async def ask(client: Any, conversations: list[Conversation],
              dia_of: dict[str, tuple[str, str]]) -> RecallTable:
    table = RecallTable()
    for conv in conversations:
        for q in conv.questions:
            hits = await client.retrieve(q.question, top_k=TOP_K, session_id=f"locomo-{conv.name}",
                                         as_of=conv.last_session_time)
            table.add(q.category, ranked_dia_ids(hits, conv.name, dia_of), q.evidence)
    return table


async def measure(conversations: list[Conversation], store: str) -> dict[str, Any]:
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
    from DeepResearch.src.memory.consolidation import consolidate

    config = MemoryConfig(backend="faiss", faiss={"path": store},
                          consolidation={"grace_hours": 0.0})
    dia_of: dict[str, tuple[str, str]] = {}
    async with MemorySystemClient(config) as client:
        for conv in conversations:
            items = conv.stored_items()
            vectors = embed_cached([t.content for t in conv.turns])
            for i, (item, vector) in enumerate(zip(items, vectors, strict=True)):
                item["id"] = f"{conv.name}-{i}"
                item["vector"] = vector
                dia_of[item["id"]] = (conv.name, str(item["metadata"]["dia_id"]))
            await client.store_many(items, session_id=f"locomo-{conv.name}")
        before = await ask(client, conversations, dia_of)
        report = await consolidate(client)
        after = await ask(client, conversations, dia_of)
    out: dict[str, Any] = {
        "memories_before": report.memories_before, "memories_after": report.memories_after,
        "clusters": len(report.clusters), "consolidated": report.consolidated,
        "seconds": report.seconds,
    }
    for name, table in (("before", before), ("after", after)):
        out[name] = {"r10": table.mean()[10], "r5": table.mean()[5],
                     **{f"c{c}_r10": table.mean(c)[10] for c in SCORED_CATEGORIES}}
    keys = ["r10", *(f"c{c}_r10" for c in SCORED_CATEGORIES)]
    out["worst_change"] = min(out["after"][k] - out["before"][k] for k in keys)
    out["examples"] = [c.content for c in report.clusters[:3]]
    return out


def render(r: dict[str, Any], n_questions: int) -> str:
    cats = [f"c{c}_r10" for c in SCORED_CATEGORIES]
    head = "| | R@5 | R@10 | " + " | ".join(f"{NAMES[c]} R@10" for c in SCORED_CATEGORIES) + " |"
    rows = [head, "|---|" + "---:|" * (2 + len(cats))]
    for name in ("before", "after"):
        d = r[name]
        rows.append(f"| {name} | {d['r5']:.3f} | {d['r10']:.3f} | "
                    + " | ".join(f"{d[k]:.3f}" for k in cats) + " |")
    verdict = "met" if r["worst_change"] >= -0.01 else "not met"
    examples = "; ".join(f"`{e}`" for e in r["examples"])
    return (
        f"LoCoMo dev, {n_questions} questions, the protocol of `make bench-locomo` on one faiss "
        "store (turn vectors from the embedding cache), except that all five conversations are "
        "stored before the first question (the lexical statistics then cover them all, so "
        "recall differs slightly from `make bench-locomo`'s); `consolidate` once over the namespace "
        "(`memory.consolidation.grace_hours=0`), then every question again. A consolidated "
        "memory counts as the turns it was derived from.\n\n" + "\n".join(rows) + "\n\n"
        f"Live memories {r['memories_before']} -> {r['memories_after']} ({r['clusters']} "
        f"clusters, {r['consolidated']} turns merged, {r['seconds']:.1f} s). Worst change of "
        f"recall@10 (overall or a category): {r['worst_change']:+.3f}; goal within 0.01: "
        f"{verdict}." + (f" Merged, e.g.: {examples}." if examples else "")
    )


def main(argv: list[str] | None = None) -> int:
    conversations = load_conversations()
    with tempfile.TemporaryDirectory(prefix="locomo-consolidate-") as store:
        result = asyncio.run(measure(conversations, store))
    save_result("locomo_consolidation", result)
    body = render(result, sum(len(c.questions) for c in conversations))
    print(body)
    write_section("locomo_consolidation", "LoCoMo recall after consolidation", COMMAND, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
