"""BatchingEmbedder: concurrent calls share encodes and get the vectors one call would."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.service.batching import BatchingEmbedder

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
        while batching.calls < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        gated.gate.set()
        vectors = [f.result(timeout=60) for f in futures]
    # the first caller's text alone, then the 39 that queued behind it, 16 at most per encode
    assert gated.encodes == [1, 16, 16, 7]
    expected = embedder.embed(texts)
    assert np.allclose(np.stack(vectors), expected, atol=1e-5)
    query = batching.embed_query("which aligner")
    assert np.allclose(query, embedder.embed(["which aligner"])[0], atol=1e-5)
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
