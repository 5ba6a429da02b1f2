"""Nested loops: sub-questions run as sub-workflows with their own state; loops in loops."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from omegaconf import DictConfig

from DeepResearch.src.workflow.hooks import LoopHook
from DeepResearch.src.workflow.run import create_services, run_research
from DeepResearch.src.workflow.state import ResearchState, SubLoopResult

pytestmark = pytest.mark.integration
MakeConfig = Callable[..., DictConfig]
COMPOUND = "Which aligner suits RNA-seq reads and how are variants called?"
# Level 1 splits on ';', level 2 splits the first part on "and how".
TWO_LEVELS = (
    "Which aligner suits RNA-seq reads and how are variants called; what does FastQC report?"
)


class Tracker(LoopHook):
    def __init__(self) -> None:
        self.events: list[str] = []

    async def on_loop_start(self, parent: ResearchState, child: ResearchState) -> None:
        assert child.parent_loop_id == parent.loop_id and child.depth == parent.depth + 1
        self.events.append(f"start {child.loop_id}")

    async def on_loop_end(
        self, parent: ResearchState, child: ResearchState, result: SubLoopResult
    ) -> None:
        self.events.append(f"end {child.loop_id}")


async def test_compound_question_runs_one_nested_loop_per_part(make_config: MakeConfig) -> None:
    cfg = make_config()
    tracker = Tracker()
    services = create_services(cfg, loop_hooks=[tracker])
    outcome = await run_research(COMPOUND, cfg, services)
    state = outcome.state
    assert [sub.loop_id for sub in state.sub_loops] == ["root.1", "root.2"]
    assert [sub.question for sub in state.sub_loops] == [
        "Which aligner suits RNA-seq reads",
        "how are variants called?",
    ]
    assert all(sub.success and sub.answer for sub in state.sub_loops)
    assert "rna_seq_aligners.md" in state.sub_loops[0].sources
    assert "variant_calling.md" in state.sub_loops[1].sources
    assert tracker.events == ["start root.1", "end root.1", "start root.2", "end root.2"]
    # The children's answers return to the parent's answer...
    assert "[rna_seq_aligners.md]" in outcome.answer and "[variant_calling.md]" in outcome.answer
    # ...and their tool runs land in the parent's history, tagged with their loop id.
    loops = {item.loop_id for item in state.execution_history.items}
    assert loops == {"root", "root.1", "root.2"}
    child_tools = [i.tool for i in state.execution_history.items if i.loop_id == "root.1"]
    assert child_tools == ["search_documents", "read_document", "read_document"]
    sub_items = [i for i in state.execution_history.items if i.tool == "sub_loop"]
    assert [i.parameters["depth"] for i in sub_items] == [1, 1]
    # Each child had its own iteration counter, limited by nested_loops.max_iterations.
    assert all(sub.iterations == 2 for sub in state.sub_loops)
    research = (outcome.run_dir / "drafts" / "research.md").read_text()
    assert "Loop `root.1`" in research and "Loop `root.2`" in research


async def test_loops_inside_loops(make_config: MakeConfig) -> None:
    cfg = make_config("flows.default.nested_loops.max_depth=2")
    tracker = Tracker()
    outcome = await run_research(TWO_LEVELS, cfg, create_services(cfg, loop_hooks=[tracker]))
    assert tracker.events == [
        "start root.1",
        "start root.1.1",
        "end root.1.1",
        "start root.1.2",
        "end root.1.2",
        "end root.1",
        "start root.2",
        "end root.2",
    ]
    loops = {item.loop_id for item in outcome.state.execution_history.items}
    assert {"root.1.1", "root.1.2", "root.2"} <= loops
    assert "[read_quality_control.md]" in outcome.answer


async def test_depth_limit_stops_nesting(make_config: MakeConfig) -> None:
    cfg = make_config("flows.default.nested_loops.max_depth=1")
    tracker = Tracker()
    await run_research(TWO_LEVELS, cfg, create_services(cfg, loop_hooks=[tracker]))
    assert tracker.events == ["start root.1", "end root.1", "start root.2", "end root.2"]


async def test_nesting_disabled_researches_parts_in_one_loop(make_config: MakeConfig) -> None:
    cfg = make_config("flows.default.nested_loops.enabled=false")
    outcome = await run_research(COMPOUND, cfg, create_services(cfg))
    assert outcome.state.sub_loops == []
    assert [s.tool for s in outcome.state.plan] == [
        "search_documents",
        "search_documents",
        "read_document",
    ]


async def test_iteration_limit_skips_the_rest_and_says_so(make_config: MakeConfig) -> None:
    cfg = make_config("flows.default.max_iterations=1")
    outcome = await run_research("Which aligner suits RNA-seq reads?", cfg, create_services(cfg))
    state = outcome.state
    assert state.iteration == 1
    assert [s.status for s in state.plan] == ["done", "skipped"]
    assert any("iteration limit 1 reached" in error for error in state.errors)
    skipped = [i for i in state.execution_history.items if i.status.value == "skipped"]
    assert skipped[0].error_category.value == "iteration_limit"
