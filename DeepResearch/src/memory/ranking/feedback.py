"""Pseudo-relevance feedback: the best candidates say what the question is about in the
memories' own words, so memories that share those words join the candidates and climb.

- lexical (`terms` > 0): the `terms` words found in most of the `top` best candidates (and not
  in the query) are one more lexical search; every memory it finds gains `lexical_weight` x
  the best score x its lexical score / the best lexical score of that search. A question
  about several events ("what activities does she do?") matches the few memories that use its
  words; the names, places and topics of those memories find the others.
- dense (`dense_weight` > 0, Rocchio on the vectors): one more vector search for
  q + beta x the mean vector of the `top` best; every memory gains `dense_weight` x the best
  score x its min-max-normalised cosine to that vector. No extra encode.

New memories start from the candidate stage's score for their cosine (`ctx.score_unseen`) and
must pass the similarity floor, as neighbours do.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import numpy as np

from DeepResearch.src.memory.backends.base import Candidate
from DeepResearch.src.memory.ranking.thresholds import MinSimilarity
from DeepResearch.src.memory.ranking.types import BaseStep, RankingContext, ScoredMemory, by_score
from DeepResearch.src.memory.text import tokenize

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def feedback_terms(query: str, top: list[ScoredMemory], n: int) -> list[str]:
    """Up to n words of the top memories, those in most of them first (then in order of
    appearance), leaving out the query's words (compared as tokens: stemmed, no stop words)."""
    asked = set(tokenize(query))
    counts: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for m in top:
        seen: set[str] = set()
        for word in _WORD.findall(m.record.content):
            for token in tokenize(word):
                if token not in asked and token not in seen:
                    seen.add(token)
                    surface.setdefault(token, word)
        counts.update(seen)
    return [surface[t] for t, _ in counts.most_common(n)]


def feedback_vector(query: np.ndarray, top: list[ScoredMemory], beta: float) -> np.ndarray | None:
    """Unit-norm q + beta x the mean of the top memories' vectors; None without vectors."""
    vectors = [m.record.vector for m in top if m.record.vector is not None]
    if not vectors:
        return None
    moved = query + beta * np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else None


async def _nothing() -> list[Candidate]:
    return []


class PseudoRelevanceFeedback(BaseStep):
    name = "feedback"

    def enabled(self, ctx: RankingContext) -> bool:
        cfg = ctx.retrieval.feedback
        lexical = cfg.terms > 0 and cfg.lexical_weight > 0 and ctx.search_text is not None
        dense = cfg.dense_weight > 0 and ctx.search_vector is not None
        return cfg.enabled and (lexical or dense)

    async def __call__(self, items: list[ScoredMemory], ctx: RankingContext) -> list[ScoredMemory]:
        cfg = ctx.retrieval.feedback
        if not items:
            return items
        ranked = by_score(items)
        top = ranked[: cfg.top]
        depth = cfg.depth or ctx.retrieval.candidate_pool
        terms = feedback_terms(ctx.query, top, cfg.terms) if cfg.lexical_weight > 0 else []
        moved = feedback_vector(ctx.query_vector, top, cfg.beta) if cfg.dense_weight > 0 else None
        lexical, dense = await asyncio.gather(
            ctx.search_text(" ".join(terms), depth) if terms and ctx.search_text else _nothing(),
            ctx.search_vector(moved, depth) if moved is not None and ctx.search_vector else _nothing(),
        )
        pool = {m.record.id: m for m in items}
        self._admit(pool, [*lexical, *dense], ctx)
        step = max(abs(ranked[0].score), 1e-9)
        best = max((c.score for c in lexical), default=0.0)
        for cand in lexical if best > 0 else ():
            self._add(pool.get(cand.record.id), step * cfg.lexical_weight * cand.score / best)
        if moved is not None:
            sims = {rid: float(m.record.vector @ moved) for rid, m in pool.items()
                    if m.record.vector is not None}
            low, high = min(sims.values(), default=0.0), max(sims.values(), default=0.0)
            for rid, s in sims.items() if high > low else ():
                self._add(pool[rid], step * cfg.dense_weight * (s - low) / (high - low))
        return list(pool.values())

    @staticmethod
    def _admit(pool: dict[str, ScoredMemory], found: list[Candidate], ctx: RankingContext) -> None:
        """Found memories not yet candidates join, scored from their cosine to the query."""
        floor = MinSimilarity.threshold(ctx)
        for cand in found:
            record = cand.record
            if record.id in pool or not ctx.accept(record):
                continue
            similarity = float(record.vector @ ctx.query_vector) if record.vector is not None else 0.0
            if similarity < floor:
                continue
            pool[record.id] = ScoredMemory(
                record, similarity, ctx.score_unseen(similarity), {"dense": similarity}
            )

    def _add(self, m: ScoredMemory | None, bonus: float) -> None:
        if m is None:
            return
        m.score += bonus
        m.signals[self.name] = m.signals.get(self.name, 0.0) + bonus
