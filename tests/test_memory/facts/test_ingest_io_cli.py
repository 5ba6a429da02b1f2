"""ingest (messages -> episodes + facts + participation, with the offline extractor), the
JSONL round trip, the CLI."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from DeepResearch.src.memory.errors import MemoryBackendError, MemoryInputError
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.memory.facts.tools import TOOLS

MESSAGES: list[dict[str, Any]] = [
    {"message_id": "c1", "author_id": "u1", "author_name": "Alice", "timestamp": "2024-01-10T09:00:00Z",
     "content": "I work at Google as a software engineer."},
    {"message_id": "c2", "author_id": "u2", "author_name": "Bob", "timestamp": 1704963600,
     "content": "I live in New York and I know Python."},
    {"message_id": "c3", "author_id": "u1", "author_name": "Alice", "timestamp": "2024-03-01T09:00:00Z",
     "content": "Big news: I joined Microsoft this week!"},
    {"message_id": "c4", "author_id": "u3", "author_name": "Alice", "timestamp": "2024-03-02T09:00:00Z",
     "content": "Hi all, I'm the other Alice; I live in Berlin."},
]


async def test_ingest_keeps_episodes_facts_with_evidence_and_participation(
    graph: FactGraph,
) -> None:
    report = await graph.ingest(MESSAGES, channel_id="general")
    assert report.messages == 4 and report.episodes == ["c1", "c2", "c3", "c4"]
    episode = await graph.client.get("c1")
    assert episode is not None and episode.document.memory_type == "episode"
    assert "Google" in episode.content
    assert await graph.facts(subject="Alice Johnson") == []  # no such full name yet
    people = (await TOOLS["get_conversation_participants"](graph, "general")).people
    assert sorted(p.person.name for p in people) == ["Alice", "Alice", "Bob"]  # two Alices
    bob = await TOOLS["get_person_profile"](graph, "Bob")
    skills = [f for f in bob.facts if f.predicate == "HAS_SKILL"]
    assert skills and skills[0].evidence == ["c2"]
    ambiguous = await TOOLS["get_person_profile"](graph, "Alice")
    assert ambiguous.facts == [] and "ambiguous" in ambiguous.message
    history = [f for p in people if p.person.name == "Alice"
               for f in (await TOOLS["get_person_timeline"](graph, p.person.id)).facts
               if f.predicate == "WORKS_AT"]
    assert [(f.object, f.current) for f in history] == [("Google", False), ("Microsoft", True)]
    assert history[0].invalid_at == history[1].valid_at  # the job change closed the old job
    at_microsoft = (await TOOLS["find_people_by_organization"](graph, "Microsoft")).people
    assert [p.person.attributes["external_ids"] for p in at_microsoft] == [["u1"]]
    in_berlin = (await TOOLS["find_people_by_location"](graph, "berlin")).people
    assert [p.person.attributes["external_ids"] for p in in_berlin] == [["u3"]]
    # (the offline extractor also reads "New York ... I know Python" as New York HAS_SKILL
    # Python: an extractor matter, reported; Bob still ranks first)
    experts = (await TOOLS["find_experts"](graph, "Python")).people
    assert experts[0].person.name == "Bob"
    search = await TOOLS["semantic_search_facts"](graph, "who lives in Berlin", limit=1)
    assert search.facts[0].object == "Berlin" and search.facts[0].evidence == ["c4"]


async def test_ingest_refuses_a_malformed_message_and_writes_nothing(
    graph: FactGraph
) -> None:
    bad = [MESSAGES[0], {**MESSAGES[1], "author_id": None}]
    with pytest.raises(MemoryInputError, match=r"message #1 \(id 'c2'\): missing field\(s\) author_id"):
        await graph.ingest(bad)
    with pytest.raises(MemoryInputError, match=r"#0 \(id 'c1'\): field 'timestamp' = 'soon-ish\?'"):
        await graph.ingest([{**MESSAGES[0], "timestamp": "soon-ish?"}])
    with pytest.raises(MemoryInputError, match=r"#1: message_id 'c1' repeats message #0's"):
        await graph.ingest([MESSAGES[0], MESSAGES[0]])
    with pytest.raises(MemoryInputError, match=r"#0: field 'message_id'='c 1' is not a valid id"):
        await graph.ingest([{**MESSAGES[0], "message_id": "c 1"}])
    assert await graph.client.get("c1") is None


async def test_export_import_round_trip_is_lossless(
    graph: FactGraph, team: FactGraph, tmp_path: Path, make_client: Any
) -> None:
    path = tmp_path / "facts.jsonl"
    lines = await team.export_jsonl(path)
    assert lines == len(path.read_text().splitlines())
    # another store: a folder of its own (faiss), labels of their own in the database (neo4j)
    other = FactGraph(make_client(
        namespace="copy", faiss={"path": str(tmp_path / "copy")},
        neo4j={"node_label": "CopyMemory", "index_name": "copy_embedding",
               "fulltext_index_name": "copy_content"}))
    assert await other.import_jsonl(path) == {"entities": 16, "facts": 20}
    copy = tmp_path / "copy.jsonl"
    await other.export_jsonl(copy)
    assert copy.read_text() == path.read_text()
    again = await TOOLS["find_people_by_organization"](other, "google", current_only=False)
    assert sorted(p.person.name for p in again.people) == ["Alice", "Bob", "Dana"]
    if team.client.config.backend != "in_memory":  # a new in_memory client is a new store
        neighbour = FactGraph(make_client(namespace="neighbour"))  # the team's own store
        with pytest.raises(MemoryBackendError, match="already belongs to namespace"):
            await neighbour.import_jsonl(path)  # same ids: refused, never replaced
        assert await neighbour.entity("Alice") is None
        assert (await team.entity("Alice")) is not None
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().splitlines()[0] + "\n{\"kind\": \"fact\", \"id\": 3}\n")
    with pytest.raises(MemoryInputError, match="line 2"):
        await other.import_jsonl(bad)


def run_cli(*args: str, store: Path) -> tuple[int, str, str]:
    import contextlib
    import io

    from DeepResearch.src.memory.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, f"memory.faiss.path={store}"])
    return code, out.getvalue(), err.getvalue()


def test_cli_add_list_tool_export_import_and_one_line_errors(tmp_path: Path) -> None:
    store = tmp_path / "mem"
    assert run_cli("facts", "add", "Alice", "WORKS_AT", "Google", "role=Engineer",
                   "valid_at=2022-01", store=store)[0] == 0
    code, out, _ = run_cli("facts", "add", "Alice", "WORKS_AT", "Microsoft", "valid_at=2024-02",
                           "confidence=0.7", "evidence=[\"m9\"]", store=store)
    assert code == 0 and "Microsoft" in out
    code, out, _ = run_cli("facts", "list", "--history", store=store)
    assert code == 0 and "(closed)" in out and out.count("\n") == 2
    code, out, err = run_cli("facts", "list", "--person", "Bob", store=store)
    assert code == 0 and out == "" and "no current facts about 'Bob'" in err  # not silence
    code, out, _ = run_cli("facts", "tool", "find_people_by_organization",
                           "organization=Google", "current_only=false", store=store)
    assert code == 0 and json.loads(out)["people"][0]["person"]["name"] == "Alice"
    assert run_cli("facts", "export", str(tmp_path / "f.jsonl"), store=store)[0] == 0
    code, out, _ = run_cli("facts", "import", str(tmp_path / "f.jsonl"),
                           store=tmp_path / "other")
    assert code == 0 and "2 facts" in out
    for args, fragment in (
        (("facts", "add", "Alice", "LOVES", "Bob"), "predicate='LOVES'"),
        (("facts", "add", "Alice", "WORKS_AT", "X", "confidence=7"), "confidence=7"),
        (("facts", "tool", "nope"), "no fact tool 'nope'"),
        (("facts", "tool", "find_experts"), "missing a required argument: 'query'"),
        (("facts", "import", str(tmp_path / "missing.jsonl")), "cannot read"),
        (("facts", "export", str(tmp_path / "no_dir" / "f.jsonl")),
         f"cannot write {tmp_path / 'no_dir' / 'f.jsonl'}: No such file or directory"),
    ):
        code, _, err = run_cli(*args, store=store)
        assert code == 2 and fragment in err and err.count("\n") == 1, (args, err)


def test_cli_export_into_a_pipe_or_link_writes_through_it(tmp_path: Path) -> None:
    """`facts export` into a FIFO (as into /dev/stdout) or a symlink writes through it: the
    pipe and the link stay what they were (a temporary file renamed over them replaced them)."""
    import threading

    store = tmp_path / "mem"
    assert run_cli("facts", "add", "Alice", "WORKS_AT", "Google", store=store)[0] == 0
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    code, _, err = run_cli("facts", "export", str(fifo), store=store)
    reader.join(timeout=30)
    assert code == 0, err
    assert got and '"kind": "fact"' in got[0] and stat.S_ISFIFO(fifo.stat().st_mode)
    real, link = tmp_path / "real.jsonl", tmp_path / "link.jsonl"
    real.write_text("")
    link.symlink_to(real)
    assert run_cli("facts", "export", str(link), store=store)[0] == 0
    assert link.is_symlink() and '"kind": "fact"' in real.read_text()


def test_cli_ingest(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps({"channel_id": "general", "messages": MESSAGES}))
    code, out, err = run_cli("facts", "ingest", str(path), store=tmp_path / "mem")
    assert code == 0, err
    assert json.loads(out)["messages"] == 4
    path.write_text("[{\"content\": 3}]")
    code, _, err = run_cli("facts", "ingest", str(path), store=tmp_path / "mem")
    assert code == 2 and "message #0: missing field(s) message_id" in err


async def test_participation_accumulates_across_batches_in_any_order(graph: FactGraph) -> None:
    later = [{**MESSAGES[2], "message_id": "late-1"}]
    earlier = [{**MESSAGES[0], "message_id": "early-1"}]
    await graph.ingest(later, channel_id="dev")
    await graph.ingest(earlier, channel_id="dev")  # an older batch arrives second
    (hit,) = (await TOOLS["get_conversation_participants"](graph, "dev")).people
    (fact,) = hit.facts
    assert fact.evidence == ["late-1", "early-1"]
    assert fact.valid_at == "2024-01-10T09:00:00+00:00"  # since the earliest message
    assert fact.attributes["last_seen"] == 1709283600.0  # the latest, not the last ingested
    assert (await TOOLS["get_conversation_participants"](graph, "dev", since="2024-02-01")).people
