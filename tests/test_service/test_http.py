"""The HTTP API over the real embedded store: every endpoint with good and bad input, the
namespace boundary, error bodies, metrics, traces, rate limit, body limit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.test_service.conftest import ALICE, BOB, h

pytestmark = pytest.mark.integration
MSG = {"author_id": "u1", "author_name": "Ann", "content": "I work at Acme",
       "timestamp": "2026-11-01T10:00:00Z"}


def error_of(r, status: int, error: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "message", "request_id"}, body
    assert body["error"] == error
    assert body["request_id"] == r.headers["x-request-id"]
    return body["message"]


def store(c: TestClient, key: str, **item) -> str:
    r = c.post("/api/memory/memories", json=item, headers=h(key))
    assert r.status_code == 200, r.text
    return r.json()["ids"][0]


def test_store_one_and_many_search_get_delete(service: TestClient) -> None:
    mid = store(service, ALICE, content="STAR needs 32 GB of RAM for the human index",
                metadata={"tool": "star"}, session_id="run-1", memory_type="tool_execution")
    r = service.post("/api/memory/memories", headers=h(ALICE), json={"memories": [
        {"content": "HISAT2 fits in 8 GB", "session_id": "run-2"},
        {"content": "the cluster has 64 GB nodes", "session_id": "run-2", "id": "mem-cluster"}]})
    assert r.status_code == 200 and r.json()["stored"] == 2 and r.json()["ids"][1] == "mem-cluster"
    r = service.post("/api/memory/search", headers=h(ALICE),
                     json={"query": "how much memory does STAR need", "top_k": 2})
    assert r.status_code == 200
    results = r.json()["results"]
    assert results[0]["id"] == mid and len(results) == 2
    assert results[0]["metadata"] == {"tool": "star"}
    r = service.post("/api/memory/search", headers=h(ALICE),
                     json={"query": "memory", "session_id": "run-2"})
    assert {x["session_id"] for x in r.json()["results"]} == {"run-2"}
    got = service.get(f"/api/memory/memories/{mid}", headers=h(ALICE)).json()
    assert got["content"].startswith("STAR") and got["memory_type"] == "tool_execution"
    r = service.delete(f"/api/memory/memories/{mid}", headers=h(ALICE))
    assert r.status_code == 200 and r.json()["deleted"] == 1
    error_of(service.get(f"/api/memory/memories/{mid}", headers=h(ALICE)), 404, "not_found")
    r = service.delete("/api/memory/sessions/run-2", headers=h(ALICE))
    assert r.status_code == 200 and r.json()["deleted"] == 2
    error_of(service.delete("/api/memory/sessions/run-2", headers=h(ALICE)), 404, "not_found")


def test_keys_and_namespaces(service: TestClient) -> None:
    mid = store(service, ALICE, content="Alice's secret plan")
    assert "API key" in error_of(service.get(f"/api/memory/memories/{mid}"), 401, "unauthorized")
    error_of(service.get(f"/api/memory/memories/{mid}", headers=h("wrong-key-0123456789")),
             401, "unauthorized")
    r = service.get(f"/api/memory/memories/{mid}", headers={"Authorization": f"Bearer {ALICE}"})
    assert r.status_code == 200
    # Bob cannot read, delete or overwrite it, nor search it
    error_of(service.get(f"/api/memory/memories/{mid}", headers=h(BOB)), 404, "not_found")
    error_of(service.delete(f"/api/memory/memories/{mid}", headers=h(BOB)), 404, "not_found")
    # the same id in bob's namespace is bob's own memory
    r = service.post("/api/memory/memories", headers=h(BOB), json={"content": "x", "id": mid})
    assert r.status_code == 200 and "alice" not in r.text
    assert service.get(f"/api/memory/memories/{mid}", headers=h(BOB)).json()["content"] == "x"
    service.delete(f"/api/memory/memories/{mid}", headers=h(BOB))
    r = service.post("/api/memory/search", headers=h(BOB), json={"query": "secret plan"})
    assert r.json()["results"] == []
    # a body naming another namespace is refused, never followed
    r = service.post("/api/memory/search", headers=h(BOB),
                     json={"query": "secret plan", "namespace": "alice"})
    assert "reaches namespace 'bob' only" in error_of(r, 403, "forbidden")
    assert service.get(f"/api/memory/memories/{mid}", headers=h(ALICE)).status_code == 200


@pytest.mark.parametrize(("path", "body", "status", "error", "says"), [
    ("/api/memory/memories", {}, 422, "validation_error", "give 'content'"),
    ("/api/memory/memories", {"content": ""}, 422, "validation_error", "content"),
    ("/api/memory/memories", {"content": "a", "importance": 2}, 422, "validation_error", "importance"),
    ("/api/memory/memories", {"content": "a", "memories": [{"content": "b"}]}, 422,
     "validation_error", "not both"),
    ("/api/memory/memories", {"content": "a", "colour": "red"}, 422, "validation_error", "colour"),
    ("/api/memory/memories", {"content": "a", "session_id": "../x"}, 422, "validation_error",
     "session_id"),
    ("/api/memory/memories", {"content": "a", "metadata": {"session_id": "x"}}, 400,
     "bad_request", "session_id"),
    ("/api/memory/search", {}, 422, "validation_error", "query: Field required"),
    ("/api/memory/search", {"query": "x", "top_k": 0}, 422, "validation_error", "top_k"),
    ("/api/memory/search", {"query": "x", "filters": {"$gt": 1}}, 400, "bad_request", "$gt"),
    ("/api/memory/retrieve", {"messages": [MSG], "channel_id": "c", "max_facts": 101}, 422,
     "validation_error", "max_facts"),
    ("/api/memory/retrieve", {"messages": [MSG], "channel_id": "c", "max_iterations": 0}, 422,
     "validation_error", "max_iterations"),
    ("/api/memory/retrieve", {"messages": [], "channel_id": "c"}, 422, "validation_error",
     "messages"),
    ("/api/memory/retrieve", {"messages": [{"author_id": "u"}], "channel_id": "c"}, 422,
     "validation_error", "messages.0.content"),
    ("/api/memory/ingest", {"channel_id": "c"}, 422, "validation_error", "messages"),
    ("/api/memory/facts", {"facts": [{"subject": "Ann"}]}, 422, "validation_error", "predicate"),
    ("/api/memory/facts", {"facts": []}, 422, "validation_error", "facts"),
    ("/api/memory/ingest", {"messages": [MSG], "channel_id": "bad channel"}, 422,
     "validation_error", "channel_id"),
    # the one id rule (config, client, service): no '..'
    ("/api/memory/memories", {"content": "x", "session_id": "a..b"}, 422, "validation_error",
     "'a..b' is not a valid id"),
    ("/api/memory/ingest", {"messages": [{**MSG, "message_id": "m..1"}], "channel_id": "c"},
     422, "validation_error", "'m..1' is not a valid id"),
    # the timestamp rules of ingest in Python and the CLI: milliseconds are refused, not divided
    ("/api/memory/ingest", {"messages": [{**MSG, "timestamp": 1709287300000}], "channel_id": "c"},
     422, "validation_error", "messages.0.timestamp: Value error, message: field 'timestamp' = "
     "1709287300000 is after the year 3000"),
    ("/api/memory/retrieve", {"messages": [{**MSG, "timestamp": "yesterday"}], "channel_id": "c"},
     422, "validation_error", "'yesterday' is not an ISO 8601"),
    ("/api/memory/ingest", {"messages": [{**MSG, "timestamp": True}], "channel_id": "c"},
     422, "validation_error", "is a bool"),
])
def test_bad_input(service: TestClient, path: str, body: dict, status: int, error: str,
                   says: str) -> None:
    assert says in error_of(service.post(path, json=body, headers=h(ALICE)), status, error)


def test_bad_json_bad_id_unknown_route(service: TestClient) -> None:
    r = service.post("/api/memory/search", content=b'{"query": ', headers={
        **h(ALICE), "content-type": "application/json"})
    assert "not valid JSON" in error_of(r, 400, "bad_request")
    error_of(service.get("/api/memory/memories/bad..id", headers=h(ALICE)), 400, "bad_request")
    error_of(service.get("/api/memory/nothing", headers=h(ALICE)), 404, "not_found")


def test_body_limit(make_service: Callable[..., TestClient]) -> None:
    c = make_service(max_body_bytes=4096)
    r = c.post("/api/memory/memories", json={"content": "x" * 5000}, headers=h(ALICE))
    assert "max_body_bytes=4096" in error_of(r, 413, "payload_too_large")

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"content": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    r = c.post("/api/memory/memories", content=chunks(),
               headers={**h(ALICE), "content-type": "application/json"})
    error_of(r, 413, "payload_too_large")


def test_ingest_facts_retrieve(service: TestClient) -> None:
    msgs = [
        {"author_id": "u1", "author_name": "Ann Lee", "timestamp": "2026-11-01T10:00:00Z",
         "content": "I work at Acme as a data engineer and I live in Berlin."},
        {"author_id": "u2", "author_name": "Bo Chen", "timestamp": "2026-11-01T10:01:00Z",
         "content": "I know Python and Rust really well."},
    ]
    r = service.post("/api/memory/ingest", json={"messages": msgs, "channel_id": "general"},
                     headers=h(ALICE))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["messages"] == 2 and len(body["episodes"]) == 2
    found = {(f["subject"], f["predicate"], f["object"]) for f in body["facts"]}
    assert ("Ann Lee", "WORKS_AT", "Acme") in found and body["facts_added"] == len(body["facts"])
    # the same messages again: the same episode ids (derived), nothing duplicated
    again = service.post("/api/memory/ingest", json={"messages": msgs, "channel_id": "general"},
                         headers=h(ALICE)).json()
    assert again["episodes"] == body["episodes"]
    r = service.post("/api/memory/facts", headers=h(ALICE), json={"facts": [
        {"subject": "Ann Lee", "predicate": "HAS_SKILL", "object": "Kubernetes",
         "confidence": 0.9}]})
    assert r.status_code == 200 and r.json()["added"] == 1
    assert r.json()["facts"][0]["evidence"] == [f"api:{r.json()['request_id']}"]
    ask = {"messages": [{"author_id": "u3", "author_name": "Cy", "timestamp":
                         "2026-11-02T10:00:00Z", "content": "Where does Ann Lee work?"}],
           "channel_id": "general", "max_facts": 5}
    r = service.post("/api/memory/retrieve", json=ask, headers=h(ALICE))
    assert r.status_code == 200, r.text
    out = r.json()
    assert any("Ann Lee works at Acme" in f for f in out["facts"]) and len(out["facts"]) <= 5
    assert out["confidence"] in ("high", "medium", "low")
    # the same facts with their structure and validity
    assert [d["text"] for d in out["details"]] == out["facts"]
    acme = next(d for d in out["details"] if d["object"] == "Acme")
    assert (acme["subject"], acme["predicate"], acme["current"], acme["invalid_at"]) == (
        "Ann Lee", "WORKS_AT", True, None)
    md = out["metadata"]
    assert md["request_id"] == r.headers["x-request-id"] and md["iterations_used"] >= 1
    assert md["queries_executed"] >= 1 and md["processing_time_ms"] > 0
    trace = service.get(f"/debug/requests/{md['request_id']}", headers=h(ALICE)).json()
    assert trace["steps"][0]["step"] == "retrieval agent" and trace["steps"][0]["tools"]
    metrics = service.get("/metrics").text
    assert "memory_facts_returned_total" in metrics and "memory_agent_iterations_count 1.0" in metrics
    # Bob's namespace knows nothing of Ann
    r = service.post("/api/memory/retrieve", json=ask, headers=h(BOB))
    assert r.status_code == 200 and r.json()["facts"] == []
    # bad facts: a predicate the graph does not know, no subject
    r = service.post("/api/memory/facts", headers=h(ALICE), json={"facts": [
        {"subject": "Ann Lee", "predicate": "LOVES", "object": "tea"}]})
    assert "LOVES" in error_of(r, 400, "bad_request")


def test_concurrent_stores_are_grouped(make_service: Callable[..., TestClient]) -> None:
    """With room for the burst in flight (admission control bounds it to 2 by default)."""
    import asyncio

    import httpx

    service = make_service(admission={"max_in_flight": 32})

    async def many() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=service.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await asyncio.gather(*[
                c.post("/api/memory/memories", headers=h(ALICE),
                       json={"content": f"grouped note {i}", "session_id": f"g{i % 3}"})
                for i in range(30)] + [
                c.post("/api/memory/memories", headers=h(ALICE),
                       json={"content": "bad one", "metadata": {"session_id": "x"}})])

    answers = service.portal.call(many)
    assert [r.status_code for r in answers[:30]] == [200] * 30
    assert answers[30].status_code == 400  # one caller's bad item fails only that caller
    ids = [r.json()["ids"][0] for r in answers[:30]]
    assert len(set(ids)) == 30
    for mid in ids[::7]:
        assert service.get(f"/api/memory/memories/{mid}", headers=h(ALICE)).status_code == 200
    coalescer = service.app.state.service.namespaces.coalescer("alice")
    assert coalescer.writes < 31


def test_rate_limit(make_service: Callable[..., TestClient]) -> None:
    c = make_service(rate_limit={"requests_per_second": 1, "burst": 3})
    codes = [c.post("/api/memory/search", json={"query": "q"}, headers=h(ALICE))
             for _ in range(4)]
    assert [r.status_code for r in codes[:3]] == [200, 200, 200]
    assert "retry after" in error_of(codes[3], 429, "rate_limited")
    assert int(codes[3].headers["Retry-After"]) >= 1
    # per key: Bob has his own bucket
    assert c.post("/api/memory/search", json={"query": "q"}, headers=h(BOB)).status_code == 200


def test_health_metrics_traces(service: TestClient) -> None:
    r = service.get("/health")
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "healthy" and body["backend_connected"] and body["model_loaded"]
    assert body["version"]
    before = service.get("/metrics").text
    r = service.post("/api/memory/memories", json={"content": "m"}, headers=h(ALICE))
    rid = r.headers["x-request-id"]
    after = service.get("/metrics").text
    line = 'memory_http_requests_total{endpoint="/api/memory/memories",method="POST",status="200"}'
    assert line not in before and f"{line} 1.0" in after
    assert "memory_store_seconds_count 1.0" in after
    for name in ("memory_tool_calls_total", "memory_agent_iterations", "memory_facts_returned_total",
                 "memory_http_request_seconds_bucket"):
        assert name in after
    trace = service.get(f"/debug/requests/{rid}", headers=h(ALICE)).json()
    assert trace["status"] == 200 and trace["namespace"] == "alice"
    assert trace["steps"][0]["step"] == "stored"
    error_of(service.get(f"/debug/requests/{rid}", headers=h(BOB)), 404, "not_found")
    r = service.post("/api/memory/search", json={"query": "q"},
                     headers={**h(ALICE), "X-Request-ID": "my-req-1"})
    assert r.headers["x-request-id"] == "my-req-1" and r.json()["request_id"] == "my-req-1"


def test_docs(service: TestClient) -> None:
    spec = service.get("/openapi.json").json()
    for path in ("/api/memory/memories", "/api/memory/search", "/api/memory/retrieve",
                 "/api/memory/memories/{memory_id}", "/api/memory/sessions/{session_id}"):
        assert path in spec["paths"]
    assert service.get("/docs").status_code == 200


def test_local_mode_and_shutdown_keeps_writes(make_service: Callable[..., TestClient],
                                              tmp_path: Path) -> None:
    c = make_service(keys={}, path=tmp_path / "local")
    ids = [store(c, "", content=f"note {i}") for i in range(5)]
    c.__exit__(None, None, None)  # graceful shutdown
    again = make_service(keys={}, path=tmp_path / "local")
    for mid in ids:
        assert again.get(f"/api/memory/memories/{mid}").status_code == 200
