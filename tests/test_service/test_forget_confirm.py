"""A forget of more memories than memory.forget.confirm_above needs confirm=true, over a real
HTTP server: REST answers 409 `confirmation_required` naming the count and deletes nothing;
with ?confirm=true it deletes. The MCP forget_memory tool takes confirm the same way."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.test_service.conftest import ALICE, data, h, http_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture
def http_settings() -> dict[str, Any]:
    return {"forget": {"confirm_above": 0}}  # every delete asks, so one memory shows it


async def test_deleting_more_than_the_limit_needs_confirm(http_service: str) -> None:
    async with httpx.AsyncClient(base_url=http_service, headers=h(ALICE), timeout=60) as c:
        r = await c.post("/api/memory/memories", json={"memories": [
            {"content": f"note {i}", "session_id": "run-1"} for i in range(3)]})
        assert r.status_code == 200, r.text
        ids = r.json()["ids"]
        r = await c.delete("/api/memory/sessions/run-1")
        assert r.status_code == 409 and r.json()["error"] == "confirmation_required", r.text
        assert "would delete 3 memories" in r.json()["message"]
        assert "confirm=true" in r.json()["message"]
        r = await c.delete(f"/api/memory/memories/{ids[0]}")
        assert r.status_code == 409 and "would delete 1 memories" in r.text
        r = await c.delete(f"/api/memory/memories/{ids[0]}", params={"confirm": "true"})
        assert r.status_code == 200 and r.json()["deleted"] == 1
    async with http_client(http_service, ALICE) as mcp:
        refused = await mcp.call_tool("forget_memory", {"memory_id": ids[1]})
        assert refused.is_error
        assert "would delete 1" in " ".join(getattr(p, "text", "") for p in refused.content)
        done = data(await mcp.call_tool("forget_memory", {"memory_id": ids[1], "confirm": True}))
        assert done["deleted"] == 1
    async with httpx.AsyncClient(base_url=http_service, headers=h(ALICE), timeout=60) as c:
        r = await c.delete("/api/memory/sessions/run-1", params={"confirm": "true"})
        assert r.status_code == 200 and r.json()["deleted"] == 1
