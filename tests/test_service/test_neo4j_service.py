"""`deepresearch-memory serve` on a real Neo4j with two worker processes, as deployed:
- a memory stored through one worker is read by whichever answers;
- the Neo4j server stopped under load: writes answer 503 naming the cause, /health answers
  503 saying the backend is down; once the server is back the service recovers by itself and
  every acknowledged memory is in the database;
- clients that hang up mid-request (half a body, or before the answer) leave it serving."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from neo4j import GraphDatabase
from neo4j_support import Neo4jTestServer, free_port

pytestmark = [pytest.mark.neo4j, pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def neo4j() -> Iterator[Neo4jTestServer]:
    """A server of this module's own: the test stops and restarts it."""
    with Neo4jTestServer() as server:
        yield server


def wait_for(url: str, status: int, proc: subprocess.Popen[bytes], err: Path,
             seconds: float = 180) -> httpx.Response:
    deadline = time.monotonic() + seconds
    while True:
        assert proc.poll() is None, err.read_text()
        try:
            r = httpx.get(f"{url}/health", timeout=10)
            if r.status_code == status:
                return r
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"/health never answered {status}"
        time.sleep(0.3)


def store(url: str, i: int) -> httpx.Response:
    return httpx.post(f"{url}/api/memory/memories", timeout=60,
                      json={"content": f"note {i}: the aligner needs more memory",
                            "session_id": "load"})


def hang_up_mid_request(port: int) -> None:
    """One request cut inside its body, one closed before its answer."""
    for body_sent, declared in ((b'{"content": "half', 4096), (None, None)):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            body = body_sent or b'{"query": "aligner", "top_k": 5}'
            s.sendall(b"POST /api/memory/%s HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                      % (b"memories" if body_sent else b"search", declared or len(body), body))


def stored_ids(uri: str) -> set[str]:
    with GraphDatabase.driver(uri, auth=None) as driver:
        records, _, _ = driver.execute_query("MATCH (m:Memory) RETURN m.id AS id")
    return {r["id"] for r in records}


def test_two_workers_on_neo4j_survive_the_server_stopping_and_lose_nothing(
        neo4j: Neo4jTestServer, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    for key in ("DEEPRESEARCH_MEMORY_API_KEYS", "NEO4J_PASSWORD"):
        env.pop(key, None)
    err = tmp_path / "serve.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "serve", "memory=neo4j",
         f"memory.neo4j.uri={neo4j.uri}", "memory.neo4j.connection_timeout=1",
         "memory.neo4j.retry_attempts=1", "memory.neo4j.retry_backoff=0.1",
         "memory.service.workers=2", f"memory.service.port={port}",
         f"memory.storage.spill_dir={tmp_path / 'spill'}"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    url = f"http://127.0.0.1:{port}"
    acknowledged: list[str] = []
    try:
        wait_for(url, 200, proc, err)
        for i in range(20):
            r = store(url, i)
            assert r.status_code == 200, r.text
            acknowledged += r.json()["ids"]
        for memory_id in acknowledged:  # 20 reads spread over both workers
            assert httpx.get(f"{url}/api/memory/memories/{memory_id}", timeout=30).status_code == 200

        neo4j.stop()
        down = [store(url, 100 + i) for i in range(5)]
        assert {r.status_code for r in down} == {503}, [r.text for r in down]
        body = down[-1].json()
        assert body["error"] == "backend_unavailable" and body["message"] and body["request_id"]
        health = wait_for(url, 503, proc, err, seconds=60).json()
        assert health["backend_connected"] is False and health["neo4j_connected"] is False
        assert health["status"] == "unhealthy"

        neo4j.start()
        wait_for(url, 200, proc, err, seconds=120)
        for i in range(200, 210):
            r = store(url, i)
            assert r.status_code == 200, r.text
            acknowledged += r.json()["ids"]

        hang_up_mid_request(port)
        r = store(url, 300)
        assert r.status_code == 200, r.text
        acknowledged += r.json()["ids"]
        back = wait_for(url, 200, proc, err).json()
        assert back["backend_connected"] is True and back["neo4j_connected"] is True
        assert back["status"] == "healthy"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(90)
    assert "Traceback" not in err.read_text()
    assert set(acknowledged) <= stored_ids(neo4j.uri)
    assert len(acknowledged) == 31
