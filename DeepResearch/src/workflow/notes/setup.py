"""The NoteTaker of a run, from `flows.<flow>.notes` (None when notes are off)."""

from __future__ import annotations

from collections.abc import Callable

from omegaconf import DictConfig

from DeepResearch.src.workflow.flows import resolve_flow
from DeepResearch.src.workflow.notes.decide import (
    AgentDecider,
    NoteDecider,
    ScoreDecider,
    note_agent,
)
from DeepResearch.src.workflow.notes.models import note_settings
from DeepResearch.src.workflow.notes.synthesizers import (
    AgentSynthesizer,
    ChunkSynthesizer,
    ExtractiveSynthesizer,
    synthesis_agent,
)
from DeepResearch.src.workflow.notes.taker import NoteTaker


def note_agents(cfg: DictConfig, taker: str = "model") -> tuple[NoteDecider, ChunkSynthesizer]:
    """The deterministic scorer and the extractive synthesis (offline, or `taker: rules`);
    with a real model and `taker: model` the note agent and the synthesis agent."""
    if str(cfg.llm.provider) == "offline" or taker == "rules":
        return ScoreDecider(), ExtractiveSynthesizer()
    from DeepResearch.src.agents.models import build_model
    from DeepResearch.src.datatypes.agents import AgentType

    model = build_model(cfg.llm, AgentType.SYNTHESIZER)
    return AgentDecider(note_agent(model)), AgentSynthesizer(synthesis_agent(model))


def note_taker(cfg: DictConfig, run_id: Callable[[], str | None]) -> NoteTaker | None:
    settings = note_settings(cfg, resolve_flow(cfg))
    if not settings.enabled:
        return None
    decider, synthesizer = note_agents(cfg, settings.taker)
    return NoteTaker(settings, decider, run_id, synthesizer)
