"""What one running service holds: its config, the namespaces' clients and knowledge graphs,
metrics, traces, the rate limiter and admission control."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.service.admission import Admission
from DeepResearch.src.memory.service.metrics import Metrics, Traces
from DeepResearch.src.memory.service.namespaces import Namespaces
from DeepResearch.src.memory.service.ratelimit import RateLimiter

T = TypeVar("T")


def service_version() -> str:
    try:
        return version("deepresearch")
    except PackageNotFoundError:  # run from a checkout without installing
        return "0.1.0"


class ServiceTimeout(Exception):
    """A call took longer than memory.service.tool_timeout_seconds (503)."""


class Forbidden(Exception):
    """403: a body names another namespace than its key's."""


@dataclass
class ServiceState:
    config: MemoryConfig
    namespaces: Namespaces
    metrics: Metrics = field(default_factory=Metrics)
    traces: Traces = field(default_factory=lambda: Traces(1000))
    limiter: RateLimiter | None = None
    admission: Admission | None = None
    version: str = field(default_factory=service_version)

    def __post_init__(self) -> None:
        self.traces = Traces(self.config.service.trace_buffer)
        if self.limiter is None:
            self.limiter = RateLimiter(self.config.service.rate_limit)
        if self.admission is None:
            self.admission = Admission(self.config.service.admission)
        admission = self.admission
        self.metrics.in_flight.set_function(lambda: admission.in_flight)
        self.metrics.queued.set_function(lambda: admission.queued)
        self.metrics.watch_query_embedding(self.namespaces.embedder.query_stats)
        self.metrics.watch_hot_tiers(
            lambda: [client.hot.counters() for client in self.namespaces.clients()])

    async def bounded(self, call: Coroutine[Any, Any, T], what: str) -> T:
        """`call`, run on the work loop (work_loop.py), within tool_timeout_seconds;
        ServiceTimeout naming `what` otherwise."""
        seconds = self.config.service.tool_timeout_seconds
        try:
            return await asyncio.wait_for(self.namespaces.run(call), seconds)
        except TimeoutError:
            raise ServiceTimeout(
                f"{what} took longer than memory.service.tool_timeout_seconds={seconds:g} s"
            ) from None

    def namespace_of(self, key_namespace: str, asked: str | None) -> str:
        if asked is not None and asked != key_namespace:
            raise Forbidden(
                f"namespace {asked!r} is not this API key's; this key reaches namespace "
                f"{key_namespace!r} only (leave 'namespace' out)"
            )
        return key_namespace
