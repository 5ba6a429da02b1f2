"""LoCoMo conversations in the shape the retrieval protocol needs.

A data folder holds one JSON file per conversation (the format of the public LoCoMo release:
`speaker_a`, `speaker_b`, `session_N` lists of turns, `session_N_date_time`, `qa`). The folder
comes from `LOCOMO_DIR`, else the shared development split next to the repository.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property, lru_cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = REPO_ROOT.parent / "shared" / "bench" / "locomo"
SCORED_CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_SESSION_KEY = re.compile(r"session_(\d+)")


class LocomoDataError(RuntimeError):
    """The data folder is missing or a file does not have the LoCoMo shape."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    session_date: str
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """The memory content the protocol stores for this turn."""
        content = f"{self.speaker}: {self.text}"
        if self.blip_caption:
            content += f" [shares a photo: {self.blip_caption}]"
        return content

    @property
    def metadata(self) -> dict[str, str | int]:
        return {"dia_id": self.dia_id, "session": self.session, "session_date": self.session_date}

    @property
    def event_at(self) -> datetime | None:
        """The session's date and time (part of the data: `session_N_date_time`), read as UTC;
        None when it does not parse."""
        return session_time(self.session_date)


@lru_cache(maxsize=1024)
def session_time(text: str) -> datetime | None:
    """"1:56 pm on 8 May, 2023" as a UTC datetime, None when it is not in that form."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class Question:
    question: str
    evidence: tuple[str, ...]
    category: int


@dataclass
class Conversation:
    name: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    @cached_property
    def last_session_time(self) -> datetime | None:
        """When the conversation's last session took place: the time its questions are asked."""
        times = [t.event_at for t in self.turns if t.event_at is not None]
        return max(times) if times else None

    def stored_items(self) -> list[dict]:
        """The protocol's memories of this conversation: content, metadata, and the session's
        date as the memory's event time."""
        return [
            {"content": t.content, "metadata": t.metadata, "event_at": t.event_at}
            for t in self.turns
        ]


def data_dir() -> Path:
    """The folder named by LOCOMO_DIR, else the shared development split."""
    env = os.environ.get("LOCOMO_DIR")
    return Path(env).expanduser().resolve() if env else DEFAULT_DIR.resolve()


def select_questions(qa: list[dict]) -> list[Question]:
    """Questions scored by the protocol: categories 1-4 with a non-empty evidence list."""
    selected = []
    for item in qa:
        category = item.get("category")
        evidence = item.get("evidence") or []
        if category in SCORED_CATEGORIES and evidence:
            selected.append(Question(str(item["question"]), tuple(evidence), int(category)))
    return selected


def parse_conversation(name: str, raw: dict) -> Conversation:
    """One conversation from the parsed JSON of a LoCoMo file."""
    if not isinstance(raw, dict):
        raise LocomoDataError(f"{name}: expected a JSON object, got {type(raw).__name__}")
    body = raw.get("conversation", raw)  # the combined release nests it; split files do not
    qa = raw.get("qa", body.get("qa"))
    if not isinstance(qa, list):
        raise LocomoDataError(f"{name}: no 'qa' list")
    sessions = sorted(
        (int(m.group(1)), key)
        for key in body
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(body[key], list)
    )
    if not sessions:
        raise LocomoDataError(f"{name}: no 'session_N' turn lists")
    conv = Conversation(name)
    for number, key in sessions:
        date = str(body.get(f"{key}_date_time", ""))
        for turn in body[key]:
            try:
                conv.turns.append(
                    Turn(
                        dia_id=str(turn["dia_id"]),
                        speaker=str(turn["speaker"]),
                        text=str(turn["text"]),
                        session=number,
                        session_date=date,
                        blip_caption=turn.get("blip_caption") or None,
                    )
                )
            except (KeyError, TypeError) as exc:
                raise LocomoDataError(
                    f"{name}: turn in {key} lacks speaker/dia_id/text: {turn!r}"
                ) from exc
    conv.questions = select_questions(qa)
    return conv


def load_conversations(folder: Path | None = None, limit: int | None = None) -> list[Conversation]:
    """All conversations of FOLDER (sorted by file name), at most LIMIT of them."""
    folder = folder or data_dir()
    if not folder.is_dir():
        raise LocomoDataError(
            f"LoCoMo data folder not found: {folder} (set LOCOMO_DIR to a folder of "
            "LoCoMo conversation JSON files)"
        )
    files = sorted(folder.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    if not files:
        raise LocomoDataError(f"No *.json conversation files in {folder}")
    conversations = []
    for path in files[:limit] if limit else files:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LocomoDataError(f"{path}: not readable JSON ({exc})") from exc
        conversations.append(parse_conversation(path.stem, raw))
    return conversations
