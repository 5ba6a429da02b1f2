"""The `memory.service` section: `deepresearch-memory serve` / `mcp` (service/), and the check
of API keys shared with the keys the service reads from the environment at start."""

from __future__ import annotations

from pydantic import Field, model_validator

from DeepResearch.src.memory.config_base import ID_RULE, Section, is_valid_id


class RateLimitConfig(Section):
    """A token bucket per API key (per client address without keys): `requests_per_second`
    refill, up to `burst` requests at once; 0 requests_per_second = no limit."""

    requests_per_second: float = Field(default=200.0, ge=0.0)
    burst: int = Field(default=400, ge=1)


class AdmissionConfig(Section):
    """Bounded work per worker process: at most `max_in_flight` requests run at once, at most
    `max_queued` more wait for a slot, none expected to wait longer than a third of
    `max_wait_seconds` (nor kept waiting longer than all of it); past that a request is
    refused at once (503 `overloaded`, Retry-After). 0 max_in_flight = no limit. Measured on
    2 cores (searches, open loop, embedded store): 2 in flight keep both cores busy (one
    request embeds while another ranks) with the shortest queueing; 4 and more add latency,
    not throughput, and let the ranking work on the event loop delay refusals (16: seconds).
    Raise it when requests wait on a remote backend (Neo4j)."""

    max_in_flight: int = Field(default=2, ge=0, le=100_000)
    max_queued: int = Field(default=32, ge=0, le=1_000_000)
    max_wait_seconds: float = Field(default=2.0, gt=0)


class ServiceConfig(Section):
    """`deepresearch-memory serve` / `mcp` (DeepResearch/src/memory/service/)."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8765, ge=0, le=65535)
    workers: int = Field(default=1, ge=1, le=64)
    # API key -> namespace. Also read from the env var named by api_keys_env at start
    # ("key1=namespace1,key2=namespace2" or a JSON object). None configured = local single
    # user: the service binds 127.0.0.1 only and serves memory.namespace.
    api_keys: dict[str, str] = Field(default_factory=dict)
    api_keys_env: str = Field(default="DEEPRESEARCH_MEMORY_API_KEYS", min_length=1)
    rate_limit: RateLimitConfig = Field(default_factory=RateLimitConfig)
    admission: AdmissionConfig = Field(default_factory=AdmissionConfig)
    max_body_bytes: int = Field(default=2_000_000, ge=1024)
    tool_timeout_seconds: float = Field(default=30.0, gt=0)
    trace_buffer: int = Field(default=1000, ge=1, le=1_000_000)  # request traces kept for /debug
    # BLAS threads per encode (0: leave numpy's default). A service gets its parallelism
    # from concurrent requests; a multi-threaded BLAS pool spins against them (measured on a
    # loaded 2-core machine: one short text took 0.7 s of CPU with 2 threads, 13 ms with 1).
    blas_threads: int = Field(default=1, ge=0, le=256)
    log_requests: bool = True  # one JSON log line per request (with its request id)
    # The longest a thread that wants the interpreter lock waits before the running one hands
    # it over, in `serve`'s process (Python's default: 5 ms). The HTTP loop waits for it after
    # each wait for the network while the memory work runs Python in other threads: at twice
    # the saturation rate on 2 cores, 1 ms took the loop's lag p99 from ~16 to ~9 ms with the
    # same goodput. 0 leaves Python's default.
    switch_interval_ms: float = Field(default=1.0, ge=0, le=100)

    @model_validator(mode="after")
    def _keys(self) -> ServiceConfig:
        check_api_keys(self.api_keys, "api_keys")
        if self.admission.max_in_flight and \
                self.admission.max_wait_seconds >= self.tool_timeout_seconds:
            raise ValueError(
                f"admission.max_wait_seconds={self.admission.max_wait_seconds:g} must be shorter "
                f"than tool_timeout_seconds={self.tool_timeout_seconds:g}: a queued request "
                "would otherwise wait as long as a call may run")
        return self


MIN_API_KEY_CHARS = 16


def check_api_keys(keys: dict[str, str], where: str) -> dict[str, str]:
    """Keys of at least MIN_API_KEY_CHARS printable characters, each mapped to a namespace
    id; ValueError naming the offending entry (never the whole key) otherwise."""
    for key, namespace in keys.items():
        shown = key[:4] + "..." if len(key) > 4 else key
        if len(key) < MIN_API_KEY_CHARS or not key.isprintable() or any(c.isspace() for c in key):
            raise ValueError(
                f"{where}: key {shown!r} must be at least {MIN_API_KEY_CHARS} printable "
                "characters without spaces"
            )
        if not is_valid_id(namespace):
            raise ValueError(
                f"{where}: key {shown!r} maps to namespace {namespace!r}; a namespace is "
                f"{ID_RULE}"
            )
    return keys
