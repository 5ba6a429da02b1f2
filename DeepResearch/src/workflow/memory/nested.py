"""Nested loop contexts: each nested loop gets its own memory session.

On loop start the child gets `client.create_nested_context(parent_session, loop_id)` (named
after its parent, so loops inside loops nest: `<run>/root.1/root.1.2`). Retrieval in the
child's session sees its own memories and, with `memory.nested.include_ancestors`, its
ancestors'; never its siblings'. On loop end the run's pending memories (the child's tool
runs, plan and answer) are stored and `client.merge_nested_context` copies the child's
memories into the parent's session, each PART_OF its original, skipping content the parent
already holds: one backend write for both (`client.batched_writes()`).
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
        # The child's tool runs, plan and answer are merged too; with the copies they go to
        # the backend in one write (the merge of sessions this run made up reads nothing).
        try:
            async with run.client.batched_writes():
                await run.write_pending(parent)
                copied = await run.client.merge_nested_context(
                    child.memory_session_id, parent.memory_session_id
                )
        except MemorySubsystemError as exc:
            run.degrade(f"merging loop {child.loop_id}", exc, parent)
            return
        message = f"merged {copied} memories of loop {child.loop_id} into loop {parent.loop_id}"
        run.merges.append(message)
        log.info("memory: %s", message)
