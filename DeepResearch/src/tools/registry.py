"""ToolRegistry: the one registry of the framework (name -> spec + factory)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig

from DeepResearch.src.tools.spec import Tool, ToolSpec


@dataclass
class ToolContext:
    """What tool factories get: the run's config and its document library."""

    config: DictConfig | None = None
    library: Any = None  # DeepResearch.src.rag.library.DocumentLibrary


ToolFactory = Callable[[ToolContext], Tool]


class ToolRegistry:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[ToolSpec, ToolFactory]] = {}

    def register(self, spec: ToolSpec, factory: ToolFactory) -> None:
        if spec.name in self._entries:
            raise ValueError(f"Tool {spec.name!r} is already registered; tool names must be unique")
        self._entries[spec.name] = (spec, factory)

    def register_tool(self, tool_class: type[Tool]) -> None:
        """Register a Tool class whose constructor takes the ToolContext."""
        self.register(tool_class.spec, tool_class)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def spec(self, name: str) -> ToolSpec:
        return self._entry(name)[0]

    def make(self, name: str, context: ToolContext) -> Tool:
        spec, factory = self._entry(name)
        tool = factory(context)
        if tool.spec.name != spec.name:
            raise ValueError(f"Factory for {name!r} built a tool named {tool.spec.name!r}")
        return tool

    def list(self) -> list[ToolSpec]:
        return [spec for spec, _ in self._entries.values()]

    def names(self) -> list[str]:
        return list(self._entries)

    def _entry(self, name: str) -> tuple[ToolSpec, ToolFactory]:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(
                f"Unknown tool {name!r}; registered tools: {sorted(self._entries)}"
            ) from None
