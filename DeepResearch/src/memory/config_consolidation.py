"""The `memory.consolidation` and `memory.pruning` sections: how near-duplicate memories are
merged and low-value ones archived (consolidation.py, `deepresearch-memory consolidate`)."""

from __future__ import annotations

from pydantic import Field, model_validator

from DeepResearch.src.memory.config_base import Section


class ConsolidationConfig(Section):
    """Memories of one namespace and memory type (and session, when asked) whose stored
    vectors have a cosine >= `similarity` and whose numbers, dates, ids and capitalised names
    are the same are merged into one; memories younger than `grace_hours` are left alone."""

    similarity: float = Field(default=0.92, gt=0.0, le=1.0)
    grace_hours: float = Field(default=24.0, ge=0.0, le=1e6)
    # the service runs consolidation (and pruning, when min_value is set) every this many
    # minutes in each namespace it serves; null = never
    every_minutes: float | None = Field(default=None, gt=0.0, le=1e6)
    block_rows: int = Field(default=1024, ge=1, le=1_000_000)  # rows per similarity block


class PruningWeights(Section):
    importance: float = Field(default=0.4, ge=0.0, le=100.0)
    recency: float = Field(default=0.3, ge=0.0, le=100.0)
    access: float = Field(default=0.2, ge=0.0, le=100.0)
    links: float = Field(default=0.1, ge=0.0, le=100.0)

    @model_validator(mode="after")
    def _some_weight(self) -> PruningWeights:
        if self.importance + self.recency + self.access + self.links <= 0:
            raise ValueError("weights: at least one of importance, recency, access, links "
                             "must be > 0")
        return self


class PruningConfig(Section):
    """A memory's value in [0, 1] is the weighted mean of its importance, its recency
    (halved every `half_life_days` since it was stored or last retrieved), its access count
    (saturating at `access_saturation`) and whether another memory or a fact links to it;
    pruning archives the memories valued below `min_value` (null = pruning off)."""

    min_value: float | None = Field(default=None, ge=0.0, le=1.0)
    grace_hours: float = Field(default=168.0, ge=0.0, le=1e6)
    half_life_days: float = Field(default=30.0, gt=0.0, le=1e6)
    access_saturation: int = Field(default=10, ge=1, le=1_000_000)
    weights: PruningWeights = Field(default_factory=PruningWeights)
