"""The candidate stage: dense candidates, optionally fused with lexical ones.

Fusion (retrieval.fusion):
- `minmax`: dense cosine min-max-normalised over the candidates, plus lexical_weight x the
  lexical score divided by the best lexical score (0 when a memory is not a lexical match).
  Keeps how far apart scores are, which rank fusion throws away.
- `rrf`: reciprocal rank fusion, scaled so rank 1 in both lists scores 1.0.
`CandidatePool.score_unseen` scores a memory found later (e.g. a session neighbour) on the
same scale, from its cosine similarity alone.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable
from dataclasses import dataclass

import numpy as np

from DeepResearch.src.memory.backends.base import Candidate, MemoryBackend, MemoryFilter
from DeepResearch.src.memory.config import RetrievalConfig
from DeepResearch.src.memory.ranking.types import ScoredMemory
from DeepResearch.src.memory.text import tokenize

# -- the lexical query: drop the words that shape a question (interrogatives, auxiliaries,
# vague nouns, hedges) so BM25 weighs the content words; the dense query is left as
# written (the embedding model reads whole questions well).
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

# General English question scaffolding, beyond text.py's stop words (which already drop
# what/when/where/who/why/how/did/does/...). Nothing here names a data set or a topic.
QUESTION_WORDS = frozenset(
    """what when where which who whom whose why how whatever whenever wherever however
    is are was were be been being am do does did done doing has have had having
    can could would should shall will may might must ought
    ever also else likely probably possibly perhaps maybe
    kind kinds type types sort sorts way ways thing things something anything everything
    one ones much many often
    a an the of to in on at for with by from about as into""".split()
)


def rewrite_query(query: str, words: frozenset[str] = QUESTION_WORDS) -> str:
    """The query's words minus question scaffolding, in order; the query unchanged if nothing
    would be left."""
    kept = [w for w in _WORD.findall(query) if w.lower() not in words]
    return " ".join(kept) if kept else query


_SENTENCE_END = re.compile(r"[.!?:;\"“”]$")


def _is_name(word: str) -> bool:
    """A capitalised word ("Dana", "Paris's"), not "I" nor an all-capitals acronym ("LGBTQ",
    "API": what a memory is about more often than who)."""
    letters = [c for c in word if c.isalpha()]
    if not letters or not letters[0].isupper() or word.startswith(("I'", "I’")) or word == "I":
        return False
    head = word.split("'")[0].split("’")[0]
    return not (len(head) > 1 and head.isupper())


def dense_query_text(query: str, mode: str = "as_written") -> str:
    """The text the dense search embeds (retrieval.dense_query). `without_names`: the query
    minus the capitalised words that do not start a sentence (names of people, places,
    organisations; "I" and acronyms kept), so the vector carries what is asked about, not who:
    a name pulls every memory that mentions the person whatever its topic, and the lexical
    list, which reads the query as written, matches names exactly. The query unchanged if
    no content word would be left, or if most of its words would go (a title-case query)."""
    if mode == "as_written":
        return query
    words = query.split()
    kept = [
        w for i, w in enumerate(words)
        if not _is_name(w) or i == 0 or _SENTENCE_END.search(words[i - 1])
    ]
    text = " ".join(kept)
    return text if tokenize(text) and 2 * len(kept) > len(words) else query


@dataclass(slots=True)
class CandidatePool:
    items: list[ScoredMemory]
    fusion: str = "dense"  # dense | rrf | minmax
    dense_min: float = 0.0
    dense_span: float = 0.0

    def score_unseen(self, similarity: float) -> float:
        """The fused score of a memory in neither candidate list, given its cosine."""
        if self.fusion == "dense":
            return similarity
        if self.fusion == "rrf" or self.dense_span <= 0:
            return 0.0
        return min(1.0, max(0.0, (similarity - self.dense_min) / self.dense_span))


async def gather_candidates(
    backend: MemoryBackend,
    query: str,
    query_vector: np.ndarray | Awaitable[np.ndarray],
    flt: MemoryFilter,
    n: int,
    retrieval: RetrievalConfig,
    topic_vector: Awaitable[np.ndarray] | None = None,
) -> CandidatePool:
    """Up to 2n candidates: the n nearest by vector and, with retrieval.hybrid, the n best
    lexical matches (for the query rewritten when retrieval.query_rewrite), fused.

    `query_vector` may be an awaitable (the query still being embedded). A lexical search
    that runs on a server (`backend.lexical_in_process` false) starts at once and overlaps
    the embedding. One that runs in this process waits for the vector, then runs beside the
    dense search: it needs the GIL, and so does the model's Python-level forward pass, so
    overlapping them slowed the embedding by as much as the search took."""
    lexical_query = rewrite_query(query) if retrieval.query_rewrite else query

    lexical_task = (
        asyncio.ensure_future(backend.text_search(lexical_query, n, flt))
        if retrieval.hybrid and not backend.lexical_in_process
        else None
    )
    lexical: list[Candidate] | None = None
    try:
        vector = query_vector if isinstance(query_vector, np.ndarray) else await query_vector
        if retrieval.hybrid and lexical_task is None:
            dense, lexical = await asyncio.gather(
                backend.vector_search(vector, n, flt), backend.text_search(lexical_query, n, flt)
            )
        else:
            dense = await backend.vector_search(vector, n, flt)
    except BaseException:
        if lexical_task is not None:
            lexical_task.cancel()
        raise
    if lexical_task is not None:
        lexical = await lexical_task
    topic: np.ndarray | None = None
    if topic_vector is not None:  # dense_query "both": the name-free query's list
        topic = await topic_vector
        dense = _union(dense, await backend.vector_search(topic, n, flt), vector)
    if lexical is None:
        items = [ScoredMemory(c.record, c.score, c.score, {"dense": c.score}) for c in dense]
        return _add_topic(CandidatePool(items), topic, retrieval.dense_query_weight)
    pool = _merge(dense, lexical, vector)
    if retrieval.fusion == "rrf":
        return _add_topic(_rrf(pool, retrieval.rrf_k), topic, retrieval.dense_query_weight)
    return _add_topic(_minmax(pool, retrieval.lexical_weight), topic,
                      retrieval.dense_query_weight)


def _union(dense: list[Candidate], more: list[Candidate], query_vector: np.ndarray
           ) -> list[Candidate]:
    """`dense` then the memories only `more` found, each scored by its cosine to the query
    (what the dense list's scores are), in that order."""
    seen = {c.record.id for c in dense}
    extra = [
        Candidate(c.record, float(c.record.vector @ query_vector) if c.record.vector is not None
                  else 0.0)
        for c in more if c.record.id not in seen
    ]
    return dense + sorted(extra, key=lambda c: -c.score)


def _add_topic(pool: CandidatePool, topic: np.ndarray | None, weight: float) -> CandidatePool:
    """Each candidate gains `weight` x its cosine to the name-free query vector, min-max
    normalised over the candidates (dense_query "both")."""
    if topic is None or weight <= 0:
        return pool
    sims = {id(m): float(m.record.vector @ topic) for m in pool.items if m.record.vector is not None}
    low, high = min(sims.values(), default=0.0), max(sims.values(), default=0.0)
    if high <= low:
        return pool
    for m in pool.items:
        if id(m) in sims:
            bonus = weight * (sims[id(m)] - low) / (high - low)
            m.score += bonus
            m.signals["topic"] = bonus
    return pool


def _merge(
    dense: list[Candidate], lexical: list[Candidate], query_vector: np.ndarray
) -> list[ScoredMemory]:
    """One item per memory of either list, with its cosine, lexical score and ranks."""
    items: dict[str, ScoredMemory] = {}
    for rank, cand in enumerate(dense, start=1):
        items[cand.record.id] = ScoredMemory(
            cand.record, cand.score, 0.0, {"dense": cand.score, "dense_rank": rank}
        )
    for rank, cand in enumerate(lexical, start=1):
        item = items.get(cand.record.id)
        if item is None:
            vector = cand.record.vector
            similarity = float(vector @ query_vector) if vector is not None else 0.0
            item = ScoredMemory(cand.record, similarity, 0.0, {"dense": similarity})
            items[cand.record.id] = item
        item.signals["lexical"] = cand.score
        item.signals["lexical_rank"] = rank
    return list(items.values())


def _rrf(pool: list[ScoredMemory], k: int) -> CandidatePool:
    scale = (k + 1) / 2.0
    for item in pool:
        score = 0.0
        for key in ("dense_rank", "lexical_rank"):
            if key in item.signals:
                score += scale / (k + item.signals[key])
        item.score = item.signals["rrf"] = score
    return CandidatePool(pool, "rrf")


def _minmax(pool: list[ScoredMemory], lexical_weight: float) -> CandidatePool:
    if not pool:
        return CandidatePool(pool, "minmax")
    sims = [m.similarity for m in pool]
    low, span = min(sims), max(sims) - min(sims)
    best_lexical = max((m.signals.get("lexical", 0.0) for m in pool), default=0.0)
    for item in pool:
        dense = (item.similarity - low) / span if span > 0 else 0.0
        lexical = item.signals.get("lexical", 0.0) / best_lexical if best_lexical > 0 else 0.0
        item.score = item.signals["minmax"] = dense + lexical_weight * max(0.0, lexical)
    return CandidatePool(pool, "minmax", low, span)
