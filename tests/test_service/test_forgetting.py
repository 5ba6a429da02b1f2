"""Forgetting through the service (a real uvicorn server) reaches the knowledge graph: the
DELETE endpoints and the MCP forget_memory tool take the facts built on what they delete
with them, and the fact tools stop serving them."""

from __future__ import annotations

from typing import Any

import httpx

from tests.test_service.conftest import ALICE, data, h, http_client


def say(message_id: str, author: str, name: str, content: str) -> dict[str, Any]:
    return {"message_id": message_id, "author_id": author, "author_name": name,
            "content": content, "timestamp": "2026-11-01T10:00:00Z"}


async def skill_holders(mcp: Any, skill: str) -> list[tuple[str, list[str]]]:
    people = data(await mcp.call_tool("find_people_by_skill", {"skill": skill}))["people"]
    return [(p["person"]["name"], p["facts"][0]["evidence"]) for p in people]


async def test_deleting_through_the_service_forgets_the_facts(http_service: str) -> None:
    async with httpx.AsyncClient(base_url=http_service, headers=h(ALICE), timeout=60) as c:
        for channel, messages in (
            ("general", [say("g1", "u1", "Ann Lee", "I work at Acme as a data engineer."),
                         say("g2", "u2", "Bo Chen", "I know Python and Rust really well.")]),
            ("dev", [say("d1", "u2", "Bo Chen", "I know Python."),
                     say("d2", "u1", "Ann Lee", "I know Go.")]),
        ):
            r = await c.post("/api/memory/ingest", json={"messages": messages,
                                                         "channel_id": channel})
            assert r.status_code == 200, r.text
        r = await c.post("/api/memory/facts", json={"facts": [
            {"subject": "Ann Lee", "predicate": "HAS_SKILL", "object": "Kubernetes",
             "confidence": 0.9}]})
        kubernetes = r.json()["ids"][0]
        async with http_client(http_service, ALICE) as mcp:
            assert await skill_holders(mcp, "Kubernetes") == [
                ("Ann Lee", [f"api:{r.json()['request_id']}"])]
            assert await skill_holders(mcp, "Python") == [("Bo Chen", ["g2", "d1"])]

            # the fact's sentence memory, by id: the fact goes
            r = await c.delete(f"/api/memory/memories/{kubernetes}")
            assert r.status_code == 200 and r.json()["deleted"] == 1
            assert await skill_holders(mcp, "Kubernetes") == []

            # a conversation: what only it said goes, the rest keeps its other evidence
            r = await c.delete("/api/memory/sessions/channel:general")
            assert r.status_code == 200 and r.json()["deleted"] > 2  # episodes + sentences
            assert await skill_holders(mcp, "Python") == [("Bo Chen", ["d1"])]
            assert await skill_holders(mcp, "Rust") == []
            ann = data(await mcp.call_tool("get_person_profile", {"person": "Ann Lee"}))
            assert {f["object"] for f in ann["facts"]} == {"Go", "dev"}
            org = data(await mcp.call_tool("find_people_by_organization",
                                           {"organization": "Acme"}))
            assert org["people"] == []

            # one message through MCP: Ann's last facts go with it
            assert data(await mcp.call_tool("forget_memory", {"memory_id": "d2"}))[
                "deleted"] > 1
            ann = data(await mcp.call_tool("get_person_profile", {"person": "Ann Lee"}))
            assert ann["facts"] == []
        ask = {"messages": [{"author_id": "u3", "author_name": "Cy", "content":
                             "Where does Ann Lee work?", "timestamp": "2026-11-02T10:00:00Z"}],
               "channel_id": "general", "max_facts": 5}
        r = await c.post("/api/memory/retrieve", json=ask)
        assert r.status_code == 200 and not any("Acme" in f for f in r.json()["facts"])
