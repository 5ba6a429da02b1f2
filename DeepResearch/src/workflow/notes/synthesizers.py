"""Who writes a chunk synthesis: offline the extractive, deterministic synthesize_chunk; with
a real model a pydantic-ai agent whose output is typed (ChunkContent)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field
from pydantic_ai import Agent

from DeepResearch.src.workflow.notes.models import ChunkSynthesis, TaskNote
from DeepResearch.src.workflow.notes.synthesis import count_tokens, note_text, synthesize_chunk


class ChunkContent(BaseModel):
    """What the synthesis agent writes for one chunk of notes."""

    integrated_findings: list[str]  # "[source] text", each once
    cross_task_synthesis: list[str]
    emergent_insights: list[str]
    confidence: float = Field(ge=0.0, le=1.0)


class ChunkSynthesizer(Protocol):
    async def synthesize(self, number: int, notes: Sequence[TaskNote]) -> ChunkSynthesis: ...


class ExtractiveSynthesizer:
    async def synthesize(self, number: int, notes: Sequence[TaskNote]) -> ChunkSynthesis:
        return synthesize_chunk(number, notes)


SYNTHESIS_INSTRUCTIONS = (
    "You integrate a researcher's notes on related tasks. Give the integrated findings (each "
    "once, as '[source] text', keeping the source of every finding), what the tasks say "
    "together (cross-task synthesis), insights that only several tasks together show, and your "
    "confidence from 0 to 1. Use only what the notes say."
)


class AgentSynthesizer:
    def __init__(self, agent: Agent[None, ChunkContent]) -> None:
        self.agent = agent

    async def synthesize(self, number: int, notes: Sequence[TaskNote]) -> ChunkSynthesis:
        payload = [n.model_dump(mode="json", exclude={"timestamp"}) for n in notes]
        content = (await self.agent.run(f"Notes:\n{json.dumps(payload, indent=1)}")).output
        return ChunkSynthesis(
            chunk=number,
            task_ids=[n.task_id for n in notes],
            tokens=sum(count_tokens(note_text(n)) for n in notes),
            **content.model_dump(),
        )


def synthesis_agent(model: Any) -> Agent[None, ChunkContent]:
    return Agent(model, output_type=ChunkContent, instructions=SYNTHESIS_INSTRUCTIONS)
