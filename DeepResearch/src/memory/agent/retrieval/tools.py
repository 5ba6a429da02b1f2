"""Calling the fact tools and the hybrid memory retrieval, with a timeout, and reading what
they return into `FoundFact`s.

The fact tools are the functions of facts/tools.py (`TOOLS`, each `tool(graph, ...)`),
bound to the FactGraph given; an object with methods of those names serves as well (tests'
stand-ins). The reader walks their typed results (pydantic models, dataclasses, mappings, lists) for
anything carrying a `predicate`, resolving entity ids to names through the entities the
same result carries. `search_memory` is `client.retrieve` (dense + lexical, ranked).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from DeepResearch.src.memory.agent.retrieval.types import (
    FACT_TOOLS,
    MEMORY_TOOL,
    FoundFact,
    PlannedCall,
    ToolCallTrace,
)

_SUBJECT_FIELDS = ("subject_name", "subject", "person_name", "person")
_OBJECT_FIELDS = ("object_name", "object", "object_value", "value", "target_name", "target")


def _get(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _fields(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    model_fields = getattr(type(item), "model_fields", None)
    if isinstance(model_fields, dict):
        return {name: getattr(item, name, None) for name in model_fields}
    return {}


def _is_entity(item: Any) -> bool:
    """An entity as a result carries it: an id and a name, and no predicate."""
    return (
        _get(item, "predicate") is None
        and isinstance(_get(item, "id"), str)
        and isinstance(_get(item, "name"), str)
    )


def _name(value: Any, names: dict[str, str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return names.get(value, value)
    name = _get(value, "name")
    return name if isinstance(name, str) else None


def _walk(value: Any, visit: Any, depth: int = 0, seen: set[int] | None = None) -> None:
    seen = set() if seen is None else seen
    if depth > 6 or value is None or isinstance(value, (str, bytes, int, float, bool)):
        return
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _walk(item, visit, depth + 1, seen)
        return
    if visit(value) == "stop":
        return
    for child in _fields(value).values():
        _walk(child, visit, depth + 1, seen)


def read_facts(result: Any, tool: str) -> list[FoundFact]:
    """Every fact in a tool's result (any nesting), with entity ids resolved to names."""
    names: dict[str, str] = {}

    def collect(item: Any) -> None:
        if _is_entity(item):
            names[_get(item, "id")] = _get(item, "name")

    _walk(result, collect)
    facts: list[FoundFact] = []

    def pick(item: Any) -> str | None:
        predicate = _get(item, "predicate")
        if not isinstance(predicate, str):
            return None
        subject = next((n for f in _SUBJECT_FIELDS if (n := _name(_get(item, f), names))), None)
        subject = subject or names.get(_get(item, "subject_id") or "", _get(item, "subject_id") or "")
        obj = next((n for f in _OBJECT_FIELDS if (n := _name(_get(item, f), names))), None)
        obj = obj or names.get(_get(item, "object_id") or "", _get(item, "object_id") or "")
        evidence = _get(item, "evidence") or ()
        evidence = (evidence,) if isinstance(evidence, str) else tuple(str(e) for e in evidence)
        confidence = _get(item, "confidence")
        sentence = _get(item, "sentence") or _get(item, "text")
        attributes = _get(item, "attributes")
        similarity = _get(item, "similarity")
        facts.append(FoundFact(
            subject=str(subject),
            predicate=predicate,
            object=str(obj),
            confidence=min(1.0, max(0.0, float(confidence))) if confidence is not None else 0.5,
            evidence=evidence,
            valid_at=_time(_get(item, "valid_at")),
            invalid_at=_time(_get(item, "invalid_at")),
            attributes=dict(attributes) if isinstance(attributes, Mapping) else {},
            sentence=sentence if isinstance(sentence, str) else None,
            fact_id=_get(item, "id") if isinstance(_get(item, "id"), str) else None,
            tool=tool,
            similarity=float(similarity) if isinstance(similarity, int | float) else None,
            order=len(facts),
        ))
        return "stop"

    _walk(result, pick)
    return facts


def _time(value: Any) -> float | None:
    """Epoch seconds of an epoch number, a datetime or an ISO 8601 string (as FactOut
    carries validity); None when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()
    timestamp = getattr(value, "timestamp", None)
    return float(timestamp()) if callable(timestamp) else None


# A fact's memory text (facts/views.py): "Alice WORKS_AT Google. role=Engineer, since=2022-01"
_FACT_SENTENCE = re.compile(r"^(?P<s>.+?) (?P<p>[A-Z][A-Z_]{2,}) (?P<o>.+?)\.(?: (?P<a>.*))?$", re.S)


def _fact_sentence(content: str) -> dict[str, Any]:
    match = _FACT_SENTENCE.match(content.strip())
    if not match:
        return {}
    attributes: dict[str, Any] = {}
    for part in (match.group("a") or "").split(", "):
        key, sep, value = part.partition("=")
        if sep and key.strip().isidentifier():
            attributes[key.strip()] = value.strip()
    return {"subject": match.group("s"), "predicate": match.group("p"), "object": match.group("o"),
            "attributes": attributes}


def _month_time(value: Any) -> float | None:
    """Epoch seconds of a fact sentence's "since=2022-01" / "until=2024" (or ISO) value."""
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"(\d{4})(?:-(\d{2}))?", value.strip())
    if match:
        return datetime(int(match.group(1)), int(match.group(2) or 1), 1, tzinfo=UTC).timestamp()
    return _time(value)


def read_memories(memories: Any) -> list[FoundFact]:
    """RetrievedMemory results as FoundFacts. A fact's memory (memory_type "fact") keeps its
    structure (subject, predicate, object from its metadata or its sentence; attributes and
    validity from its sentence), its confidence is the memory's importance (the graph stores
    the fact's confidence there) and it has no evidence of its own (a copy found by a fact
    tool brings it). Any other memory (an episode: a message) is its text, with its
    similarity as confidence and its id as evidence, unless its metadata gives them."""
    found: list[FoundFact] = []
    for memory in memories or ():
        metadata = dict(getattr(memory, "metadata", {}) or {})
        content = getattr(memory, "content", "") or ""
        document = getattr(memory, "document", None)
        is_fact = getattr(document, "memory_type", None) == "fact"
        valid_at = invalid_at = None
        if is_fact:
            parsed = _fact_sentence(content)
            attributes = {**parsed.get("attributes", {}), **(metadata.get("attributes") or {})}
            valid_at = _month_time(attributes.pop("since", None))
            invalid_at = _month_time(attributes.pop("until", None))
            metadata = {**parsed, **metadata, "attributes": attributes}
            default_confidence = getattr(document, "importance", 0.5)
            default_evidence: tuple[str, ...] = ()
        else:
            default_confidence = getattr(memory, "similarity", 0.5)
            default_evidence = (memory.id,)
        confidence = metadata.get("confidence", default_confidence)
        evidence = metadata.get("evidence") or default_evidence
        evidence = (evidence,) if isinstance(evidence, str) else tuple(str(e) for e in evidence)
        predicate = metadata.get("predicate") if is_fact or "predicate" in metadata else None
        found.append(FoundFact(
            subject=str(metadata.get("subject_name") or metadata.get("subject") or ""),
            predicate=predicate if isinstance(predicate, str) else None,
            object=str(metadata.get("object_name") or metadata.get("object") or metadata.get("object_value") or ""),
            confidence=min(1.0, max(0.0, float(confidence))),
            evidence=evidence,
            valid_at=valid_at,
            invalid_at=invalid_at,
            attributes=dict(metadata.get("attributes") or {}),
            sentence=content,
            fact_id=memory.id,
            tool=MEMORY_TOOL,
            similarity=getattr(memory, "similarity", None),
            order=len(found),
        ))
    return found


class ToolRunner:
    """Runs one planned call against the fact graph or the memory client, bounded in time;
    a failure or a timeout is a result (success False, the error named), never raised."""

    def __init__(self, graph: Any, client: Any, timeout: float, memory_top_k: int = 10) -> None:
        self.graph = graph
        self.client = client
        self.timeout = timeout
        self.memory_top_k = memory_top_k

    def function(self, tool: str) -> Callable[..., Any] | None:
        """The callable behind a fact tool's name, bound to the graph; None if there is none."""
        if self.graph is None or tool not in FACT_TOOLS:
            return None
        method = getattr(self.graph, tool, None)
        if callable(method):
            return method
        from DeepResearch.src.memory.facts.tools import TOOLS

        found = TOOLS.get(tool)
        return functools.partial(found, self.graph) if found is not None else None

    def available(self) -> list[str]:
        tools = [name for name in FACT_TOOLS if self.function(name) is not None]
        if self.client is not None and callable(getattr(self.client, "retrieve", None)):
            tools.append(MEMORY_TOOL)
        return tools

    def signature(self, tool: str) -> str:
        """`name(parameters) -- its docstring on one line`, for a model's prompt."""
        if tool == MEMORY_TOOL:
            return "search_memory(query: str) -- memories (messages, notes, fact sentences) near the words"
        method = self.function(tool)
        if method is None:
            return f"{tool}(...)"
        try:
            parameters = str(inspect.signature(method)).split(" -> ")[0].replace("'", "")
        except (TypeError, ValueError):
            parameters = "(...)"
        doc = inspect.getdoc(method.func if isinstance(method, functools.partial) else method) or ""
        text = " ".join(doc.split())[:400]
        return f"{tool}{parameters}" + (f" -- {text}" if text else "")

    async def call(self, planned: PlannedCall) -> tuple[list[FoundFact], ToolCallTrace]:
        started = time.perf_counter()
        facts: list[FoundFact] = []
        error: str | None = None
        message: str | None = None
        try:
            facts, message = await asyncio.wait_for(self._invoke(planned), timeout=self.timeout)
        except TimeoutError:
            error = f"timed out after {self.timeout:g}s"
        except Exception as exc:  # a failing tool is recorded; the run goes on
            error = f"{type(exc).__name__}: {exc}"
        for fact in facts:
            fact.need = planned.need
        trace = ToolCallTrace(
            tool=planned.tool,
            input=planned.arguments,
            output_size=len(facts),
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            success=error is None,
            error=error,
            message=message,
        )
        return facts, trace

    async def _invoke(self, planned: PlannedCall) -> tuple[list[FoundFact], str | None]:
        if planned.tool == MEMORY_TOOL:
            if self.client is None:
                raise ValueError("search_memory needs a memory client; none was given")
            query = str(planned.arguments.get("query") or "").strip()
            if not query:
                raise ValueError("search_memory needs a non-empty 'query'")
            memories = await self.client.retrieve(query, top_k=self.memory_top_k, all_sessions=True)
            return read_memories(memories), None
        method = self.function(planned.tool)
        if method is None:
            raise ValueError(f"unknown tool {planned.tool!r}; tools: {', '.join(self.available())}")
        try:
            inspect.signature(method).bind(**planned.arguments)
        except TypeError as exc:
            raise ValueError(f"bad arguments {planned.arguments!r} for {self.signature(planned.tool)}: {exc}") from None
        if inspect.iscoroutinefunction(method):
            result = await method(**planned.arguments)
        else:
            result = await asyncio.to_thread(method, **planned.arguments)
            if inspect.isawaitable(result):
                result = await result
        message = _get(result, "message") if result is not None else None
        return read_facts(result, planned.tool), message if isinstance(message, str) else None
