"""Retrieve-before / store-after around the workflow nodes, written once.

`MemoryNodeHook` is the one NodeHook; what it does is declared per node phase in `PHASES`:

| phase | before the node | after the node |
|---|---|---|
| plan | recall earlier plans (with outcomes, success-weighted), answers and failure analyses for the question; brief the Planner | keep the plan, to store it with its outcome when the loop ends |
| execute | recall past failures of the next step's tool met on a similar question (failure-pattern matching); flag them to the Executor (prompt, notes, console, research draft) BEFORE the call | (tool runs are taken by the tracker) |
| synthesize | recall earlier answers to related questions; brief the Synthesizer | store the answer, and the plan with its outcome |

A node that raises still gets its plan stored, with a failed outcome. Briefings reach the
agent as a `MEMORY:` section of its prompt (`ResearchState.briefings`). Writes join the run's
pending batch (`MemoryRun.pending`), stored when the loop ends (nested) or the run ends.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from DeepResearch.src.agents.prompts import SUBQUESTION, cited_sources
from DeepResearch.src.memory.models import RetrievedMemory
from DeepResearch.src.workflow.hooks import NodeHook
from DeepResearch.src.workflow.memory.run_context import MemoryRun, excerpt

if TYPE_CHECKING:
    from DeepResearch.src.workflow.base import WorkflowNode
    from DeepResearch.src.workflow.hooks import NodeContext
    from DeepResearch.src.workflow.state import ResearchState

log = logging.getLogger("DeepResearch.memory")

PLAN_IMPORTANCE = 0.6
ANSWER_IMPORTANCE = 0.7
FLAG_PREFIX = "FAILED BEFORE:"
# A tool failure is flagged only to a loop whose question is this close (cosine of the two
# questions, all-MiniLM-L6-v2) to the question it was met on: "calibrate the flux capacitor"
# and "tune the flux capacitor" ~0.6, "RNA-seq aligners" and "variant callers" ~0.2.
FLAG_MIN_QUESTION_SIMILARITY = 0.45
CITED = "cited"  # an answer's briefing line ends with the documents it cited


def _score(memory: RetrievedMemory) -> str:
    return f"score {memory.score:.3f}"


def briefing_line(memory: RetrievedMemory) -> str:
    """`- [<type>[, succeeded|failed], score S] <excerpt>[ (cited: a.md, b.md)]`."""
    doc = memory.document
    meta = doc.metadata
    outcome = meta.get("success")
    status = "" if not isinstance(outcome, bool) else (", succeeded" if outcome else ", failed")
    text = doc.content.split("\n", 1)[0] if doc.memory_type == "plan" else doc.content
    sources = meta.get("sources") if doc.memory_type == "answer" else None
    cited = f" ({CITED}: {', '.join(sources)})" if sources else ""
    return f"- [{doc.memory_type}{status}, {_score(memory)}] {excerpt(text, 400)}{cited}"


def flag_line(memory: RetrievedMemory) -> str:
    """`- FAILED BEFORE: <tool> <params JSON> -> <category>: <error> (score ...)`."""
    meta = memory.metadata
    params = json.dumps(meta.get("params") or {}, sort_keys=True)
    error = excerpt(str(meta.get("error") or ""), 200)
    return (
        f"- {FLAG_PREFIX} {meta.get('tool')} {params} -> {meta.get('error_category')}: {error} "
        f"({_score(memory)}, session {memory.document.session_id[:8]})"
    )


@dataclass
class _PlanDraft:
    memory_id: str
    question: str
    text: str


class PhaseMemory:
    """What memory does around the nodes of one phase; override what applies."""

    async def before(self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext) -> None:
        return None

    async def after(
        self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext, result: Any
    ) -> None:
        return None


class PlanMemory(PhaseMemory):
    async def before(self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext) -> None:
        state = ctx.state
        found = await run.recall(
            state,
            phase="plan",
            purpose="earlier plans and their outcomes",
            query=state.question,
            filters={"memory_type": ["plan", "answer", "failure_analysis"]},
            agent_type="planner",
        )
        if found:
            state.briefings["planner"] = "\n".join(briefing_line(m) for m in found)

    async def after(
        self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext, result: Any
    ) -> None:
        state = ctx.state
        hook.plans[state.loop_id] = _PlanDraft(uuid4().hex, state.question, state.full_plan)


class ExecuteMemory(PhaseMemory):
    async def before(self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext) -> None:
        state = ctx.state
        pending = state.pending_steps
        if not pending or state.iteration >= state.max_iterations:
            return
        step = pending[0]
        if step.kind == SUBQUESTION or not step.tool:
            return
        found = await run.recall(
            state,
            phase=f"execute {step.name}",
            purpose=f"past failures of {step.tool}",
            # tool runs say the question they served: those met on a similar one rank first
            query=f"Question: {state.question}\nTool failures of {step.tool}",
            filters={"memory_type": "tool_execution", "tool": step.tool, "success": False},
            agent_type="executor",
            quiet=True,  # logged once below, as flags, with the step
            select=lambda found: _met_on_similar_questions(run, state.question, found),
        )
        if not found:
            return
        lines = [flag_line(m) for m in found]
        state.briefings["executor"] = "\n".join(lines)  # every step that uses the tool
        seen = hook.flagged.setdefault(state.loop_id, set())
        lines = [line for line in lines if line not in seen]  # shown once per loop
        if not lines:
            return
        seen.update(lines)
        header = f"loop {state.loop_id} {step.name}: {step.tool} failed before ({len(found)})"
        state.notes.append(f"memory flag, {header}: " + "; ".join(lines))
        run.flags += [f"{header}: {line[2:]}" for line in lines]
        log.info("memory: flagged to the executor before the call, %s:", header)
        for line in lines:
            log.info("  %s", line)
        state.draft(
            "research",
            f"### Loop `{state.loop_id}` {step.name}: memory flags before calling "
            f"`{step.tool}`\n\n" + "\n".join(lines) + "\n",
        )


def _question_of(memory: RetrievedMemory) -> str | None:
    first = memory.document.content.split("\n", 1)[0]
    return first.removeprefix("Question: ") if first.startswith("Question: ") else None


async def _met_on_similar_questions(
    run: MemoryRun, question: str, found: list[RetrievedMemory]
) -> list[RetrievedMemory]:
    """The failures met on a question like this one (or on no recorded question)."""
    asked = [_question_of(m) for m in found]
    if not any(asked):
        return found
    embedder = run.client.embedder
    mine = await asyncio.to_thread(embedder.embed_query, question)
    theirs = await asyncio.to_thread(embedder.embed, [q or "" for q in asked])
    return [m for m, q, vector in zip(found, asked, theirs, strict=True)
            if q is None or float(vector @ mine) >= FLAG_MIN_QUESTION_SIMILARITY]


class SynthesizeMemory(PhaseMemory):
    async def before(self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext) -> None:
        state = ctx.state
        found = await run.recall(
            state,
            phase="synthesize",
            purpose="earlier answers to related questions",
            query=state.question,
            filters={"memory_type": "answer"},
            agent_type="synthesizer",
        )
        this_run = set(run.sessions.values())
        earlier = [m for m in found if m.document.session_id not in this_run]
        if earlier:
            state.briefings["synthesizer"] = "\n".join(briefing_line(m) for m in earlier)

    async def after(
        self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext, result: Any
    ) -> None:
        await hook.store_outcome(run, ctx.state, succeeded=True)


class ReviewMemory(PhaseMemory):
    """A revised answer replaces the loop's answer memory still waiting to be written."""

    async def after(
        self, hook: MemoryNodeHook, run: MemoryRun, ctx: NodeContext, result: Any
    ) -> None:
        state = ctx.state
        for i, item in enumerate(run.pending):
            if item.get("memory_type") == "answer" and item["metadata"].get("loop_id") == state.loop_id:
                fresh = answer_memory(state, None)
                run.pending[i] = {**item, "content": fresh["content"], "metadata": fresh["metadata"]}


PHASES: Mapping[str, PhaseMemory] = {
    "plan": PlanMemory(),
    "execute": ExecuteMemory(),
    "synthesize": SynthesizeMemory(),
    "review": ReviewMemory(),
}


def plan_memory(draft: _PlanDraft, state: ResearchState, succeeded: bool) -> dict[str, Any]:
    failed = [step for step in state.plan if step.status == "failed"]
    ok = succeeded and not failed
    done = sum(step.status == "done" for step in state.plan)
    sources = cited_sources(state.final_answer or "")
    steps = [f"{step.line()} [{step.status}]" for step in state.plan]
    outcome = "succeeded" if ok else "failed"
    content = (
        f"Plan for {draft.question!r} {outcome}: {done} of {len(state.plan)} steps done"
        + (f"; failed: {'; '.join(s.line() for s in failed)}" if failed else "")
        + (f"; the answer cited {', '.join(sources)}" if sources else "")
        + ".\n"
        + "\n".join(steps)
    )
    return {
        "id": draft.memory_id,
        "content": content,
        "memory_type": "plan",
        "agent_type": "planner",
        "importance": PLAN_IMPORTANCE,
        "metadata": {
            "question": draft.question,
            "loop_id": state.loop_id,
            "success": ok,
            "steps": steps,
            "failed_tools": sorted({s.tool for s in failed if s.tool}),
            "sources": sources,
        },
    }


def answer_memory(state: ResearchState, plan_id: str | None) -> dict[str, Any]:
    answer = state.final_answer or ""
    return {
        "content": f"Question: {state.question}\nAnswer: {answer}",
        "memory_type": "answer",
        "agent_type": "synthesizer",
        "importance": ANSWER_IMPORTANCE,
        "relations": [("caused_by", plan_id)] if plan_id else None,
        "metadata": {
            "question": state.question,
            "loop_id": state.loop_id,
            "success": True,
            "sources": cited_sources(answer),
        },
    }


class MemoryNodeHook(NodeHook):
    """The one NodeHook of memory: dispatches on `node.phase` to the declared PhaseMemory."""

    def __init__(self, phases: Mapping[str, PhaseMemory] = PHASES) -> None:
        self.phases = dict(phases)
        self.run: MemoryRun | None = None
        self.plans: dict[str, _PlanDraft] = {}  # loop id -> plan waiting for its outcome
        self.flagged: dict[str, set[str]] = {}  # loop id -> flag lines already shown

    def start(self, run: MemoryRun) -> None:
        self.run, self.plans, self.flagged = run, {}, {}

    def _policy(self, node: WorkflowNode, ctx: NodeContext) -> PhaseMemory | None:
        if self.run is None or ctx.state.memory_client is None:
            return None
        return self.phases.get(node.phase)

    async def before_node(self, node: WorkflowNode, ctx: NodeContext) -> None:
        policy = self._policy(node, ctx)
        if policy is not None and self.run is not None:
            await policy.before(self, self.run, ctx)

    async def after_node(self, node: WorkflowNode, ctx: NodeContext, result: Any) -> None:
        policy = self._policy(node, ctx)
        if policy is not None and self.run is not None:
            await policy.after(self, self.run, ctx, result)

    async def on_node_error(
        self, node: WorkflowNode, ctx: NodeContext, error: BaseException
    ) -> None:
        if self._policy(node, ctx) is not None and self.run is not None:
            await self.store_outcome(self.run, ctx.state, succeeded=False)

    async def store_outcome(self, run: MemoryRun, state: ResearchState, succeeded: bool) -> None:
        """The loop's plan with its outcome, and its answer when it has one, join the run's
        pending batch (written when the loop ends)."""
        draft = self.plans.pop(state.loop_id, None)
        items = [plan_memory(draft, state, succeeded)] if draft is not None else []
        if succeeded and state.final_answer:
            items.append(answer_memory(state, draft.memory_id if draft else None))
        session = run.session_of(state.loop_id)
        run.pending += [{**item, "session_id": session} for item in items]
