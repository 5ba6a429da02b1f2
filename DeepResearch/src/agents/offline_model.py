"""The offline model: deterministic, no network, built on pydantic-ai's FunctionModel.

One function per agent role reads the labelled prompt (see prompts.py):
- planner: turns the question into numbered plan steps (sub-questions for compound ones);
- executor: makes real tool calls (ToolCallPart) for the tool its step names, then reports
  the sentences of the results that best match the question, citing their sources;
- synthesizer: writes the answer from the findings and says plainly that it is this model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.src.agents.prompts import (
    SUBQUESTION,
    Finding,
    field_value,
    parse_findings,
    section,
    split_question,
)
from DeepResearch.src.datatypes.agents import AgentType
from DeepResearch.src.rag.lexical import tokenize

OFFLINE_NOTICE = (
    "written by DeepResearch's offline model: a deterministic extractive summary of the "
    "documents the tools returned; no language model was used"
)
_STEP = re.compile(r"^STEP \d+/\d+:\s*([\w-]+):\s*(.*)$", re.MULTILINE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_FILE = re.compile(r"[\w./-]+\.(?:md|txt)")


def _prompt(messages: list[ModelMessage]) -> str:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def _sentences(text: str) -> list[str]:
    cleaned = " ".join(
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )
    # Questions restate rather than answer, so they are never extracted.
    return [
        s.strip()
        for s in _SENTENCE.split(cleaned)
        if len(s.strip()) > 20 and not s.strip().endswith("?")
    ]


def rank_sentences(candidates: list[Finding], query: str, limit: int) -> list[Finding]:
    """The `limit` findings sharing most terms with `query`, de-duplicated, stable order."""
    terms = set(tokenize(query))
    scored = []
    for position, finding in enumerate(candidates):
        overlap = len(terms & set(tokenize(finding.text)))
        if overlap:
            scored.append((-overlap, position, finding))
    seen: set[str] = set()
    best: list[Finding] = []
    for _, _, finding in sorted(scored, key=lambda item: item[:2]):
        if finding.text not in seen:
            seen.add(finding.text)
            best.append(finding)
        if len(best) == limit:
            break
    return best


class OfflineModel:
    """Factory of the deterministic FunctionModels, one per agent role."""

    def __init__(self, sentences_per_answer: int = 4) -> None:
        if sentences_per_answer < 1:
            raise ValueError(f"llm.sentences_per_answer must be >= 1, got {sentences_per_answer}")
        self.sentences = sentences_per_answer

    def for_role(self, role: AgentType) -> FunctionModel:
        functions: dict[AgentType, Callable[[list[ModelMessage], AgentInfo], ModelResponse]] = {
            AgentType.PLANNER: self.plan,
            AgentType.EXECUTOR: self.execute,
            AgentType.SYNTHESIZER: self.synthesize,
        }
        return FunctionModel(functions[role], model_name=f"offline-{role.value}")

    # -- planner -----------------------------------------------------------------------
    def plan(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = _prompt(messages)
        question = field_value(prompt, "QUESTION") or prompt.strip()
        allowed = field_value(prompt, "SUBQUESTIONS") or "not allowed"
        limit_match = re.search(r"at most (\d+)", allowed)
        limit = int(limit_match.group(1)) if limit_match and allowed.startswith("allowed") else 0
        parts = split_question(question)
        if len(parts) > 1 and limit > 0:
            lines = [f"{SUBQUESTION}: {part}" for part in parts[:limit]]
        else:
            lines = [f"search_documents: {part}" for part in parts]
            searches = ", ".join(str(i) for i in range(1, len(parts) + 1))
            lines.append(
                f"read_document: the top results of step{'s' if len(parts) > 1 else ''} {searches}"
            )
        return ModelResponse(
            parts=[TextPart("\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1)))]
        )

    # -- executor ----------------------------------------------------------------------
    def execute(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = _prompt(messages)
        question = field_value(prompt, "QUESTION") or ""
        step = _STEP.search(prompt)
        tool, argument = (step.group(1), step.group(2)) if step else ("", prompt)
        returns = _tool_returns(messages)
        if not returns:
            available = {tool_def.name for tool_def in info.function_tools}
            if tool not in available:
                return ModelResponse(
                    parts=[
                        TextPart(
                            f"The step names {tool or 'no tool'!r}, which is not among the available "
                            f"tools {sorted(available)}; nothing was run."
                        )
                    ]
                )
            calls = self._calls(tool, argument, prompt)
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])
        findings: list[Finding] = []
        errors: list[str] = []
        for part in returns:
            content = part.content
            if isinstance(content, dict) and "error" in content:
                errors.append(f"{part.tool_name} failed: {content['error']}")
            elif part.tool_name == "search_documents" and isinstance(content, list):
                findings += [
                    Finding(
                        hit["source"], f"({hit['title']}, score {hit['score']}) {hit['excerpt']}"
                    )
                    for hit in content
                ]
            elif part.tool_name == "read_document" and isinstance(content, dict):
                candidates = [Finding(content["source"], s) for s in _sentences(content["content"])]
                findings += rank_sentences(candidates, f"{question} {argument}", self.sentences)
            else:
                findings.append(Finding(part.tool_name, json.dumps(content, default=str)[:300]))
        lines = [finding.line() for finding in findings] + [f"! {error}" for error in errors]
        return ModelResponse(parts=[TextPart("\n".join(lines) or "The tools returned nothing.")])

    @staticmethod
    def _calls(tool: str, argument: str, prompt: str) -> list[tuple[str, dict[str, Any]]]:
        if tool == "search_documents":
            return [(tool, {"query": argument, "top_k": 3})]
        if tool == "read_document":
            named = _FILE.findall(argument)
            found = [s.strip() for s in (field_value(prompt, "SOURCES FOUND") or "").split(",")]
            sources = named or [s for s in found if _FILE.fullmatch(s)][:2]
            if not sources:  # nothing to read: let the tool report it properly
                sources = [argument]
            return [(tool, {"source": source}) for source in sources]
        return [(tool, {})]

    # -- synthesizer -------------------------------------------------------------------
    def synthesize(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = _prompt(messages)
        question = field_value(prompt, "QUESTION") or ""
        findings = parse_findings(section(prompt, "FINDINGS"))
        sub_answers = section(prompt, "SUB-QUESTION ANSWERS")
        body: list[str] = []
        if sub_answers:  # one notice for the whole answer, not one per sub-answer
            body.append(
                "\n".join(ln for ln in sub_answers.splitlines() if OFFLINE_NOTICE not in ln)
            )
        # Prefer sentences read from documents over search excerpts (which carry a score).
        read = [f for f in findings if not f.text.startswith("(")]
        best = rank_sentences(read or findings, question, self.sentences)
        if best:
            body.append(" ".join(f"{f.text} [{f.source}]" for f in best))
        if not body:
            body.append("The documents that were searched say nothing about this question.")
        text = f"_Answer {OFFLINE_NOTICE}._\n\n" + "\n\n".join(body)
        return ModelResponse(parts=[TextPart(text)])
