"""What the node hooks tell agents: one MEMORY line per recalled memory."""

from __future__ import annotations

import pytest

from DeepResearch.src.memory.models import MemoryDocument, RetrievedMemory
from DeepResearch.src.workflow.memory.hooks import briefing_line

pytestmark = pytest.mark.unit


def recalled(memory_type: str, content: str, **metadata: object) -> RetrievedMemory:
    doc = MemoryDocument(id="m1", content=content, memory_type=memory_type, session_id="s",
                         metadata=metadata)
    return RetrievedMemory(document=doc, similarity=0.8, score=1.25, rank=1)


def test_an_answer_line_names_the_documents_it_cited() -> None:
    line = briefing_line(recalled("answer", "Question: Which aligner?\nAnswer: STAR [a.md]",
                                  sources=["a.md", "b.md"], success=True))
    assert line == ("- [answer, succeeded, score 1.250] Question: Which aligner? Answer: STAR "
                    "[a.md] (cited: a.md, b.md)")


def test_a_plan_line_is_its_first_line_with_its_outcome() -> None:
    line = briefing_line(recalled("plan", "Plan for 'Q' failed: 1 of 2 steps done.\n1. x",
                                  success=False, sources=["a.md"]))
    assert line == "- [plan, failed, score 1.250] Plan for 'Q' failed: 1 of 2 steps done."
