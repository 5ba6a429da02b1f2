"""Documents a research run reads become facts in the knowledge graph (document = evidence):
the real ToolRunner and read_document over a real DocumentLibrary, the real FactGraph on the
in_memory backend and on FAISS, the real embedding model, and a whole offline run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from DeepResearch.src.memory import MemoryConfig, MemorySystemClient
from DeepResearch.src.memory.facts.graph import FactGraph
from DeepResearch.src.rag.library import DocumentLibrary
from DeepResearch.src.tools.document_tools import default_registry
from DeepResearch.src.tools.registry import ToolContext
from DeepResearch.src.tools.runner import ToolRunner
from DeepResearch.src.utils.execution_history import ExecutionHistory
from DeepResearch.src.workflow.memory.documents import (
    MAX_MENTIONS,
    DocumentFactCollector,
    document_facts,
)
from DeepResearch.src.workflow.memory.run_context import MemoryRun, WorkflowMemorySettings
from DeepResearch.src.workflow.run import create_run_services, run_research

pytestmark = pytest.mark.integration

TEAM_DOC = """# The aligner team

Alice Smith works at Acme Genomics as a bioinformatician. She lives in Boston.
Bob Jones worked at the Broad Institute from 2015 to 2019. He studied at MIT.
Alice Smith and Bob Jones collaborate weekly on STAR benchmarks.
"""


@pytest.fixture
def library(tmp_path: Path) -> DocumentLibrary:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "team.md").write_text(TEAM_DOC, encoding="utf-8")
    (folder / "tools.md").write_text("# Tools\n\nSTAR and HISAT2 align RNA-seq reads.\n",
                                     encoding="utf-8")
    return DocumentLibrary.from_folder(folder)


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[MemoryRun]:
    config = MemoryConfig(backend="in_memory", storage={"spill_dir": str(tmp_path / "spill")})
    async with MemorySystemClient(config, session_id="docs") as client:
        yield MemoryRun(client, config, WorkflowMemorySettings(), root_session="docs")


def runner_for(library: DocumentLibrary, collector: DocumentFactCollector) -> ToolRunner:
    return ToolRunner(default_registry(), ToolContext(library=library), ExecutionHistory(),
                      listeners=[collector])


def test_a_read_document_gives_facts_with_the_document_as_evidence() -> None:
    result = document_facts({"source": "team.md", "title": "The aligner team",
                             "content": TEAM_DOC, "truncated": False}, read_at=1_700_000_000)
    found = {(f.subject, f.predicate, f.object) for f in result.facts}
    assert ("Alice Smith", "WORKS_AT", "Acme Genomics") in found
    assert ("Alice Smith", "LIVES_IN", "Boston") in found  # "She" -> Alice Smith
    assert ("Bob Jones", "WORKED_AT", "Broad Institute") in found
    assert ("Bob Jones", "STUDIED_AT", "MIT") in found
    assert ("Alice Smith", "KNOWS", "Bob Jones") in found
    assert {f.evidence for f in result.facts} == {"team.md"}
    mention = next(f for f in result.facts if f.predicate == "MENTIONED")
    assert mention.subject == "The aligner team" and mention.subject_type == "Topic"
    assert document_facts({"source": "x.md", "content": "  "}).facts == []
    assert document_facts(["not", "a", "document"]).facts == []


async def test_documents_read_in_a_run_go_into_the_graph_once(
    library: DocumentLibrary, run: MemoryRun
) -> None:
    collector = DocumentFactCollector()
    collector.start(run)
    runner = runner_for(library, collector)
    await runner.run("search_documents", {"query": "Alice"})  # excerpts: not read
    await runner.run("read_document", {"source": "missing.md"})  # failed: nothing
    assert collector.pending == []
    await runner.run("read_document", {"source": "team.md"})
    first = len(collector.pending)
    await runner.run("read_document", {"source": "team"})  # the same document again
    assert first > 0 and len(collector.pending) == first

    stored = await collector.flush()
    assert stored == first and collector.pending == []
    assert run.stored["fact"] == stored
    graph = FactGraph(run.client)
    [job] = await graph.facts("Alice Smith", "WORKS_AT")
    assert job.object == "Acme Genomics" and job.evidence == ["team.md"]
    [past] = await graph.facts("Bob Jones", "WORKED_AT", include_history=True)
    assert past.valid_at.startswith("2015-01-01") and past.invalid_at.startswith("2020-01-01")
    assert await collector.flush() == 0  # nothing pending


async def test_without_a_started_run_the_collector_does_nothing(
    library: DocumentLibrary,
) -> None:
    collector = DocumentFactCollector()
    await runner_for(library, collector).run("read_document", {"source": "team.md"})
    assert collector.pending == [] and await collector.flush() == 0


async def test_a_failed_graph_write_is_a_memory_problem_not_a_failed_run(
    library: DocumentLibrary, run: MemoryRun, tmp_path: Path
) -> None:
    collector = DocumentFactCollector()
    collector.start(run)
    await runner_for(library, collector).run("read_document", {"source": "team.md"})
    await run.client.backend.close()  # the store goes away before the run's end
    assert await collector.flush() == 0
    assert any("documents read" in p for p in run.problems)
    await run.client.close()  # the facts it could not write are in the spill file
    spilled = Path(run.client.writes.spilled_file or "")
    assert spilled.parent == tmp_path / "spill"
    facts = [json.loads(line) for line in spilled.read_text(encoding="utf-8").splitlines()]
    assert {(f["kind"], f["subject"], f["predicate"], f["object"]) for f in facts} >= {
        ("unwritten_fact", "Alice Smith", "WORKS_AT", "Acme Genomics")}


async def test_a_research_run_stores_the_facts_of_the_documents_it_read(
    make_config: Callable[..., DictConfig],
) -> None:
    cfg = make_config()
    outcome = await run_research("Which aligner suits RNA-seq reads?", cfg,
                                 create_run_services(cfg))
    state = outcome.state
    read = {i.result["source"] for i in state.execution_history.items
            if i.tool == "read_document" and isinstance(i.result, dict)}
    assert read, "the offline run read no document"
    async with MemorySystemClient(state.memory_config) as client:
        facts = await FactGraph(client).facts(predicate="MENTIONED", limit=1000)
    assert facts and {e for f in facts for e in f.evidence} <= read
    assert "fact" in (outcome.run_dir / "report.md").read_text()


def test_a_document_keeps_its_most_frequent_mentions_only() -> None:
    names = [f"Tool{i}" for i in range(20)]
    content = "We compared " + ", ".join(names) + ". Tool7 was fastest. Tool7 and Tool3 agree."
    result = document_facts({"source": "tools.md", "title": "Tools", "content": content})
    mentioned = [f.object for f in result.facts if f.predicate == "MENTIONED"]
    assert len(mentioned) == MAX_MENTIONS
    assert {"Tool7", "Tool3", "Tool0"} <= set(mentioned)


async def test_a_flow_can_turn_document_facts_off(library: DocumentLibrary, run: MemoryRun) -> None:
    run.settings = WorkflowMemorySettings(document_facts=False)
    collector = DocumentFactCollector()
    collector.start(run)
    await runner_for(library, collector).run("read_document", {"source": "team.md"})
    assert collector.pending == [] and await collector.flush() == 0


def test_document_facts_must_be_a_bool(make_config: Callable[..., DictConfig]) -> None:
    from DeepResearch.src.memory.errors import MemoryConfigError
    from DeepResearch.src.workflow.memory.run_context import resolve_memory

    assert resolve_memory(make_config(), "default")[1].document_facts is True
    off = make_config("flows.default.memory.document_facts=false")
    assert resolve_memory(off, "default")[1].document_facts is False
    with pytest.raises(MemoryConfigError, match="document_facts='yes'"):
        resolve_memory(make_config("flows.default.memory.document_facts=yes"), "default")
