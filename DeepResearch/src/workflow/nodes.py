"""The workflow nodes: Plan -> Route -> Execute (per flow) -> Synthesize -> Review -> End
(Review: the root loop's answer, rounds of review and revision, review.py).

Every node subclasses WorkflowNode (timing, hooks); the edges come from the return type
hints of `run`, and graph.py derives the node list from them.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic_graph import End, GraphRunContext

from DeepResearch.src.agents.prompts import (
    SUBQUESTION,
    PlanStep,
    executor_prompt,
    parse_findings,
    parse_plan,
    planner_prompt,
    synthesizer_prompt,
)
from DeepResearch.src.datatypes.agents import AgentType
from DeepResearch.src.datatypes.execution import ErrorCategory, ExecutionStatus
from DeepResearch.src.memory.embeddings import get_embedder
from DeepResearch.src.memory.errors import EmbeddingModelError
from DeepResearch.src.rag.faiss_store import FAISSVectorStore
from DeepResearch.src.utils.execution_history import ExecutionItem
from DeepResearch.src.workflow.base import WorkflowNode
from DeepResearch.src.workflow.errors import ConfigurationError, WorkflowError
from DeepResearch.src.workflow.flows import flow_settings
from DeepResearch.src.workflow.review import ReviewRound, round_draft
from DeepResearch.src.workflow.services import WorkflowServices
from DeepResearch.src.workflow.state import ResearchState, StepResult

Ctx = GraphRunContext[ResearchState, WorkflowServices]


class Plan(WorkflowNode):
    phase = "plan"

    async def run(self, ctx: Ctx) -> Route:
        state, services = ctx.state, ctx.deps
        tools = services.registry.names()
        allowance = services.orchestrator.sub_question_allowance(state)
        prompt = planner_prompt(
            state.question, tools, allowance, memory=state.take_briefing(AgentType.PLANNER)
        )
        result = await services.agents.planner.execute(
            prompt, services.agent_deps(state, AgentType.PLANNER, "plan")
        )
        if not result.success:
            raise WorkflowError(f"planning failed for {state.question!r}: {result.error}")
        state.full_plan = result.data
        steps = parse_plan(result.data, tools)
        if not steps:
            state.errors.append(
                f"loop {state.loop_id}: the planner's output had no `N. tool: input` lines; "
                "ran the fallback plan (search, then read)"
            )
            steps = [
                PlanStep(1, "tool", state.question, tool="search_documents"),
                PlanStep(2, "tool", "the top results of step 1", tool="read_document"),
            ]
        state.plan = _limit_sub_questions(steps, allowance, state)
        state.draft(
            "planning",
            f"## Loop `{state.loop_id}` (depth {state.depth}): {state.question}\n\n"
            f"Planner output:\n\n```\n{result.data.strip()}\n```\n\nSteps:\n\n"
            + "\n".join(f"- {step.line()}" for step in state.plan),
        )
        return Route()


def _limit_sub_questions(
    steps: list[PlanStep], allowance: int, state: ResearchState
) -> list[PlanStep]:
    """Sub-questions beyond the allowance (or when nesting is not allowed) become searches."""
    kept = 0
    for step in steps:
        if step.kind != SUBQUESTION:
            continue
        if kept < allowance:
            kept += 1
            continue
        step.kind, step.tool = "tool", "search_documents"
        state.notes.append(f"step {step.index}: sub-question researched in this loop (no nesting)")
    return steps


class Route(WorkflowNode):
    phase = "route"

    async def run(self, ctx: Ctx) -> ExecuteDefault | ExecuteRag:
        flow = ctx.state.flow
        node_class = FLOW_NODES.get(flow)
        if node_class is None:
            raise WorkflowError(f"no Execute node for flow {flow!r}; flows: {sorted(FLOW_NODES)}")
        ctx.state.notes.append(f"loop {ctx.state.loop_id}: routed to the {flow} flow")
        return node_class()


async def execute_next_step(ctx: Ctx) -> bool:
    """Run the next pending step of the plan; True while steps remain (within the limit)."""
    state = ctx.state
    pending = state.pending_steps
    if not pending:
        return False
    if state.iteration >= state.max_iterations:
        _skip(state, pending)
        return False
    state.iteration += 1
    step = pending[0]
    if step.kind == SUBQUESTION:
        await _run_sub_question(ctx, step)
    else:
        await _run_tool_step(ctx, step)
    return bool(state.pending_steps)


def _skip(state: ResearchState, steps: list[PlanStep]) -> None:
    message = (
        f"loop {state.loop_id}: iteration limit {state.max_iterations} reached; skipped "
        + ", ".join(step.line() for step in steps)
    )
    state.errors.append(message)
    for step in steps:
        _mark_skipped(state, step, message, ErrorCategory.ITERATION_LIMIT)


def _mark_skipped(
    state: ResearchState, step: PlanStep, why: str, category: ErrorCategory
) -> None:
    """The step is skipped, and the history says so (a SKIPPED item: no tool ran)."""
    step.status = "skipped"
    state.execution_history.add(
        ExecutionItem(
            step_name=step.name,
            tool=step.tool or step.kind,
            status=ExecutionStatus.SKIPPED,
            error=why,
            error_category=category,
            parameters={"input": step.text},
            loop_id=state.loop_id,
        )
    )


def _not_called(state: ResearchState, step: PlanStep, reply: str) -> str:
    """The executor answered without calling a tool: the step is skipped, for the reason the
    executor gave (its `! skipped ...` lines, else its reply), and the history says so."""
    reasons = [line.strip()[2:] for line in reply.splitlines() if line.strip().startswith("! ")]
    reason = "; ".join(reasons) or " ".join(reply.split())[:300] or "no reason given"
    state.notes.append(f"loop {state.loop_id} {step.name}: not run: {reason}")
    _mark_skipped(state, step, reason, ErrorCategory.NOT_CALLED)
    return reason


def _sources_of(items: list[ExecutionItem]) -> list[str]:
    sources: list[str] = []
    for item in items:
        if item.status is not ExecutionStatus.SUCCESS:
            continue
        results = item.result if isinstance(item.result, list) else [item.result]
        sources += [r["source"] for r in results if isinstance(r, dict) and "source" in r]
    return list(dict.fromkeys(sources))


async def _run_tool_step(ctx: Ctx, step: PlanStep) -> None:
    state, services = ctx.state, ctx.deps
    started = time.perf_counter()
    before = len(state.execution_history)
    prompt = executor_prompt(
        state.question,
        step,
        len(state.plan),
        state.sources,
        state.findings,
        memory=state.take_briefing(AgentType.EXECUTOR),
    )
    result = await services.agents.executor.execute(
        prompt, services.agent_deps(state, AgentType.EXECUTOR, step.name)
    )
    items = state.execution_history.items[before:]
    sources = _sources_of(items)
    findings = parse_findings(result.data) if result.success else []
    state.findings += findings
    state.add_sources(sources)
    failed_all = bool(items) and all(i.status is ExecutionStatus.FAILED for i in items)
    step.status = "done" if result.success and not failed_all else "failed"
    error = result.error or ("; ".join(i.error or "" for i in items) if failed_all else None)
    if error:
        state.errors.append(f"loop {state.loop_id} {step.name}: {error}")
    elif step.tool and not items:  # a skip, not an error of the run
        error = f"not run: {_not_called(state, step, result.data)}"
    state.execution_results.append(
        StepResult(
            step=step.line(),
            kind=step.kind,
            success=step.status == "done",
            summary=result.data,
            tool_calls=[i.tool for i in items],
            sources=sources,
            error=error,
            duration=time.perf_counter() - started,
        )
    )
    calls = "\n".join(
        f"- `{i.tool}({', '.join(f'{k}={v!r}' for k, v in i.parameters.items())})` -> {i.status.value}"
        + (f": {i.error}" if i.error else "")
        for i in items
    )
    state.draft(
        "research",
        f"### Loop `{state.loop_id}` {step.name}: {step.line()}\n\nTool calls:\n\n"
        f"{calls or '- (none)'}\n\nExecutor report:\n\n{result.data or result.error}\n",
    )


async def _run_sub_question(ctx: Ctx, step: PlanStep) -> None:
    state, services = ctx.state, ctx.deps
    sub = await services.orchestrator.run_nested_loop(state, step.text, services)
    step.status = "done" if sub.success else "failed"
    state.execution_results.append(
        StepResult(
            step=step.line(),
            kind=step.kind,
            success=sub.success,
            summary=sub.answer,
            tool_calls=["sub_loop"],
            sources=sub.sources,
            error="; ".join(sub.errors) or None,
            duration=sub.duration,
            findings=sub.findings,
        )
    )


class ExecuteDefault(WorkflowNode):
    """The default flow: plan steps run against the lexical document search."""

    phase = "execute"

    async def run(self, ctx: Ctx) -> ExecuteDefault | Synthesize:
        return ExecuteDefault() if await execute_next_step(ctx) else Synthesize()


class ExecuteRag(WorkflowNode):
    """The rag flow: the documents are indexed in FAISS first; search goes through it."""

    phase = "execute"

    async def run(self, ctx: Ctx) -> ExecuteRag | Synthesize:
        library = ctx.deps.tool_context.library
        if library.vector_store is None:
            started = time.perf_counter()
            rag = flow_settings(ctx.state.config, "rag")
            try:
                store = FAISSVectorStore(
                    get_embedder(rag.embedding_model),
                    chunk_size=rag.chunk_size,
                    chunk_overlap=rag.chunk_overlap,
                )
                chunks = await library.enable_vector_search(store)
            except EmbeddingModelError as exc:  # the rag flow's own setting chose the model
                raise ConfigurationError(
                    f"flows.rag.embedding_model={rag.embedding_model!r} cannot be loaded: "
                    f"{exc.reason}") from None
            took = time.perf_counter() - started
            ctx.state.timings["index"] = ctx.state.timings.get("index", 0.0) + took
            ctx.state.notes.append(
                f"indexed {len(library.documents)} documents ({chunks} chunks) in FAISS in {took:.2f}s"
            )
        return ExecuteRag() if await execute_next_step(ctx) else Synthesize()


class Synthesize(WorkflowNode):
    phase = "synthesize"

    async def run(self, ctx: Ctx) -> Review | End[str]:
        state, services = ctx.state, ctx.deps
        sub_answers = [(sub.question, sub.answer) for sub in state.sub_loops if sub.answer]
        prompt = synthesizer_prompt(
            state.question,
            state.findings,
            sub_answers,
            memory=state.take_briefing(AgentType.SYNTHESIZER),
        )
        result = await services.agents.synthesizer.execute(
            prompt, services.agent_deps(state, AgentType.SYNTHESIZER, "synthesize")
        )
        if not result.success:
            raise WorkflowError(f"synthesis failed for {state.question!r}: {result.error}")
        answer = result.data.strip()
        state.final_answer = answer
        state.answers.append(answer)
        state.draft(
            "writing",
            f"## Loop `{state.loop_id}`: {state.question}\n\n"
            f"From {len(state.findings)} findings and {len(sub_answers)} sub-answers.\n\n{answer}\n",
        )
        if state.depth == 0 and services.review is not None and answer:
            return Review()
        return End(answer)


class Review(WorkflowNode):
    """One round of review and revision of the root loop's answer; another round while the
    reviewer found problems, the reviser changed the draft and rounds remain."""

    phase = "review"

    async def run(self, ctx: Ctx) -> Review | End[str]:
        state, team = ctx.state, ctx.deps.review
        draft = state.final_answer or ""
        if team is None:  # resumed with review turned off since
            return End(draft)
        number = len(state.review_rounds) + 1
        notes = await team.reviewer.review(state.question, draft, list(state.sources))
        record = ReviewRound(round=number, version=number,
                             problems=[p.model_dump() for p in notes.problems])
        if notes.problems:
            revised = (await team.reviser.revise(state.question, draft, notes)).strip()
            if revised and revised != draft.strip():
                record.revised = True
                state.final_answer = revised
                state.answers.append(revised)
        state.review_rounds.append(record)
        state.draft("review", round_draft(state.question, record, draft))
        if record.revised and number < team.settings.max_rounds:
            return Review()
        return End(state.final_answer or draft)


FLOW_NODES: dict[str, Any] = {"default": ExecuteDefault, "rag": ExecuteRag}
