"""Who decides the next call and whether the goal is met: the rules (offline, deterministic)
or a configured model (pydantic-ai agents with typed outputs), which falls back to the rules
for a step when the model fails.

Rules. Analysis (analysis.py) turns each question into a need with an ordered list of calls.
`plan` takes the first need that has found nothing yet and returns its first call not made
yet; with none left it finishes. `evaluate`: the goal is met when every need has found at
least one fact; the run is stuck after 6 calls in a row that found nothing new (longer than
one need's own chain of fallbacks, so every need's primary tool is tried first). With a
model, the run is stuck after 3 such calls whatever the model says.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_ai import Agent

from DeepResearch.src.memory.agent.retrieval.analysis import analyze, read_messages
from DeepResearch.src.memory.agent.retrieval.state import RetrievalDeps, RetrievalState
from DeepResearch.src.memory.agent.retrieval.synthesis import format_fact
from DeepResearch.src.memory.agent.retrieval.types import (
    ConversationAnalysis,
    PlanDecision,
    PlannedCall,
    ProgressEvaluation,
)

STUCK_AFTER = 3  # calls in a row without a new fact (model planner)
RULES_STUCK_AFTER = 6  # the same for the rules, whose plan is finite anyway


class RulesPlanner:
    kind = "rules"

    async def analyze(self, state: RetrievalState, deps: RetrievalDeps) -> ConversationAnalysis:
        with_memory = "search_memory" in deps.runner.available()
        return analyze(state.messages, channel_id=state.channel_id, with_memory=with_memory)

    async def plan(self, state: RetrievalState, deps: RetrievalDeps) -> PlannedCall | None:
        available = set(deps.runner.available())
        unknown = {m.group(1).casefold() for c in state.calls
                   if (m := re.match(r"no person named '(.+)' is known", c.message or ""))}
        for index, need in enumerate(state.analysis.needs):
            if state.need_hits[index]:
                continue
            for call in need.calls:
                person = str(call.arguments.get("person") or "").casefold()
                if person and person in unknown:
                    continue  # the graph already said no such person is known
                if call.tool in available and not state.call_counts[call.key()]:
                    return call
        return None

    async def evaluate(self, state: RetrievalState, deps: RetrievalDeps) -> ProgressEvaluation:
        needs = state.analysis.needs
        met = bool(needs) and all(state.need_hits[i] for i in range(len(needs)))
        stuck = state.no_progress >= RULES_STUCK_AFTER
        found = sum(1 for i in range(len(needs)) if state.need_hits[i])
        return ProgressEvaluation(goal_met=met, stuck=stuck, reason=f"{found}/{len(needs)} needs answered")


PLAN_INSTRUCTIONS = """\
You plan the retrieval of facts about people for a conversation, one tool call at a time.
Given the conversation, its analysis, the tools and the calls made so far (with how many
facts each returned), answer with the next call (action 'call', the tool and its keyword
arguments exactly as the signature names them) or action 'finish' when the facts found
answer the conversation's questions or nothing more can be found. Never repeat a call that
returned nothing. Tools answer with current facts by default: when the question is about the
past ("didn't Charlie work there?", "who used to ...") or the current facts do not answer it,
ask for ended facts too (include_history=True, current_only=False, get_person_timeline);
an ended fact's sentence says when it ended."""

EVALUATE_INSTRUCTIONS = """\
You judge whether the facts retrieved so far answer the conversation's questions.
goal_met: true when they do. stuck: true when further tool calls are unlikely to add
anything (the same calls keep returning nothing)."""


class ModelPlanner:
    """Planning and evaluation by a model; analysis stays with the rules (its entities and
    needs are given to the model as a starting point)."""

    kind = "model"

    def __init__(self, model: Any) -> None:
        try:
            self.plan_agent = Agent(model, output_type=PlanDecision, instructions=PLAN_INSTRUCTIONS, retries=2)
            self.evaluate_agent = Agent(
                model, output_type=ProgressEvaluation, instructions=EVALUATE_INSTRUCTIONS, retries=2
            )
        except Exception as exc:
            raise ValueError(
                f"the retrieval agent cannot use model {model!r}: {type(exc).__name__}: {exc} "
                "(a provider-prefixed name such as 'openai:gpt-4o' with its API key variable set, "
                "e.g. OPENAI_API_KEY, or a pydantic-ai Model instance)"
            ) from exc
        self.rules = RulesPlanner()

    async def analyze(self, state: RetrievalState, deps: RetrievalDeps) -> ConversationAnalysis:
        return await self.rules.analyze(state, deps)

    async def plan(self, state: RetrievalState, deps: RetrievalDeps) -> PlannedCall | None:
        try:
            result = await self.plan_agent.run(self._prompt(state, deps, "Plan the next call."))
        except Exception as exc:  # degrade to the rules for this step
            state.notes.append(f"planning model failed ({type(exc).__name__}: {exc}); the rules planned")
            return await self.rules.plan(state, deps)
        decision = result.output
        if decision.action == "finish" or decision.tool is None:
            state.notes.append(f"the model finished: {decision.reason}".rstrip(": "))
            return None
        return PlannedCall(tool=decision.tool, arguments=decision.arguments, reason=decision.reason)

    async def evaluate(self, state: RetrievalState, deps: RetrievalDeps) -> ProgressEvaluation:
        try:
            result = await self.evaluate_agent.run(self._prompt(state, deps, "Evaluate the progress."))
        except Exception as exc:
            state.notes.append(f"evaluation model failed ({type(exc).__name__}: {exc}); the rules judged")
            return await self.rules.evaluate(state, deps)
        evaluation = result.output
        if state.no_progress >= STUCK_AFTER and not evaluation.stuck:
            evaluation = evaluation.model_copy(update={"stuck": True, "reason": evaluation.reason + " (rules: no new facts)"})
        return evaluation

    def _prompt(self, state: RetrievalState, deps: RetrievalDeps, task: str) -> str:
        turns = [f"{t.author}: {t.content}" if t.author else t.content for t in read_messages(state.messages)]
        analysis = state.analysis
        calls = [f"- {c.tool}({json.dumps(c.input, default=str)}) -> "
                 + (f"{c.output_size} facts ({c.new_facts} new)" if c.success else f"failed: {c.error}")
                 + (f" -- {c.message}" if c.message else "")
                 for c in state.calls]
        facts = [format_fact(f) for f in list(state.facts.values())[:15]]
        suggested = [f"- {c.tool}({json.dumps(c.arguments, default=str)})" for n in analysis.needs for c in n.calls[:2]]
        return "\n".join([
            task,
            "Conversation:", *[f"> {t}" for t in turns[-10:]],
            f"Channel: {state.channel_id or '(none)'}",
            f"Goal: {analysis.goal}",
            f"Entities: {', '.join(analysis.entities) or '(none)'}",
            "Suggested calls:", *(suggested or ["(none)"]),
            "Tools:", *[f"- {deps.runner.signature(t)}" for t in deps.runner.available()],
            f"Calls so far ({state.iterations} of at most {deps.max_iterations}):", *(calls or ["(none)"]),
            f"Facts so far ({len(state.facts)} of at most {deps.max_facts}):", *(facts or ["(none)"]),
        ])
