"""The `memory.summaries` section and `memory.retrieval.observations`: per-entity observation
memories (summaries.py, `deepresearch-memory summarize`) and the retrieval step that follows
them to their evidence (ranking/observations.py)."""

from __future__ import annotations

from pydantic import Field

from DeepResearch.src.memory.config_base import Section

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
