"""An unknown retrieval profile is bad input, over a real HTTP server: REST search answers
422 naming the value and the configured profiles; the MCP search tool a clear tool error."""

from __future__ import annotations

import httpx
import pytest

from tests.test_service.conftest import ALICE, data, h, http_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]


async def test_an_unknown_profile_is_refused_naming_it(http_service: str) -> None:
    async with httpx.AsyncClient(base_url=http_service, timeout=60) as c:
        r = await c.post("/api/memory/memories", headers=h(ALICE),
                         json={"content": "Slurm schedules the cluster's jobs"})
        assert r.status_code == 200, r.text
        r = await c.post("/api/memory/search", headers=h(ALICE),
                         json={"query": "scheduler", "profile": "planer"})
        assert r.status_code == 422, r.text
        body = r.json()
        assert body["error"] == "validation_error"
        assert "profile" in body["message"] and "'planer'" in body["message"]
        assert "'planner'" in body["message"]  # the choices
        r = await c.post("/api/memory/search", headers=h(ALICE),
                         json={"query": "scheduler", "profile": "planner"})
        assert r.status_code == 200 and r.json()["results"], r.text
    async with http_client(http_service, ALICE) as client:
        bad = await client.call_tool("search_memory", {"query": "scheduler", "profile": "planer"})
        assert bad.is_error
        text = " ".join(getattr(p, "text", "") for p in bad.content)
        assert "'planer'" in text and "planner" in text
        good = data(await client.call_tool("search_memory",
                                           {"query": "scheduler", "profile": "planner"}))
        assert good["results"]
