"""Versioned drafts of a run: `drafts/<n>_<phase>/<timestamp>_<name>.md`, one file per version,
never overwritten (planning, research per step, writing, review)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DRAFT_PHASES = ("planning", "research", "writing", "review")
STAMP = "%Y%m%dT%H%M%S%fZ"
_FILE = re.compile(r"^(\d{8}T\d{12}Z)_(.+)\.md$")


@dataclass(frozen=True)
class DraftInfo:
    phase: str
    name: str
    time: datetime
    path: Path


def _slug(text: str, limit: int = 60) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-") or "draft"


class DraftManager:
    def __init__(self, run_dir: str | Path) -> None:
        self.root = Path(run_dir) / "drafts"

    def folder(self, phase: str) -> Path:
        if phase not in DRAFT_PHASES:
            raise ValueError(f"unknown draft phase {phase!r}; phases: {list(DRAFT_PHASES)}")
        return self.root / f"{DRAFT_PHASES.index(phase) + 1}_{phase}"

    def save_draft(self, phase: str, name: str, text: str, now: datetime | None = None) -> Path:
        """A new version of draft `name` of `phase` (an earlier version is kept)."""
        folder = self.folder(phase)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = now or datetime.now(UTC)
        path = folder / f"{stamp.strftime(STAMP)}_{_slug(name)}.md"
        while path.exists():  # two versions in one microsecond: the next one
            stamp = stamp.replace(microsecond=(stamp.microsecond + 1) % 1_000_000)
            path = folder / f"{stamp.strftime(STAMP)}_{_slug(name)}.md"
        path.write_text(text.rstrip() + "\n", encoding="utf-8")
        return path

    def list_drafts(self, phase: str | None = None) -> list[DraftInfo]:
        """Every draft (of `phase`), in phase order then time order."""
        phases = DRAFT_PHASES if phase is None else (phase,)
        found: list[DraftInfo] = []
        for name in phases:
            folder = self.folder(name)
            if not folder.is_dir():
                continue
            for path in sorted(folder.iterdir()):
                match = _FILE.match(path.name)
                if match:
                    when = datetime.strptime(match.group(1), STAMP).replace(tzinfo=UTC)
                    found.append(DraftInfo(name, match.group(2), when, path))
        return found

    def load_draft(self, phase: str, name: str | None = None) -> str:
        """The latest version of draft `name` of `phase` (of any name when None)."""
        drafts = [d for d in self.list_drafts(phase) if name is None or d.name == _slug(name)]
        if not drafts:
            known = sorted({d.name for d in self.list_drafts(phase)})
            raise FileNotFoundError(
                f"no {phase} draft named {name!r} in {self.folder(phase)}; drafts there: {known}"
            )
        return drafts[-1].path.read_text(encoding="utf-8")

    def summary_section(self) -> str:
        """The Drafts section of WORKFLOW_SUMMARY.md: every draft with its time."""
        lines = ["## Drafts", "", "| time (UTC) | phase | draft |", "|---|---|---|"]
        for draft in self.list_drafts():
            rel = draft.path.relative_to(self.root.parent)
            lines.append(f"| {draft.time.isoformat(timespec='milliseconds')} | {draft.phase} | "
                         f"[{draft.name}]({rel.as_posix()}) |")
        if len(lines) == 4:
            lines.append("| - | - | (none) |")
        return "\n".join(lines) + "\n"
