"""Optional cross-encoder reranking (retrieval.enable_reranking + retrieval.reranker_model, a
local sentence-transformers CrossEncoder folder; never fetched from a hub)."""

from __future__ import annotations

import math
import threading
from functools import lru_cache
from typing import Any

from DeepResearch.src.memory.compression import full_content
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory

_load_lock = threading.Lock()


@lru_cache(maxsize=2)
def _cross_encoder(path: str) -> Any:
    with _load_lock:
        from sentence_transformers import CrossEncoder

        try:
            return CrossEncoder(path, device="cpu", local_files_only=True)
        except Exception as exc:
            raise RuntimeError(
                f"memory.retrieval.reranker_model={path!r}: cannot load a CrossEncoder from it "
                f"offline ({exc}); give a local model folder"
            ) from exc


class CrossEncoderRerank(BaseStep):
    """score = sigmoid(cross-encoder logit) for each candidate (query, full content)."""

    name = "rerank"

    def enabled(self, ctx: RankingContext) -> bool:
        return ctx.retrieval.enable_reranking

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        if not items:
            return items
        assert ctx.retrieval.reranker_model is not None
        model = _cross_encoder(ctx.retrieval.reranker_model)
        pairs = [
            (ctx.query, full_content(m.record.content, m.record.content_codec, m.record.content_blob))
            for m in items
        ]
        for m, logit in zip(items, model.predict(pairs), strict=True):
            m.score = 1.0 / (1.0 + math.exp(-float(logit)))
            m.signals[self.name] = m.score
        return items
