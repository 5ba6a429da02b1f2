"""Nested loop contexts (isolation, linking, two levels deep) and tool-run tracking (each tool
run stored exactly once), on real FAISS with the real embedding model."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from DeepResearch.src.datatypes.execution import ExecutionResult, ExecutionStatus
from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.backends import MemoryFilter
from DeepResearch.src.tools.runner import ToolRunEvent
from DeepResearch.src.utils.execution_history import ExecutionItem
from DeepResearch.src.workflow.memory.nested import NestedMemoryContexts
from DeepResearch.src.workflow.memory.run_context import MemoryRun, WorkflowMemorySettings
from DeepResearch.src.workflow.memory.tracking import ToolExecutionTracker
from DeepResearch.src.workflow.run import create_run_services, run_research
from DeepResearch.src.workflow.state import ResearchState, SubLoopResult

pytestmark = pytest.mark.integration


def loop_state(loop_id: str, session: str | None = None) -> ResearchState:
    return ResearchState(
        question=f"question of {loop_id}",
        config=OmegaConf.create({}),
        loop_id=loop_id,
        memory_session_id=session,
    )


def done(child: ResearchState) -> SubLoopResult:
    return SubLoopResult(child.loop_id, child.question, "answer", True, child.depth, 1)


async def contents(client: MemorySystemClient, session: str) -> set[str]:
    found = await client.retrieve("aligner facts", top_k=50, session_id=session)
    return {m.content for m in found}


@pytest.fixture
def faiss_config(tmp_path: Path) -> Callable[..., MemoryConfig]:
    def make(include_ancestors: bool = True) -> MemoryConfig:
        return MemoryConfig(
            backend="faiss",
            faiss={"path": str(tmp_path / "mem")},
            nested={"include_ancestors": include_ancestors},
        )

    return make


async def test_nested_contexts_isolate_inherit_and_link_two_levels(
    faiss_config: Callable[..., MemoryConfig],
) -> None:
    async with MemorySystemClient(faiss_config(), session_id="run") as client:
        run = MemoryRun(client, client.config, WorkflowMemorySettings(), root_session="run")
        hook = NestedMemoryContexts()
        hook.run = run
        root = loop_state("root", "run")
        child, sibling, grandchild = (
            loop_state("root.1"),
            loop_state("root.2"),
            loop_state("root.1.1"),
        )
        await hook.on_loop_start(root, child)
        await hook.on_loop_start(root, sibling)
        await hook.on_loop_start(child, grandchild)
        assert child.memory_session_id == "run:root.1"
        assert grandchild.memory_session_id == "run:root.1:root.1.1"
        assert run.session_of("root.1.1") == grandchild.memory_session_id

        facts = {
            "run": "Root fact: the aligner study covers RNA-seq.",
            "run:root.1": "Child fact: STAR is a splice-aware aligner.",
            "run:root.2": "Sibling fact: BWA is an aligner for DNA reads.",
            "run:root.1:root.1.1": "Grandchild fact: HISAT2 is an aligner with a graph index.",
        }
        for session, fact in facts.items():
            await client.store(fact, session_id=session)

        # Own + ancestors, never siblings or descendants not merged yet.
        seen = await contents(client, "run:root.1:root.1.1")
        assert {facts["run"], facts["run:root.1"], facts["run:root.1:root.1.1"]} <= seen
        assert facts["run:root.2"] not in seen
        seen = await contents(client, "run:root.1")
        assert facts["run:root.1:root.1.1"] not in seen and facts["run:root.2"] not in seen
        assert facts["run:root.1"] not in await contents(client, "run:root.2")
        assert await contents(client, "run") == {facts["run"]}

        await hook.on_loop_end(child, grandchild, done(grandchild))  # level 2 -> level 1
        assert facts["run:root.1:root.1.1"] in await contents(client, "run:root.1")
        await hook.on_loop_end(root, child, done(child))  # level 1 -> root
        assert await contents(client, "run") == {
            facts[s] for s in ("run", "run:root.1", "run:root.1:root.1.1")}
        await hook.on_loop_end(root, sibling, done(sibling))
        assert await contents(client, "run") == set(facts.values())

        # Linked, not copied: each memory is stored once, in the session that wrote it.
        stored = await client.backend.scan(MemoryFilter())
        assert sorted((r.session_id, r.content) for r in stored) == sorted(facts.items())
        assert len(run.merges) == 3


async def test_a_session_named_like_a_nested_one_is_not_its_child(
    faiss_config: Callable[..., MemoryConfig],
) -> None:
    """Ancestry comes from the client's links, not from names: a session anyone names
    'run:root.9' sees nothing of 'run', and 'run' sees nothing of it."""
    async with MemorySystemClient(faiss_config(), session_id="run") as client:
        await client.store("Root fact: the aligner study covers RNA-seq.", session_id="run")
        await client.store("Typed fact: an aligner someone else named.", session_id="run:root.9")
        client.merge_nested_context(client.create_nested_context("run", "root.1"), "run")
        assert await contents(client, "run:root.9") == {"Typed fact: an aligner someone else named."}
        assert await contents(client, "run") == {"Root fact: the aligner study covers RNA-seq."}


async def test_the_tracker_stores_each_tool_run_once(
    faiss_config: Callable[..., MemoryConfig],
) -> None:
    async with MemorySystemClient(faiss_config(), session_id="t") as client:
        run = MemoryRun(client, client.config, WorkflowMemorySettings(), root_session="t")
        tracker = ToolExecutionTracker()
        tracker.start(run)
        item = ExecutionItem(
            "step_1",
            "read_document",
            ExecutionStatus.FAILED,
            error="no document 'x.md'",
            parameters={"source": "x.md"},
        )
        event = ToolRunEvent(item, ExecutionResult(success=False, error=item.error), "root")
        await tracker.on_tool_run(event)
        await tracker.on_tool_run(event)  # the same run handed over again
        assert len(run.pending) == 1
        assert await run.write_pending() == 1 and await run.write_pending() == 0
        [record] = await client.backend.scan(MemoryFilter(session_ids=("t",)))
        assert record.memory_type == "tool_execution"
        assert record.metadata["tool"] == "read_document" and record.metadata["success"] is False
        assert record.metadata["params"] == {"source": "x.md"} and "x.md" in record.content


async def test_compound_question_nests_merges_and_logs_every_tool_run_once(
    make_config: Callable[..., DictConfig],
) -> None:
    cfg = make_config()
    outcome = await run_research(
        "Which aligner suits RNA-seq reads and how are variants called?",
        cfg,
        create_run_services(cfg),
    )
    state = outcome.state
    root = state.memory_session_id
    assert [sub.loop_id for sub in state.sub_loops] == ["root.1", "root.2"]
    tool_runs = [
        i
        for i in state.execution_history.items
        if i.tool != "sub_loop" and i.status is not ExecutionStatus.SKIPPED
    ]
    async with MemorySystemClient(state.memory_config) as client:
        records = await client.backend.scan(MemoryFilter(memory_types=("tool_execution",)))
    # Exactly one memory per tool run, written in the loop's own session; nothing copied.
    key = lambda loop, step, tool, params: (loop, step, tool, json.dumps(params, sort_keys=True))  # noqa: E731
    assert Counter(
        key(r.metadata["loop_id"], r.metadata["step"], r.metadata["tool"], r.metadata["params"])
        for r in records
    ) == Counter(key(i.loop_id, i.step_name, i.tool, i.parameters) for i in tool_runs)
    assert {r.session_id for r in records} == {f"{root}:root.1", f"{root}:root.2"}
    assert not any(t == "part_of" for r in records for t, _ in r.relations)
    report = (outcome.run_dir / "report.md").read_text()
    assert "merged loop root.1 into loop root" in report
