"""ToolSpec (what a tool takes and gives) and Tool (the code that runs it)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

# The input types a ToolSpec may declare, with the Python and JSON-schema types they mean.
INPUT_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "str": ((str,), "string"),
    "int": ((int,), "integer"),
    "float": ((int, float), "number"),
    "bool": ((bool,), "boolean"),
    "list": ((list,), "array"),
    "dict": ((dict,), "object"),
}


@dataclass(frozen=True)
class ToolSpec:
    """A tool's contract. `inputs` maps parameter name -> type name (see INPUT_TYPES);
    parameters listed in `defaults` are optional."""

    name: str
    description: str
    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    input_descriptions: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for param, type_name in self.inputs.items():
            if type_name not in INPUT_TYPES:
                raise ValueError(
                    f"Tool {self.name!r}: input {param!r} has type {type_name!r}; "
                    f"allowed types: {sorted(INPUT_TYPES)}"
                )
        unknown_defaults = set(self.defaults) - set(self.inputs)
        if unknown_defaults:
            raise ValueError(
                f"Tool {self.name!r}: defaults for undeclared inputs {sorted(unknown_defaults)}; "
                f"declared inputs: {sorted(self.inputs)}"
            )

    @property
    def required(self) -> list[str]:
        return [param for param in self.inputs if param not in self.defaults]

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the inputs, as a model sees it."""
        properties: dict[str, Any] = {}
        for param, type_name in self.inputs.items():
            prop: dict[str, Any] = {"type": INPUT_TYPES[type_name][1]}
            if param in self.input_descriptions:
                prop["description"] = self.input_descriptions[param]
            if param in self.defaults:
                prop["default"] = self.defaults[param]
            properties[param] = prop
        return {
            "type": "object",
            "properties": properties,
            "required": self.required,
            "additionalProperties": False,
        }


class Tool(ABC):
    """The code behind a ToolSpec. Return the result data or raise; ToolRunner does the rest
    (validation, timing, retries, history, listeners)."""

    spec: ClassVar[ToolSpec]

    @abstractmethod
    async def execute(self, **params: Any) -> Any: ...
