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
from DeepResearch.src.workflow.notes.taker import NoteTaker


def note_decider(cfg: DictConfig) -> NoteDecider:
    """Offline the deterministic scorer; with a real model the note agent."""
    if str(cfg.llm.provider) == "offline":
        return ScoreDecider()
    from DeepResearch.src.agents.models import build_model
    from DeepResearch.src.datatypes.agents import AgentType

    return AgentDecider(note_agent(build_model(cfg.llm, AgentType.SYNTHESIZER)))


def note_taker(cfg: DictConfig, run_id: Callable[[], str | None]) -> NoteTaker | None:
    settings = note_settings(cfg, resolve_flow(cfg))
    if not settings.enabled:
        return None
    return NoteTaker(settings, note_decider(cfg), run_id)
