"""The offline extractor through the graph's ingest: what it finds is accepted by the graph
(types, times, evidence) and answers questions, on every backend with a fact store."""

from __future__ import annotations

from DeepResearch.src.memory.facts.graph import FactGraph

CONVERSATION = [
    ("Alice", "I work at Google as a software engineer."),
    ("Bob", "Nice! Charlie worked there from 2019 to 2022."),
    ("Alice", "I've been coding in Python for 5 years, and I think Bob knows Rust."),
    ("Bob", "We moved to Berlin last year. I joined the data team in March."),
    ("Alice", "I studied at MIT and I'm really into machine learning."),
    ("Bob", "Alice and I collaborate weekly. Erin said hi."),
]


def messages() -> list[dict]:
    return [{"message_id": f"m{i}", "author_id": author.lower(), "author_name": author,
             "content": text, "timestamp": f"2024-06-0{1 + i}T12:00:00Z", "channel_id": "general"}
            for i, (author, text) in enumerate(CONVERSATION)]


async def test_ingested_conversation_answers_questions(graph: FactGraph) -> None:
    report = await graph.ingest(messages())
    assert report.problems == []
    [job] = await graph.facts("Alice", "WORKS_AT")
    assert job.object == "Google" and job.attributes["role"] == "software engineer"
    assert job.evidence == ["m0"]
    [past] = await graph.facts("Charlie", "WORKED_AT", include_history=True)
    assert past.object == "Google" and past.valid_at.startswith("2019-01-01")
    [skill] = await graph.facts("Alice", "HAS_SKILL", "Python")
    assert skill.attributes["years"] == 5
    [rust] = await graph.facts("Bob", "HAS_SKILL", "Rust")
    assert rust.confidence < skill.confidence
    assert [f.object for f in await graph.facts("Bob", "LIVES_IN")] == ["Berlin"]
    assert [f.object for f in await graph.facts("Bob", "MEMBER_OF")] == ["data team"]
    assert [f.object for f in await graph.facts("Alice", "STUDIED_AT")] == ["MIT"]
    assert {f.object for f in await graph.facts("Bob", "CLOSE_TO")} == {"Alice"}
    assert {f.object for f in await graph.facts("Alice", "INTERESTED_IN")} == {"machine learning"}
    assert {f.object for f in await graph.facts("Bob", "MENTIONED")} == {"Erin"}
