"""A second, static embedding as one more candidate list (a LoCoMo ablation variant; not part of the product).

A model2vec static model is distilled from the installed MiniLM weights (each token of the
vocabulary run through the transformer once, no PCA, SIF weighting 1e-4): a text's vector
is the mean of its tokens' vectors, so it matches on words rather than on the sentence, which
finds some of what the sentence model ranks low. `StaticVectors` keeps one such vector per
memory id; `StaticPath` searches it for the query (its own `depth` best) and min-max fuses
the list into the candidates: each memory gains `weight` x its static cosine min-max
normalised over that list (clamped to [0, 1]); one that was not a candidate joins, scored
from its sentence-model cosine on the candidate stage's scale, if the retrieve's filter and
the similarity floor allow it.

Distillation runs offline from the local weights (`resolve_model_path`), once, cached under
`$XDG_CACHE_HOME/deepresearch/static/` (else ~/.cache/...): ~60 s of CPU, 23 MB. Needs
`pip install model2vec skeletoken` (not project dependencies).

`ExpansionPath` uses the same model's vocabulary as a thesaurus: one more lexical search for
the words nearest to the query's content words.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from DeepResearch.src.memory.backends.base import Candidate
from DeepResearch.src.memory.ranking.candidates import dense_query_text
from DeepResearch.src.memory.ranking.feedback import PseudoRelevanceFeedback
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory

log = logging.getLogger("DeepResearch.static_path")

SIF_COEFFICIENT = 1e-4


def cache_folder(model: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "deepresearch" / "static" / f"{Path(model).name}-m2v-sif4"


def distill_static(model: str = "all-MiniLM-L6-v2") -> tuple[Path, float]:
    """The cached static model distilled from `model`'s local weights (distilled now if
    missing); and the seconds distilling took (0.0 when cached)."""
    target = cache_folder(model)
    if (target / "model.safetensors").exists():
        return target, 0.0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from model2vec.distill import distill_from_model
    except ImportError as exc:
        raise SystemExit(f"the static-model variants need model2vec and skeletoken "
                         f"(pip install model2vec skeletoken): {exc}") from exc
    from transformers import AutoModel, AutoTokenizer

    from DeepResearch.src.memory.embeddings import resolve_model_path

    started = time.perf_counter()
    path = resolve_model_path(model)
    weights = AutoModel.from_pretrained(path, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    static = distill_from_model(model=weights, tokenizer=tokenizer, pca_dims=None,
                                sif_coefficient=SIF_COEFFICIENT)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    static.save_pretrained(str(tmp))
    tmp.replace(target)
    seconds = time.perf_counter() - started
    log.info("distilled a static model from %s in %.1f s (%s)", model, seconds, target)
    return target, seconds


class StaticEncoder:
    """Unit-norm float32 vectors from a model2vec static model folder."""

    def __init__(self, folder: str | Path) -> None:
        from model2vec import StaticModel

        self.model: Any = StaticModel.from_pretrained(str(folder))

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self.model.encode(texts), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.maximum(norms, 1e-9))


class StaticVectors:
    """One static vector per memory id, searched exactly (inner product)."""

    def __init__(self, encoder: StaticEncoder) -> None:
        self.encoder = encoder
        self.ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._chunks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, ids: list[str], texts: list[str]) -> None:
        vectors = self.encoder.encode(texts)
        for rid in ids:
            self._rows[rid] = len(self.ids)
            self.ids.append(rid)
        self._chunks.append(vectors)
        self._matrix = None

    def matrix(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.concatenate(self._chunks) if self._chunks else np.zeros((0, 1))
            self._chunks = [self._matrix]
        return self._matrix

    def scores(self, query: str) -> np.ndarray:
        """The static cosine of every stored memory to `query`, in `ids` order."""
        q = self.encoder.encode([query])[0]
        return self.matrix() @ q

    def row(self, rid: str) -> int | None:
        return self._rows.get(rid)


class StaticPath(BaseStep):
    name = "static"

    def __init__(self, vectors: StaticVectors, weight: float = 0.5, depth: int = 0,
                 query: str = "as_written") -> None:
        self.vectors = vectors
        self.weight = weight
        self.depth = depth  # 0: the retrieval's candidate_pool
        self.query = query  # what it encodes: a dense_query mode (ranking/candidates.py)

    def enabled(self, ctx: RankingContext) -> bool:
        return self.weight > 0 and len(self.vectors) > 0 and ctx.fetch_records is not None

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        depth = self.depth or ctx.retrieval.candidate_pool
        scores = self.vectors.scores(dense_query_text(ctx.query, self.query))
        order = np.argsort(-scores)
        pool = {m.record.id: m for m in items}
        found: list[str] = []  # the static list: the best `depth` the filter passes
        start, batch = 0, 4 * depth
        while len(found) < depth and start < len(order):
            ids = [self.vectors.ids[i] for i in order[start:start + batch]]
            start += batch
            records = {r.id: r for r in await ctx.fetch_records(ids)}
            for rid in ids:
                record = records.get(rid)
                if record is not None and (rid in pool or ctx.accept(record)):
                    found.append(rid)
                    if rid not in pool:
                        PseudoRelevanceFeedback._admit(pool, [Candidate(record, 0.0)], ctx)
                    if len(found) == depth:
                        break
        if not found:
            return list(pool.values())
        listed = [float(scores[self.vectors.row(rid)]) for rid in found]
        high, low = max(listed), min(listed)
        if high <= low:
            return list(pool.values())
        for rid, m in pool.items():
            row = self.vectors.row(rid)
            if row is None:
                continue
            norm = min(1.0, max(0.0, (float(scores[row]) - low) / (high - low)))
            bonus = self.weight * norm
            m.score += bonus
            m.signals[self.name] = bonus
        return list(pool.values())



class TermNeighbours:
    """The static model's vocabulary as a thesaurus: the whole-word tokens nearest to a word
    (for "sports": soccer, football, baseball; for "pets": dogs, cats)."""

    def __init__(self, encoder: StaticEncoder, min_length: int = 3) -> None:
        self.encoder = encoder
        vocab = encoder.model.tokenizer.get_vocab()
        table = np.asarray(encoder.model.embedding, dtype=np.float32)
        rows = [(i, t) for t, i in vocab.items()
                if t.isalpha() and t.islower() and len(t) >= min_length and i < len(table)]
        self.tokens = [t for _, t in rows]
        vectors = table[[i for i, _ in rows]]
        self.vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)

    def near(self, word: str, n: int, floor: float) -> list[str]:
        q = self.encoder.encode([word])[0]
        sims = self.vectors @ q
        order = np.argsort(-sims)[: n + 1]
        stem = word.lower()[:4]
        return [self.tokens[i] for i in order
                if sims[i] >= floor and not self.tokens[i].startswith(stem)][:n]


class ExpansionPath(BaseStep):
    """One more lexical search for the words nearest, in the static model's vocabulary, to
    each content word of the query (words written with a capital, names, are not expanded);
    each memory it finds gains `weight` x the best score x its lexical score / the best one,
    and memories that were not candidates join (as pseudo-relevance feedback's do)."""

    name = "expansion"

    def __init__(self, neighbours: TermNeighbours, per_word: int = 8, floor: float = 0.5,
                 weight: float = 0.2, depth: int = 0) -> None:
        self.neighbours = neighbours
        self.per_word, self.floor, self.weight, self.depth = per_word, floor, weight, depth

    def enabled(self, ctx: RankingContext) -> bool:
        return self.weight > 0 and ctx.search_text is not None

    def terms(self, query: str) -> list[str]:
        from DeepResearch.src.memory.ranking.candidates import rewrite_query
        from DeepResearch.src.memory.text import tokenize

        out: list[str] = []
        for word in rewrite_query(query).split():
            if not word.islower() or not tokenize(word):  # a name, or a stop word
                continue
            out += [t for t in self.neighbours.near(word, self.per_word, self.floor)
                    if t not in out]
        return out

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        terms = self.terms(ctx.query)
        if not items or not terms:
            return items
        depth = self.depth or ctx.retrieval.candidate_pool
        found = await ctx.search_text(" ".join(terms), depth)
        pool = {m.record.id: m for m in items}
        PseudoRelevanceFeedback._admit(pool, found, ctx)
        step = max(abs(max(m.score for m in items)), 1e-9)
        best = max((c.score for c in found), default=0.0)
        for cand in found if best > 0 else ():
            m = pool.get(cand.record.id)
            if m is not None:
                bonus = step * self.weight * cand.score / best
                m.score += bonus
                m.signals[self.name] = bonus
        return list(pool.values())
