"""Versioned drafts: drafts/<n>_<phase>/<timestamp>_<name>.md, listed in WORKFLOW_SUMMARY.md."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from omegaconf import DictConfig

from DeepResearch.src.utils.drafts import DraftManager
from DeepResearch.src.workflow.run import run_research

MakeConfig = Callable[..., DictConfig]


def test_versions_are_kept_and_the_latest_is_loaded(tmp_path: Path) -> None:
    drafts = DraftManager(tmp_path)
    first = drafts.save_draft("writing", "Answer", "one", datetime(2026, 1, 1, tzinfo=UTC))
    second = drafts.save_draft("writing", "Answer", "two", datetime(2026, 1, 2, tzinfo=UTC))
    same_time = drafts.save_draft("writing", "Answer", "three", datetime(2026, 1, 2, tzinfo=UTC))
    assert first.parent.name == "3_writing" and first.name == "20260101T000000000000Z_answer.md"
    assert len({first, second, same_time}) == 3
    assert drafts.load_draft("writing", "Answer") == "three\n"
    assert [d.path for d in drafts.list_drafts()] == [first, second, same_time]
    with pytest.raises(FileNotFoundError, match=r"no writing draft named 'other'.*\['answer'\]"):
        drafts.load_draft("writing", "other")
    with pytest.raises(ValueError, match="unknown draft phase 'final'"):
        drafts.save_draft("final", "x", "y")


def test_a_run_saves_each_phase_draft_and_lists_them(make_config: MakeConfig) -> None:
    outcome = asyncio.run(run_research("Which aligner suits RNA-seq reads?", make_config()))
    drafts = DraftManager(outcome.run_dir)
    found = drafts.list_drafts()
    by_phase = {phase: [d for d in found if d.phase == phase] for phase in
                ("planning", "research", "writing", "review")}
    steps = len(outcome.state.execution_results)
    assert len(by_phase["planning"]) == 1 and len(by_phase["research"]) == steps >= 2
    # the review: one round (the offline answer has no problem) and the report as written
    assert len(by_phase["writing"]) == 1 and len(by_phase["review"]) == 2
    assert by_phase["review"][0].name.startswith("review-round-1-draft-version-1")
    assert by_phase["research"][0].path.parent.name == "2_research"
    assert drafts.load_draft("review") == (outcome.run_dir / "report.md").read_text()
    summary = (outcome.run_dir / "WORKFLOW_SUMMARY.md").read_text()
    assert "## Drafts" in summary
    for draft in found:
        assert f"drafts/{draft.path.parent.name}/{draft.path.name}" in summary
        assert draft.time.isoformat(timespec="milliseconds") in summary
