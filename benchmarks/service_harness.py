"""The pieces of a service benchmark: `deepresearch-memory serve` as a subprocess on a free
loopback port (Service), latencies and errors per endpoint (Recorder), an httpx client sized
for N connections, and a time bound on a phase's sessions (bounded). Used by bench_service
and bench_agent_service."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def refused(r: httpx.Response) -> bool:
    """An admission (503 overloaded) or rate-limit (429) refusal: nothing was done."""
    if r.status_code == 429:
        return True
    if r.status_code != 503:
        return False
    return error_kind(r) == "overloaded"


def error_kind(r: httpx.Response) -> str:
    """The `error` of the service's JSON error body ('' for another body)."""
    try:
        body = r.json()
    except ValueError:
        return ""
    return str(body.get("error", "")) if isinstance(body, dict) else ""


def retry_delay(r: httpx.Response, rng: random.Random) -> float:
    """What docs/service.md asks of a client: Retry-After plus up to a second at random."""
    return float(r.headers.get("Retry-After", "1")) + rng.random()


class Recorder:
    """Latency per endpoint (a call's whole time, retries after refusals included), errors by
    status, refusals (503 overloaded / 429, each followed by a retry after Retry-After, as a
    client should), acknowledged ids."""

    def __init__(self, max_attempts: int = 50) -> None:
        self.ms: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.acked: list[str] = []
        self.messages: dict[int, str] = {}
        self.refused = 0
        self.refusal_ms: list[float] = []
        self.max_attempts = max_attempts
        self._rng = random.Random(5)

    async def call(self, http: httpx.AsyncClient, endpoint: str, method: str, url: str,
                   **kw: Any) -> httpx.Response | None:
        started = time.perf_counter()
        for attempt in range(self.max_attempts):
            sent = time.perf_counter()
            try:
                r = await http.request(method, url, **kw)
            except httpx.HTTPError as exc:
                self.errors[f"{endpoint} {type(exc).__name__}"] += 1
                return None
            if not refused(r) or attempt == self.max_attempts - 1:
                break
            self.refused += 1
            self.refusal_ms.append((time.perf_counter() - sent) * 1000)
            await asyncio.sleep(retry_delay(r, self._rng))
        self.ms[endpoint].append((time.perf_counter() - started) * 1000)
        if r.status_code >= 400:
            self.errors[f"{endpoint} {r.status_code} {error_kind(r)}".rstrip()] += 1
            self.messages.setdefault(r.status_code, r.text[:300])
        return r

    def summary(self) -> dict[str, dict[str, float]]:
        return {ep: {"n": len(v), "p50": percentile(v, .5), "p95": percentile(v, .95),
                     "p99": percentile(v, .99)} for ep, v in self.ms.items()}


class Service:
    """`deepresearch-memory serve` as a subprocess on a free port."""

    def __init__(self, store: Path, log: Path, *extra: str, backend_args: list[str] | None = None
                 ) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.store, self.log = store, log
        self.extra = extra
        # the embedded store in `store` unless other backend arguments are given
        self.backend_args = backend_args or [f"memory.faiss.path={store}"]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        env.pop("DEEPRESEARCH_MEMORY_API_KEYS", None)
        args = [sys.executable, "-m", "DeepResearch.src.memory.cli", "serve",
                f"memory.service.port={self.port}", *self.backend_args,
                "memory.service.rate_limit.requests_per_second=0",
                "memory.service.log_requests=false", *self.extra]
        self.proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                     stderr=self.log.open("ab"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited ({self.proc.returncode}); see {self.log}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"the service did not start in 120 s; see {self.log}")

    def stop(self) -> int:
        """SIGTERM (graceful: lifespan flushes and closes), waited for."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9


def client(connections: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=120, limits=httpx.Limits(
        max_connections=connections, max_keepalive_connections=connections))


class Clients:
    """httpx clients for `connections` concurrent requests, at most PER_CLIENT connections
    each; `clients[i]` is request i's. httpcore's pool does work quadratic in its connections:
    a burst of 1,000 requests through one pool of 1,000 cost the load generator some 30 s of
    CPU, and every answer arrived after it (the service had answered in under a second)."""

    PER_CLIENT = 50

    def __init__(self, connections: int) -> None:
        n = max(1, -(-connections // self.PER_CLIENT))
        self.all = [client(min(connections, self.PER_CLIENT)) for _ in range(n)]

    def __getitem__(self, i: int) -> httpx.AsyncClient:
        return self.all[i % len(self.all)]

    async def __aenter__(self) -> Clients:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for c in self.all:
            await c.aclose()


async def bounded(coros: list[Any], seconds: float) -> None:
    tasks = [asyncio.ensure_future(c) for c in coros]
    _done, pending = await asyncio.wait(tasks, timeout=seconds)
    for t in pending:
        t.cancel()
    if pending:
        print(f"  {len(pending)} sessions cut at the {seconds:.0f} s bound", flush=True)


async def vectors_filled(url: str, limit: float) -> float:
    """Seconds until the service reports no stored memory waiting for its vector (/health
    detail), at most `limit`."""
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=30) as http:
        while time.perf_counter() - started < limit:
            r = await http.get(f"{url}/health", params={"detail": "true"})
            if ((r.json().get("checks") or {}).get("vectors") or {}).get("awaiting", 1) == 0:
                break
            await asyncio.sleep(0.25)
    return time.perf_counter() - started
