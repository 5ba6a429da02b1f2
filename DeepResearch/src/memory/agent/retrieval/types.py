"""The retrieval agent's data: what it plans, what it found, what it returns, its trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

# The ten fact tools (facts/tools.py, called bound to a FactGraph) and the hybrid memory
# retrieval (MemorySystemClient.retrieve), under the names the planner uses; the Literal is
# the one list (a model's typed plan is validated against it).
ToolName = Literal[
    "get_person_profile",
    "find_people_by_skill",
    "find_people_by_organization",
    "get_relationships_between",
    "find_people_by_topic",
    "get_person_timeline",
    "find_people_by_location",
    "get_conversation_participants",
    "find_experts",
    "semantic_search_facts",
    "search_memory",
]
MEMORY_TOOL = "search_memory"
TOOL_NAMES: tuple[str, ...] = get_args(ToolName)
FACT_TOOLS: tuple[str, ...] = tuple(name for name in TOOL_NAMES if name != MEMORY_TOOL)

Confidence = Literal["high", "medium", "low"]
StopReason = Literal[
    "goal_met", "stuck", "max_iterations", "max_facts", "loop_guard", "plan_exhausted", "planner_finished"
]


# --- what analysis and planning produce (also the model's typed outputs) -----------------

class PlannedCall(BaseModel):
    tool: ToolName
    arguments: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""
    need: int | None = None  # index of the Need it serves (rules planner)

    def key(self) -> tuple[str, str]:
        """The loop guard's identity of a call: the tool and its arguments, canonically."""
        items = sorted((k, _canon(v)) for k, v in self.arguments.items() if v is not None)
        return self.tool, repr(items)


def _canon(value: Any) -> Any:
    return " ".join(value.casefold().split()) if isinstance(value, str) else value


class Need(BaseModel):
    """One thing the conversation asks for, and the calls that may answer it, in order."""

    question: str
    kind: str  # experts, person, organization, location, topic, skill, relationship, ...
    subject: str  # the entity or words it is about
    calls: list[PlannedCall] = Field(default_factory=list)
    focus: list[str] = Field(default_factory=list)  # predicates the question asks about


class ConversationAnalysis(BaseModel):
    entities: list[str] = Field(default_factory=list)
    people: list[str] = Field(default_factory=list)  # authors and names known to be people
    questions: list[str] = Field(default_factory=list)
    goal: str = ""
    needs: list[Need] = Field(default_factory=list)
    channel_id: str | None = None


class PlanDecision(BaseModel):
    """The planner's typed output: the next call, or finish."""

    action: Literal["call", "finish"] = Field(
        description="'call' to run one more tool, 'finish' when the facts found answer the goal"
    )
    tool: ToolName | None = Field(default=None, description="the tool to call when action is 'call'")
    arguments: dict[str, Any] = Field(default_factory=dict, description="the tool's keyword arguments")
    reason: str = ""


class ProgressEvaluation(BaseModel):
    """The evaluator's typed output."""

    goal_met: bool = Field(description="the facts found answer the conversation's questions")
    stuck: bool = Field(default=False, description="further calls are unlikely to find more")
    reason: str = ""



# --- what tools return, normalised ------------------------------------------------------

@dataclass(slots=True)
class FoundFact:
    """A fact (or memory) found by a tool, in one shape whatever tool found it."""

    subject: str
    predicate: str | None  # None: a memory without structure (its text is `sentence`)
    object: str
    confidence: float
    evidence: tuple[str, ...] = ()
    valid_at: float | None = None
    invalid_at: float | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    sentence: str | None = None  # the tool's own sentence, if it gave one
    fact_id: str | None = None
    tool: str = ""
    need: int | None = None
    relevance: float = 0.0
    similarity: float | None = None  # to the query, for what a similarity search found
    order: int = 0  # its position in the tool's answer (the tool's own ranking)
    context: bool = False  # found only for the channel's people: ranked after every answer

    def key(self) -> tuple[str, ...]:
        """De-duplication identity: same person + predicate + object (or the same text)."""
        if self.predicate is None:
            return ("memory", " ".join((self.sentence or self.object).casefold().split()))
        return (_canon(self.subject), self.predicate.upper(), _canon(self.object))


# --- what retrieve_context returns -------------------------------------------------------

class ToolCallTrace(BaseModel):
    tool: str
    input: dict[str, Any]
    output_size: int = 0  # facts (or memories) the call returned
    new_facts: int = 0  # of which not seen before
    duration_ms: float
    success: bool
    error: str | None = None
    message: str | None = None  # the tool's own account (a FactGraph ToolAnswer's message)


class TraceEvent(BaseModel):
    kind: Literal["node", "tool"]
    name: str
    started_ms: float  # since the request started
    duration_ms: float
    success: bool = True
    detail: str = ""
    call: ToolCallTrace | None = None


class RetrievalMetadata(BaseModel):
    queries_executed: int
    facts_retrieved: int
    processing_time_ms: float
    iterations_used: int
    request_id: str
    stop_reason: str = ""
    tool_success_rate: float = 1.0
    # The overall confidence as a number: the mean confidence of the on-topic facts returned
    # times the tool success rate (0 with none); `confidence` is its graded, documented form.
    confidence_score: float = 0.0
    planner: Literal["model", "rules"] = "rules"


class AnswerFact(BaseModel):
    """One returned fact with its structure and validity (`facts[i]` is its sentence)."""

    text: str
    subject: str
    predicate: str | None  # None: a memory without structure (a message)
    object: str
    confidence: float
    evidence: list[str]
    valid_at: str | None  # ISO 8601 UTC; None: unknown
    invalid_at: str | None  # when it ended; None: still true (or unknown)
    current: bool  # true now: not ended, and not starting in the future


class RetrievalResult(BaseModel):
    facts: list[str]
    confidence: Confidence
    metadata: RetrievalMetadata
    details: list[AnswerFact] = Field(default_factory=list)  # the same facts, structured
    trace: list[TraceEvent] = Field(default_factory=list)
