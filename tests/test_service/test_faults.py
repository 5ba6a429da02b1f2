"""The backend failing under the service: the embedded database locked by another
connection. Writes answer 503 naming the cause, /health says so, acknowledged writes stay,
and the service recovers when the lock goes."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from DeepResearch.src.memory.backends.embedded import DB_FILE
from DeepResearch.src.memory.service.run import CONFIG_ENV, app_from_env
from tests.test_service.conftest import ALICE, h

pytestmark = pytest.mark.integration


def test_locked_database_503_health_and_recovery(make_service: Callable[..., TestClient],
                                                 tmp_path: Path) -> None:
    store = tmp_path / "locked"
    c = make_service(path=store)
    before = c.post("/api/memory/memories", json={"content": "written before"}, headers=h(ALICE))
    assert before.status_code == 200
    lock = sqlite3.connect(store / DB_FILE, isolation_level=None, timeout=0.1)
    lock.execute("BEGIN EXCLUSIVE")
    try:
        # (the write waits memory.faiss.busy_timeout, 5 s, for the lock, then fails)
        r = c.post("/api/memory/memories", json={"content": "during"}, headers=h(ALICE))
        assert r.status_code == 503, r.text
        assert r.json()["error"] == "backend_unavailable"
        assert "database is locked" in r.json()["message"]
        health = c.get("/health")
        assert health.status_code == 503
        assert not health.json()["backend_connected"] and "writes fail" in health.json()["detail"]
        assert health.json()["status"] == "unhealthy"
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    time.sleep(2.1)  # health retries failed writes at most every 2 s
    health = c.get("/health")
    assert health.status_code == 200 and health.json()["status"] == "healthy", health.text
    after = c.post("/api/memory/memories", json={"content": "after"}, headers=h(ALICE))
    assert after.status_code == 200
    for r in (before, after):
        mid = r.json()["ids"][0]
        assert c.get(f"/api/memory/memories/{mid}", headers=h(ALICE)).status_code == 200


def test_worker_app_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("DeepResearch.src.memory.service.run.configure_logging", lambda: None)
    monkeypatch.setenv(CONFIG_ENV, json.dumps({"backend": "in_memory",
                                               "service": {"api_keys": {ALICE: "alice"}}}))
    app = app_from_env()
    assert app.state.service.namespaces.keys == {ALICE: "alice"}
