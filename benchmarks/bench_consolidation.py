"""Consolidation on a SYNTHESISED workload (benchmarks/consolidation_data.py: 50 runs of the
same 10 related questions, plans, answers and tool results in a few wordings, and one failed
tool run per question and run with its own sample and figures) on the embedded faiss backend.

Reports live memories and bytes (text + metadata + vector) before and after
`consolidate`, the clusters, the wrong merges (a cluster holding two different samples' failed
runs: must be 0), what a second run changes (must be nothing), and recall@10 of a fixed set
of recall questions (a question is answered when one of its top 10 memories holds every key
of its answer) before and after. Goals: live memories reduced by >= 60 %, recall@10 within
0.01 of before.

    python -m benchmarks.bench_consolidation
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_memory import cached_vectors  # noqa: E402
from benchmarks.consolidation_data import RUNS, TOPICS, RecallQuestion, workload  # noqa: E402
from benchmarks.report import write_section  # noqa: E402
from benchmarks.results import save_result  # noqa: E402
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: E402
from DeepResearch.src.memory.consolidation import consolidate  # noqa: E402
from DeepResearch.src.memory.embeddings import get_embedder  # noqa: E402

TOP_K = 10
COMMAND = "python -m benchmarks.bench_consolidation"


async def recall(client: MemorySystemClient, questions: list[RecallQuestion]) -> dict[str, float]:
    """recall@10 over every question, and per kind (answer, extra sentence, sample)."""
    found: dict[str, list[float]] = defaultdict(list)
    for i, q in enumerate(questions):
        hits = await client.retrieve(q.text, top_k=TOP_K)
        ok = any(all(k in h.content for k in q.keys) for h in hits)
        kind = "answer" if i < len(TOPICS) else "extra" if i < 2 * len(TOPICS) else "sample"
        for key in (kind, "all"):
            found[key].append(float(ok))
    return {k: sum(v) / len(v) for k, v in found.items()}


async def measure(store: Path) -> dict[str, Any]:
    now = time.time()
    items, questions = workload(now)
    vectors = cached_vectors([i.content for i in items], "consolidation")
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(store)}),
                                embedder=get_embedder())
    try:
        by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for item, vector in zip(items, vectors, strict=True):
            by_session[item.session].append({
                "id": item.id, "content": item.content, "memory_type": item.memory_type,
                "created_at": item.created_at, "importance": item.importance,
                "metadata": item.metadata, "vector": vector})
        for session, batch in by_session.items():
            await client.store_many(batch, session_id=session)
        before = await recall(client, questions)
        started = time.perf_counter()
        report = await consolidate(client)
        seconds = time.perf_counter() - started
        after = await recall(client, questions)
        again = await consolidate(client)
        wrong = sum(1 for c in report.clusters
                    if sum(s.endswith("-failed") for s in c.sources) > 1)
        return {
            "memories_before": report.memories_before, "memories_after": report.memories_after,
            "reduction": 1 - report.memories_after / report.memories_before,
            "bytes_before": report.bytes_before, "bytes_after": report.bytes_after,
            "bytes_reduction": 1 - report.bytes_after / report.bytes_before,
            "clusters": len(report.clusters), "consolidated": report.consolidated,
            "wrong_merges": wrong, "second_run_clusters": len(again.clusters),
            "second_run_changed": again.memories_after != again.memories_before,
            "seconds": seconds, "questions": len(questions),
            "recall_before": before, "recall_after": after,
            "recall_change": after["all"] - before["all"],
        }
    finally:
        await client.close()


def render(r: dict[str, Any]) -> str:
    rb, ra = r["recall_before"], r["recall_after"]
    lines = [
        f"Data: SYNTHESISED workflow memories (benchmarks/consolidation_data.py, fixed seed): "
        f"{RUNS} runs of the same {len(TOPICS)} related questions; per question and run a plan, "
        "an answer and two tool results in a few wordings (an answer sometimes with one more "
        "sentence) and one failed tool run on its own sample with its own figures. Embedded "
        "faiss backend, default settings (similarity 0.92).",
        "",
        "| figure | before | after | change |",
        "|---|---:|---:|---:|",
        f"| live memories | {r['memories_before']:,} | {r['memories_after']:,} | "
        f"-{r['reduction']:.1%} |",
        f"| bytes (text + metadata + vector) | {r['bytes_before']:,} | {r['bytes_after']:,} | "
        f"-{r['bytes_reduction']:.1%} |",
        f"| recall@10, all {r['questions']} questions | {rb['all']:.3f} | {ra['all']:.3f} | "
        f"{r['recall_change']:+.3f} |",
    ]
    for kind, label in (("answer", "a question's answer"), ("extra", "a sentence some answers add"),
                        ("sample", "one sample's failed run")):
        lines.append(f"| recall@10, {label} | {rb[kind]:.3f} | {ra[kind]:.3f} | "
                     f"{ra[kind] - rb[kind]:+.3f} |")
    lines += [
        "",
        f"{r['clusters']} clusters merged {r['consolidated']:,} memories in {r['seconds']:.2f} s; "
        f"wrong merges (two samples' failed runs in one cluster): {r['wrong_merges']}; a second "
        f"run found {r['second_run_clusters']} clusters and "
        f"{'changed' if r['second_run_changed'] else 'changed nothing'}.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-consolidation-") as tmp:
        result = asyncio.run(measure(Path(tmp) / "store"))
    save_result("consolidation", result)
    body = render(result)
    print(body)
    write_section("consolidation", "Consolidation of repeated runs (synthesised)", COMMAND, body)


if __name__ == "__main__":
    main()
