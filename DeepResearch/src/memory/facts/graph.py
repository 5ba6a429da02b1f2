"""`FactGraph`: entities and time-aware facts over a MemorySystemClient's backend.

    graph = FactGraph(client)
    await graph.add_fact("Alice", "WORKS_AT", "Google", confidence=0.9, evidence="msg-1",
                         valid_at="2022-01", attributes={"role": "Software Engineer"})
    await graph.facts(subject="alice")             # current facts; include_history=True: all
    await graph.ingest(messages, channel_id="general")

The resolution, the time rules, the writes and the queries are `GraphCore` (graph_core.py);
this class adds the entry points of the helpers built on it (ingest, merge, import/export),
which import only the core: the dependency points one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from DeepResearch.src.memory.facts import io, merge
from DeepResearch.src.memory.facts.graph_core import (  # noqa: F401  (re-exported)
    FACT_SESSION,
    KNOWN_LIMIT,
    AmbiguousName,
    FactSpec,
    GraphCore,
    ambiguity,
)
from DeepResearch.src.memory.facts.ingest import IngestReport, ingest
from DeepResearch.src.memory.facts.views import EntityOut


class FactGraph(GraphCore):
    async def merge_entities(self, keep: str, other: str) -> EntityOut:
        """Make `other` (name, alias or id) part of `keep`: its names become aliases, every
        fact of it (history too) moves over with its evidence; `other` is deleted."""
        async with self.writing():
            return await merge.merge_entities(self, keep, other)

    async def export_jsonl(self, path: Any) -> int:
        """Every entity and fact (history too) of the namespace to a JSONL file (facts/io.py)."""
        return await io.export_jsonl(self, Path(path))

    async def import_jsonl(self, path: Any) -> dict[str, Any]:
        """Entities and facts from an export, as they were (ids, times, evidence)."""
        return await io.import_jsonl(self, Path(path))

    async def ingest(self, messages: Sequence[Any], channel_id: str | None = None,
                     *, model: Any = None) -> IngestReport:
        """Messages -> episode memories + extracted facts + PARTICIPATED_IN (see ingest.py)."""
        return await ingest(self, messages, channel_id, model=model)
