"""`BatchingEmbedder`: the service's embedder, whose stores' texts are embedded together.

A service embeds for many requests at once, each call in its own worker thread. One encode
of 40 short texts costs a few times one of a single text; 40 encodes side by side fight over
the same cores. Here concurrent `embed` calls (the texts of stores, ingests, facts) share
forward passes (embeddings.EmbedBatcher, up to `max_batch` texts a pass); queries are
batched the same way, apart, by the Embedder itself (`Embedder.embed_query`), so a search
never waits behind a large store's encode. Vectors are the same as one call per text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from DeepResearch.src.memory.embeddings import EmbedBatcher, Embedder


class BatchingEmbedder:
    def __init__(self, inner: Embedder, max_batch: int = 64) -> None:
        self.inner = inner
        self.max_batch = max_batch
        self._texts = EmbedBatcher(inner.embed, max_batch)

    def __getattr__(self, name: str) -> Any:  # model_name, _model, cached, prime, query_stats ...
        return getattr(self.inner, name)

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts or len(texts) >= self.max_batch:
            return self.inner.embed(texts)
        return self._texts.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def text_stats(self) -> dict[str, int]:
        """`embed` calls that shared passes and the forward passes they took."""
        return {"calls": self._texts.calls, "passes": self._texts.passes}
