"""`BatchingEmbedder`: concurrent requests' texts embedded together.

A service embeds for many requests at once (each store's content, each search's query), each
call in its own worker thread. One encode of 40 short texts costs a few times one of a single
text; 40 encodes side by side fight over the same cores. Here the first caller runs the
model on everything waiting (up to `max_batch` texts), callers that arrive meanwhile queue
and are served by the next batch. Vectors are the same as one call per text."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from DeepResearch.src.memory.embeddings import Embedder


class BatchingEmbedder:
    def __init__(self, inner: Embedder, max_batch: int = 64) -> None:
        self.inner = inner
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._waiting: list[tuple[list[str], Future[np.ndarray]]] = []
        self._running = False
        self.batches = 0  # encodes run (for tests and metrics)
        self.calls = 0

    def __getattr__(self, name: str) -> Any:  # dimension, model_name, _model, cached, prime, ...
        return getattr(self.inner, name)

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts or len(texts) >= self.max_batch:
            return self.inner.embed(texts)
        done: Future[np.ndarray] = Future()
        with self._lock:
            self.calls += 1
            self._waiting.append((texts, done))
            lead = not self._running
            self._running = True
        if lead:
            self._drain()
        return done.result()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._running = False
                    return
                batch, size = [], 0
                while self._waiting and (not batch or size + len(self._waiting[0][0]) <= self.max_batch):
                    item = self._waiting.pop(0)
                    batch.append(item)
                    size += len(item[0])
            self.batches += 1
            try:
                vectors = self.inner.embed([t for texts, _ in batch for t in texts])
            except BaseException as exc:  # every waiting caller hears of it
                for _, done in batch:
                    done.set_exception(exc)
                continue
            start = 0
            for texts, done in batch:
                done.set_result(vectors[start:start + len(texts)])
                start += len(texts)

    def embed_query(self, text: str) -> np.ndarray:
        cached = self.inner.cached(text)
        if cached is not None:
            return cached
        return self.inner.prime(text, self.embed([text])[0])
