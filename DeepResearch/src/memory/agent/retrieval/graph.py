"""The retrieval agent's pydantic-graph graph:

    AnalyzeConversation -> PlanQueries -> ExecuteTool -> EvaluateProgress -> PlanQueries ...
                                     \\-> Synthesize -> End[RetrievalResult]   (EvaluateProgress too)

PlanQueries stops the loop at max_iterations (tool calls made), when the planner has nothing
left or finishes, and when the planned call (same tool, same arguments) was already made
twice (the loop guard: a third identical call is never made). EvaluateProgress stops it at
max_facts (distinct facts found that the answer would return: synthesis.worth_returning),
when the goal is met, or when the run is stuck. A tool that fails or times out is recorded
(trace, success rate) and the loop goes on.

Every node subclasses RetrievalNode, which times its `run` into the trace (written here, not
borrowed from the workflow package: the memory never imports the workflow).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from pydantic_graph import BaseNode, End, GraphBuilder, GraphRunContext

from DeepResearch.src.memory.agent.retrieval.state import RetrievalDeps, RetrievalState
from DeepResearch.src.memory.agent.retrieval.synthesis import (
    answer_fact,
    confidence_score,
    deduplicate,
    format_fact,
    grade,
    mentions,
    rank,
    score_relevance,
    worth_returning,
)
from DeepResearch.src.memory.agent.retrieval.types import (
    MEMORY_TOOL,
    RetrievalMetadata,
    RetrievalResult,
    TraceEvent,
)

Ctx = GraphRunContext[RetrievalState, RetrievalDeps]
LOOP_GUARD = 2  # an identical call may be made twice; the third is refused and the run stops


def _traced(run: Callable[[Any, Ctx], Awaitable[Any]]) -> Callable[[Any, Ctx], Awaitable[Any]]:
    @functools.wraps(run)
    async def wrapped(self: RetrievalNode, ctx: Ctx) -> Any:
        state = ctx.state
        started_ms = state.elapsed_ms()
        started = time.perf_counter()
        notes_before = len(state.notes)
        try:
            result = await run(self, ctx)
        except BaseException as exc:
            state.trace.append(TraceEvent(
                kind="node", name=self.name, started_ms=started_ms,
                duration_ms=round((time.perf_counter() - started) * 1000, 3), success=False,
                detail=f"{type(exc).__name__}: {exc}",
            ))
            raise
        detail = "; ".join([self.detail(ctx), *state.notes[notes_before:]]).strip("; ")
        state.trace.append(TraceEvent(
            kind="node", name=self.name, started_ms=started_ms,
            duration_ms=round((time.perf_counter() - started) * 1000, 3), detail=detail,
        ))
        return result

    wrapped.__traced__ = True  # type: ignore[attr-defined]
    return wrapped


class RetrievalNode(BaseNode[RetrievalState, RetrievalDeps, RetrievalResult]):
    name: ClassVar[str] = "node"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        run = cls.__dict__.get("run")
        if run is not None and not getattr(run, "__traced__", False):
            cls.run = _traced(run)  # type: ignore[method-assign]

    def detail(self, ctx: Ctx) -> str:
        return ""


class AnalyzeConversation(RetrievalNode):
    name = "analyze_conversation"

    async def run(self, ctx: Ctx) -> PlanQueries:
        ctx.state.analysis = await ctx.deps.planner.analyze(ctx.state, ctx.deps)
        return PlanQueries()

    def detail(self, ctx: Ctx) -> str:
        a = ctx.state.analysis
        return (f"goal={a.goal!r}; entities={a.entities}; questions={len(a.questions)}; "
                f"needs={[f'{n.kind}:{n.subject}' for n in a.needs]}")


class PlanQueries(RetrievalNode):
    name = "plan_queries"

    async def run(self, ctx: Ctx) -> ExecuteTool | Synthesize:
        state, deps = ctx.state, ctx.deps
        state.next_call = None
        if state.iterations >= deps.max_iterations:
            state.stop_reason = "max_iterations"
            return Synthesize()
        call = await deps.planner.plan(state, deps)
        if call is None:
            state.stop_reason = "planner_finished" if deps.planner.kind == "model" else "plan_exhausted"
            return Synthesize()
        if state.call_counts[call.key()] >= LOOP_GUARD:
            state.stop_reason = "loop_guard"
            state.notes.append(f"loop guard: {call.tool}({call.arguments}) was already called "
                               f"{state.call_counts[call.key()]} times; not calling it again")
            return Synthesize()
        state.next_call = call
        return ExecuteTool()

    def detail(self, ctx: Ctx) -> str:
        call = ctx.state.next_call
        if call is None:
            return f"stop: {ctx.state.stop_reason}"
        return f"next: {call.tool}({call.arguments})" + (f" -- {call.reason}" if call.reason else "")


class ExecuteTool(RetrievalNode):
    name = "execute_tool"

    async def run(self, ctx: Ctx) -> EvaluateProgress:
        state, deps = ctx.state, ctx.deps
        call = state.next_call
        if call is None:
            raise RuntimeError("ExecuteTool ran without a planned call (PlanQueries sets it)")
        state.iterations += 1
        state.call_counts[call.key()] += 1
        started_ms = state.elapsed_ms()
        found, record = await deps.runner.call(call)
        new = state.add_facts(found)
        record.new_facts = new
        if call.need is not None and record.success and found:
            # A targeted tool's facts answer its need; a semantic or memory search's only
            # those naming what the need is about (nearest neighbours always come back).
            need = state.analysis.needs[call.need] if call.need < len(state.analysis.needs) else None
            broad = call.tool in ("semantic_search_facts", MEMORY_TOOL) and need is not None \
                and need.kind != "search"
            answering = [f for f in found if mentions(f, [need.subject])] if broad and need else found
            if need is not None and need.kind == "person" and need.focus:
                # "where does Dana work?": her current profile answers only with a job; when
                # it has none, her timeline (ended facts) is asked next
                answering = [f for f in answering if (f.predicate or "").upper() in need.focus]
            state.need_hits[call.need] += len(answering)
        state.no_progress = 0 if new else state.no_progress + 1
        state.calls.append(record)
        state.trace.append(TraceEvent(
            kind="tool", name=call.tool, started_ms=started_ms, duration_ms=record.duration_ms,
            success=record.success,
            detail=record.error or f"{record.output_size} facts, {new} new"
            + (f"; {record.message}" if record.message else ""),
            call=record,
        ))
        return EvaluateProgress()

    def detail(self, ctx: Ctx) -> str:
        record = ctx.state.calls[-1]
        return f"{record.tool}: " + ("ok" if record.success else f"failed ({record.error})")


def _returnable(state: RetrievalState, deps: RetrievalDeps) -> int:
    """The facts found so far that the answer would return: nearest neighbours that answer
    nothing must not use up max_facts before the other needs are asked."""
    count = 0
    for fact in state.facts.values():
        fact.relevance = score_relevance(fact, state.analysis)
        count += worth_returning(fact, deps.min_similarity)
    return count


class EvaluateProgress(RetrievalNode):
    name = "evaluate_progress"

    async def run(self, ctx: Ctx) -> PlanQueries | Synthesize:
        state, deps = ctx.state, ctx.deps
        if _returnable(state, deps) >= deps.max_facts:
            state.stop_reason = "max_facts"
            return Synthesize()
        evaluation = await deps.planner.evaluate(state, deps)
        state.notes.append(f"goal_met={evaluation.goal_met}, stuck={evaluation.stuck}"
                           + (f": {evaluation.reason}" if evaluation.reason else ""))
        if evaluation.goal_met:
            state.stop_reason = "goal_met"
            return Synthesize()
        if evaluation.stuck:
            state.stop_reason = "stuck"
            return Synthesize()
        return PlanQueries()


class Synthesize(RetrievalNode):
    name = "synthesize"

    async def run(self, ctx: Ctx) -> End[RetrievalResult]:
        state, deps = ctx.state, ctx.deps
        facts = list(state.facts.values())
        for fact in facts:
            fact.relevance = score_relevance(fact, state.analysis)
        kept = [f for f in deduplicate(facts) if worth_returning(f, deps.min_similarity)]
        chosen = rank(kept)[: deps.max_facts]
        successes = sum(1 for c in state.calls if c.success)
        confidence = grade(chosen, len(state.calls), successes)
        result = RetrievalResult(
            facts=[format_fact(f) for f in chosen],
            details=[answer_fact(f) for f in chosen],
            confidence=confidence,
            metadata=RetrievalMetadata(
                queries_executed=len(state.calls),
                facts_retrieved=len(chosen),
                processing_time_ms=state.elapsed_ms(),
                iterations_used=state.iterations,
                request_id=state.request_id,
                stop_reason=state.stop_reason,
                tool_success_rate=round(successes / len(state.calls), 4) if state.calls else 1.0,
                planner="model" if deps.planner.kind == "model" else "rules",
                confidence_score=confidence_score(chosen, len(state.calls), successes),
            ),
        )
        state.result = result
        return End(result)

    def detail(self, ctx: Ctx) -> str:
        result = ctx.state.result
        if result is None:
            return ""
        return f"{result.metadata.facts_retrieved} facts, confidence {result.confidence}, stop: {result.metadata.stop_reason}"


NODES = (AnalyzeConversation, PlanQueries, ExecuteTool, EvaluateProgress, Synthesize)


@functools.cache
def retrieval_graph() -> Any:
    builder = GraphBuilder(
        name="memory_retrieval",
        state_type=RetrievalState,
        deps_type=RetrievalDeps,
        input_type=AnalyzeConversation,
        output_type=RetrievalResult,
    )
    builder.add(builder.edge_from(builder.start_node).to(AnalyzeConversation))
    builder.add(*(builder.node(node) for node in NODES))
    return builder.build()
