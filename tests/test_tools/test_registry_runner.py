"""ToolRegistry and ToolRunner: validation, history, retries, listeners."""

from __future__ import annotations

import re
from typing import Any

import pytest

from DeepResearch.src.datatypes.execution import ErrorCategory, ExecutionStatus, ToolNotFoundError
from DeepResearch.src.tools.document_tools import default_registry
from DeepResearch.src.tools.registry import ToolContext, ToolRegistry
from DeepResearch.src.tools.runner import ToolRunEvent, ToolRunner, validate_params
from DeepResearch.src.tools.spec import Tool, ToolSpec
from DeepResearch.src.utils.execution_history import ExecutionHistory

pytestmark = pytest.mark.unit


class Echo(Tool):
    spec = ToolSpec(
        name="echo",
        description="repeat text",
        inputs={"text": "str", "times": "int"},
        outputs={"text": "str"},
        defaults={"times": 1},
    )

    def __init__(self, context: ToolContext) -> None:
        self.context = context

    async def execute(self, **params: Any) -> str:
        return params["text"] * params["times"]


class Flaky(Tool):
    """Raises on the first `fail_times` calls (counted on the class across instances)."""

    spec = ToolSpec(name="flaky", description="fails first", inputs={})
    calls = 0
    fail_times = 1

    def __init__(self, context: ToolContext) -> None:
        pass

    async def execute(self, **params: Any) -> str:
        type(self).calls += 1
        if type(self).calls <= type(self).fail_times:
            raise ConnectionError("backend hiccup")
        return "ok"


class Missing(Tool):
    spec = ToolSpec(name="missing", description="never finds", inputs={})
    calls = 0

    def __init__(self, context: ToolContext) -> None:
        pass

    async def execute(self, **params: Any) -> str:
        type(self).calls += 1
        raise ToolNotFoundError("no such thing")


class Recorder:
    def __init__(self) -> None:
        self.events: list[ToolRunEvent] = []

    async def on_tool_run(self, event: ToolRunEvent) -> None:
        self.events.append(event)


def make_runner(*tools: type[Tool], max_retries: int = 0) -> tuple[ToolRunner, Recorder]:
    registry = ToolRegistry()
    for tool in tools:
        registry.register_tool(tool)
    recorder = Recorder()
    runner = ToolRunner(
        registry, ToolContext(), ExecutionHistory(), listeners=[recorder], max_retries=max_retries
    )
    return runner, recorder


def test_registry_register_make_list() -> None:
    registry = ToolRegistry()
    registry.register_tool(Echo)
    assert [spec.name for spec in registry.list()] == ["echo"]
    tool = registry.make("echo", ToolContext(config=None))
    assert isinstance(tool, Echo)
    with pytest.raises(ValueError, match="already registered"):
        registry.register_tool(Echo)
    with pytest.raises(KeyError, match=r"Unknown tool 'nope'; registered tools: \['echo'\]"):
        registry.make("nope", ToolContext())


def test_builtin_registry_holds_document_tools() -> None:
    assert default_registry().names() == ["search_documents", "read_document", "list_documents"]


def test_spec_rejects_unknown_types_and_stray_defaults() -> None:
    with pytest.raises(ValueError, match="type 'text'"):
        ToolSpec(name="t", description="d", inputs={"q": "text"})
    with pytest.raises(ValueError, match="undeclared inputs"):
        ToolSpec(name="t", description="d", inputs={"q": "str"}, defaults={"k": 1})


def test_spec_json_schema_marks_required_and_defaults() -> None:
    schema = Echo.spec.json_schema()
    assert schema["required"] == ["text"]
    assert schema["properties"]["times"] == {"type": "integer", "default": 1}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"text": "a", "colour": "red"}, r"unknown parameter\(s\) \['colour'\]"),
        ({}, r"missing required parameter\(s\) \['text'\]"),
        ({"text": 3}, "parameter 'text' must be str, got int 3"),
        ({"text": "a", "times": True}, "parameter 'times' must be int, got bool True"),
        ({"text": "a", "times": "2"}, "parameter 'times' must be int, got str '2'"),
    ],
)
def test_validation_names_the_bad_value(params: dict[str, Any], message: str) -> None:
    error = validate_params(Echo.spec, params)
    assert error is not None
    assert re.search(message, error), error


def test_validation_accepts_good_params() -> None:
    assert validate_params(Echo.spec, {"text": "a"}) is None
    assert validate_params(Echo.spec, {"text": "a", "times": 2}) is None


async def test_run_success_is_recorded_and_heard_once() -> None:
    runner, recorder = make_runner(Echo)
    result = await runner.run("echo", {"text": "ab", "times": 2}, step_name="s1")
    assert result.success and result.data == "abab"
    [item] = runner.history.items
    assert result.metrics["duration"] == round(item.duration, 6)  # one clock for both
    assert (item.step_name, item.tool, item.status) == ("s1", "echo", ExecutionStatus.SUCCESS)
    assert item.parameters == {"text": "ab", "times": 2}
    assert [event.item for event in recorder.events] == [item]


async def test_invalid_params_never_reach_the_tool() -> None:
    runner, recorder = make_runner(Echo)
    result = await runner.run("echo", {"times": 2})
    assert not result.success
    assert result.error_category is ErrorCategory.VALIDATION
    assert runner.history.items[0].status is ExecutionStatus.FAILED
    assert len(recorder.events) == 1


async def test_unknown_tool_is_a_recorded_failure() -> None:
    runner, _ = make_runner(Echo)
    result = await runner.run("nope", {})
    assert result.error_category is ErrorCategory.UNKNOWN_TOOL
    assert "registered tools: ['echo']" in (result.error or "")


async def test_raising_tool_is_retried_and_counted() -> None:
    Flaky.calls, Flaky.fail_times = 0, 1
    runner, _ = make_runner(Flaky, max_retries=1)
    result = await runner.run("flaky")
    assert result.success and result.data == "ok"
    assert runner.history.items[0].retry_count == 1

    Flaky.calls, Flaky.fail_times = 0, 5
    runner, _ = make_runner(Flaky, max_retries=2)
    result = await runner.run("flaky")
    assert not result.success
    assert result.error_category is ErrorCategory.RUNTIME
    assert "ConnectionError: backend hiccup" in (result.error or "")
    assert Flaky.calls == 3 and runner.history.items[0].retry_count == 2


async def test_not_found_is_not_retried() -> None:
    Missing.calls = 0
    runner, _ = make_runner(Missing, max_retries=3)
    result = await runner.run("missing")
    assert result.error_category is ErrorCategory.NOT_FOUND
    assert Missing.calls == 1


async def test_broken_listener_is_reported_not_fatal() -> None:
    class Broken:
        async def on_tool_run(self, event: ToolRunEvent) -> None:
            raise RuntimeError("listener down")

    runner, recorder = make_runner(Echo)
    runner.add_listener(Broken())
    result = await runner.run("echo", {"text": "x"})
    assert result.success
    assert len(recorder.events) == 1
    assert "listener down" in runner.listener_errors[0]
