"""Concurrent queries share forward passes (Embedder.embed_query, EmbedBatcher): queries
asked from several threads while a pass runs are embedded together in the next one, each
gets exactly the vector a call of its own gives, and the query cache keeps answering."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from DeepResearch.src.memory.embeddings import QUERY_BATCH, Embedder

pytestmark = pytest.mark.unit
WAIT = 60.0


class GatedEmbedder(Embedder):
    """The real model (shared, not loaded again), whose first forward pass waits until the
    test opens the gate: the queries asked meanwhile must queue, so what gets batched does
    not depend on the machine's speed. `passes` records the texts of each forward pass."""

    def __init__(self, real: Embedder) -> None:
        super().__init__(real.model_name, runtime=real.runtime, loaded=real.model)
        self.gate = threading.Event()
        self.passes: list[int] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.gate.wait(WAIT)
        self.passes.append(len(texts))
        return super().embed(texts)


def asked_from_threads(gated: GatedEmbedder, queries: list[str]) -> list[np.ndarray]:
    with ThreadPoolExecutor(len(queries)) as pool:
        futures = [pool.submit(gated.embed_query, q) for q in queries]
        deadline = time.monotonic() + WAIT
        while gated.query_stats()["queries"] < len(queries):  # all asked, one pass held
            assert time.monotonic() < deadline, "the queries never arrived"
            time.sleep(0.005)
        gated.gate.set()
        return [f.result(timeout=WAIT) for f in futures]


def test_concurrent_queries_share_passes_and_get_their_own_vectors(embedder: Embedder) -> None:
    gated = GatedEmbedder(embedder)
    queries = [f"which aligner did run {i} use on node {i % 7}" for i in range(QUERY_BATCH + 8)]
    vectors = asked_from_threads(gated, queries)
    # the first query alone, then every one queued behind it, QUERY_BATCH at most a pass
    assert gated.passes == [1, QUERY_BATCH, 7]
    assert gated.query_stats() == {"queries": len(queries), "passes": 3}
    singles = np.stack([embedder.embed([q])[0] for q in queries])
    assert np.abs(np.stack(vectors) - singles).max() <= 1e-6
    # the cache keeps them: asked again, no forward pass runs
    again = gated.embed_query(queries[5])
    assert np.abs(again - singles[5]).max() <= 1e-6
    assert gated.query_stats()["passes"] == 3 and gated.passes == [1, QUERY_BATCH, 7]


def test_the_same_query_asked_twice_at_once_is_embedded_once(embedder: Embedder) -> None:
    gated = GatedEmbedder(embedder)
    queries = ["first", "the same question", "the same question", "the same question"]
    vectors = asked_from_threads(gated, queries)
    assert gated.passes == [1, 1]  # the three alike share one text of the second pass
    assert all(np.array_equal(v, vectors[1]) for v in vectors[2:])


def test_a_failed_pass_reaches_its_callers_and_the_next_query_runs(embedder: Embedder) -> None:
    class Failing(GatedEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            if "broken" in texts:
                raise RuntimeError("model gone")
            return super().embed(texts)

    failing = Failing(embedder)
    failing.gate.set()
    with pytest.raises(RuntimeError, match="model gone"):
        failing.embed_query("broken")
    assert failing.embed_query("fine").shape == (embedder.dimension,)  # not left waiting
