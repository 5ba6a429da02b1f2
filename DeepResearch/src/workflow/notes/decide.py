"""The note decision after each executed step: should its result be recorded, how important is
it, and how does it connect to the notes so far. Offline a deterministic scorer; with a real
model a pydantic-ai agent whose output is a typed NoteDecision."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic_ai import Agent

from DeepResearch.src.agents.prompts import parse_findings
from DeepResearch.src.workflow.notes.models import CrossTaskConnection, NoteDecision, TaskNote
from DeepResearch.src.workflow.state import StepResult

NEGATIONS = {"not", "no", "never", "cannot", "can't", "isn't", "aren't", "doesn't", "don't",
             "unsuitable", "without", "fails", "wrong"}
STOPWORDS = {"that", "this", "with", "from", "have", "they", "their", "which", "when", "into",
             "should", "must", "used", "uses", "such", "than", "more", "less", "also", "reads"}
SAME_STATEMENT = 0.5  # share of terms two findings have in common to be about one thing
_NUMBER = re.compile(r"\d")
_COMPARISON = re.compile(r"\b(than|faster|slower|compared|versus|vs\.?|outperform\w*)\b", re.I)
_WORD = re.compile(r"[a-z][a-z0-9-]{3,}")


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and w not in NEGATIONS}


def _negative(text: str) -> bool:
    return bool(set(re.findall(r"[a-z']+", text.lower())) & NEGATIONS)


def draft_note(task_id: str, result: StepResult, timestamp: str) -> dict[str, Any]:
    """Everything of a step's note but the decision (and the connections it finds)."""
    found = parse_findings(result.summary) + parse_findings("\n".join(result.findings))
    findings = list(dict.fromkeys(f"[{f.source}] {f.text}" for f in found))
    lines = [line.strip() for line in result.summary.splitlines() if line.strip()]
    quality = [] if result.success else [f"the step failed: {result.error or 'no result'}"]
    if result.success and not findings:
        quality.append("no finding could be read from the step's result")
    return {
        "task_id": task_id,
        "task_type": result.kind,
        "description": result.step,
        "timestamp": timestamp,
        "observations": lines[:5],
        "key_findings": findings,
        "quantitative_data": [f for f in findings if _NUMBER.search(f) or _COMPARISON.search(f)],
        "confidence_level": 0.0 if not result.success else (0.8 if findings else 0.4),
        "data_quality_notes": quality,
        "follow_up_questions": [] if result.success else [f"retry or replace: {result.step}"],
    }


def score_note(draft: dict[str, Any], earlier: Sequence[TaskNote], threshold: int) -> NoteDecision:
    """The offline decision: new information, numbers and comparisons, failures,
    contradictions with earlier notes and links to other steps raise the score."""
    known = {f for note in earlier for f in note.key_findings}
    new = [f for f in draft["key_findings"] if f not in known]
    connections: list[CrossTaskConnection] = []
    for note in earlier:
        for finding in new:
            for other in note.key_findings:
                mine, theirs = _terms(finding), _terms(other)
                shared = mine & theirs
                # the same statement (most of its terms), once affirmed and once denied
                same = len(shared) >= 2 and len(shared) >= SAME_STATEMENT * len(mine | theirs)
                if same and _negative(finding) != _negative(other):
                    connections.append(CrossTaskConnection(
                        connected_task=note.task_id, connection_type="contradicts",
                        description=f"{finding!r} against {other!r} (on {', '.join(sorted(shared)[:4])})",
                    ))
                    break
            else:
                continue
            break
        repeated = set(draft["key_findings"]) & set(note.key_findings)
        sources = {f.split("]", 1)[0] for f in new} & {f.split("]", 1)[0] for f in note.key_findings}
        if repeated:
            connections.append(CrossTaskConnection(
                connected_task=note.task_id, connection_type="validates",
                description=f"{len(repeated)} finding(s) found again"))
        elif sources and not any(c.connected_task == note.task_id for c in connections):
            connections.append(CrossTaskConnection(
                connected_task=note.task_id, connection_type="extends",
                description=f"new findings from {', '.join(sorted(s + ']' for s in sources))}"))
    failed = not draft["key_findings"] and bool(draft["data_quality_notes"])
    contradicts = any(c.connection_type == "contradicts" for c in connections)
    quantitative = any(f in new for f in draft["quantitative_data"])
    extends = any(c.connection_type == "extends" for c in connections)
    points = 2 * min(len(new), 3) + 2 * quantitative + 4 * failed + 4 * contradicts + extends
    importance = max(1, min(10, 1 + points))
    reasons = [f"{len(new)} new finding(s)"]
    reasons += ["numbers or comparisons"] * quantitative + ["the step failed"] * failed
    reasons += ["contradicts an earlier note"] * contradicts
    if not new and not failed:
        reasons.append("routine: nothing the notes do not hold already")
    return NoteDecision(
        should_record=importance >= threshold,
        reasoning=f"importance {importance} (threshold {threshold}): " + "; ".join(reasons),
        importance_score=importance,
        connections=connections,
    )


class NoteDecider(Protocol):
    async def decide(
        self, draft: dict[str, Any], earlier: Sequence[TaskNote], threshold: int
    ) -> NoteDecision: ...


class ScoreDecider:
    async def decide(
        self, draft: dict[str, Any], earlier: Sequence[TaskNote], threshold: int
    ) -> NoteDecision:
        return score_note(draft, earlier, threshold)


NOTE_INSTRUCTIONS = (
    "You keep a researcher's notes. Given the result of one research step and the notes so "
    "far, decide whether the result is worth a note: new information, numbers or comparisons, "
    "failures, contradictions with earlier notes, links to other steps. Routine or redundant "
    "results are not recorded. Score importance from 1 (routine) to 10 (essential); connect the "
    "note to earlier tasks by their task_id (validates, informs, contradicts or extends)."
)


class AgentDecider:
    """A pydantic-ai agent decides (output_type=NoteDecision); connections to unknown tasks
    are dropped, and the threshold still applies to its score."""

    def __init__(self, agent: Agent[None, NoteDecision]) -> None:
        self.agent = agent

    async def decide(
        self, draft: dict[str, Any], earlier: Sequence[TaskNote], threshold: int
    ) -> NoteDecision:
        notes = [{"task_id": n.task_id, "key_findings": n.key_findings} for n in earlier]
        prompt = (
            f"Importance threshold: {threshold}.\nStep result:\n{json.dumps(draft, indent=1)}\n"
            f"Notes so far:\n{json.dumps(notes, indent=1)}"
        )
        decision = (await self.agent.run(prompt)).output
        known = {n.task_id for n in earlier}
        return decision.model_copy(update={
            "connections": [c for c in decision.connections if c.connected_task in known],
            "should_record": decision.should_record and decision.importance_score >= threshold,
        })


def note_agent(model: Any) -> Agent[None, NoteDecision]:
    return Agent(model, output_type=NoteDecision, instructions=NOTE_INSTRUCTIONS)
