"""The sections of the memory's upkeep jobs: `memory.consolidation` and `memory.pruning` (how
near-duplicate memories are merged and low-value ones archived: consolidation.py,
`deepresearch-memory consolidate`), `memory.summaries` (per-entity observation memories:
summaries.py, `deepresearch-memory summarize`) and `memory.retrieval.observations` (the
retrieval step that follows them to their evidence: ranking/observations.py)."""

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


OBSERVATION = "observation"  # the memory_type of an observation (summaries.py)


class SummariesConfig(Section):
    """Each entity's memories (those whose metadata `entity_key` names it, per session) are
    grouped by topic (bisecting 2-means over their vectors, at most `group_size` a group; an
    entity with fewer than `min_memories` gets none) and each group becomes ONE observation
    memory (memory_type "observation"): the entity's name, then the texts of the group's
    `sentences` memories nearest its centre; it REFERENCES every memory of the group."""

    entity_key: str = Field(default="author_name", min_length=1, max_length=200)
    group_size: int = Field(default=8, ge=2, le=10_000)
    min_memories: int = Field(default=4, ge=2, le=1_000_000)
    sentences: int = Field(default=4, ge=1, le=100)
    max_chars: int = Field(default=1000, ge=50, le=1_000_000)


class ObservationsConfig(Section):
    """Retrieval through observations: the `top` best-ranked observation memories among the
    candidates bring their evidence in; each evidence memory gains `weight` x that
    observation's score (the best, when several name it); one the candidate stage missed joins
    with its cosine on the stage's scale. With `keep` false the observations themselves leave
    the list (they lead to memories; they are not one)."""

    enabled: bool = False
    top: int = Field(default=3, ge=1, le=1000)
    weight: float = Field(default=0.1, ge=0.0, le=10.0)
    keep: bool = False
