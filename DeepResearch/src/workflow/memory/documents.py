"""Facts from the documents a run reads, into the knowledge graph (memory/facts/).

Each successful `read_document` tool run hands its text to the offline extractor as one
Message: author = the document's title (or source), message_id = the document's source, so
every fact found keeps the document as its evidence and later runs can ask the graph (the
fact tools) what the documents said. Of the names a document merely mentions, the
MAX_MENTIONS most frequent are kept. Only documents actually read are processed (what
`read_document` returned, not search excerpts), each once per run; extraction is rules only
(about a millisecond per kilobyte) and the facts are written in one batch when the run ends.

With memory off this listener is never created; `flows.<flow>.memory.document_facts=false`
leaves it idle. A failed write costs the run nothing but a line in its memory problems; facts
the backend could not take (down, full disk, ...) go to the run's spill file with its
unwritten memories, and `deepresearch-memory import` writes them to the graph later.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from DeepResearch.src.datatypes.execution import ExecutionStatus
from DeepResearch.src.memory.errors import MemoryInputError, MemorySubsystemError
from DeepResearch.src.memory.facts.extraction import OfflineExtractor
from DeepResearch.src.memory.facts.model import ExtractedFact, ExtractionResult, Message
from DeepResearch.src.tools.runner import ToolRunEvent

if TYPE_CHECKING:
    from DeepResearch.src.workflow.memory.run_context import MemoryRun
    from DeepResearch.src.workflow.state import ResearchState

log = logging.getLogger("DeepResearch.memory")

READ_TOOL = "read_document"
_MARKUP = re.compile(r"^[ \t]*(?:#{1,6}|[-*+>]|\d+[.)])[ \t]+", re.MULTILINE)
# A document is the subject of what it mentions; "Topic" is the closest built-in type.
DOCUMENT_TYPE = "Topic"
# Names a document mentions, kept per document: the most frequent ones (each fact costs an
# embedding when written; a reference list of 40 tools should not cost 40).
MAX_MENTIONS = 8


def document_message(data: Any, read_at: float) -> Message | None:
    """The Message of one read_document result ({source, title, content, ...}); None when
    it has no text."""
    if not isinstance(data, Mapping):
        return None
    source, content = data.get("source"), data.get("content")
    if not isinstance(source, str) or not source.strip() or not isinstance(content, str):
        return None
    if not content.strip():
        return None
    title = data.get("title")
    title = title.strip() if isinstance(title, str) and title.strip() else source
    text = _MARKUP.sub("", content)  # "# Heading", "- item", "> quote": the words only
    return Message(message_id=source, author_id=source, author_name=title, content=text,
                   timestamp=read_at)


def document_facts(data: Any, read_at: float | None = None) -> ExtractionResult:
    """The facts the offline extractor finds in one read document (evidence: its source)."""
    message = document_message(data, time.time() if read_at is None else read_at)
    if message is None:
        return ExtractionResult()
    extractor = OfflineExtractor(author_type=DOCUMENT_TYPE, mention_type=DOCUMENT_TYPE)
    result = extractor.extract([message])
    mentions = [f for f in result.facts if f.predicate == "MENTIONED"]
    if len(mentions) > MAX_MENTIONS:
        text = message.content
        ranked = sorted(mentions, key=lambda f: (-text.count(f.object), text.find(f.object)))
        dropped = {id(f) for f in ranked[MAX_MENTIONS:]}
        result.facts = [f for f in result.facts if id(f) not in dropped]
    return result


class DocumentFactCollector:
    """A ToolRunListener: facts of each document read, written to the graph at run end."""

    def __init__(self) -> None:
        self.run: MemoryRun | None = None
        self.pending: list[ExtractedFact] = []
        self.problems: list[str] = []
        self._read: set[str] = set()  # sources already taken this run

    def start(self, run: MemoryRun) -> None:
        """Collect for `run`, unless its flow turned this off (memory.document_facts)."""
        self.run = run if run.settings.document_facts else None
        self.pending, self.problems, self._read = [], [], set()

    def stop(self) -> None:
        self.run = None

    def export(self) -> dict[str, Any]:
        """What a checkpoint keeps, so a resumed run writes the facts of the documents the
        killed run read before it (they are written to the graph only at the run's end)."""
        return {"pending": [asdict(f) for f in self.pending], "problems": list(self.problems),
                "read": sorted(self._read)}

    def restore(self, data: Mapping[str, Any]) -> None:
        self.pending[:0] = [ExtractedFact(**f) for f in data.get("pending", [])]
        self.problems[:0] = list(data.get("problems", []))
        self._read |= set(data.get("read", []))

    async def on_tool_run(self, event: ToolRunEvent) -> None:
        item = event.item
        if (self.run is None or item.tool != READ_TOOL
                or item.status is not ExecutionStatus.SUCCESS):
            return
        data = item.result
        source = data.get("source") if isinstance(data, Mapping) else None
        if not isinstance(source, str) or source in self._read:
            return
        self._read.add(source)
        found = document_facts(data)
        self.pending += found.facts
        self.problems += found.problems

    async def flush(self, state: ResearchState | None = None) -> int:
        """Hand the pending facts to the graph (one write); the number stored."""
        run, facts, self.pending = self.run, self.pending, []
        if run is None or not facts:
            return 0
        from DeepResearch.src.memory.facts.graph import FactGraph

        started = time.perf_counter()
        graph = FactGraph(run.client, run.config.facts)
        specs = []
        for i, fact in enumerate(facts):
            try:
                specs.append(graph.spec(fact, i))
            except MemorySubsystemError as exc:  # e.g. a predicate configured away
                self.problems.append(str(exc))
        try:
            stored = await graph.write(specs)
        except MemoryInputError as exc:  # e.g. an ambiguous name: the facts cannot be written
            run.degrade("storing facts from the documents read", exc, state)
            return 0
        except Exception as exc:  # the backend is down, a full disk, ...: spilled at close
            run.client.writes.keep_facts([s.to_json() for s in specs], exc)
            run.degrade("storing facts from the documents read", exc, state)
            return 0
        run.stored["fact"] = run.stored.get("fact", 0) + len(stored)
        log.info("memory: %d facts from %d documents read stored in the graph in %.3f s",
                 len(stored), len(self._read), time.perf_counter() - started)
        if self.problems:
            log.info("memory: %d document passages gave no fact: %s", len(self.problems),
                     "; ".join(self.problems[:3]))
        return len(stored)
