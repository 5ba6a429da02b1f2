"""A refusal never waits for the admitted requests' memory work: over a real uvicorn server
on 127.0.0.1 held at its limit (one slot, no queue) by a search whose memory work is stuck
in a synchronous step (a query-cache lookup that blocks until the test lets it go: any long
stretch of ranking Python stands for it), a second request is answered 503 `overloaded`
while that search still runs, and the search then completes. With the memory work on the
loop that serves HTTP, the second request was not even read until the step ended."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.service import create_app
from tests.test_service.conftest import ALICE, KEYS, h, serving

pytestmark = pytest.mark.unit
HELD_QUERY = "which aligner held the slot"
WAIT = 60.0  # seconds the test waits for anything before calling it a failure


class HeldEmbedder(Embedder):
    """The real embedder, whose query-cache lookup of HELD_QUERY blocks (synchronously, in
    whatever thread runs the retrieve) until `release` is set."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(real.model_name, runtime=real.runtime, loaded=real.model)
        self.entered = threading.Event()
        self.release = threading.Event()

    def cached(self, text: str) -> np.ndarray | None:
        if text == HELD_QUERY:
            self.entered.set()
            self.release.wait(WAIT)
        return super().cached(text)


@pytest.fixture
def held_service(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[str, HeldEmbedder]]:
    held = HeldEmbedder(embedder)
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "store")}, service={
        "log_requests": False, "tool_timeout_seconds": WAIT * 2,
        "admission": {"max_in_flight": 1, "max_queued": 0, "max_wait_seconds": WAIT}})
    with serving(create_app(config, keys=KEYS, embedder=held)) as url:
        try:
            yield url, held
        finally:
            held.release.set()  # a failed test does not leave the server's work loop stuck


def test_a_refusal_is_answered_while_the_admitted_work_runs(
        held_service: tuple[str, HeldEmbedder]) -> None:
    base, held = held_service

    async def run() -> tuple[httpx.Response | None, bool, httpx.Response, str]:
        async with httpx.AsyncClient(timeout=WAIT * 2, headers=h(ALICE)) as http:
            search = asyncio.ensure_future(
                http.post(f"{base}/api/memory/search", json={"query": HELD_QUERY}))
            assert await asyncio.to_thread(held.entered.wait, WAIT), "the search never ran"
            try:  # the slot is taken and the search is inside its memory work
                refusal = await http.post(f"{base}/api/memory/search",
                                          json={"query": "another question"}, timeout=10)
            except httpx.TimeoutException:
                refusal = None  # not answered while the memory work held the loop
            still_running = not search.done()
            held.release.set()
            answer = await search
            metrics = (await http.get(f"{base}/metrics")).text
            return refusal, still_running, answer, metrics

    refusal, still_running, answer, metrics = asyncio.run(run())
    assert refusal is not None, "the refusal waited for the admitted request's memory work"
    assert still_running  # answered before the admitted search could finish
    assert refusal.status_code == 503 and refusal.json()["error"] == "overloaded"
    assert refusal.json()["reason"] == "queue_full"
    assert answer.status_code == 200, answer.text  # the held search then completes
    found = re.search(r'^memory_admission_rejected_total\{reason="queue_full"\} (\S+)$',
                      metrics, re.M)
    assert found and float(found.group(1)) == 1
