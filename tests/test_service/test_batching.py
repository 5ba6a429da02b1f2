"""BatchingEmbedder: concurrent calls share encodes and get the vectors one call would."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.service.batching import BatchingEmbedder

pytestmark = pytest.mark.unit


def test_concurrent_calls_are_batched_and_exact(embedder: Embedder) -> None:
    batching = BatchingEmbedder(embedder, max_batch=16)
    texts = [f"note {i}: the aligner needs {i} GB" for i in range(40)]
    with ThreadPoolExecutor(16) as pool:
        vectors = list(pool.map(lambda t: batching.embed([t])[0], texts))
    expected = embedder.embed(texts)
    assert np.allclose(np.stack(vectors), expected, atol=1e-5)
    assert batching.calls == 40 and batching.batches < 40
    query = batching.embed_query("which aligner")
    assert np.allclose(query, embedder.embed(["which aligner"])[0], atol=1e-5)
    assert batching.dimension == embedder.dimension


def test_a_failure_reaches_every_waiting_caller(embedder: Embedder) -> None:
    class Broken:
        dimension = 384

        def embed(self, texts):
            raise RuntimeError("model gone")

    batching = BatchingEmbedder(Broken())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="model gone"):
        batching.embed(["x"])
    assert not batching._running  # the next caller leads again
