"""BatchingEmbedder: concurrent `embed` calls (stores' texts) share encodes and get the
vectors one call would; concurrent searches share query passes, shown in /metrics."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest

from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.service import create_app
from DeepResearch.src.memory.service.batching import BatchingEmbedder
from tests.test_service.conftest import ALICE, KEYS, h, serving

pytestmark = pytest.mark.unit


class GatedEmbedder:
    """The real embedder, whose first encode waits until the test opens the gate: the calls
    that arrive meanwhile must queue, so what gets batched does not depend on timing."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.dimension = inner.dimension
        self.gate = threading.Event()
        self.encodes: list[int] = []  # texts per encode, in order

    def embed(self, texts):
        self.gate.wait(timeout=60)
        self.encodes.append(len(texts))
        return self.inner.embed(texts)

    def cached(self, text):
        return None

    def prime(self, text, vector):
        return vector


def test_concurrent_calls_are_batched_and_exact(embedder: Embedder) -> None:
    gated = GatedEmbedder(embedder)
    batching = BatchingEmbedder(gated, max_batch=16)  # type: ignore[arg-type]
    texts = [f"note {i}: the aligner needs {i} GB" for i in range(40)]
    with ThreadPoolExecutor(40) as pool:
        futures = [pool.submit(lambda t: batching.embed([t])[0], t) for t in texts]
        deadline = time.monotonic() + 60
        while batching.text_stats()["calls"] < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        gated.gate.set()
        vectors = [f.result(timeout=60) for f in futures]
    # the first caller's text alone, then the 39 that queued behind it, 16 at most per encode
    assert gated.encodes == [1, 16, 16, 7]
    assert batching.text_stats() == {"calls": 40, "passes": 4}
    expected = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.abs(np.stack(vectors) - expected).max() <= 1e-6
    assert batching.dimension == embedder.dimension


def test_a_failure_reaches_every_waiting_caller_and_the_next_one_leads() -> None:
    class Broken:
        dimension = 384

        def embed(self, texts):
            raise RuntimeError("model gone")

    batching = BatchingEmbedder(Broken())  # type: ignore[arg-type]
    with ThreadPoolExecutor(2) as pool:
        for _ in range(2):  # a second call after the failure is served, not left waiting
            with pytest.raises(RuntimeError, match="model gone"):
                pool.submit(batching.embed, ["x"]).result(timeout=30)


class FirstQueryPassHeld(Embedder):
    """The real model, whose next forward pass after `hold.set()` waits for `release`."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(real.model_name, runtime=real.runtime, loaded=real.model)
        self.hold = threading.Event()
        self.release = threading.Event()

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if self.hold.is_set():
            self.hold.clear()
            self.release.wait(60)
        return super().embed(texts)


def test_concurrent_searches_share_query_passes_shown_in_metrics(
        tmp_path: Path, embedder: Embedder) -> None:
    held = FirstQueryPassHeld(embedder)
    n = 4  # fewer than the work loop's worker threads (each query embeds in one)
    # the store embeds inline: the held pass is the first query's, not its vector's fill
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "store")},
                          storage={"vectors": "inline"}, service={
        "log_requests": False, "admission": {"max_in_flight": n, "max_queued": 0}})

    async def run(base: str) -> tuple[list[int], dict[str, float]]:
        async with httpx.AsyncClient(timeout=120, headers=h(ALICE)) as http:
            stored = await http.post(f"{base}/api/memory/memories",
                                     json={"content": "the aligner needs 32 GB on node 7"})
            assert stored.status_code == 200, stored.text
            held.hold.set()  # the first query pass waits: the others queue behind it
            searches = [asyncio.ensure_future(http.post(
                f"{base}/api/memory/search", json={"query": f"which aligner, run {i}?"}))
                for i in range(n)]
            deadline = time.monotonic() + 60
            while embedding_metrics(await http.get(f"{base}/metrics"))["queries"] < n:
                assert time.monotonic() < deadline, "the searches never reached the model"
                await asyncio.sleep(0.02)
            held.release.set()
            codes = [r.status_code for r in await asyncio.gather(*searches)]
            return codes, embedding_metrics(await http.get(f"{base}/metrics"))

    with serving(create_app(config, keys=KEYS, embedder=held)) as base:
        try:
            codes, seen = asyncio.run(run(base))
        finally:
            held.release.set()
    assert codes == [200] * n
    assert seen == {"queries": n, "passes": 2}  # the held one, then the 3 queued together


def embedding_metrics(r: httpx.Response) -> dict[str, float]:
    found = {}
    for key, name in (("queries", "memory_query_embeddings_total"),
                      ("passes", "memory_query_embedding_passes_total")):
        match = re.search(rf"^{name} (\S+)$", r.text, re.M)
        assert match, f"{name} not in /metrics"
        found[key] = float(match.group(1))
    return found
