"""Facts from conversation messages: `extract` (offline rules, or a language model's typed
output when `model` is given) and `parse_messages` (dicts -> validated Messages).

The offline rules and their coverage table: `patterns`; the model path: `llm`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from DeepResearch.src.memory.facts.extraction.offline import OfflineExtractor
from DeepResearch.src.memory.facts.model import ENTITY_TYPES, ExtractionResult, Message
from DeepResearch.src.memory.facts.validation import parse_messages

PARTICIPATED_IN = "PARTICIPATED_IN"
OFF_LOOP_ABOVE = 100  # messages: a larger batch is extracted in a worker thread

__all__ = ["OfflineExtractor", "extract", "parse_messages"]


async def extract(
    messages: Sequence[Message], *, model: Any = None,
    predicates: Sequence[str] | None = None, entity_types: Sequence[str] | None = None,
) -> ExtractionResult:
    """The facts stated in `messages` (one conversation, in order).

    `model=None`: the deterministic offline rules (`patterns` lists what they cover).
    Otherwise `model` is a pydantic-ai model or model name ("openai:gpt-4o"): the model
    lists the facts as typed output; output that does not validate after one retry is
    reported in `problems` naming the message ids, never dropped silently.
    `predicates` / `entity_types` (default: the built-in ones) restrict what is kept.
    """
    if model is None:
        extractor = OfflineExtractor()
        if len(messages) > OFF_LOOP_ABOVE:  # ~0.3 ms a message: keep the event loop free
            result = await asyncio.to_thread(extractor.extract, messages)
        else:
            result = extractor.extract(messages)
        if predicates is not None:
            result.facts = [f for f in result.facts if f.predicate in predicates]
        return result
    from DeepResearch.src.memory.facts.extraction.llm import (
        EXTRACTED_PREDICATES,
        extract_with_model,
    )

    chosen = EXTRACTED_PREDICATES if predicates is None else tuple(predicates)
    return await extract_with_model(
        messages, model,
        predicates=tuple(p for p in chosen if p != PARTICIPATED_IN),  # ingest writes those
        entity_types=tuple(entity_types or ENTITY_TYPES),
    )
