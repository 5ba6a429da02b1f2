"""The workflow with memory, in process: real FAISS in a fresh folder, the real model."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from omegaconf import DictConfig

from DeepResearch.src.datatypes.agents import AgentType
from DeepResearch.src.memory import MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter, MemoryRecord
from DeepResearch.src.memory.embeddings import Embedder, get_embedder
from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.workflow.checkpoint import Checkpointer
from DeepResearch.src.workflow.memory.integration import memory_plugins
from DeepResearch.src.workflow.memory.run_context import resolve_memory
from DeepResearch.src.workflow.requirements import PhaseRequirements
from DeepResearch.src.workflow.run import (
    RunOutcome,
    create_run_services,
    create_services,
    run_research,
)

pytestmark = pytest.mark.integration
MakeConfig = Callable[..., DictConfig]
Q1 = "Which aligner suits RNA-seq reads, as compared in lab_aligner_notes.md?"
Q2 = "What does lab_aligner_notes.md say about splice-aware aligners for RNA-seq reads?"


async def test_disabled_memory_runs_exactly_the_foundation_workflow(
    make_config: MakeConfig,
) -> None:
    # notes off too: they are a feature of their own, which writes note files and memories
    cfg = make_config("memory.enabled=false", "flows.default.notes.enabled=false")
    assert memory_plugins(cfg) is None
    services = create_run_services(cfg)
    # Only the run's own checkpointing and phase checks: no memory plug-in.
    hooks = [*services.node_hooks, *services.run_hooks]
    assert all(isinstance(h, Checkpointer | PhaseRequirements) for h in hooks)
    assert not services.tool_listeners
    assert services.agents.planner.capabilities == []
    off = await run_research("Which aligner suits RNA-seq reads?", cfg, services)
    # The Foundation: the same config with no memory plug-ins at all.
    plain = await run_research("Which aligner suits RNA-seq reads?", cfg, create_services(cfg))
    assert off.state.memory_client is None and off.state.memory_session_id is None
    for name in ("report.md", "drafts/planning.md", "drafts/research.md", "drafts/writing.md"):
        assert (off.run_dir / name).read_text() == (plain.run_dir / name).read_text(), name
    assert "## Memory" not in (off.run_dir / "report.md").read_text()
    assert "MEMORY" not in (off.run_dir / "drafts/planning.md").read_text()
    # The same files, plus what the run's checkpointing adds (checkpoint, versioned drafts).
    def files(run_dir: Path) -> list[str]:
        return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*"))

    added = [f for f in files(off.run_dir) if f == "checkpoint.json" or re.match(r"drafts/\d_", f)]
    assert "checkpoint.json" in added and len(added) > 1
    assert [f for f in files(off.run_dir) if f not in added] == files(plain.run_dir)
    assert not (Path(cfg.memory.faiss.path)).exists()  # nothing of memory ran


async def test_second_run_recalls_the_first_and_its_failing_tool(make_config: MakeConfig) -> None:
    cfg = make_config()
    first = await run_research(Q1, cfg)
    assert any(
        i.error_category and i.error_category.value == "not_found"
        for i in first.state.execution_history.failed_steps()
    )
    second = await run_research(Q2, cfg)
    run1 = first.state.memory_session_id
    assert run1 and second.state.memory_session_id != run1

    # The planner recalled run 1's answer and plan (with scores) and its plan reads the
    # document run 1's answer cited.
    report = (second.run_dir / "report.md").read_text()
    recalled = report.split("### Recalled from memory", 1)[1]
    assert re.search(
        rf"\[score \d\.\d{{3}}, similarity \d\.\d{{3}}\] answer \(session {run1[:8]}\)", recalled
    )
    assert re.search(rf"plan \(session {run1[:8]}\): Plan for '{re.escape(Q1)}' failed", recalled)
    planning = (second.run_dir / "drafts/planning.md").read_text()
    assert "read_document: rna_seq_aligners.md" in planning
    assert "# memory: the earlier answer to" in planning
    assert "## Memory" in (second.run_dir / "WORKFLOW_SUMMARY.md").read_text()

    # The failing read of run 1 was flagged before the call, and the executor skipped it.
    research = (second.run_dir / "drafts/research.md").read_text()
    flag = research.index("memory flags before calling `read_document`")
    call = research.index("### Loop `root` step_2: 2. read_document: lab_aligner_notes.md")
    assert flag < call
    assert "! skipped read_document({'source': 'lab_aligner_notes.md'})" in research
    assert not second.state.execution_history.failed_steps()
    assert any("memory flag" in note for note in second.state.notes)


async def test_config_per_flow_and_profiles(make_config: MakeConfig) -> None:
    config, settings = resolve_memory(
        make_config(
            "flows.default.memory.top_k=2",
            "flows.default.memory.scope=session",
            "+flows.default.memory.retrieval.min_similarity=0.4",
            "memory.profiles.planner.max_items=3",
            "flows.default.memory.agent_profiles.synthesizer=bioinformatics",
        ),
        "default",
    ) or (None, None)
    assert settings is not None and config is not None
    assert settings.top_k == 2 and settings.scope == "session"
    assert config.retrieval.min_similarity == 0.4 and config.profiles["planner"].max_items == 3
    assert settings.agent_profiles["synthesizer"] == "bioinformatics"
    # The rag flow keeps the group's values.
    rag = resolve_memory(make_config("flows.default.memory.top_k=2"), "rag")
    assert rag is not None and rag[1].top_k is None
    assert resolve_memory(make_config("flows.default.memory.enabled=false"), "default") is None
    with pytest.raises(MemoryConfigError, match="scope='everywhere'"):
        resolve_memory(make_config("flows.default.memory.scope=everywhere"), "default")
    with pytest.raises(MemoryConfigError, match=r"agent_profiles\.planner='nobody': no such profile"):
        resolve_memory(make_config("flows.default.memory.agent_profiles.planner=nobody"), "default")


async def test_state_and_agent_deps_carry_client_session_and_profile(
    make_config: MakeConfig,
) -> None:
    cfg = make_config("memory.session_id=continued-session", "flows.default.memory.top_k=1")
    services = create_run_services(cfg)
    outcome = await run_research("How are variants called?", cfg, services)
    state = outcome.state
    assert state.memory_session_id == "continued-session"
    assert isinstance(state.memory_client, MemorySystemClient)
    for agent_type, profile in (
        (AgentType.PLANNER, "planner"),
        (AgentType.EXECUTOR, "executor"),
        (AgentType.SYNTHESIZER, "deepsearch"),
    ):
        deps = services.agent_deps(state, agent_type)
        assert deps.memory_client is state.memory_client and deps.agent_profile == profile
        assert deps.session_id == "continued-session"
    # The run's memories are in that session; a later run can continue it.
    async with MemorySystemClient(state.memory_config) as client:
        records = await client.backend.scan(MemoryFilter(session_ids=("continued-session",)))
    kinds = sorted({r.memory_type for r in records})
    assert kinds == ["answer", "execution_trace", "note", "plan", "tool_execution"]


def watch_the_model(
    cfg: DictConfig, monkeypatch: pytest.MonkeyPatch
) -> tuple[Embedder, list[str], Callable[[list[str]], np.ndarray]]:
    """The run's shared embedder, a list that collects every text it runs through the model,
    and its real `embed`."""
    embedder = get_embedder(cfg.memory.vector_store.embedding_model,
                            cfg.memory.vector_store.embedding_runtime)
    seen: list[str] = []
    real_embed = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: seen.extend(texts) or real_embed(texts))
    return embedder, seen, real_embed


async def test_each_workflow_memory_is_embedded_by_its_own_content(
    make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plan, answer, trace, failure analysis and each tool run: the vector stands for the
    memory's own text (which names the question it served), so memories of one loop differ,
    and a recall by what a tool run said finds that tool run by its vector alone."""
    cfg = make_config()
    _, seen, real_embed = watch_the_model(cfg, monkeypatch)
    outcome = await run_research(Q1, cfg)  # its read of lab_aligner_notes.md fails
    mine = await _scan_session(outcome)
    assert {"plan", "answer", "execution_trace", "tool_execution", "failure_analysis"} <= {
        r.memory_type for r in mine}
    for record in mine:
        assert "embedding_key" not in record.metadata, record.memory_type
        assert record.content in seen, record.memory_type  # the model saw its own text
        np.testing.assert_allclose(record.vector, real_embed([record.content])[0], atol=1e-5)
    assert len({r.vector.tobytes() for r in mine}) == len(mine)
    (failed,) = [r for r in mine if r.memory_type == "tool_execution"
                 and r.metadata["tool"] == "read_document" and not r.metadata["success"]]
    assert failed.content.startswith(f"Question: {Q1}\nTool read_document failed")

    dense_only = outcome.state.memory_config.model_dump()
    dense_only["retrieval"]["hybrid"] = False
    async with MemorySystemClient(dense_only) as client:
        found = await client.retrieve(
            "read_document failed: no such document lab_aligner_notes.md", top_k=3,
            session_id=outcome.state.memory_session_id, filters={"memory_type": "tool_execution"},
        )
    assert found[0].id == failed.id, [(m.document.memory_type, m.similarity, m.content[:150]) for m in found]


async def _scan_session(outcome: RunOutcome) -> list[MemoryRecord]:
    async with MemorySystemClient(outcome.state.memory_config) as client:
        return await client.backend.scan(
            MemoryFilter(session_ids=(outcome.state.memory_session_id,))
        )


async def test_an_unusable_memory_folder_stops_the_run_before_it_starts(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    """A file where the store's folder should be: the run is refused at start, naming the
    path and the reason, rather than answering with memory silently off."""
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    cfg = make_config(f"memory.faiss.path={blocker / 'memory'}")
    with pytest.raises(MemoryConfigError, match=r"a-file/memory cannot be used: Not a directory"):
        await run_research(Q1, cfg)
    assert not (tmp_path / "outputs").exists()  # stopped before the run folder


async def test_the_answer_memory_is_the_reviewed_report(make_config: MakeConfig) -> None:
    """The review revises the drafted answer: the run's answer memory holds the revision."""
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    from DeepResearch.agents import SynthesizerAgent

    uncited = "Every lab should buy a bigger cluster for alignment."
    draft = ("STAR (Spliced Transcripts Alignment to a Reference) is a splice-aware aligner built "
             f"for RNA-seq reads. [rna_seq_aligners.md] {uncited}")

    async def write(messages: object, info: object) -> ModelResponse:
        return ModelResponse(parts=[TextPart(draft)])

    cfg = make_config()
    services = create_run_services(cfg)
    services.agents.synthesizer = SynthesizerAgent(FunctionModel(write))
    outcome = await run_research("Which aligner suits RNA-seq reads?", cfg, services)
    assert outcome.state.review_rounds[0].revised
    [answer] = [r for r in await _scan_session(outcome) if r.memory_type == "answer"]
    assert "STAR (Spliced" in answer.content and uncited not in answer.content
    assert answer.metadata["sources"] == ["rna_seq_aligners.md"]
