"""Before each Execute step, memory recalls the past failures of that step's tool: many
failures of another tool in the same plan cannot crowd them out of the recall."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from DeepResearch.src.agents.prompts import PlanStep
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.workflow.memory.hooks import MemoryNodeHook
from DeepResearch.src.workflow.memory.run_context import MemoryRun, WorkflowMemorySettings
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
