"""The service's periodic consolidation (memory.consolidation.every_minutes): off by default;
when set, a background task started with the app consolidates every namespace it serves,
each in its own namespace, and stops with the app."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from fastapi.testclient import TestClient

from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.service import create_app
from tests.test_service.conftest import KEYS

OLD = time.time() - 30 * 86_400.0
NEAR = ["The STAR aligner needs 32 GB of memory for the human index.",
        "STAR aligner needs 32 GB of memory for the human index"]


def _config(path: Path, **consolidation: float) -> MemoryConfig:
    return MemoryConfig(backend="faiss", faiss={"path": str(path)},
                        service={"log_requests": False}, consolidation=consolidation)


async def _fill(config: MemoryConfig, embedder: Embedder, namespace: str) -> None:
    client = MemorySystemClient(config, namespace=namespace, embedder=embedder)
    await client.store_many([{"id": f"{namespace}-{i}", "content": t, "created_at": OLD}
                             for i, t in enumerate(NEAR)])
    await client.close()


def test_off_by_default(tmp_path: Path, embedder: Embedder) -> None:
    app = create_app(_config(tmp_path / "store"), keys=KEYS, embedder=embedder)
    with TestClient(app) as service:
        assert service.get("/health").status_code == 200
        assert app.state.consolidation.runs == 0
        assert app.state.consolidation.targets() == ["alice", "bob"]


def test_every_namespace_is_consolidated_in_the_background(tmp_path: Path,
                                                           embedder: Embedder) -> None:
    config = _config(tmp_path / "store", every_minutes=0.001)
    for namespace in ("alice", "bob"):
        asyncio.run(_fill(config, embedder, namespace))
    app = create_app(config, keys=KEYS, embedder=embedder)
    with TestClient(app) as service:
        periodic = app.state.consolidation
        assert service.portal is not None
        service.portal.call(asyncio.wait_for, periodic.wait_for_runs(1), 120)
        for namespace in ("alice", "bob"):
            report = periodic.last_reports[namespace]
            assert [c.sources for c in report.clusters] == [[f"{namespace}-0", f"{namespace}-1"]]
    after = MemorySystemClient(config, namespace="alice", embedder=embedder)

    async def live() -> list[str]:
        from DeepResearch.src.memory.backends.record import MemoryFilter

        await after.open()
        records = await after.backend.scan(MemoryFilter(namespaces=("alice",)))
        await after.close()
        return [r.id for r in records]

    ids = asyncio.run(live())
    assert len(ids) == 1 and ids[0].startswith("consolidated-")
