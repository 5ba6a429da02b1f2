"""A research run whose backend is down loses nothing: the facts of the documents it read go
to the spill file with its memories, and `deepresearch-memory import` of that file into a
working store gives the graph a run on a working store writes. Real run, real unreachable
Neo4j (a closed port on 127.0.0.1), real FAISS store, the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hydra_config import compose_config
from neo4j_support import free_port
from omegaconf import DictConfig

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.workflow.run import create_run_services, run_research

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Which aligner suits RNA-seq reads?"


async def graph_of(path: Path) -> list[tuple[Any, ...]]:
    """The graph of a faiss store, without what depends on when the run read its documents
    (ids, the times)."""
    async with MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)})) as c:
        facts = await FactGraph(c).facts(include_history=True, limit=10_000)
    return sorted((f.subject, f.predicate, f.object, tuple(f.evidence), round(f.confidence, 9),
                   f.current, tuple(sorted(f.attributes.items()))) for f in facts)


async def times_of(path: Path) -> set[float | None]:
    async with MemorySystemClient(MemoryConfig(backend="faiss", faiss={"path": str(path)})) as c:
        facts = await FactGraph(c).facts(include_history=True, limit=10_000)
    return {f.valid_at and round(datetime.fromisoformat(f.valid_at).timestamp(), 3)
            for f in facts}


async def test_a_run_with_the_backend_down_spills_its_document_facts(
    make_config: Callable[..., DictConfig], tmp_path: Path,
) -> None:
    reference = make_config(f"memory.faiss.path={tmp_path / 'reference'}")
    await run_research(QUESTION, reference, create_run_services(reference))
    expected = await graph_of(tmp_path / "reference")
    assert expected, "the offline run found no fact in the documents it read"

    spill_dir = tmp_path / "spill"
    down = compose_config(f"outputs_dir={tmp_path / 'outputs'}", "memory.backend=neo4j",
                       f"memory.neo4j.uri=bolt://127.0.0.1:{free_port()}",
                       "memory.neo4j.password=null", "memory.neo4j.connection_timeout=1",
                       "memory.neo4j.retry_attempts=0", f"memory.storage.spill_dir={spill_dir}")
    outcome = await run_research(QUESTION, down, create_run_services(down))
    assert outcome.state.errors  # the run says memory was not written
    [spilled] = spill_dir.glob("unwritten-*.jsonl")
    lines = [json.loads(line) for line in spilled.read_text(encoding="utf-8").splitlines()]
    facts = [line for line in lines if line.get("kind") == "unwritten_fact"]
    assert facts and len(facts) < len(lines)  # the facts, and the run's memories
    assert spilled.stat().st_mode & 0o777 == 0o600

    restored = tmp_path / "restored"
    done = subprocess.run(
        [sys.executable, "-m", "DeepResearch.src.memory.cli", "import", str(spilled),
         "memory.backend=faiss", f"memory.faiss.path={restored}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"and {len(facts)} facts" in done.stdout
    assert await graph_of(restored) == expected
    assert await times_of(restored) == {f["valid_at"] and round(f["valid_at"], 3) for f in facts}  # the run's times
