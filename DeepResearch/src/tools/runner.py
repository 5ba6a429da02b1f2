"""ToolRunner: the one path every tool call takes (validate -> run -> ExecutionResult).

Each run is recorded in the ExecutionHistory and then handed to every listener, so a
subscriber (the memory subsystem, next issue) sees each run exactly once, from this layer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from DeepResearch.src.datatypes.execution import (
    ErrorCategory,
    ExecutionResult,
    ExecutionStatus,
    ToolNotFoundError,
)
from DeepResearch.src.tools.registry import ToolContext, ToolRegistry
from DeepResearch.src.tools.spec import INPUT_TYPES, Tool, ToolSpec
from DeepResearch.src.utils.execution_history import ExecutionHistory, ExecutionItem

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolRunEvent:
    """One finished tool run, as listeners see it."""

    item: ExecutionItem
    result: ExecutionResult
    loop_id: str


class ToolRunListener(Protocol):
    async def on_tool_run(self, event: ToolRunEvent) -> None: ...


def validate_params(spec: ToolSpec, params: Mapping[str, Any]) -> str | None:
    """None when `params` fit `spec`, else a message naming the bad value and what is allowed."""
    unknown = sorted(set(params) - set(spec.inputs))
    if unknown:
        return f"{spec.name}: unknown parameter(s) {unknown}; allowed: {sorted(spec.inputs)}"
    missing = [param for param in spec.required if param not in params]
    if missing:
        return f"{spec.name}: missing required parameter(s) {missing}"
    for param, value in params.items():
        type_name = spec.inputs[param]
        allowed = INPUT_TYPES[type_name][0]
        is_bool = isinstance(value, bool)
        if not isinstance(value, allowed) or (is_bool and type_name != "bool"):
            return (
                f"{spec.name}: parameter {param!r} must be {type_name}, "
                f"got {type(value).__name__} {value!r}"
            )
    return None


class ToolRunner:
    def __init__(
        self,
        registry: ToolRegistry,
        context: ToolContext,
        history: ExecutionHistory,
        *,
        listeners: list[ToolRunListener] | None = None,
        max_retries: int = 0,
        loop_id: str = "root",
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.registry = registry
        self.context = context
        self.history = history
        # Shared list: a child loop's runner gets the same listeners as its parent's.
        self.listeners: list[ToolRunListener] = listeners if listeners is not None else []
        self.listener_errors: list[str] = []
        self.max_retries = max_retries
        self.loop_id = loop_id
        self._tools: dict[str, Tool] = {}

    def add_listener(self, listener: ToolRunListener) -> None:
        self.listeners.append(listener)

    def validate(self, name: str, params: Mapping[str, Any]) -> str | None:
        if name not in self.registry:
            return f"Unknown tool {name!r}; registered tools: {sorted(self.registry.names())}"
        return validate_params(self.registry.spec(name), params)

    async def run(
        self, name: str, params: Mapping[str, Any] | None = None, *, step_name: str = "tool"
    ) -> ExecutionResult:
        params = dict(params or {})
        started = time.perf_counter()
        error = self.validate(name, params)
        retries = 0
        if error is not None:
            category = (
                ErrorCategory.UNKNOWN_TOOL
                if name not in self.registry
                else ErrorCategory.VALIDATION
            )
            result = ExecutionResult.fail(error, category)
        else:
            result, retries = await self._execute(name, params)
        duration = time.perf_counter() - started
        result.metrics.setdefault("duration", round(duration, 6))
        item = self.history.add(
            ExecutionItem(
                step_name=step_name,
                tool=name,
                status=ExecutionStatus.SUCCESS if result.success else ExecutionStatus.FAILED,
                result=result.data,
                error=result.error,
                parameters=params,
                duration=duration,
                retry_count=retries,
                error_category=result.error_category,
                loop_id=self.loop_id,
            )
        )
        await self._notify(ToolRunEvent(item=item, result=result, loop_id=self.loop_id))
        return result

    async def _execute(self, name: str, params: dict[str, Any]) -> tuple[ExecutionResult, int]:
        spec = self.registry.spec(name)
        call_params = {**spec.defaults, **params}
        attempt = 0
        while True:
            try:
                tool = self._tool(name)
                data = await tool.execute(**call_params)
                return ExecutionResult.ok(data, attempts=attempt + 1), attempt
            except ToolNotFoundError as exc:  # asking again will not make it exist
                return ExecutionResult.fail(f"{name}: {exc}", ErrorCategory.NOT_FOUND), attempt
            except TimeoutError as exc:
                failure = ExecutionResult.fail(f"{name}: timed out ({exc})", ErrorCategory.TIMEOUT)
            except Exception as exc:
                logger.warning("tool %s raised %s: %s", name, type(exc).__name__, exc)
                failure = ExecutionResult.fail(
                    f"{name} raised {type(exc).__name__}: {exc}", ErrorCategory.RUNTIME
                )
            if attempt >= self.max_retries:
                return failure, attempt
            attempt += 1

    def _tool(self, name: str) -> Tool:
        if name not in self._tools:
            self._tools[name] = self.registry.make(name, self.context)
        return self._tools[name]

    async def _notify(self, event: ToolRunEvent) -> None:
        for listener in list(self.listeners):
            try:
                await listener.on_tool_run(event)
            except Exception as exc:
                # A broken listener must not break the research run; it is reported, not hidden.
                message = f"tool-run listener {listener!r} failed: {type(exc).__name__}: {exc}"
                logger.warning(message)
                self.listener_errors.append(message)
