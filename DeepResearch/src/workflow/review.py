"""Review and revision of the report: after the answer is drafted, a reviewer reads the draft
against the sources and lists its problems; a reviser fixes them; up to
`flows.<flow>.review.max_rounds` rounds (0: no review), ending early at a round without
problems. Each round's draft is kept in drafts/4_review/ with its version and the reviewer's
notes, and WORKFLOW_SUMMARY.md lists the rounds.

Offline the reviewer is deterministic: a claim (a sentence of the answer) without a citation,
a citation of a document the run never consulted, a cited claim the cited document does not
contain, a sentence said twice. The offline reviser removes the flagged sentences. With a real
model pydantic-ai agents review (output typed as ReviewNotes) and revise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from omegaconf import DictConfig
from pydantic import BaseModel, Field
from pydantic_ai import Agent

from DeepResearch.src.agents.prompts import cited_sources
from DeepResearch.src.rag.lexical import tokenize
from DeepResearch.src.workflow.errors import ConfigurationError

if TYPE_CHECKING:
    from DeepResearch.src.rag.library import DocumentLibrary

ProblemKind = Literal["uncited", "unknown_source", "unsupported", "repeated", "other"]
# A sentence counts as said by the cited document when this share of its words is in it.
SUPPORT = 0.6
# A sentence: text up to . ! or ? with the citations right after it, or up to the line's end.
_SENTENCE = re.compile(r"\S.*?(?:[.!?]+(?:[ \t]*\[[^\]\n]+\])+|[.!?]+(?=\s|$)|$)", re.MULTILINE)
_NOTICE = re.compile(r"^_.*_$")  # an italic line: a note about the answer, not a claim


class ReviewProblem(BaseModel):
    kind: ProblemKind
    sentence: str = Field(description="the sentence of the draft, exactly as written")
    note: str = Field(description="what is wrong and how to fix it")


class ReviewNotes(BaseModel):
    problems: list[ReviewProblem] = Field(default_factory=list)


@dataclass
class ReviewRound:
    """One round: the draft version reviewed (1 = the synthesizer's), the reviewer's notes,
    and whether a revised version (version + 1) was written."""

    round: int
    version: int
    problems: list[dict[str, str]] = field(default_factory=list)
    revised: bool = False


@dataclass(frozen=True)
class ReviewSettings:
    max_rounds: int = 2


def review_settings(cfg: DictConfig, flow: str) -> ReviewSettings:
    section = cfg.flows[flow].get("review")
    if section is None:
        return ReviewSettings(max_rounds=0)
    rounds = section.get("max_rounds", 2)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 0:
        raise ConfigurationError(
            f"flows.{flow}.review.max_rounds={rounds!r}: give a whole number >= 0 (0: no review)")
    return ReviewSettings(max_rounds=rounds)


# -- the offline reviewer and reviser ------------------------------------------------------
def claims(draft: str) -> list[str]:
    """The sentences of `draft` that make claims: not headings, not italic notices."""
    out: list[str] = []
    for line in draft.splitlines():
        text = line.strip()
        if not text or text.startswith("#") or _NOTICE.match(text):
            continue
        out += [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]
    return out


def _words(text: str) -> set[str]:
    return {w for w in tokenize(re.sub(r"\[[^\]\n]+\]", " ", text)) if len(w) > 2}


def offline_review(draft: str, sources: list[str], library: DocumentLibrary | None) -> ReviewNotes:
    """Uncited claims, citations of documents the run did not consult, cited claims their
    document does not hold, and repeated sentences; each sentence once, in draft order."""
    problems: list[ReviewProblem] = []
    seen: set[str] = set()
    for sentence in claims(draft):
        words = _words(sentence)
        key = " ".join(sorted(words))
        cited = cited_sources(sentence)
        if key in seen and words:
            problems.append(ReviewProblem(kind="repeated", sentence=sentence,
                                          note="said before in the draft; remove the repeat"))
            continue
        seen.add(key)
        if not cited:
            problems.append(ReviewProblem(kind="uncited", sentence=sentence,
                                          note="a claim without a source; cite one or remove it"))
            continue
        unknown = [s for s in cited if s not in sources]
        if unknown:
            problems.append(ReviewProblem(
                kind="unknown_source", sentence=sentence,
                note=f"cites {', '.join(unknown)}, which the research never consulted"))
            continue
        if library is not None and words:
            texts = [doc.content for s in cited if (doc := library.get(s)) is not None]
            held = set().union(*(_words(t) for t in texts)) if texts else set()
            if texts and len(words & held) / len(words) < SUPPORT:
                problems.append(ReviewProblem(
                    kind="unsupported", sentence=sentence,
                    note=f"{', '.join(cited)} does not say this; quote what it says or remove it"))
    return ReviewNotes(problems=problems)


def offline_revise(draft: str, notes: ReviewNotes) -> str:
    """`draft` without the flagged sentences (a repeat loses its second occurrence only);
    a paragraph left empty goes, with a heading left without a paragraph. A revision that
    would leave no claim at all is not made: the draft comes back unchanged."""
    wrong = {p.sentence for p in notes.problems if p.kind != "repeated"}
    repeats = {p.sentence for p in notes.problems if p.kind == "repeated"}
    said: set[str] = set()  # the words of every sentence kept so far
    lines: list[str] = []
    for line in draft.splitlines():
        text = line.strip()
        if not text or text.startswith("#") or _NOTICE.match(text):
            lines.append(line)
            continue
        kept = []
        for match in _SENTENCE.finditer(text):
            sentence = match.group(0).strip()
            key = " ".join(sorted(_words(sentence)))
            if not sentence or sentence in wrong or (sentence in repeats and key in said):
                continue
            said.add(key)
            kept.append(sentence)
        if kept:
            lines.append(" ".join(kept))
    revised = _tidy("\n".join(lines))
    return revised if claims(revised) else draft


def _tidy(text: str) -> str:
    """Blank lines collapsed; a heading followed by nothing but another heading dropped."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    kept = [b for i, b in enumerate(blocks)
            if not (b.startswith("#") and "\n" not in b
                    and (i + 1 == len(blocks) or blocks[i + 1].startswith("#")))]
    return "\n\n".join(kept)


# -- who reviews and revises ---------------------------------------------------------------
class Reviewer(Protocol):
    async def review(self, question: str, draft: str, sources: list[str]) -> ReviewNotes: ...


class Reviser(Protocol):
    async def revise(self, question: str, draft: str, notes: ReviewNotes) -> str: ...


@dataclass
class OfflineReviewer:
    library: DocumentLibrary | None = None

    async def review(self, question: str, draft: str, sources: list[str]) -> ReviewNotes:
        return offline_review(draft, sources, self.library)


class OfflineReviser:
    async def revise(self, question: str, draft: str, notes: ReviewNotes) -> str:
        return offline_revise(draft, notes)


REVIEW_INSTRUCTIONS = (
    "You review a research report draft against its sources. List every problem: a claim "
    "without a [source] citation (uncited), a citation of a document not among SOURCES "
    "(unknown_source), a claim the cited document does not support (unsupported, read it with "
    "the tools if you have them), a sentence repeated (repeated), anything else wrong (other). "
    "Quote each sentence exactly. No problems: an empty list."
)
REVISE_INSTRUCTIONS = (
    "You revise a research report draft. Fix every problem the reviewer listed: cite or "
    "remove uncited claims, remove repeats and unsupported claims. Keep everything else as it "
    "is, with its [source] citations. Answer with the revised draft only."
)


def _notes_text(notes: ReviewNotes) -> str:
    return "\n".join(f"- [{p.kind}] {p.sentence} -- {p.note}" for p in notes.problems)


@dataclass
class AgentReviewer:
    agent: Agent[None, ReviewNotes]

    async def review(self, question: str, draft: str, sources: list[str]) -> ReviewNotes:
        prompt = f"QUESTION: {question}\nSOURCES: {', '.join(sources)}\nDRAFT:\n{draft}"
        return (await self.agent.run(prompt)).output


@dataclass
class AgentReviser:
    agent: Agent[None, str]

    async def revise(self, question: str, draft: str, notes: ReviewNotes) -> str:
        prompt = f"QUESTION: {question}\nPROBLEMS:\n{_notes_text(notes)}\nDRAFT:\n{draft}"
        return (await self.agent.run(prompt)).output


def review_agent(model: Any) -> Agent[None, ReviewNotes]:
    return Agent(model, output_type=ReviewNotes, instructions=REVIEW_INSTRUCTIONS, name="reviewer")


def reviser_agent(model: Any) -> Agent[None, str]:
    return Agent(model, output_type=str, instructions=REVISE_INSTRUCTIONS, name="reviser")


@dataclass
class ReviewTeam:
    settings: ReviewSettings
    reviewer: Reviewer
    reviser: Reviser


def review_team(cfg: DictConfig, flow: str, library: DocumentLibrary | None) -> ReviewTeam:
    """Offline the deterministic reviewer and reviser; with a real model the two agents."""
    settings = review_settings(cfg, flow)
    if str(cfg.llm.provider) == "offline":
        return ReviewTeam(settings, OfflineReviewer(library), OfflineReviser())
    from DeepResearch.src.agents.models import build_model
    from DeepResearch.src.datatypes.agents import AgentType

    model = build_model(cfg.llm, AgentType.SYNTHESIZER)
    return ReviewTeam(settings, AgentReviewer(review_agent(model)), AgentReviser(reviser_agent(model)))


def round_draft(question: str, record: ReviewRound, draft: str) -> str:
    """The text kept in drafts/4_review/ for one round: version, reviewer's notes, the draft."""
    if record.problems:
        notes = "\n".join(f"- **{p['kind']}**: {p['sentence']} ({p['note']})" for p in record.problems)
        outcome = f"revised into version {record.version + 1}" if record.revised else "not revised"
    else:
        notes, outcome = "- (no problems)", "accepted"
    return (f"# Review round {record.round}: draft version {record.version} of {question!r}\n\n"
            f"Reviewer's notes ({len(record.problems)} problems; {outcome}):\n\n{notes}\n\n"
            f"## Draft version {record.version}\n\n{draft.strip()}\n")
