"""Consolidation and pruning applied to real stores (the in_memory backend and the embedded
faiss one in a temporary folder, with the real embedding model): merges, dry runs, a second
run, what is never touched, restoring a source."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.consolidation import PART_OF, consolidate
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.errors import MemoryInputError
from DeepResearch.src.memory.facts.graph import FactGraph

DAY = 86_400.0
OLD = time.time() - 30 * DAY  # older than every grace period




# -- on a store ------------------------------------------------------------------------------
@pytest.fixture(params=["in_memory", "faiss"])
async def make(request: pytest.FixtureRequest, tmp_path: Any,
               embedder: Embedder) -> AsyncIterator[Callable[..., MemorySystemClient]]:
    made: list[MemorySystemClient] = []

    def factory(**sections: Any) -> MemorySystemClient:
        config = MemoryConfig(backend=request.param, faiss={"path": str(tmp_path / "memory")},
                              **sections)
        client = MemorySystemClient(config, session_id="run-1", embedder=embedder)
        made.append(client)
        return client

    yield factory
    for client in made:
        await client.close()


NEAR = [
    "The STAR aligner needs 32 GB of memory for the human index.",
    "STAR aligner needs 32 GB of memory for the human index",
    "The STAR aligner needs 32 GB of memory for the human index. It is built once.",
]


async def _fill(client: MemorySystemClient) -> dict[str, str]:
    items = [{"id": f"near-{i}", "content": t, "memory_type": "note", "importance": 0.3 + i / 10,
              "created_at": OLD + i * 60} for i, t in enumerate(NEAR)]
    items += [
        {"id": "s1", "content": "The quality control step of sample S1 failed: too many "
         "duplicate reads.", "memory_type": "tool_execution", "created_at": OLD},
        {"id": "s2", "content": "The quality control step of sample S2 failed: too many "
         "duplicate reads.",
         "memory_type": "tool_execution", "created_at": OLD},
        {"id": "other-type", "content": NEAR[0], "memory_type": "answer", "created_at": OLD},
    ]
    await client.store_many(items)
    return {i["id"]: i["content"] for i in items}


async def _live_ids(client: MemorySystemClient) -> set[str]:
    from DeepResearch.src.memory.backends.record import MemoryFilter

    return {r.id for r in await client.backend.scan(MemoryFilter(namespaces=(client.namespace,)))}


async def test_near_duplicates_merge_into_one_that_keeps_their_information(make) -> None:
    client = make()
    await _fill(client)
    hits = await client.retrieve("How much memory does the STAR aligner need?", top_k=6)
    retrieved = sum(h.id.startswith("near-") for h in hits)  # each counted as one access
    assert retrieved >= 1
    report = await consolidate(client)
    assert len(report.clusters) == 1
    merged_id = report.clusters[0].id
    assert report.clusters[0].sources == ["near-0", "near-1", "near-2"]
    assert await _live_ids(client) == {merged_id, "s1", "s2", "other-type"}
    assert (report.memories_before, report.memories_after) == (6, 4)
    assert report.bytes_after < report.bytes_before
    [merged] = await client.backend.get([merged_id], client.namespace)
    assert merged.content.startswith(NEAR[2])  # the most complete member first
    assert merged.metadata["derived_from"] == ["near-0", "near-1", "near-2"]
    assert merged.metadata["first_created_at"] == OLD
    assert merged.metadata["last_created_at"] == OLD + 120
    assert merged.importance == pytest.approx(0.5)  # the highest
    assert merged.metadata["access_count"] == retrieved  # the sources' accesses, summed
    archived = {m.id: m for m in await client.archived()}
    assert set(archived) == {"near-0", "near-1", "near-2"}
    assert archived["near-0"].metadata["archive_reason"] == "consolidated"
    # it takes the place of its representative near-2 in the session: s1 followed near-2
    related = await client.get_related_memories("s1", types=["follows"])
    assert merged_id in {m.id for m in related}
    # found by a question about it, where the sources were
    hits = await client.retrieve("how much memory does STAR need", top_k=2)
    assert merged_id in [h.id for h in hits]


async def test_a_dry_run_changes_nothing(make) -> None:
    client = make()
    await _fill(client)
    before = await _live_ids(client)
    report = await consolidate(client, dry_run=True)
    assert report.dry_run and len(report.clusters) == 1 and report.memories_after == 4
    assert await _live_ids(client) == before
    assert await client.archived() == []


async def test_a_second_run_changes_nothing(make) -> None:
    client = make()
    await _fill(client)
    await consolidate(client)
    live = await _live_ids(client)
    again = await consolidate(client)
    assert again.clusters == [] and again.pruned == []
    assert again.memories_before == again.memories_after == len(live)
    assert await _live_ids(client) == live


async def test_pinned_and_young_memories_are_never_merged(make) -> None:
    client = make()
    await client.store_many([
        {"id": "pinned", "content": NEAR[0], "created_at": OLD, "metadata": {"pinned": True}},
        {"id": "young", "content": NEAR[1]},  # stored now: inside the 24 h grace
        {"id": "old", "content": NEAR[2], "created_at": OLD},
    ])
    report = await consolidate(client)
    assert report.clusters == []
    assert report.skipped == {"pinned": 1, "young": 1}
    assert await _live_ids(client) == {"pinned", "young", "old"}


async def test_pruning_archives_low_value_and_spares_pinned_young_and_fact_evidence(make) -> None:
    client = make(pruning={"min_value": 0.3})
    await client.store_many([
        {"id": "stale", "content": "A scratch note about nothing in particular.",
         "importance": 0.05, "created_at": OLD - 300 * DAY},
        {"id": "pinned", "content": "Keep this scratch note.", "importance": 0.05,
         "created_at": OLD - 300 * DAY, "metadata": {"pinned": True}},
        {"id": "young", "content": "A new scratch note.", "importance": 0.05},
        {"id": "evidence", "content": "Alice works at Acme since May.", "importance": 0.05,
         "created_at": OLD - 300 * DAY},
        {"id": "important", "content": "The reference genome is GRCh38.", "importance": 0.95,
         "created_at": OLD - 300 * DAY},
        {"id": "used", "content": "The lab freezer code is 4471.", "importance": 0.05,
         "created_at": OLD - 300 * DAY},
    ])
    assert [h.id for h in await client.retrieve("lab freezer code", top_k=1)] == ["used"]
    await FactGraph(client).add_fact("Alice", "WORKS_AT", "Acme", confidence=0.9,
                                     evidence="evidence")
    with pytest.raises(MemoryInputError, match="min_value"):
        await consolidate(make(), prune=True)  # min_value null: pruning is off
    report = await consolidate(client, prune=True)
    assert [p.id for p in report.pruned] == ["stale"]
    live = await _live_ids(client)
    assert {"pinned", "young", "evidence", "important", "used"} <= live  # used: just retrieved
    assert "stale" not in live
    assert [(m.id, m.metadata["archive_reason"]) for m in await client.archived()] == [
        ("stale", "pruned")]


async def test_a_consolidated_source_can_be_restored(make) -> None:
    client = make()
    await _fill(client)
    report = await consolidate(client)
    merged_id = report.clusters[0].id
    assert await client.restore(["near-0"]) == 1
    restored = await client.get("near-0")
    assert restored is not None and restored.content == NEAR[0]
    assert "archive_reason" not in restored.metadata
    related = await client.get_related_memories("near-0", types=[PART_OF])
    assert [m.id for m in related] == [merged_id]


# -- the command ------------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]


def memory_cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", *args, "memory.backend=faiss",
         f"memory.faiss.path={store}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )


def one_error_line(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
async def filled_store(tmp_path: Path, embedder: Embedder) -> Path:
    store = tmp_path / "memory"
    client = MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(store)}),
                                session_id="run-1", embedder=embedder)
    await _fill(client)
    await client.close()
    return store


@pytest.mark.slow
def test_the_command_reports_changes_nothing_on_a_dry_run_and_then_consolidates(
        filled_store: Path) -> None:
    dry = memory_cli(filled_store, "consolidate", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] and len(report["clusters"]) == 1
    assert (report["memories_before"], report["memories_after"]) == (6, 4)
    assert report["bytes_after"] < report["bytes_before"]
    assert json.loads(memory_cli(filled_store, "stats").stdout)["total"] == 6  # unchanged
    done = memory_cli(filled_store, "consolidate", "--session", "run-1")
    assert done.returncode == 0, done.stderr
    assert "clusters: 1 (3 memories merged into 1)" in done.stdout
    assert "live memories 6 -> 4" in done.stdout
    assert json.loads(memory_cli(filled_store, "stats").stdout)["total"] == 4
    again = json.loads(memory_cli(filled_store, "consolidate", "--json").stdout)
    assert again["clusters"] == [] and again["memories_before"] == again["memories_after"] == 4


@pytest.mark.slow
def test_the_command_names_a_users_mistake(tmp_path: Path) -> None:
    store = tmp_path / "memory"
    one_error_line(memory_cli(store, "consolidate", "--prune"), "memory.pruning.min_value")
    one_error_line(memory_cli(store, "consolidate", "--namespace", "no spaces"), "'no spaces'")
    one_error_line(memory_cli(store, "consolidate", "memory.consolidation.similarity=2"),
                   "memory.consolidation.similarity=2")
