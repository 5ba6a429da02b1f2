"""The project's retrieval on LoCoMo, through the public MemorySystemClient API only.

Default configuration except the backend (faiss, in a temporary folder): one session per
conversation, one memory per turn (its session's date as `event_at`), one `retrieve(top_k=20)`
per question, `as_of` the conversation's last session (when its questions are asked), each
call timed.
"""

from __future__ import annotations

import asyncio
import inspect
import tempfile
import time
from dataclasses import dataclass, field

from tqdm import tqdm

from benchmarks.locomo.data import Conversation
from benchmarks.locomo.metrics import RecallTable

TOP_K = 20


@dataclass
class ProjectResult:
    table: RecallTable = field(default_factory=RecallTable)
    latencies: list[float] = field(default_factory=list)
    store_seconds: float = 0.0
    # per question, the ranked dia_ids (kept for the miss analysis)
    rankings: list[list[str]] = field(default_factory=list)


def client_available() -> bool:
    try:
        from DeepResearch.src.memory import MemoryConfig, MemorySystemClient  # noqa: F401
    except ImportError:
        return False
    return True


async def _maybe_await(value: object) -> object:
    return await value if inspect.isawaitable(value) else value


async def run_project_async(conversations: list[Conversation],
                            embedding_runtime: str = "auto") -> ProjectResult:
    from DeepResearch.src.memory import MemoryConfig, MemorySystemClient

    result = ProjectResult()
    with tempfile.TemporaryDirectory(prefix="locomo-faiss-") as path:
        client = MemorySystemClient(MemoryConfig(
            backend="faiss", faiss={"path": path},
            vector_store={"embedding_runtime": embedding_runtime}))
        try:
            for conv in tqdm(conversations, desc="project", unit="conv"):
                session = f"locomo-{conv.name}"
                start = time.perf_counter()
                await client.store_many(conv.stored_items(), session_id=session)
                result.store_seconds += time.perf_counter() - start
                for q in tqdm(conv.questions, desc=f"  {conv.name}", unit="q", leave=False):
                    start = time.perf_counter()
                    hits = await client.retrieve(
                        query=q.question, top_k=TOP_K, session_id=session,
                        as_of=conv.last_session_time,
                    )
                    result.latencies.append(time.perf_counter() - start)
                    ranked = [str(h.metadata.get("dia_id")) for h in hits]
                    result.rankings.append(ranked)
                    result.table.add(q.category, ranked, q.evidence,
                                     [h.metadata.get("session") for h in hits])
        finally:
            await _maybe_await(client.close())
    return result


def run_project(conversations: list[Conversation]) -> ProjectResult:
    return asyncio.run(run_project_async(conversations))
