"""Seed 002's /health fields and POST /api/memory/retrieve/debug, over real HTTP (uvicorn on
127.0.0.1, the embedded store, the real embedding model)."""

from __future__ import annotations

import httpx
import pytest

from tests.test_service.conftest import ALICE, BOB, h

pytestmark = pytest.mark.integration

FACTS = [
    {"subject": "Charlie", "predicate": "WORKS_AT", "object": "Google", "confidence": 0.92,
     "evidence": ["msg_456"], "valid_at": "2019-01-01T00:00:00Z", "invalid_at": "2022-06-01T00:00:00Z",
     "attributes": {"role": "Software Engineer"}},
    {"subject": "Charlie", "predicate": "WORKS_AT", "object": "Stripe", "confidence": 0.9,
     "evidence": ["msg_457"], "valid_at": "2022-06-01T00:00:00Z"},
    {"subject": "Dana", "predicate": "WORKS_AT", "object": "Google", "confidence": 0.9,
     "evidence": ["msg_789"], "attributes": {"role": "Product Manager"}},
]
ASK = {"channel_id": "channel_789", "max_facts": 30, "max_iterations": 10, "messages": [
    {"author_id": "user123", "author_name": "Alice", "timestamp": "2025-10-10T14:30:00Z",
     "content": "Hey, I'm thinking about applying to Google"},
    {"author_id": "user456", "author_name": "Bob", "timestamp": "2025-10-10T14:30:15Z",
     "content": "Oh nice! Didn't Charlie work there?"}]}


def test_health_answers_with_the_seed_s_fields(http_service: str) -> None:
    r = httpx.get(f"{http_service}/health", timeout=30)
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "healthy" and body["model_loaded"] is True and body["version"]
    # the embedded store: no Neo4j behind this service
    assert body["neo4j_connected"] is None and body["backend_connected"] is True
    assert body["backend"] == "faiss"


def test_retrieve_debug_returns_the_answer_and_the_full_trace(http_service: str) -> None:
    with httpx.Client(base_url=http_service, timeout=120) as c:
        assert c.post("/api/memory/facts", json={"facts": FACTS}, headers=h(ALICE)).status_code == 200
        plain = c.post("/api/memory/retrieve", json=ASK, headers=h(ALICE)).json()
        r = c.post("/api/memory/retrieve/debug", json=ASK, headers=h(ALICE))
        assert r.status_code == 200, r.text
        body = r.json()
        # the same answer as /api/memory/retrieve: Charlie's ended job, saying when it ended
        assert body["facts"] == plain["facts"] and body["confidence"] == plain["confidence"]
        assert any(f.startswith("Charlie previously worked at Google from 2019 to 2022")
                   for f in body["facts"]), body["facts"]
        ended = next(d for d in body["details"] if d["subject"] == "Charlie" and d["object"] == "Google")
        assert ended["invalid_at"].startswith("2022-06-01") and ended["current"] is False
        assert body["metadata"]["request_id"] == r.headers["x-request-id"]
        debug = body["debug_info"]
        nodes = [s["node"] for s in debug["state_history"]]
        assert nodes[0] == "analyze_conversation" and nodes[-1] == "synthesize"
        assert nodes.count("execute_tool") == len(debug["tool_calls"]) == body["metadata"]["queries_executed"]
        first = debug["tool_calls"][0]
        assert first["tool"] == "get_person_profile" and first["input"]["person"] == "Charlie"
        assert first["input"]["include_history"] is True and first["success"] is True
        assert {"output_size", "new_facts", "duration_ms", "started_ms"} <= set(first)
        assert len(debug["reasoning_trace"]) == len(debug["state_history"]) + len(debug["tool_calls"])
        assert any("stop:" in line for line in debug["reasoning_trace"])
        # the namespace boundary and the request checks hold as for /api/memory/retrieve
        other = c.post("/api/memory/retrieve/debug", json=ASK, headers=h(BOB)).json()
        assert other["facts"] == [] and other["debug_info"]["tool_calls"]
        assert c.post("/api/memory/retrieve/debug", json=ASK).status_code == 401
        bad = c.post("/api/memory/retrieve/debug", json={**ASK, "max_facts": 0}, headers=h(ALICE))
        assert bad.status_code == 422 and "max_facts" in bad.text
