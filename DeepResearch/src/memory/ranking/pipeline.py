"""The one ranking pipeline: an ordered list of named steps, configured here and only here.

To add a step, write a class with `name`, `enabled(ctx)`, optionally `narrow(flt, ctx)`, and
an async `__call__(items, ctx)`, and insert an instance in `default_steps()` (or pass your own
list to `rank`). Each step reads its switches from retrieval config / the agent profile.
"""

from __future__ import annotations

from collections.abc import Sequence

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.ranking.coverage import SessionCoverage
from DeepResearch.src.memory.ranking.diversity import (
    Deduplicate,
    MaximalMarginalRelevance,
    Truncate,
)
from DeepResearch.src.memory.ranking.feedback import PseudoRelevanceFeedback
from DeepResearch.src.memory.ranking.graph import GraphPath
from DeepResearch.src.memory.ranking.neighbours import CrossReferenceExpansion, NeighbourSmoothing
from DeepResearch.src.memory.ranking.observations import ObservationPath
from DeepResearch.src.memory.ranking.thresholds import MaxAge, MinSimilarity
from DeepResearch.src.memory.ranking.time_query import TimeMatch
from DeepResearch.src.memory.ranking.types import RankingContext, RankingStep, ScoredMemory
from DeepResearch.src.memory.ranking.weighting import (
    FailurePatterns,
    Importance,
    ProfilePriorities,
    SuccessWeighting,
    TemporalDecay,
)


def default_steps() -> list[RankingStep]:
    """The pipeline, in order. Filters first, then pseudo-relevance feedback (more
    candidates, found from the best ones), the graph path (the evidence of the facts of the
    entities the query names), the observations' evidence, neighbour smoothing (on the fused
    relevance scores, adding session neighbours), score adjustments (the query's time range
    first), expansion, and the steps that shape the final list (de-duplication, then the
    coverage of distinct episodes, MMR, the cut)."""
    return [
        MinSimilarity(),
        MaxAge(),
        PseudoRelevanceFeedback(),
        GraphPath(),
        ObservationPath(),
        NeighbourSmoothing(),
        TimeMatch(),
        TemporalDecay(),
        Importance(),
        ProfilePriorities(),
        SuccessWeighting(),
        FailurePatterns(),
        CrossReferenceExpansion(),
        Deduplicate(),
        SessionCoverage(),
        MaximalMarginalRelevance(),
        Truncate(),
    ]


def narrow_filter(
    steps: Sequence[RankingStep], flt: MemoryFilter, ctx: RankingContext
) -> MemoryFilter:
    """The backend filter after every enabled step has tightened it."""
    for step in steps:
        if step.enabled(ctx):
            flt = step.narrow(flt, ctx)
    return flt


async def rank(
    items: list[ScoredMemory], ctx: RankingContext, steps: Sequence[RankingStep]
) -> list[ScoredMemory]:
    """Run every enabled step in order."""
    for step in steps:
        if step.enabled(ctx):
            items = await step(items, ctx)
    return items
