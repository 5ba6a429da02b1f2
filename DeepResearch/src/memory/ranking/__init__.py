"""Ranking, written once above the backends: candidates (candidates.py), then the ordered
steps of pipeline.py. Each step lives in a small module by what it does."""

from DeepResearch.src.memory.ranking.candidates import CandidatePool, gather_candidates
from DeepResearch.src.memory.ranking.pipeline import default_steps, narrow_filter, rank
from DeepResearch.src.memory.ranking.types import (
    BaseStep,
    RankingContext,
    RankingStep,
    ScoredMemory,
    by_score,
)

__all__ = [
    "BaseStep",
    "CandidatePool",
    "RankingContext",
    "RankingStep",
    "ScoredMemory",
    "by_score",
    "default_steps",
    "gather_candidates",
    "narrow_filter",
    "rank",
]
