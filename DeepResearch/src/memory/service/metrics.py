"""Prometheus metrics (GET /metrics) and the per-request traces (GET /debug/requests/{id}).

One registry per app (tests build several apps in one process)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "Trace", "Traces"]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("memory_http_requests_total", "HTTP requests by endpoint and status",
                                ["method", "endpoint", "status"], registry=r)
        self.latency = Histogram("memory_http_request_seconds", "HTTP request latency by endpoint",
                                 ["method", "endpoint"], buckets=LATENCY_BUCKETS, registry=r)
        self.store_seconds = Histogram("memory_store_seconds", "client.store_many latency",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.retrieve_seconds = Histogram("memory_retrieve_seconds", "client.retrieve latency",
                                          buckets=LATENCY_BUCKETS, registry=r)
        self.errors = Counter("memory_errors_total", "errors answered, by kind", ["kind"], registry=r)
        self.stored = Counter("memory_memories_stored_total", "memories acknowledged", registry=r)
        self.tool_calls = Counter("memory_tool_calls_total", "MCP / agent tool calls by tool and outcome",
                                  ["tool", "outcome"], registry=r)
        self.tool_seconds = Histogram("memory_tool_call_seconds", "tool call duration by tool",
                                      ["tool"], buckets=LATENCY_BUCKETS, registry=r)
        self.agent_iterations = Histogram("memory_agent_iterations", "retrieval agent iterations per request",
                                          buckets=(1, 2, 3, 5, 8, 10, 15, 20), registry=r)
        self.facts_returned = Counter("memory_facts_returned_total", "facts returned by retrieve", registry=r)
        self.rate_limited = Counter("memory_rate_limited_total", "requests refused with 429", registry=r)
        self.admitted = Counter("memory_admission_admitted_total",
                                "requests admitted by admission control", registry=r)
        self.rejected = Counter("memory_admission_rejected_total", "requests refused with 503 "
                                "overloaded (queue_full, wait_too_long: on arrival; "
                                "wait_expired: after max_wait_seconds queued)", ["reason"], registry=r)
        self.in_flight = Gauge("memory_in_flight", "requests running (admitted, not done)",
                               registry=r)
        self.queued = Gauge("memory_admission_queued", "requests waiting for a slot", registry=r)
        self.admission_wait = Histogram("memory_admission_wait_seconds",
                                        "time admitted requests waited for a slot",
                                        buckets=LATENCY_BUCKETS, registry=r)

    def watch_hot_tiers(self, counters: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        """Export the hot tiers' figures (summed over the namespaces' clients) at each scrape:
        `counters()` gives each tier's `HotTier.counters()`."""
        self.registry.register(_HotTierCollector(counters))

    def watch_query_embedding(self, stats: Callable[[], Mapping[str, int]]) -> None:
        """Export the query embedder's figures at each scrape: `stats()` gives
        `Embedder.query_stats()` (queries embedded, forward passes)."""
        self.registry.register(_QueryEmbeddingCollector(stats))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _HotTierCollector(Collector):
    def __init__(self, counters: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self.counters = counters

    def collect(self) -> Iterator[Any]:
        tiers = list(self.counters())
        total = {k: sum(t[k] for t in tiers) for k in ("hot_hits", "hot_misses", "hot_items", "hot_bytes")}
        yield CounterMetricFamily("memory_hot_hits", "gets and retrieves answered by the hot tier",
                                  value=total["hot_hits"])
        yield CounterMetricFamily("memory_hot_misses", "gets and retrieves the hot tier could not "
                                  "answer (the stores did)", value=total["hot_misses"])
        yield GaugeMetricFamily("memory_hot_items", "memories and retrieve answers in the hot tiers",
                                value=total["hot_items"])
        yield GaugeMetricFamily("memory_hot_bytes", "estimated bytes held by the hot tiers",
                                value=total["hot_bytes"])


class _QueryEmbeddingCollector(Collector):
    def __init__(self, stats: Callable[[], Mapping[str, int]]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Any]:
        found = self.stats()
        yield CounterMetricFamily("memory_query_embeddings", "queries the model embedded "
                                  "(query-cache misses)", value=found["queries"])
        yield CounterMetricFamily("memory_query_embedding_passes", "forward passes those "
                                  "queries took (concurrent queries share one)",
                                  value=found["passes"])


@dataclass
class Trace:
    request_id: str
    method: str
    path: str
    namespace: str | None = None
    started_at: float = field(default_factory=time.time)
    status: int | None = None
    duration_ms: float | None = None
    error: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    _t0: float = field(default_factory=time.perf_counter, repr=False)

    def step(self, name: str, **info: Any) -> None:
        self.steps.append({"step": name, "at_ms": round((time.perf_counter() - self._t0) * 1000, 3), **info})

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}


class Traces:
    """The last `size` request traces (a bounded ring: the oldest is dropped)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: LRUCache[str, Trace] = LRUCache(size)

    def add(self, trace: Trace) -> None:
        self._items[trace.request_id] = trace

    def get(self, request_id: str) -> Trace | None:
        return self._items.get(request_id)

    def __len__(self) -> int:
        return len(self._items)
