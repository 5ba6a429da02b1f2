"""The service's hot tiers: their hits and misses in /metrics, and a memory deleted through the
API is not served afterwards (the real embedded store)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from tests.test_service.conftest import ALICE, h


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


def test_hot_tier_figures_in_metrics_and_a_deleted_memory_is_gone(service: TestClient) -> None:
    r = service.post("/api/memory/memories", headers=h(ALICE), json={"memories": [
        {"content": "STAR aligns RNA-seq reads"}, {"content": "BWA aligns DNA reads"}]})
    first, second = r.json()["ids"]
    query = {"query": "rna-seq aligner", "top_k": 2}
    answers = [service.post("/api/memory/search", headers=h(ALICE), json=query).json()["results"]
               for _ in range(2)]
    assert answers[0] == answers[1] and answers[0][0]["id"] == first
    assert service.get(f"/api/memory/memories/{first}", headers=h(ALICE)).status_code == 200
    text = service.get("/metrics").text
    assert metric(text, "memory_hot_hits_total") == 2.0  # the repeated search, the get
    assert metric(text, "memory_hot_misses_total") == 1.0
    assert metric(text, "memory_hot_items") >= 3 and metric(text, "memory_hot_bytes") > 0

    assert service.delete(f"/api/memory/memories/{first}", headers=h(ALICE)).status_code == 200
    assert service.get(f"/api/memory/memories/{first}", headers=h(ALICE)).status_code == 404
    after = service.post("/api/memory/search", headers=h(ALICE), json=query).json()["results"]
    assert [m["id"] for m in after] == [second]


def test_health_detail(service: TestClient) -> None:
    assert service.get("/health").json()["checks"] is None  # the plain probe stays cheap
    service.post("/api/memory/memories", headers=h(ALICE), json={"content": "STAR aligns reads"})
    body = service.get("/health", params={"detail": "true"}).json()
    checks = body["checks"]
    assert body["status"] == "healthy" and checks["problems"] == []
    assert all(checks["tiers"][t]["reachable"] for t in ("hot", "warm", "graph"))
    assert checks["index"]["agree"] and checks["index"]["records"] == 1
    assert checks["growth"]["last_hour"] == 1 and checks["outbox"]["outbox"] == 0
    assert checks["consolidation"]["state"] == "never"
