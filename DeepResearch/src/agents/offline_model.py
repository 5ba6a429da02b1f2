"""The offline model: deterministic, no network, built on pydantic-ai's FunctionModel.

One function per agent role reads the labelled prompt (see prompts.py):
- planner: turns the question into numbered plan steps (sub-questions for compound ones);
  documents the question names are read; with memory it reads the documents that earlier
  answers cited along with the top search results, in the same step -- as listed in its
  MEMORY section, or, when that names none, as found by calling `retrieve_memory` (its plan
  says why in `#` lines);
- executor: makes real tool calls (ToolCallPart) for the tool its step names, then reports
  the sentences of the results that best match the question, citing their sources; a call
  the MEMORY section flags as failed before with `not_found` is skipped and reported;
- synthesizer: writes the answer from the findings and says plainly that it is this model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
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
from DeepResearch.src.memory.text import tokenize

OFFLINE_NOTICE = (
    "written by DeepResearch's offline model: a deterministic extractive summary of the "
    "documents the tools returned; no language model was used"
)
_STEP = re.compile(r"^STEP \d+/\d+:\s*([\w-]+):\s*(.*)$", re.MULTILINE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_FILE = re.compile(r"[\w./-]+\.(?:md|txt)")
_FLAG = re.compile(r"^- FAILED BEFORE: ([\w-]+) (\{.*?\}) -> (\w+): (.*)$", re.MULTILINE)
# An answer's line in the MEMORY section: `- [answer, score S] Question: Q Answer: ... (cited: a.md)`.
_BRIEFED_ANSWER = re.compile(
    r"^- \[answer[^\]]*score (-?[\d.]+)\] Question: (.*?)(?: Answer:.*)? \(cited: ([^)]*)\)$",
    re.MULTILINE,
)
MEMORY_TOOL = "retrieve_memory"
TOP_RESULTS = "the top results"


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


def _in_event_loop(
    respond: Callable[[list[ModelMessage], AgentInfo], ModelResponse],
) -> Callable[[list[ModelMessage], AgentInfo], Awaitable[ModelResponse]]:
    """`respond` as a coroutine function. FunctionModel runs a plain function in a worker
    thread; these answer in well under a millisecond, and the hand-off cost more than that
    (more still while an embedding holds the GIL in another thread)."""

    async def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return respond(messages, info)

    return answer


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
        return FunctionModel(_in_event_loop(functions[role]), model_name=f"offline-{role.value}")

    # -- planner -----------------------------------------------------------------------
    def plan(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = _prompt(messages)
        question = field_value(prompt, "QUESTION") or prompt.strip()
        returns = _tool_returns(messages)
        memory = section(prompt, "MEMORY")
        briefed = _briefed_sources(memory)
        allowed = field_value(prompt, "SUBQUESTIONS") or "not allowed"
        limit_match = re.search(r"at most (\d+)", allowed)
        limit = int(limit_match.group(1)) if limit_match and allowed.startswith("allowed") else 0
        parts = split_question(question)
        splits = len(parts) > 1 and limit > 0
        # The workflow's MEMORY section usually names the earlier answers and what they
        # cited; when it does not, memory is searched directly (one more model turn).
        tools = {t.name for t in info.function_tools}
        if not returns and not briefed and MEMORY_TOOL in tools:
            query = {"query": question, "top_k": 3, "filters": {"memory_type": "answer"}}
            return ModelResponse(parts=[ToolCallPart(MEMORY_TOOL, {**query, "scope": "all"})])
        comments = _memory_comments(memory)
        if splits:  # each sub-question's loop reads documents; the plan notes what memory knew
            lines = [f"{SUBQUESTION}: {part}" for part in parts[:limit]]
            cited = dict(briefed + _recalled_sources(returns))
            comments += [f"# memory: {note}: {source}" for source, note in cited.items()]
        else:
            lines = [f"search_documents: {part}" for part in parts]
            named = list(dict.fromkeys(_FILE.findall(question)))
            lines += [f"read_document: {source}" for source in named]
            recalled: list[str] = []
            for source, note in briefed + _recalled_sources(returns):
                if source not in named and source not in recalled:
                    recalled.append(source)
                    comments.append(f"# memory: {note}: reading {source}")
            searches = ", ".join(str(i) for i in range(1, len(parts) + 1))
            top = f"{TOP_RESULTS} of step{'s' if len(parts) > 1 else ''} {searches}"
            # Read with the top results, in the same step: each step is a model call, and
            # the documents an earlier answer cited are often among the top results.
            lines.append(f"read_document: {', '.join([*recalled, top])}")
        plan = "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))
        return ModelResponse(parts=[TextPart("\n".join([plan, *comments]))])

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
            calls, skipped = _skip_known_failures(self._calls(tool, argument, prompt), prompt)
            if not calls:
                return ModelResponse(parts=[TextPart("\n".join(skipped))])
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
        _, skipped = _skip_known_failures(self._calls(tool, argument, prompt), prompt)
        lines = [finding.line() for finding in findings] + [f"! {error}" for error in errors]
        lines += skipped
        return ModelResponse(parts=[TextPart("\n".join(lines) or "The tools returned nothing.")])

    @staticmethod
    def _calls(tool: str, argument: str, prompt: str) -> list[tuple[str, dict[str, Any]]]:
        if tool == "search_documents":
            return [(tool, {"query": argument, "top_k": 3})]
        if tool == "read_document":
            sources = list(dict.fromkeys(_FILE.findall(argument)))
            if not sources or TOP_RESULTS in argument:  # the 2 best found (once each)
                found = [s.strip() for s in (field_value(prompt, "SOURCES FOUND") or "").split(",")]
                top = [s for s in found if _FILE.fullmatch(s)][:2]
                sources += [s for s in top if s not in sources]
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
        # A sentence a sub-answer already says is not said again (the notes' synthesis of a
        # compound question holds the nested loops' findings).
        findings = [f for f in findings if f.text not in sub_answers]
        # Prefer sentences read from documents over search excerpts (which carry a score).
        read = [f for f in findings if not f.text.startswith("(")]
        best = rank_sentences(read or findings, question, self.sentences)
        if best:
            body.append(" ".join(f"{f.text} [{f.source}]" for f in best))
        if not body:
            # a statement about the research, not a claim (italic: the reviewer reads it so)
            body.append("_The documents that were searched say nothing about this question._")
        text = f"_Answer {OFFLINE_NOTICE}._\n\n" + "\n\n".join(body)
        return ModelResponse(parts=[TextPart(text)])


def _recalled_sources(returns: list[ToolReturnPart]) -> list[tuple[str, str]]:
    """(source, why) for each document an answer recalled by retrieve_memory cited."""
    found: list[tuple[str, str]] = []
    for part in returns:
        if part.tool_name != MEMORY_TOOL or not isinstance(part.content, dict):
            continue
        for memory in part.content.get("memories", []):
            meta = memory.get("metadata") or {}
            why = (
                f"the earlier answer to {meta.get('question')!r} "
                f"(recalled, score {memory.get('score', 0):.3f}) cited it"
            )
            found += [
                (source, why) for source in meta.get("sources", []) if _FILE.fullmatch(source)
            ]
    return found


def _briefed_sources(memory: str) -> list[tuple[str, str]]:
    """(source, why) for each document an answer in the MEMORY section cited."""
    found: list[tuple[str, str]] = []
    for score, question, sources in _BRIEFED_ANSWER.findall(memory):
        why = f"the earlier answer to {question!r} (recalled, score {float(score):.3f}) cited it"
        found += [(s.strip(), why) for s in sources.split(",") if _FILE.fullmatch(s.strip())]
    return found


def _memory_comments(memory: str) -> list[str]:
    """`#` lines naming the earlier plans the MEMORY section recalled (parse_plan skips them)."""
    return [
        f"# memory: recalled {line[2:200]}"
        for line in memory.splitlines()
        if line.startswith("- [plan")
    ]


def _skip_known_failures(
    calls: list[tuple[str, dict[str, Any]]], prompt: str
) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Drop calls the MEMORY section says failed before because the thing does not exist;
    returns the calls to make and a `! skipped ...` line per dropped call."""
    flags = []
    for match in _FLAG.finditer(section(prompt, "MEMORY")):
        if match.group(3) != "not_found":
            continue
        try:
            params = json.loads(match.group(2))
        except json.JSONDecodeError:
            continue
        flags.append((match.group(1), params, match.group(4)))
    keep: list[tuple[str, dict[str, Any]]] = []
    skipped: list[str] = []
    for name, args in calls:
        hit = next(
            (
                f
                for f in flags
                if f[0] == name and f[1] and all(args.get(k) == v for k, v in f[1].items())
            ),
            None,
        )
        if hit is None:
            keep.append((name, args))
        else:
            skipped.append(f"! skipped {name}({args}): memory says it failed before: {hit[2]}")
    return keep, skipped
