"""Admission control over a real uvicorn server on 127.0.0.1: past `max_in_flight` running
and `max_queued` waiting, a request (HTTP API or MCP) is refused at once with 503
`overloaded`, Retry-After and a body naming the limit, while the admitted work is still
running; every write answered 2xx is then readable, and no refused write was stored."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import httpx
import pytest

from DeepResearch.src.memory.config import MemoryConfig
from DeepResearch.src.memory.config_service import AdmissionConfig
from DeepResearch.src.memory.errors import MemoryConfigError
from DeepResearch.src.memory.service.admission import Admission, Overloaded
from tests.test_service.conftest import ALICE, h

IN_FLIGHT, QUEUED, TIMEOUT = 2, 2, 120.0
ITEMS = 150  # memories per slow store: seconds of embedding on 2 cores


@pytest.fixture
def http_settings() -> dict[str, Any]:
    # stores embed inline: their embedding is the slow work that holds the slots
    return {"storage": {"vectors": "inline"},
            "service": {"tool_timeout_seconds": TIMEOUT, "admission": {
                "max_in_flight": IN_FLIGHT, "max_queued": QUEUED, "max_wait_seconds": TIMEOUT / 2}}}


def slow_store(n: int) -> dict[str, Any]:
    return {"memories": [{"id": f"r{n}-{i}", "session_id": f"s{n}",
                          "content": f"request {n} item {i}: the aligner on node {i * 7 + n} "
                                     f"needs {i % 64 + 1} GB for index build {n * 1000 + i}"}
                         for i in range(ITEMS)]}


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


async def timed(http: httpx.AsyncClient, method: str, url: str, **kw: Any
                ) -> tuple[httpx.Response, float, float]:
    """(answer, seconds it took, when it arrived on the monotonic clock)."""
    started = time.monotonic()
    r = await http.request(method, url, **kw)
    return r, time.monotonic() - started, time.monotonic()


async def saturate(base: str) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=TIMEOUT * 2, headers=h(ALICE),
                                 limits=httpx.Limits(max_connections=50)) as http:
        url = f"{base}/api/memory/memories"
        # the slots and the queue fill with slow stores ...
        held = [asyncio.ensure_future(timed(http, "POST", url, json=slow_store(n)))
                for n in range(IN_FLIGHT + QUEUED)]
        deadline = time.monotonic() + 60
        while True:
            text = (await http.get(f"{base}/metrics")).text
            if metric(text, "memory_admission_queued") == QUEUED:
                break
            assert time.monotonic() < deadline, "the queue never filled"
            await asyncio.sleep(0.02)
        assert metric(text, "memory_in_flight") == IN_FLIGHT
        # ... then more stores, a search and an MCP call arrive while they run
        extra = [timed(http, "POST", url, json=slow_store(n)) for n in range(10, 16)]
        extra.append(timed(http, "POST", f"{base}/api/memory/search", json={"query": "aligner"}))
        extra.append(timed(http, "POST", f"{base}/mcp", json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_memory", "arguments": {"query": "aligner"}}},
            headers={**h(ALICE), "Accept": "application/json, text/event-stream"}))
        refused = await asyncio.gather(*extra)
        admitted = await asyncio.gather(*held)
        acked = [i for r, _, _ in admitted if r.status_code == 200 for i in r.json()["ids"]]
        readable = [(await http.get(f"{url}/{i}")).status_code for i in acked]
        refused_ids = [f"r{n}-0" for n in range(10, 16)]
        refused_read = [(await http.get(f"{url}/{i}")).status_code for i in refused_ids]
        return {"refused": refused, "admitted": admitted, "acked": acked, "readable": readable,
                "refused_read": refused_read, "metrics": (await http.get(f"{base}/metrics")).text}


def test_past_the_limit_requests_are_refused_at_once_and_nothing_acknowledged_is_lost(
        http_service: str) -> None:
    seen = asyncio.run(saturate(http_service))
    first_done = min(done for _, _, done in seen["admitted"])
    for r, seconds, answered in seen["refused"]:
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["error"] == "overloaded"
        assert body["limit"] == "memory.service.admission.max_queued"
        assert body["limits"] == {"max_in_flight": IN_FLIGHT, "max_queued": QUEUED,
                                  "max_wait_seconds": TIMEOUT / 2}
        assert body["written"] is False and "nothing was stored" in body["message"]
        assert int(r.headers["Retry-After"]) >= 1
        # answered while the admitted work still ran, far inside the server's time limit
        assert answered < first_done
        assert seconds < TIMEOUT / 10
    # the admitted ones (running and queued) all succeeded; each is readable back
    assert [r.status_code for r, _, _ in seen["admitted"]] == [200] * (IN_FLIGHT + QUEUED)
    assert len(seen["acked"]) == (IN_FLIGHT + QUEUED) * ITEMS
    assert set(seen["readable"]) == {200}
    assert set(seen["refused_read"]) == {404}  # a refused write stored nothing
    text = seen["metrics"]
    assert metric(text, 'memory_admission_rejected_total{reason="queue_full"}') == len(seen["refused"])
    assert metric(text, "memory_admission_admitted_total") >= IN_FLIGHT + QUEUED
    assert metric(text, "memory_in_flight") == 0 and metric(text, "memory_admission_queued") == 0


def test_health_and_metrics_are_never_held_back(http_service: str) -> None:
    async def run() -> list[int]:
        async with httpx.AsyncClient(timeout=TIMEOUT, headers=h(ALICE)) as http:
            held = [asyncio.ensure_future(http.post(f"{http_service}/api/memory/memories",
                                                    json=slow_store(n)))
                    for n in range(IN_FLIGHT + QUEUED + 2)]
            deadline = time.monotonic() + 60
            while metric((await http.get(f"{http_service}/metrics")).text,
                         "memory_admission_queued") < QUEUED:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            codes = [(await http.get(f"{http_service}/health")).status_code]
            await asyncio.gather(*held)
            return codes
    assert asyncio.run(run()) == [200]


def test_a_queued_request_is_refused_when_its_wait_runs_out() -> None:
    async def run() -> tuple[Overloaded, int]:
        adm = Admission(AdmissionConfig(max_in_flight=1, max_queued=4, max_wait_seconds=0.2))
        await adm.enter()  # the one slot, never released here
        with pytest.raises(Overloaded) as refused:
            await adm.enter()
        return refused.value, adm.queued
    exc, queued = asyncio.run(run())
    assert exc.reason == "wait_expired" and "max_wait_seconds=0.2" in exc.message
    assert queued == 0  # the expired request left the queue


def test_a_request_that_would_wait_too_long_is_refused_on_arrival() -> None:
    async def run() -> Overloaded:
        adm = Admission(AdmissionConfig(max_in_flight=1, max_queued=100, max_wait_seconds=0.6))
        await adm.enter()
        adm.leave(0.35)  # the pace: 0.35 s a request
        await adm.enter()
        with pytest.raises(Overloaded) as refused:
            await adm.enter()  # one ahead of it at that pace: past a third of the 0.6 s bound
        assert adm.queued == 0
        return refused.value
    exc = asyncio.run(run())
    assert exc.reason == "wait_too_long" and "max_wait_seconds=0.6" in exc.message
    assert exc.retry_after >= 1


def test_a_crowd_refused_together_is_told_to_come_back_one_after_another() -> None:
    """Each refusal's Retry-After counts the clients refused before it that have not come
    back yet: a crowd is spread over the time the service needs for it, at its pace."""
    async def run() -> list[int]:
        adm = Admission(AdmissionConfig(max_in_flight=1, max_queued=0, max_wait_seconds=1))
        await adm.enter()
        adm.leave(0.5)  # the pace: 0.5 s a request
        await adm.enter()  # the one slot, held
        told = []
        for _ in range(10):
            with pytest.raises(Overloaded) as refused:
                await adm.enter()
            told.append(refused.value.retry_after)
        return told
    told = asyncio.run(run())
    assert told == sorted(told) and told[0] == 1 and told[-1] == 6  # the slot, 9 told before, itself: 5.5 s


def test_slots_pass_in_arrival_order_and_a_vanished_waiter_passes_its_turn() -> None:
    async def run() -> list[str]:
        adm = Admission(AdmissionConfig(max_in_flight=1, max_queued=3, max_wait_seconds=10))
        order: list[str] = []
        await adm.enter()

        async def worker(name: str) -> None:
            await adm.enter()
            order.append(name)
            adm.leave(0.01)
        a = asyncio.ensure_future(worker("a"))
        gone = asyncio.ensure_future(worker("gone"))
        b = asyncio.ensure_future(worker("b"))
        await asyncio.sleep(0)
        assert adm.queued == 3
        with pytest.raises(Overloaded):  # queue full: refused at once
            await adm.enter()
        gone.cancel()
        adm.leave(0.01)
        await asyncio.gather(a, b, gone, return_exceptions=True)
        assert adm.in_flight == 0 and adm.queued == 0
        return order
    assert asyncio.run(run()) == ["a", "b"]


def test_a_wait_bound_as_long_as_the_timeout_is_refused_naming_both_keys() -> None:
    with pytest.raises(MemoryConfigError, match=r"max_wait_seconds=30.*tool_timeout_seconds=30"):
        MemoryConfig(service={"tool_timeout_seconds": 30, "admission": {"max_wait_seconds": 30}})


def test_a_served_app_keeps_its_start_up_objects_out_of_the_collector(tmp_path: Any) -> None:
    """The served process (settle=True) freezes what start-up built, so a full collection
    (which runs on the event loop, holding every answer and refusal) walks only newer
    objects; an app built for a test process (the default) leaves the collector alone."""
    import subprocess
    import sys

    program = (
        "import gc\n"
        "from fastapi.testclient import TestClient\n"
        "from DeepResearch.src.memory.config import MemoryConfig\n"
        "from DeepResearch.src.memory.service import create_app\n"
        f"config = MemoryConfig(backend='faiss', faiss={{'path': {str(tmp_path / 's')!r}}})\n"
        "for settle in (False, True):\n"
        "    with TestClient(create_app(config, keys={}, mcp=False, settle=settle)):\n"
        "        print(settle, gc.get_freeze_count(), flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300, check=True)
    lines = dict(line.split() for line in done.stdout.splitlines())
    assert int(lines["False"]) == 0
    assert int(lines["True"]) > 10_000  # modules, the model, the store


def test_the_pace_of_slow_requests_does_not_refuse_quick_ones_of_another_kind() -> None:
    """After a run of slow ingests, searches queue at their own pace: a search behind a
    search is expected to wait a search's time, not an ingest's; behind an ingest, an
    ingest's."""
    ingest, search = "POST /api/memory/ingest", "POST /api/memory/search"

    async def run() -> tuple[int, Overloaded]:
        adm = Admission(AdmissionConfig(max_in_flight=1, max_queued=100, max_wait_seconds=0.6))
        for _ in range(20):  # ingests of a hundred messages: 1 s each
            await adm.enter(ingest)
            adm.leave(1.0, ingest)
        await adm.enter(search)
        adm.leave(0.02, search)  # a search: 20 ms
        await adm.enter(search)  # the one slot, held
        queued = [asyncio.ensure_future(adm.enter(search)) for _ in range(5)]
        await asyncio.sleep(0)
        waiting = adm.queued  # 5 searches ahead and one in flight: 0.12 s of a 0.2 s headroom
        for _ in range(6):
            adm.leave(0.02, search)
        await asyncio.gather(*queued)
        await adm.enter(ingest)  # the slot, held by an ingest: free in about 1 s
        with pytest.raises(Overloaded) as refused:
            await adm.enter(search)
        return waiting, refused.value
    waiting, exc = asyncio.run(run())
    assert waiting == 5
    assert exc.reason == "wait_too_long"
