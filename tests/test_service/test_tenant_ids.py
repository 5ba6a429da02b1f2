"""Ids are scoped by namespace, over a real HTTP server: two tenants each ingest and store a
memory "1" (REST and MCP), each reads back its own, and no answer names the other tenant."""

from __future__ import annotations

import httpx
import pytest

from tests.test_service.conftest import ALICE, BOB, data, h, http_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def message(text: str, message_id: str = "1") -> dict[str, str]:
    return {"message_id": message_id, "author_id": "u1", "author_name": "Ann Lee",
            "timestamp": "2026-11-01T10:00:00Z", "content": text}


async def test_two_tenants_ingest_and_store_the_same_ids(http_service: str) -> None:
    async with httpx.AsyncClient(base_url=http_service, timeout=60) as c:
        for key, text in ((ALICE, "I work at Acme."), (BOB, "I live in Berlin.")):
            r = await c.post("/api/memory/ingest", headers=h(key),
                             json={"messages": [message(text)], "channel_id": "general"})
            assert r.status_code == 200, r.text
            assert r.json()["episodes"] == ["1"] and "alice" not in r.text.lower()
        for key, text in ((ALICE, "I work at Acme."), (BOB, "I live in Berlin.")):
            r = await c.get("/api/memory/memories/1", headers=h(key))
            assert r.status_code == 200 and text in r.text, r.text
        # store with a chosen id: bob's "note" is his own, alice's stays hers
        for key, text in ((ALICE, "alice's note"), (BOB, "bob's note")):
            r = await c.post("/api/memory/memories", headers=h(key),
                             json={"content": text, "id": "note"})
            assert r.status_code == 200 and "alice" not in r.text.replace(text, ""), r.text
        assert "alice's note" in (await c.get("/api/memory/memories/note", headers=h(ALICE))).text
        assert "bob's note" in (await c.get("/api/memory/memories/note", headers=h(BOB))).text
        r = await c.delete("/api/memory/memories/note", headers=h(BOB))
        assert r.status_code == 200
        assert (await c.get("/api/memory/memories/note", headers=h(ALICE))).status_code == 200
    # MCP: the same over /mcp
    for key, text in ((ALICE, "I know Python."), (BOB, "I know Rust.")):
        async with http_client(http_service, key) as client:
            result = await client.call_tool("ingest_messages", {
                "channel_id": "chat", "messages": [message(text, "m-7")]})
            assert data(result)["episodes"] == ["m-7"]
            assert "alice" not in json_text(result).lower()
            got = data(await client.call_tool("get_memory", {"memory_id": "m-7"}))
            assert text in str(got)


def json_text(result: object) -> str:
    return " ".join(getattr(part, "text", "") for part in getattr(result, "content", []))
