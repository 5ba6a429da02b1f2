"""Before each Execute step, memory recalls the past failures of that step's tool: many
failures of another tool in the same plan cannot crowd them out of the recall."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from DeepResearch.src.agents.prompts import PlanStep
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.workflow.memory.hooks import MemoryNodeHook
from DeepResearch.src.workflow.memory.run_context import MemoryRun, WorkflowMemorySettings
from DeepResearch.src.workflow.run import run_research
from DeepResearch.src.workflow.state import ResearchState

pytestmark = pytest.mark.integration
QUESTION = "Which aligner suits RNA-seq reads?"
ERRORS = ["connection reset by peer", "the index file is missing", "rate limited by the server",
          "query too long for the engine", "permission denied on the corpus",
          "malformed response body", "disk quota exceeded", "certificate expired"]


def failure(tool: str, error: str) -> dict[str, object]:
    return {
        "content": f"Question: {QUESTION}\nTool {tool} failed (unknown) with {{}}: {error}",
        "memory_type": "tool_execution", "session_id": "earlier",
        "metadata": {"tool": tool, "success": False, "params": {},
                     "error": error, "error_category": "unknown"},
    }


async def test_each_step_recalls_the_failures_of_its_own_tool(tmp_path: Path) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "mem")})
    async with MemorySystemClient(config, session_id="now") as client:
        await client.store_many([failure("search_documents", e) for e in ERRORS])
        await client.store_many([failure("read_document", "no document 'a.md'")])
        run = MemoryRun(client, config, WorkflowMemorySettings(top_k=3), root_session="now")
        hook = MemoryNodeHook()
        hook.start(run)
        state = ResearchState(question=QUESTION, config=OmegaConf.create({}),
                              memory_client=client, memory_session_id="now")
        state.plan = [PlanStep(1, "tool", QUESTION, tool="search_documents"),
                      PlanStep(2, "tool", "a.md", tool="read_document")]
        ctx = SimpleNamespace(state=state)
        phase = hook.phases["execute"]

        await phase.before(hook, run, ctx)  # type: ignore[arg-type]
        assert state.take_briefing("executor").count("FAILED BEFORE: search_documents") == 3
        state.plan[0].status = "done"
        await phase.before(hook, run, ctx)  # type: ignore[arg-type]
        briefing = state.take_briefing("executor")
        assert "FAILED BEFORE: read_document" in briefing and "search_documents" not in briefing
        assert [r.purpose for r in run.recalls] == [
            "past failures of search_documents", "past failures of read_document"]


async def test_a_failure_met_on_an_unrelated_question_is_not_flagged(tmp_path: Path) -> None:
    config = MemoryConfig(backend="faiss", faiss={"path": str(tmp_path / "mem")})
    async with MemorySystemClient(config, session_id="now") as client:
        unrelated = failure("read_document", "no document 'flux.md'")
        unrelated["content"] = str(unrelated["content"]).replace(
            QUESTION, "How do I calibrate the quantum flux capacitor?")
        related = failure("read_document", "no document 'star.md'")
        related["content"] = str(related["content"]).replace(
            QUESTION, "Which aligner is best for RNA-seq data?")
        await client.store_many([unrelated, related])
        run = MemoryRun(client, config, WorkflowMemorySettings(top_k=3), root_session="now")
        hook = MemoryNodeHook()
        hook.start(run)
        state = ResearchState(question=QUESTION, config=OmegaConf.create({}),
                              memory_client=client, memory_session_id="now")
        state.plan = [PlanStep(1, "tool", "a.md", tool="read_document")]
        await hook.phases["execute"].before(hook, run, SimpleNamespace(state=state))  # type: ignore[arg-type]
        briefing = state.take_briefing("executor")
        assert "star.md" in briefing and "flux.md" not in briefing
        [recall] = run.recalls
        assert recall.phase == "execute step_1"  # the recall names its step
        assert [m.document.content for m in recall.memories] == [related["content"]]


def test_a_call_memory_skipped_is_a_skipped_step_in_the_summary(make_config, tmp_path: Path) -> None:
    """The second run of a question whose read failed (not_found) skips that call: the plan,
    the history and WORKFLOW_SUMMARY.md say skipped, not done."""
    question = "How do I calibrate the quantum flux capacitor?"
    cfg = make_config()
    first = asyncio.run(run_research(question, cfg))
    assert [s.status for s in first.state.plan] == ["done", "failed"]
    second = asyncio.run(run_research(question, cfg))
    assert [s.status for s in second.state.plan] == ["done", "skipped"]
    assert second.state.execution_history.summary()["skipped"] == 1
    summary = (second.run_dir / "WORKFLOW_SUMMARY.md").read_text()
    assert "- [skipped] 2. read_document" in summary
    assert "(1 ok, 0 failed, 1 skipped)" in summary
    assert not second.state.errors  # a skip is no error of the run
