"""Research notes: the note decision, chunking by count and by tokens, the files and memories
written, the note agent's typed output, and notes off = the workflow without notes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.memory.backends.base import MemoryFilter
from DeepResearch.src.memory.client import MemorySystemClient
from DeepResearch.src.workflow.errors import ConfigurationError
from DeepResearch.src.workflow.notes.decide import AgentDecider, draft_note, note_agent, score_note
from DeepResearch.src.workflow.notes.models import (
    NoteDecision,
    NoteSettings,
    TaskNote,
    note_settings,
)
from DeepResearch.src.workflow.notes.setup import note_agents
from DeepResearch.src.workflow.notes.synthesis import (
    chunk_ready,
    count_tokens,
    fit_budget,
    synthesize_chunk,
)
from DeepResearch.src.workflow.notes.synthesizers import AgentSynthesizer, synthesis_agent
from DeepResearch.src.workflow.run import run_research
from DeepResearch.src.workflow.state import StepResult

MakeConfig = Callable[..., DictConfig]
NOW = "2026-11-25T12:00:00.000+00:00"


def result(*findings: str, success: bool = True, step: str = "1. search_documents: x") -> StepResult:
    summary = "\n".join(f"- [{source}] {text}" for source, text in
                        (f.split(" ", 1) for f in findings))
    return StepResult(step=step, kind="tool", success=success, summary=summary,
                      error=None if success else "tool failed: index missing")


def note(task_id: str, res: StepResult, earlier: list[TaskNote] | None = None) -> TaskNote:
    draft = draft_note(task_id, res, NOW)
    decision = score_note(draft, earlier or [], threshold=3)
    return TaskNote(**draft, note_decision=decision, cross_task_connections=decision.connections)


STAR = "a.md STAR is suitable for aligning RNA-seq reads to a genome."


def test_routine_result_is_skipped_and_a_contradiction_recorded() -> None:
    first = note("task_001", result(STAR, "a.md HISAT2 uses a graph FM index."))
    assert first.note_decision.should_record and first.note_decision.importance_score >= 5
    routine = score_note(draft_note("task_002", result(STAR), NOW), [first], threshold=3)
    assert not routine.should_record and routine.importance_score == 1
    assert "routine" in routine.reasoning
    assert [c.connection_type for c in routine.connections] == ["validates"]
    against = "b.md STAR is not suitable for aligning RNA-seq reads to a genome."
    contra = score_note(draft_note("task_003", result(against), NOW), [first], threshold=3)
    assert contra.should_record
    assert [(c.connected_task, c.connection_type) for c in contra.connections] == [
        ("task_001", "contradicts")
    ]
    assert contra.importance_score > first.note_decision.importance_score - 2


def test_a_failed_step_is_recorded_with_its_quality_note() -> None:
    failed = note("task_001", result(success=False))
    assert failed.note_decision.should_record and failed.confidence_level == 0.0
    assert failed.data_quality_notes == ["the step failed: tool failed: index missing"]


def test_numbers_and_comparisons_raise_the_score() -> None:
    plain = note("t1", result("a.md BWA aligns DNA reads."))
    numbers = note("t1", result("a.md BWA aligns DNA reads of 70 bp and longer."))
    assert numbers.quantitative_data and not plain.quantitative_data
    assert numbers.note_decision.importance_score == plain.note_decision.importance_score + 2


def test_chunks_by_count_and_by_tokens() -> None:
    notes = [note(f"t{i}", result(f"a.md Finding number {i} about aligners.")) for i in range(3)]
    assert not chunk_ready(notes[:2], chunk_size=3, token_budget=10_000)
    assert chunk_ready(notes, chunk_size=3, token_budget=10_000)
    long = note("t9", result("a.md " + "splice-aware alignment of reads " * 40))
    tokens = count_tokens("splice-aware alignment of reads")
    assert tokens == 7  # the real WordPiece tokenizer: 'splice', '-', 'aware', ...
    assert chunk_ready([long], chunk_size=10, token_budget=200)
    assert not chunk_ready([notes[0]], chunk_size=10, token_budget=200)
    chunks = [synthesize_chunk(i + 1, [n]) for i, n in enumerate([long, *notes])]
    fitted = fit_budget(chunks, token_budget=60)
    assert fitted[0].compressed and not fitted[-1].compressed
    assert sum(1 for c in fitted if c.compressed) < len(fitted)


def test_note_agent_typed_output_with_a_function_model() -> None:
    earlier = [note("task_001", result(STAR))]

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        args = {"should_record": True, "reasoning": "contradicts the STAR note",
                "importance_score": 8,
                "connections": [
                    {"connected_task": "task_001", "connection_type": "contradicts",
                     "description": "STAR said unsuitable"},
                    {"connected_task": "task_999", "connection_type": "informs",
                     "description": "no such task"}]}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    decider = AgentDecider(note_agent(FunctionModel(reply)))
    draft = draft_note("task_002", result("b.md STAR is not suitable."), NOW)
    decision = asyncio.run(decider.decide(draft, earlier, threshold=3))
    assert isinstance(decision, NoteDecision) and decision.importance_score == 8
    assert [c.connected_task for c in decision.connections] == ["task_001"]
    below = asyncio.run(decider.decide(draft, earlier, threshold=9))
    assert not below.should_record


def test_bad_notes_settings_are_named(make_config: MakeConfig) -> None:
    cfg = make_config("flows.default.notes.chunk_size=0")
    with pytest.raises(ConfigurationError, match=r"flows.default.notes is invalid: chunk_size=0: Input should be greater"):
        note_settings(cfg, "default")
    assert note_settings(make_config(), "default") == NoteSettings()
    assert NoteSettings().enabled and NoteSettings().taker == "rules"  # on, and cheap, by default


def test_a_run_with_notes_writes_files_and_note_memories(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    cfg = make_config("memory.enabled=true", "memory.backend=faiss",
                      f"memory.faiss.path={tmp_path / 'memory'}", "memory.session_id=notes-run",
                      "flows.default.notes.enabled=true", "flows.default.notes.chunk_size=1")
    outcome = asyncio.run(run_research("Which aligner suits RNA-seq reads?", cfg))
    folder = outcome.run_dir / "notes"
    task_files = sorted((folder / "task_notes").glob("*_notes.json"))
    chunk_files = sorted((folder / "synthesis_notes").glob("chunk_*_synthesis.json"))
    meta = json.loads((folder / "session_metadata.json").read_text())
    recorded = [t for t, d in meta["decisions"].items() if d["should_record"]]
    assert [p.name for p in task_files] == [f"{t}_notes.json" for t in recorded]
    assert len(chunk_files) == len(recorded) >= 1  # chunk_size=1: a chunk per note
    assert chunk_files[0].name == "chunk_001_synthesis.json"
    final = json.loads((folder / "final_synthesis.json").read_text())
    assert final["notes"] == len(recorded) and final["integrated_findings"]
    # The report is written from the chunk syntheses' findings.
    assert [f"[{f.source}] {f.text}" for f in outcome.state.findings] == final["integrated_findings"]

    async def stored_notes() -> list[float]:
        client = MemorySystemClient({"backend": "faiss", "faiss": {"path": str(tmp_path / "memory")}})
        async with client:
            records = await client.backend.scan(MemoryFilter(memory_types=("note",)))
        return sorted(r.importance for r in records)

    scores = sorted(meta["decisions"][t]["importance_score"] / 10 for t in recorded)
    assert asyncio.run(stored_notes()) == pytest.approx(scores)


def test_notes_off_is_the_workflow_without_notes(make_config: MakeConfig) -> None:
    off = asyncio.run(run_research("Which aligner suits RNA-seq reads?",
                                   make_config("flows.default.notes.enabled=false")))
    assert not (off.run_dir / "notes").exists()
    on = asyncio.run(run_research("Which aligner suits RNA-seq reads?", make_config()))
    assert (on.run_dir / "notes" / "final_synthesis.json").is_file()
    plain = [f"[{f.source}] {f.text}" for f in off.state.findings]
    assert plain and [f"[{f.source}] {f.text}" for f in on.state.findings] != plain


def test_synthesis_agent_typed_output_with_a_function_model() -> None:
    notes = [note("task_001", result(STAR)), note("task_002", result("b.md HISAT2 is fast."))]
    seen: list[str] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(str(messages[-1].parts[-1].content))  # type: ignore[union-attr]
        args = {"integrated_findings": ["[a.md] STAR suits RNA-seq.", "[b.md] HISAT2 is fast."],
                "cross_task_synthesis": ["both tasks name splice-aware aligners"],
                "emergent_insights": ["two aligners fit"], "confidence": 0.7}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    chunk = asyncio.run(AgentSynthesizer(synthesis_agent(FunctionModel(reply))).synthesize(3, notes))
    assert (chunk.chunk, chunk.task_ids, chunk.confidence) == (3, ["task_001", "task_002"], 0.7)
    assert chunk.integrated_findings[1] == "[b.md] HISAT2 is fast." and chunk.tokens > 0
    assert "task_002" in seen[0] and "HISAT2 is fast" in seen[0]  # the notes reach the agent


def test_a_real_model_takes_notes_through_the_agents(make_config: MakeConfig) -> None:
    decider, synthesizer = note_agents(make_config(
        "llm=openai_compatible", "llm.base_url=http://127.0.0.1:9/v1", "llm.model=local"))
    assert isinstance(decider, AgentDecider) and isinstance(synthesizer, AgentSynthesizer)
    decider, synthesizer = note_agents(make_config())
    assert not isinstance(decider, AgentDecider) and not isinstance(synthesizer, AgentSynthesizer)


def test_the_notes_of_a_compound_question_hold_what_each_nested_loop_found(
    make_config: MakeConfig,
) -> None:
    question = "Which aligner suits RNA-seq reads and how are variants called?"
    outcome = asyncio.run(run_research(question, make_config()))
    folder = outcome.run_dir / "notes"
    meta = json.loads((folder / "session_metadata.json").read_text())
    assert len(meta["decisions"]) == 2  # one task per nested loop
    for decision in meta["decisions"].values():
        assert decision["should_record"] and "failed" not in decision["reasoning"]
    notes = [json.loads(p.read_text()) for p in sorted((folder / "task_notes").glob("*.json"))]
    assert all(n["key_findings"] and not n["data_quality_notes"] for n in notes)
    final = json.loads((folder / "final_synthesis.json").read_text())
    cited = {f.split("]", 1)[0].lstrip("[") for f in final["integrated_findings"]}
    assert {"rna_seq_aligners.md", "variant_calling.md"} <= cited  # drawn from both loops


def test_a_taker_of_rules_keeps_a_real_model_out_of_the_notes(make_config: MakeConfig) -> None:
    real = ("llm=openai_compatible", "llm.base_url=http://127.0.0.1:9/v1", "llm.model=local")
    decider, synthesizer = note_agents(make_config(*real), "rules")
    assert not isinstance(decider, AgentDecider)
    assert not isinstance(synthesizer, AgentSynthesizer)
    with pytest.raises(ConfigurationError, match="taker='llm'"):
        note_settings(make_config("flows.default.notes.taker=llm"), "default")
