"""What a note is, and the settings of note-taking (`flows.<flow>.notes`)."""

from __future__ import annotations

from typing import Literal

from omegaconf import DictConfig
from pydantic import BaseModel, Field, ValidationError

from DeepResearch.src.workflow.errors import ConfigurationError

ConnectionType = Literal["validates", "informs", "contradicts", "extends"]


class CrossTaskConnection(BaseModel):
    connected_task: str
    connection_type: ConnectionType
    description: str


class NoteDecision(BaseModel):
    """Should this step's result be recorded? (The typed output of the note agent.)"""

    should_record: bool
    reasoning: str
    importance_score: int = Field(ge=1, le=10)
    connections: list[CrossTaskConnection] = Field(default_factory=list)


class TaskNote(BaseModel):
    task_id: str
    task_type: str
    description: str
    timestamp: str
    note_decision: NoteDecision
    observations: list[str] = Field(default_factory=list)
    key_findings: list[str] = Field(default_factory=list)  # "[source] text"
    quantitative_data: list[str] = Field(default_factory=list)
    cross_task_connections: list[CrossTaskConnection] = Field(default_factory=list)
    confidence_level: float = Field(ge=0.0, le=1.0)
    data_quality_notes: list[str] = Field(default_factory=list)
    follow_up_questions: list[str] = Field(default_factory=list)


class ChunkSynthesis(BaseModel):
    chunk: int
    task_ids: list[str]
    tokens: int
    integrated_findings: list[str]
    cross_task_synthesis: list[str]
    emergent_insights: list[str]
    confidence: float = Field(ge=0.0, le=1.0)
    compressed: bool = False


class NoteSettings(BaseModel):
    enabled: bool = True
    # who decides and synthesizes: `rules` (the deterministic scorer and extractive synthesis,
    # a few percent of an offline run) or `model` (the run's language model: a model call per
    # executed step and per chunk); the offline model always uses the rules
    taker: Literal["rules", "model"] = "rules"
    importance_threshold: int = Field(default=3, ge=1, le=10)
    chunk_size: int = Field(default=5, ge=1)  # notes per chunk (the issue suggests 5-10)
    token_budget: int = Field(default=1500, ge=50)  # tokens of notes per chunk, and of the
    # chunk syntheses the report is written from (older chunks are compressed to fit)


def note_settings(cfg: DictConfig, flow: str) -> NoteSettings:
    section = cfg.get("flows", {}).get(flow, {}).get("notes")
    if section is None:
        return NoteSettings()
    try:
        return NoteSettings.model_validate(dict(section))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}={e.get('input')!r}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigurationError(f"flows.{flow}.notes is invalid: {problems}") from exc
