"""NoteTaker: after each executed step of the root loop, the note decision; recorded notes
become files (notes/task_notes/<task_id>_notes.json) and memories (type `note`); every
chunk_size notes (or token_budget tokens) a chunk synthesis (notes/synthesis_notes/); before
the root's synthesis the final synthesis (notes/final_synthesis.json), whose findings the
report is written from. A resumed run reads the notes its folder holds."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from DeepResearch.src.agents.prompts import Finding
from DeepResearch.src.memory.errors import MemorySubsystemError
from DeepResearch.src.utils.atomic import write_atomic
from DeepResearch.src.workflow.checkpoint_memory import memory_id
from DeepResearch.src.workflow.errors import CheckpointWriteError
from DeepResearch.src.workflow.hooks import NodeHook, RunHook
from DeepResearch.src.workflow.notes.decide import NoteDecider, draft_note
from DeepResearch.src.workflow.notes.models import ChunkSynthesis, NoteSettings, TaskNote
from DeepResearch.src.workflow.notes.synthesis import chunk_ready, fit_budget
from DeepResearch.src.workflow.notes.synthesizers import ChunkSynthesizer, ExtractiveSynthesizer

if TYPE_CHECKING:
    from collections.abc import Callable

    from DeepResearch.src.workflow.base import WorkflowNode
    from DeepResearch.src.workflow.hooks import NodeContext
    from DeepResearch.src.workflow.state import ResearchState


def _write(path: Path, text: str) -> None:
    """A note file, or a stop like any file of the run folder that cannot be written."""
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise CheckpointWriteError(f"could not write the note file {path}: {exc}") from exc


def _json(model: Any) -> str:
    return json.dumps(model if isinstance(model, dict) else model.model_dump(mode="json"), indent=2)


class NoteTaker(NodeHook, RunHook):
    def __init__(
        self,
        settings: NoteSettings,
        decider: NoteDecider,
        run_id: Callable[[], str | None],
        synthesizer: ChunkSynthesizer | None = None,
    ) -> None:
        self.settings = settings
        self.decider = decider
        self.synthesizer = synthesizer or ExtractiveSynthesizer()
        self.run_id = run_id  # the checkpointer's: the same on resume
        self.folder: Path | None = None
        self.notes: dict[str, TaskNote] = {}
        self.chunks: list[ChunkSynthesis] = []
        self.decisions: dict[str, dict[str, Any]] = {}
        self.seen = 0  # root execution results already decided on

    async def on_run_start(self, state: ResearchState) -> None:
        if state.run_dir is None:
            return
        self.folder = Path(state.run_dir) / "notes"
        for sub in ("task_notes", "synthesis_notes"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self.seen = len(state.execution_results)
        found = [TaskNote.model_validate_json(p.read_text(encoding="utf-8"))
                 for p in (self.folder / "task_notes").glob("*_notes.json")]
        self.notes = {n.task_id: n for n in sorted(found, key=lambda n: n.timestamp)}
        self.chunks = [ChunkSynthesis.model_validate_json(p.read_text(encoding="utf-8"))
                       for p in sorted((self.folder / "synthesis_notes").glob("chunk_*.json"))]
        metadata = self.folder / "session_metadata.json"
        self.decisions = (
            json.loads(metadata.read_text(encoding="utf-8"))["decisions"]
            if metadata.is_file() else {}
        )
        self._write_metadata(state)

    def _write_metadata(self, state: ResearchState) -> None:
        assert self.folder is not None
        _write(self.folder / "session_metadata.json", _json({
            "run_id": self.run_id(),
            "question": state.question,
            "memory_session_id": state.memory_session_id,
            "settings": self.settings.model_dump(),
            "decisions": self.decisions,
            "notes": list(self.notes),
            "chunks": [c.chunk for c in self.chunks],
            "updated_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "pid": os.getpid(),
        }))

    @property
    def pending(self) -> list[TaskNote]:
        chunked = {t for c in self.chunks for t in c.task_ids}
        return [n for n in self.notes.values() if n.task_id not in chunked]

    async def after_node(self, node: WorkflowNode, ctx: NodeContext, result: Any) -> None:
        state = ctx.state
        if self.folder is None or state.loop_id != "root" or node.phase != "execute":
            return
        for n in range(self.seen, len(state.execution_results)):
            await self.decide(state, f"task_{n + 1:03d}", n)
        self.seen = len(state.execution_results)

    async def decide(self, state: ResearchState, task_id: str, index: int) -> None:
        assert self.folder is not None
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        draft = draft_note(task_id, state.execution_results[index], now)
        earlier = [n for n in self.notes.values() if n.task_id != task_id]
        decision = await self.decider.decide(draft, earlier, self.settings.importance_threshold)
        self.decisions[task_id] = {"should_record": decision.should_record,
                                   "importance_score": decision.importance_score,
                                   "reasoning": decision.reasoning}
        if decision.should_record:
            note = TaskNote(**draft, note_decision=decision,
                            cross_task_connections=decision.connections)
            _write(self.folder / "task_notes" / f"{task_id}_notes.json", _json(note))
            self.notes[task_id] = note
            await self.remember(state, note)
            pending = self.pending
            if chunk_ready(pending, self.settings.chunk_size, self.settings.token_budget):
                await self.add_chunk(pending)
        self._write_metadata(state)

    async def add_chunk(self, notes: list[TaskNote]) -> None:
        assert self.folder is not None
        chunk = await self.synthesizer.synthesize(len(self.chunks) + 1, notes)
        _write(self.folder / "synthesis_notes" / f"chunk_{chunk.chunk:03d}_synthesis.json",
                     _json(chunk))
        self.chunks.append(chunk)

    async def remember(self, state: ResearchState, note: TaskNote) -> None:
        """The note as a memory of type `note`, related to the notes it connects to."""
        client, run_id = state.memory_client, self.run_id()
        if client is None or run_id is None:
            return
        relations = [("references", memory_id(run_id, "note", c.connected_task))
                     for c in note.cross_task_connections if c.connected_task in self.notes]
        try:
            await client.store(
                f"Note on {note.description}:\n" + "\n".join(note.key_findings or note.observations),
                metadata={"task_id": note.task_id, "loop_id": "root", "step": note.task_id,
                          "connections": [c.model_dump() for c in note.cross_task_connections],
                          "question": state.question},
                session_id=state.memory_session_id,
                id=memory_id(run_id, "note", note.task_id),
                memory_type="note",
                importance=note.note_decision.importance_score / 10,
                relations=relations or None,
            )
        except MemorySubsystemError as exc:
            state.errors.append(f"notes: storing the note of {note.task_id} failed: {exc}")
            return
        if state.memory_stored is not None:
            state.memory_stored["note"] = state.memory_stored.get("note", 0) + 1

    async def before_node(self, node: WorkflowNode, ctx: NodeContext) -> None:
        state = ctx.state
        if self.folder is None or state.loop_id != "root" or node.phase != "synthesize":
            return
        if self.pending:
            await self.add_chunk(self.pending)
        chunks = fit_budget(self.chunks, self.settings.token_budget)
        findings = list(dict.fromkeys(f for c in chunks for f in c.integrated_findings))
        final = {
            "question": state.question,
            "chunks": [c.model_dump(mode="json") for c in chunks],
            "integrated_findings": findings,
            "emergent_insights": [i for c in chunks for i in c.emergent_insights],
            "confidence": round(sum(c.confidence for c in chunks) / len(chunks), 3) if chunks else 0.0,
            "notes": len(self.notes),
            "decisions": len(self.decisions),
        }
        _write(self.folder / "final_synthesis.json", _json(final))
        self._write_metadata(state)
        if findings:  # the report is written from the chunk syntheses, not the raw results
            state.findings = [Finding(f[1:].split("] ", 1)[0], f.split("] ", 1)[1])
                              for f in findings]
