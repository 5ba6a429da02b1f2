"""Nested loop contexts: each nested loop gets its own memory session.

On loop start the child gets `client.create_nested_context(parent_session, loop_id)`, a
session linked to its parent's (loops inside loops nest). Retrieval in the child's session
sees its own memories and, with `memory.nested.include_ancestors`, its ancestors'; never a
sibling's that has not been merged. On loop end the run's pending memories (the child's tool
runs, plan and answer) are stored and `client.merge_nested_context` links the child into the
parent: the parent's recalls see the child's memories from then on, and nothing is copied.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from DeepResearch.src.memory.errors import MemorySubsystemError
from DeepResearch.src.workflow.hooks import LoopHook
from DeepResearch.src.workflow.memory.run_context import MemoryRun

if TYPE_CHECKING:
    from DeepResearch.src.workflow.state import ResearchState, SubLoopResult

log = logging.getLogger("DeepResearch.memory")


class NestedMemoryContexts(LoopHook):
    def __init__(self) -> None:
        self.run: MemoryRun | None = None

    async def on_loop_start(self, parent: ResearchState, child: ResearchState) -> None:
        run = self.run
        if run is None or parent.memory_session_id is None:
            return
        session = run.client.create_nested_context(parent.memory_session_id, child.loop_id)
        child.memory_session_id = session
        run.sessions[child.loop_id] = session
        run.questions[child.loop_id] = child.question

    async def on_loop_end(
        self, parent: ResearchState, child: ResearchState, result: SubLoopResult
    ) -> None:
        run = self.run
        if run is None or child.memory_session_id is None or parent.memory_session_id is None:
            return
        await run.write_pending(parent)  # the child's tool runs, plan and answer
        try:
            run.client.merge_nested_context(
                child.memory_session_id, parent.memory_session_id
            )
        except MemorySubsystemError as exc:
            run.degrade(f"merging loop {child.loop_id}", exc, parent)
            return
        message = (
            f"merged loop {child.loop_id} into loop {parent.loop_id} "
            f"(session {child.memory_session_id} linked to {parent.memory_session_id})"
        )
        run.merges.append(message)
        log.info("memory: %s", message)
