"""Nested loop contexts (isolation, merge, two levels deep) and tool-run tracking (each tool
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


async def test_nested_contexts_isolate_inherit_and_merge_two_levels(
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
        assert child.memory_session_id == "run/root.1"
        assert grandchild.memory_session_id == "run/root.1/root.1.1"
        assert run.session_of("root.1.1") == grandchild.memory_session_id

        facts = {
            "run": "Root fact: the aligner study covers RNA-seq.",
            "run/root.1": "Child fact: STAR is a splice-aware aligner.",
            "run/root.2": "Sibling fact: BWA is an aligner for DNA reads.",
            "run/root.1/root.1.1": "Grandchild fact: HISAT2 is an aligner with a graph index.",
        }
        for session, fact in facts.items():
            await client.store(fact, session_id=session)
        # The same text in grandchild and child: merged once only.
        await client.store("Shared fact: aligners map reads.", session_id="run/root.1")
        await client.store("Shared fact: aligners map reads.", session_id="run/root.1/root.1.1")

        # Own + ancestors, never siblings or descendants.
        seen = await contents(client, "run/root.1/root.1.1")
        assert {facts["run"], facts["run/root.1"], facts["run/root.1/root.1.1"]} <= seen
        assert facts["run/root.2"] not in seen
        seen = await contents(client, "run/root.1")
        assert facts["run/root.1/root.1.1"] not in seen and facts["run/root.2"] not in seen
        assert facts["run/root.1"] not in await contents(client, "run/root.2")

        await hook.on_loop_end(child, grandchild, done(grandchild))  # level 2 -> level 1
        await hook.on_loop_end(root, child, done(child))  # level 1 -> root
        await hook.on_loop_end(root, sibling, done(sibling))

        in_root = await client.backend.scan(MemoryFilter(session_ids=("run",)))
        texts = Counter(r.content for r in in_root)
        assert set(facts.values()) <= set(texts)
        assert texts["Shared fact: aligners map reads."] == 1  # de-duplicated by content
        assert all(n == 1 for n in texts.values())
        copies = [r for r in in_root if r.content != facts["run"]]
        assert copies and all(any(t == "part_of" for t, _ in r.relations) for r in copies)
        assert len(run.merges) == 3


async def test_without_ancestors_a_nested_loop_sees_only_its_own(
    faiss_config: Callable[..., MemoryConfig],
) -> None:
    async with MemorySystemClient(faiss_config(include_ancestors=False), session_id="r") as client:
        run = MemoryRun(client, client.config, WorkflowMemorySettings(), root_session="r")
        hook = NestedMemoryContexts()
        hook.run = run
        root, child = loop_state("root", "r"), loop_state("root.1")
        await hook.on_loop_start(root, child)
        await client.store("Root note on aligner choice.", session_id="r")
        await client.store("Child note on aligner speed.", session_id="r/root.1")
        assert await contents(client, "r/root.1") == {"Child note on aligner speed."}


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
    originals = [r for r in records if not any(t == "part_of" for t, _ in r.relations)]
    copies = [r for r in records if r not in originals]
    # Exactly one original memory per tool run, written in the loop's own session ...
    key = lambda loop, step, tool, params: (loop, step, tool, json.dumps(params, sort_keys=True))  # noqa: E731
    assert Counter(
        key(r.metadata["loop_id"], r.metadata["step"], r.metadata["tool"], r.metadata["params"])
        for r in originals
    ) == Counter(key(i.loop_id, i.step_name, i.tool, i.parameters) for i in tool_runs)
    assert {r.session_id for r in originals} == {f"{root}/root.1", f"{root}/root.2"}
    # ... and the nested loops' runs brought into the parent as PART_OF links, once each.
    assert len(copies) == len(originals) and {r.session_id for r in copies} == {root}
    report = (outcome.run_dir / "report.md").read_text()
    assert "merged" in report and "root.1" in report
