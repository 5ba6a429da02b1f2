"""Review and revision of the report: the offline reviewer's findings and the reviser's fixes,
whole runs whose draft has problems (offline model), the rounds decided by pydantic-ai agents
on FunctionModels, the round limit, and review off."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from DeepResearch.agents import SynthesizerAgent
from DeepResearch.src.rag.library import DocumentLibrary
from DeepResearch.src.workflow.errors import ConfigurationError
from DeepResearch.src.workflow.review import (
    AgentReviewer,
    AgentReviser,
    ReviewSettings,
    ReviewTeam,
    offline_review,
    offline_revise,
    review_agent,
    review_settings,
    reviser_agent,
)
from DeepResearch.src.workflow.run import create_run_services, run_research

MakeConfig = Callable[..., DictConfig]
QUESTION = "Which aligner suits RNA-seq reads?"
NOTICE = "_Answer written for a test._"
STAR = ("STAR (Spliced Transcripts Alignment to a Reference) is a splice-aware aligner built for "
        "RNA-seq reads. [rna_seq_aligners.md]")
UNCITED = "Every lab should buy a bigger cluster for alignment."
FLAWED = f"{NOTICE}\n\n{STAR} {UNCITED}\n\n### More\n\n{STAR}"


def user_prompt(messages: list[ModelMessage]) -> str:
    return "\n".join(str(part.content) for m in messages for part in m.parts
                     if type(part).__name__ == "UserPromptPart")


def test_the_offline_reviewer_flags_and_the_reviser_removes(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nSTAR needs about 32 GB of memory for a human index.\n")
    library = DocumentLibrary.from_folder(tmp_path, [".md"])
    good = "STAR needs about 32 GB of memory for a human index. [a.md]"
    draft = "\n\n".join([
        NOTICE,
        "### Memory",
        f"{good} Aligners are magic and never fail.",
        "HISAT2 was written on the moon by astronauts. [a.md]",
        "Salmon quantifies transcripts without alignment. [b.md]",
        "### Again",
        good,
    ])
    notes = offline_review(draft, ["a.md"], library)
    assert [(p.kind, p.sentence) for p in notes.problems] == [
        ("uncited", "Aligners are magic and never fail."),
        ("unsupported", "HISAT2 was written on the moon by astronauts. [a.md]"),
        ("unknown_source", "Salmon quantifies transcripts without alignment. [b.md]"),
        ("repeated", good),
    ]
    revised = offline_revise(draft, notes)
    assert revised == f"{NOTICE}\n\n### Memory\n\n{good}"
    assert offline_review(revised, ["a.md"], library).problems == []
    # a revision that would leave no claim is not made
    lone = offline_review(UNCITED, [], library)
    assert offline_revise(UNCITED, lone) == UNCITED


def flawed_synthesizer() -> SynthesizerAgent:
    async def write(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(FLAWED)])

    return SynthesizerAgent(FunctionModel(write))


def test_an_offline_run_reviews_and_revises_its_draft(make_config: MakeConfig) -> None:
    cfg = make_config()
    services = create_run_services(cfg)
    services.agents.synthesizer = flawed_synthesizer()
    outcome = asyncio.run(run_research(QUESTION, cfg, services))
    report = (outcome.run_dir / "report.md").read_text()
    assert UNCITED not in report and report.count("STAR (Spliced") == 1 and "### More" not in report
    assert [(r.round, r.version, r.revised) for r in outcome.state.review_rounds] == [
        (1, 1, True), (2, 2, False)]
    rounds = sorted((outcome.run_dir / "drafts" / "4_review").glob("*review-round-*"))
    assert len(rounds) == 2
    first = rounds[0].read_text()
    assert "draft version 1" in first and "revised into version 2" in first
    assert f"**uncited**: {UNCITED}" in first and "**repeated**" in first and UNCITED in first
    assert "(no problems)" in rounds[1].read_text()
    summary = (outcome.run_dir / "WORKFLOW_SUMMARY.md").read_text()
    assert "| 1 | 1 | 1 uncited, 1 repeated | revised into version 2 |" in summary
    assert "| 2 | 2 | none | accepted |" in summary and "The report is draft version 2" in summary


def test_agents_decide_the_review_up_to_the_round_limit(make_config: MakeConfig) -> None:
    """pydantic-ai agents on FunctionModels: the reviewer (typed ReviewNotes) always finds a
    problem, the reviser always changes the draft: the rounds stop at max_rounds."""
    seen: list[str] = []

    def review(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = user_prompt(messages)
        seen.append(prompt)
        sentence = prompt.rsplit("\n", 1)[-1]
        args = {"problems": [{"kind": "other", "sentence": sentence, "note": "too vague"}]}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    def revise(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = user_prompt(messages)
        assert "[other]" in prompt and "too vague" in prompt
        draft = prompt.split("DRAFT:\n", 1)[1]
        return ModelResponse(parts=[TextPart(f"{draft}\nSharper, round {len(seen)}. [rna_seq_aligners.md]")])

    cfg = make_config("flows.default.review.max_rounds=2")
    services = create_run_services(cfg)
    services.review = ReviewTeam(
        review_settings(cfg, "default"),
        AgentReviewer(review_agent(FunctionModel(review))),
        AgentReviser(reviser_agent(FunctionModel(revise))),
    )
    outcome = asyncio.run(run_research(QUESTION, cfg, services))
    assert [(r.round, r.revised, r.problems[0]["note"]) for r in outcome.state.review_rounds] == [
        (1, True, "too vague"), (2, True, "too vague")]
    assert len(seen) == 2 and "SOURCES: " in seen[0] and "rna_seq_aligners.md" in seen[0]
    report = (outcome.run_dir / "report.md").read_text()
    assert "Sharper, round 1." in report and "Sharper, round 2." in report
    assert "The report is draft version 3" in (outcome.run_dir / "WORKFLOW_SUMMARY.md").read_text()


def test_review_off_and_a_bad_round_limit(make_config: MakeConfig) -> None:
    cfg = make_config("flows.default.review.max_rounds=0")
    services = create_run_services(cfg)
    assert services.review is None
    services.agents.synthesizer = flawed_synthesizer()
    outcome = asyncio.run(run_research(QUESTION, cfg, services))
    assert UNCITED in (outcome.run_dir / "report.md").read_text()
    assert outcome.state.review_rounds == []
    assert "no review rounds" in (outcome.run_dir / "WORKFLOW_SUMMARY.md").read_text()
    assert not list((outcome.run_dir / "drafts" / "4_review").glob("*review-round-*"))
    with pytest.raises(ConfigurationError, match=r"flows.default.review.max_rounds=-1"):
        create_run_services(make_config("flows.default.review.max_rounds=-1"))
    assert ReviewSettings().max_rounds == 2


def test_a_run_resumed_before_its_review_reviews_the_saved_draft(make_config: MakeConfig) -> None:
    """The checkpoint says Review is next and holds the flawed draft: the resumed run (its
    services built afresh, offline) reviews and revises that draft."""
    from DeepResearch.src.workflow.checkpoint import CHECKPOINT_NAME
    from DeepResearch.src.workflow.resume import resume_research

    cfg = make_config()
    outcome = asyncio.run(run_research(QUESTION, cfg))
    path = outcome.run_dir / CHECKPOINT_NAME
    done = json.loads(path.read_text())
    rewound = {**done, "status": "running", "next_node": "Review"}
    rewound["state"] = {**done["state"], "final_answer": FLAWED, "review_rounds": [],
                        "drafts": {**done["state"]["drafts"], "review": []}}
    path.write_text(json.dumps(rewound))
    result = asyncio.run(resume_research(outcome.run_dir))
    assert result.outcome is not None
    assert UNCITED not in result.outcome.answer and "STAR (Spliced" in result.outcome.answer
    assert [(r.round, r.revised) for r in result.outcome.state.review_rounds] == [
        (1, True), (2, False)]
    assert UNCITED not in (outcome.run_dir / "report.md").read_text()
