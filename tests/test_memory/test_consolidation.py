"""What consolidation and pruning decide (memory/consolidation.py): the lexical guard, the
clusters over real embeddings, the merged text, the value of a memory, the settings."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pytest

from DeepResearch.src.memory import MemoryConfig
from DeepResearch.src.memory.consolidation import (
    Access,
    Redirect,
    clusters,
    consolidated_id,
    merged_text,
    relink,
    signature,
    value,
)
from DeepResearch.src.memory.embeddings import Embedder
from DeepResearch.src.memory.errors import MemoryConfigError

DAY = 86_400.0
OLD = time.time() - 30 * DAY  # older than every grace period




# -- the pure parts ---------------------------------------------------------------------------
def test_the_guard_keeps_s1_and_s2_apart_although_their_vectors_are_near(embedder: Embedder) -> None:
    from DeepResearch.src.memory.backends.record import MemoryRecord

    texts = ["The quality control step of sample S1 failed: too many duplicate reads.",
             "The quality control step of sample S2 failed: too many duplicate reads.",
             "The quality control step of sample S1 failed - too many duplicate reads"]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    assert float(vectors[0] @ vectors[1]) >= 0.92  # close enough for the threshold alone
    records = [MemoryRecord(id=f"m{i}", session_id="s", memory_type="note", content=t,
                            created_at=OLD) for i, t in enumerate(texts)]
    assert signature(texts[0]) != signature(texts[1])
    assert clusters(records, vectors, 0.92) == [[0, 2]]  # S1 with S1, S2 alone


@pytest.mark.parametrize(("a", "b"), [
    ("STAR used 32 GB of memory", "STAR used 64 GB of memory"),
    ("run on 2024-05-01 finished", "run on 2024-05-02 finished"),
    ("Alice ran the QC step", "Bob ran the QC step"),
    ("the aligner step failed", "the aligner step succeeded"),
    ("HISAT2 is supported", "HISAT2 is not supported"),
    ("job run_42 finished", "job run_43 finished"),
])
def test_numbers_dates_names_ids_and_outcomes_differ(a: str, b: str) -> None:
    assert signature(a) != signature(b)


def test_rewordings_share_a_signature() -> None:
    assert signature("STAR used 32 GB of memory.") == signature("Star used 32 GB memory")
    assert signature("Plan: read the STAR docs") == signature("Plan - read STAR docs")


def test_the_merged_text_keeps_every_distinct_sentence_once() -> None:
    merged = merged_text(["STAR aligned the reads. It needed 32 GB.",
                          "STAR aligned the reads! The index was built overnight.",
                          "It needed 32 GB."])
    assert merged == "STAR aligned the reads. It needed 32 GB.\nThe index was built overnight."


def test_relations_to_merged_memories_point_to_their_replacement() -> None:
    from DeepResearch.src.memory.backends.record import MemoryRecord

    def note(id: str, *relations: tuple[str, str], content: str = "x") -> MemoryRecord:
        return MemoryRecord(id=id, session_id="s", memory_type="note", content=content,
                            created_at=OLD, relations=list(relations))

    rep_id, new_id = "rep", consolidated_id(["a1", "a2", "rep"])
    redirect = Redirect.of([[note("rep", content="the longest"), note("a1"), note("a2")]])
    after_rep = note("b", ("follows", rep_id), ("references", "a2"), ("references", "z"))
    after_a1 = note("c", ("follows", "a1"))  # keeps its gap: restoring a1 closes it
    [moved] = relink([after_rep, after_a1, note("d")], redirect)
    assert moved.relations == [("follows", new_id), ("references", new_id), ("references", "z")]


def test_value_rises_with_importance_access_recency_and_links() -> None:
    from DeepResearch.src.memory.backends.record import MemoryRecord
    from DeepResearch.src.memory.config import PruningConfig

    cfg, now = PruningConfig(), time.time()
    low = MemoryRecord(id="a", session_id="s", memory_type="note", content="x",
                       created_at=now - 365 * DAY, importance=0.1)
    base = value(low, Access(), False, now, cfg)
    assert base < 0.1
    assert value(low, Access(5, now), False, now, cfg) > base  # used recently
    assert value(low, Access(), True, now, cfg) > base
    important = MemoryRecord(id="b", session_id="s", memory_type="note", content="x",
                             created_at=now - 365 * DAY, importance=0.9)
    assert value(important, Access(), False, now, cfg) > base


@pytest.mark.parametrize(("section", "bad", "fragment"), [
    ({"consolidation": {"similarity": 1.5}}, "memory.consolidation.similarity=1.5", "less than"),
    ({"consolidation": {"every_minutes": 0}}, "memory.consolidation.every_minutes=0", "greater"),
    ({"pruning": {"min_value": -0.1}}, "memory.pruning.min_value=-0.1", "greater"),
    ({"pruning": {"weights": {"importance": 0, "recency": 0, "access": 0, "links": 0}}},
     "memory.pruning.weights", "at least one"),
    ({"pruning": {"treshold": 1}}, "memory.pruning.treshold", "min_value"),
])
def test_bad_settings_are_named(section: dict[str, Any], bad: str, fragment: str) -> None:
    with pytest.raises(MemoryConfigError) as info:
        MemoryConfig(**section)
    assert bad in str(info.value) and fragment in str(info.value)


def test_a_cluster_too_large_for_the_metadata_limit_keeps_the_ids_that_fit() -> None:
    from DeepResearch.src.memory.backends.record import MemoryRecord
    from DeepResearch.src.memory.consolidation import merge_item

    members = [MemoryRecord(id=f"source-{i:05d}", session_id="s", memory_type="note",
                            content="x", created_at=OLD + i, metadata={"tool": "star"},
                            vector=np.ones(4, dtype=np.float32) / 2) for i in range(3000)]
    item = merge_item(members, {}, time.time(), 1000, max_metadata_bytes=4096)
    metadata = item["metadata"]
    assert len(json.dumps(metadata).encode()) <= 4096
    assert metadata["derived_from_count"] == 3000 and metadata["tool"] == "star"
    assert 50 < len(metadata["derived_from"]) < 3000
    assert metadata["derived_from"] == sorted(m.id for m in members)[:len(metadata["derived_from"])]


def test_the_progress_bars_show_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from DeepResearch.src.memory.cli_consolidate import Bars

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        bars = Bars()
        bars("reading", 500, 1000)
        bars("reading", 1000, 1000)
        bars("comparing", 3, 10)
        bars.close()
        text = stream.getvalue()
        assert ("500/1000" in text and "3/10" in text) is shown, text


def test_only_a_consolidated_memory_inherits_accesses_from_its_metadata() -> None:
    from DeepResearch.src.memory.backends.record import MemoryRecord
    from DeepResearch.src.memory.consolidation import inherited_access

    def note(metadata: dict[str, Any]) -> MemoryRecord:
        return MemoryRecord(id="m", session_id="s", memory_type="note", content="x",
                            created_at=OLD, metadata=metadata)

    merged = note({"derived_from": ["a", "b"], "access_count": 7, "last_accessed": OLD + 5})
    assert inherited_access(merged, Access(2, OLD + 1)) == Access(9, OLD + 5)
    user_key = note({"access_count": 7})  # a user's own metadata key counts nothing
    assert inherited_access(user_key, Access(2, None)) == Access(2, None)
